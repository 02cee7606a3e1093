package pickle

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/big"
	"strconv"
)

// List is a Python list (also a set or frozenset, which this package keeps
// as lists). It is a pointer type because pickles share mutable containers
// through the memo: APPEND on a list reached through two references changes
// both.
type List struct {
	Items []any
}

// Tuple is a Python tuple. Tuples are immutable, so a plain slice will do.
type Tuple []any

// Dict is a Python dict. It keeps insertion order, like Python's, and
// replaces the value in place when a key is set twice. Keys are hashable
// values: strings, ints, floats, bools, None, bytes and tuples of those.
// As in Python, 1, 1.0 and True are the same key.
type Dict struct {
	keys []any
	vals []any
	hk   []any       // normalized keys, parallel to keys; nil while every key is its own normal form
	idx  map[any]int // normalized key → position; built once the dict has more than linearMax keys
}

// linearMax is the size up to which Dict looks keys up by scanning, which
// is faster than a map for the small dicts that snapshots are made of
// (their allocator_settings has about ten keys, and its
// roundup_power2_divisions sixteen: a map for each cost more than the
// rest of their decoding).
const linearMax = 16

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{} }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order. The slice is the Dict's own:
// do not modify it.
func (d *Dict) Keys() []any { return d.keys }

// Values returns the values in insertion order. The slice is the Dict's
// own: do not modify it.
func (d *Dict) Values() []any { return d.vals }

// All iterates over the items in insertion order.
func (d *Dict) All() iter.Seq2[any, any] {
	return func(yield func(any, any) bool) {
		for i := range d.keys {
			if !yield(d.keys[i], d.vals[i]) {
				return
			}
		}
	}
}

// Get returns the value of the string key k.
func (d *Dict) Get(k string) (any, bool) {
	i := d.find(k)
	if i < 0 {
		return nil, false
	}
	return d.vals[i], true
}

// Lookup returns the value of any hashable key. It reports false for an
// absent or unhashable key.
func (d *Dict) Lookup(k any) (any, bool) {
	h, err := hashKey(k)
	if err != nil {
		return nil, false
	}
	i := d.find(h)
	if i < 0 {
		return nil, false
	}
	return d.vals[i], true
}

// grow makes room for n more items.
func (d *Dict) grow(n int) {
	if cap(d.keys)-len(d.keys) < n || cap(d.vals)-len(d.vals) < n {
		// One allocation holds both slices.
		c := len(d.keys) + n
		buf := make([]any, 2*c)
		d.keys = append(buf[:0:c], d.keys...)
		d.vals = append(buf[c:c:2*c], d.vals...)
	}
}

// Set sets k to v, keeping k's original position if it is already present.
// It fails for an unhashable key (a list, a dict, or a tuple holding one).
func (d *Dict) Set(k, v any) error {
	h, err := hashKey(k)
	if err != nil {
		return err
	}
	if i := d.find(h); i >= 0 {
		d.vals[i] = v
		return nil
	}
	if d.hk == nil && !sameKey(k, h) {
		// The first key that differs from its normal form: from now on
		// the normal forms are kept apart.
		d.hk = make([]any, len(d.keys), cap(d.keys))
		copy(d.hk, d.keys)
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	if d.hk != nil {
		d.hk = append(d.hk, h)
	}
	if d.idx != nil {
		d.idx[h] = len(d.keys) - 1
	} else if len(d.keys) > linearMax {
		hk := d.normal()
		d.idx = make(map[any]int, 2*len(hk))
		for i, x := range hk {
			d.idx[x] = i
		}
	}
	return nil
}

// sameKey reports whether k is its own normal form h.
func sameKey(k, h any) bool {
	switch k.(type) {
	case string, int64, nil:
		return true
	}
	return false
}

func (d *Dict) normal() []any {
	if d.hk != nil {
		return d.hk
	}
	return d.keys
}

func (d *Dict) find(h any) int {
	if d.idx != nil {
		if i, ok := d.idx[h]; ok {
			return i
		}
		return -1
	}
	if s, ok := h.(string); ok && d.hk == nil {
		for i, x := range d.keys {
			if xs, ok := x.(string); ok && xs == s {
				return i
			}
		}
		return -1
	}
	for i, x := range d.normal() {
		if x == h {
			return i
		}
	}
	return -1
}

// Key normal forms: every value stored in Dict.hk is comparable, so that it
// can be a map key without panicking.
type (
	bytesKey string // bytes b"..."
	bigKey   string // an int beyond int64, in decimal
	tupleKey string // a tuple, encoded with type tags
)

// ErrUnhashable is returned when a list or dict is used as a dict key.
var ErrUnhashable = errors.New("unhashable dict key")

// keyBudget bounds the encoding of one tuple key: tuples can share
// sub-tuples through the memo, so a short pickle can describe a key whose
// expansion is exponentially long.
const keyBudget = 4 << 10

func hashKey(k any) (any, error) {
	switch k := k.(type) {
	case string, nil, int64:
		return k, nil
	case bool:
		if k {
			return int64(1), nil
		}
		return int64(0), nil
	case float64:
		if k == math.Trunc(k) && k >= -(1<<63) && k < 1<<63 {
			return int64(k), nil
		}
		return k, nil
	case int:
		return int64(k), nil
	case []byte:
		return bytesKey(k), nil
	case *big.Int:
		if k.IsInt64() {
			return k.Int64(), nil
		}
		return bigKey(k.String()), nil
	case Tuple:
		b := make([]byte, 0, 32)
		b, err := appendTupleKey(b, k, 0)
		if err != nil {
			return nil, err
		}
		return tupleKey(b), nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnhashable, TypeName(k))
}

// maxKeyDepth bounds the nesting of a tuple key.
const maxKeyDepth = 100

// appendTupleKey encodes t once, in one pass: each element is encoded
// exactly once, so the cost is linear in the encoding (bounded by
// keyBudget), however the tuples share sub-tuples.
func appendTupleKey(b []byte, t Tuple, depth int) ([]byte, error) {
	if depth > maxKeyDepth {
		return b, errors.New("dict key too deeply nested")
	}
	if len(b) > keyBudget {
		return b, errors.New("dict key too long")
	}
	b = append(b, '(')
	for _, x := range t {
		if tt, ok := x.(Tuple); ok {
			var err error
			if b, err = appendTupleKey(b, tt, depth+1); err != nil {
				return b, err
			}
			b = append(b, ',')
			continue
		}
		h, err := hashKey(x)
		if err != nil {
			return b, err
		}
		switch h := h.(type) {
		case nil:
			b = append(b, 'N')
		case int64:
			b = append(b, 'i')
			b = strconv.AppendInt(b, h, 10)
		case float64:
			b = append(b, 'f')
			b = strconv.AppendFloat(b, h, 'g', -1, 64)
		case string:
			b = append(b, 's')
			b = strconv.AppendInt(b, int64(len(h)), 10)
			b = append(b, ':')
			b = append(b, h...)
		case bytesKey:
			b = append(b, 'b')
			b = strconv.AppendInt(b, int64(len(h)), 10)
			b = append(b, ':')
			b = append(b, h...)
		case bigKey:
			b = append(b, 'L')
			b = append(b, h...)
		}
		b = append(b, ',')
		if len(b) > keyBudget {
			return b, errors.New("dict key too long")
		}
	}
	return append(b, ')'), nil
}

// TypeName is the Python name of a decoded value's type ("int", "str",
// "list", ...), for error messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64, int, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case *List, []any:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}
