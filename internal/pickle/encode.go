package pickle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
)

// Encode writes v as a protocol-4 pickle that uses only the opcodes
// PyTorch's MemoryViz reader understands (PROTO, MEMOIZE, BINGET,
// LONG_BINGET, MARK, EMPTY_DICT/LIST/TUPLE, TUPLE, TUPLE1-3, SETITEMS,
// APPENDS, BININT/BININT1/BININT2, LONG1, BINFLOAT, SHORT_BINUNICODE,
// BINUNICODE, NONE, NEWTRUE/NEWFALSE, STOP), plus SHORT_BINBYTES/BINBYTES
// for []byte and LONG4 for huge ints. Repeated strings are written once and
// then fetched from the memo. MemoryViz decodes pickles with its own
// JavaScript unpickler, which knows only those opcodes, so that a file
// membench writes (`membench export`, through torchlike/snapshot) opens
// in PyTorch's viewer as well as in Python.
//
// The output is a function of v alone (map[string]any keys are sorted),
// so the same value gives the same bytes.
//
// v may hold the values Decode returns and also int, []any (a list) and
// map[string]any (a dict with sorted keys). Cyclic or deeper than 1000
// levels values are refused. A *List or *Dict met a second
// time is fetched from the memo, as Python's pickler does (PyTorch's
// snapshots share stack frames that way): it was stored there when empty,
// right after its EMPTY_LIST or EMPTY_DICT.
//
// A *Stream is a list whose items are made as they are written, so that
// a list too long to hold (a long replay's trace entries) costs the
// memory of one item.
func Encode(w io.Writer, v any) error {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw, strs: make(map[string]uint32), seen: make(map[any]uint32), open: make(map[any]bool)}
	bw.Write([]byte{OpProto, 4})
	if err := e.value(v, 0); err != nil {
		return err
	}
	bw.WriteByte(OpStop)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("pickle: writing: %w", err)
	}
	return nil
}

type encoder struct {
	w     *bufio.Writer
	strs  map[string]uint32
	seen  map[any]uint32 // memo index of each list and dict written
	open  map[any]bool   // the lists and dicts being written
	nmemo uint32
	// transient is how many Stream items are being written: the
	// containers inside one are memoized (the opcode is written and the
	// index taken, as for any container) but not remembered in seen,
	// which would hold every item written and cost memory in proportion
	// to the stream's length.
	transient int
	b         [9]byte
}

const maxEncodeDepth = 1000

func (e *encoder) value(v any, depth int) error {
	if depth > maxEncodeDepth {
		return errors.New("pickle: value too deeply nested (or cyclic)")
	}
	w := e.w
	switch v := v.(type) {
	case nil:
		w.WriteByte(OpNone)
	case bool:
		if v {
			w.WriteByte(OpNewTrue)
		} else {
			w.WriteByte(OpNewFalse)
		}
	case int:
		e.int(int64(v))
	case int64:
		e.int(v)
	case *big.Int:
		if v.IsInt64() {
			e.int(v.Int64())
		} else {
			e.bigInt(v)
		}
	case float64:
		e.b[0] = OpBinFloat
		binary.BigEndian.PutUint64(e.b[1:], math.Float64bits(v))
		w.Write(e.b[:9])
	case string:
		e.str(v)
	case []byte:
		if len(v) < 256 {
			w.Write([]byte{OpShortBinBytes, byte(len(v))})
		} else {
			if uint64(len(v)) > math.MaxUint32 {
				return errors.New("pickle: bytes too long")
			}
			e.b[0] = OpBinBytes
			binary.LittleEndian.PutUint32(e.b[1:], uint32(len(v)))
			w.Write(e.b[:5])
		}
		w.Write(v)
	case *List:
		if ok, err := e.shared(v); ok || err != nil {
			return err
		}
		e.open[v] = true
		defer delete(e.open, v)
		return e.list(v.Items, depth, v)
	case []any:
		return e.list(v, depth, nil)
	case *Stream:
		if ok, err := e.shared(v); ok || err != nil {
			return err
		}
		e.open[v] = true
		defer delete(e.open, v)
		return e.stream(v, depth)
	case Tuple:
		switch len(v) {
		case 0:
			w.WriteByte(OpEmptyTuple)
			return nil
		case 1, 2, 3:
			for _, x := range v {
				if err := e.value(x, depth+1); err != nil {
					return err
				}
			}
			w.WriteByte(OpTuple1 + byte(len(v)-1))
			return nil
		}
		w.WriteByte(OpMark)
		for _, x := range v {
			if err := e.value(x, depth+1); err != nil {
				return err
			}
		}
		w.WriteByte(OpTuple)
	case *Dict:
		if ok, err := e.shared(v); ok || err != nil {
			return err
		}
		e.open[v] = true
		defer delete(e.open, v)
		w.WriteByte(OpEmptyDict)
		e.memoize(v)
		return e.items(v.Keys(), v.Values(), depth)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ks := make([]any, len(keys))
		vs := make([]any, len(keys))
		for i, k := range keys {
			ks[i], vs[i] = k, v[k]
		}
		w.WriteByte(OpEmptyDict)
		return e.items(ks, vs, depth)
	default:
		return fmt.Errorf("pickle: cannot encode %T", v)
	}
	return nil
}

// batch is how many items go between one MARK and its APPENDS/SETITEMS,
// as in Python's pickler.
const batch = 1000

// shared writes a GET of a container written before and reports
// whether it did. A container inside itself is refused (its GET would
// make a cyclic value).
func (e *encoder) shared(c any) (bool, error) {
	idx, ok := e.seen[c]
	if !ok {
		return false, nil
	}
	if e.open[c] {
		return false, errors.New("pickle: cyclic value")
	}
	e.get(idx)
	return true, nil
}

// memoize stores the container just opened in the memo (MEMOIZE).
func (e *encoder) memoize(c any) {
	if e.nmemo < math.MaxUint32 {
		e.w.WriteByte(OpMemoize)
		if e.transient == 0 {
			e.seen[c] = e.nmemo
		}
		e.nmemo++
	}
}

// list writes a list; a *List (memo) is memoized, to be shared.
func (e *encoder) list(items []any, depth int, memo *List) error {
	e.w.WriteByte(OpEmptyList)
	if memo != nil {
		e.memoize(memo)
	}
	for len(items) > 0 {
		n := min(len(items), batch)
		e.w.WriteByte(OpMark)
		for _, x := range items[:n] {
			if err := e.value(x, depth+1); err != nil {
				return err
			}
		}
		e.w.WriteByte(OpAppends)
		items = items[n:]
	}
	return nil
}

// Stream is a list written as its items are made: Next returns each item
// in turn, then io.EOF. It is written exactly as a *List of the same
// items would be (the same bytes), but only one item is held at a time.
// Its items are not remembered for sharing: a *List or *Dict first
// written inside an item is memoized as usual but written in full again
// if it comes again, rather than fetched from the memo (which would mean
// remembering every item), so Next may make fresh values or reuse one.
// A container written before the stream is fetched from the memo as
// anywhere, and so are strings. An error from Next other than io.EOF
// stops Encode, which returns it.
type Stream struct {
	Next func() (any, error)
}

// stream writes s as list writes a *List: EMPTY_LIST, MEMOIZE, and its
// items in batches of batch between MARK and APPENDS.
func (e *encoder) stream(s *Stream, depth int) error {
	e.w.WriteByte(OpEmptyList)
	e.memoize(s)
	e.transient++
	defer func() { e.transient-- }()
	next, err := s.Next()
	for err == nil {
		e.w.WriteByte(OpMark)
		for n := 0; n < batch && err == nil; n++ {
			if err := e.value(next, depth+1); err != nil {
				return err
			}
			next, err = s.Next()
		}
		e.w.WriteByte(OpAppends)
	}
	if err != io.EOF {
		return err
	}
	return nil
}

func (e *encoder) items(keys, vals []any, depth int) error {
	for len(keys) > 0 {
		n := min(len(keys), batch)
		e.w.WriteByte(OpMark)
		for i := range n {
			if err := e.value(keys[i], depth+1); err != nil {
				return err
			}
			if err := e.value(vals[i], depth+1); err != nil {
				return err
			}
		}
		e.w.WriteByte(OpSetItems)
		keys, vals = keys[n:], vals[n:]
	}
	return nil
}

func (e *encoder) int(n int64) {
	switch {
	case n >= 0 && n < 1<<8:
		e.w.Write([]byte{OpBinInt1, byte(n)})
	case n >= 0 && n < 1<<16:
		e.w.Write([]byte{OpBinInt2, byte(n), byte(n >> 8)})
	case n >= math.MinInt32 && n <= math.MaxInt32:
		e.b[0] = OpBinInt
		binary.LittleEndian.PutUint32(e.b[1:], uint32(int32(n)))
		e.w.Write(e.b[:5])
	default:
		// Minimal little-endian two's complement, as Python's encode_long.
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		k := 8
		for k > 1 {
			top, next := buf[k-1], buf[k-2]
			if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
				k--
				continue
			}
			break
		}
		e.w.Write([]byte{OpLong1, byte(k)})
		e.w.Write(buf[:k])
	}
}

func (e *encoder) bigInt(z *big.Int) {
	// Two's complement of z in n bytes, n minimal with the sign bit right.
	n := z.BitLen()/8 + 1
	m := new(big.Int).Set(z)
	if z.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	be := m.FillBytes(make([]byte, n))
	le := make([]byte, n)
	for i := range be {
		le[n-1-i] = be[i]
	}
	if n < 256 {
		e.w.Write([]byte{OpLong1, byte(n)})
	} else {
		e.b[0] = OpLong4
		binary.LittleEndian.PutUint32(e.b[1:], uint32(n))
		e.w.Write(e.b[:5])
	}
	e.w.Write(le)
}

// get writes a GET of memo index i.
func (e *encoder) get(i uint32) {
	if i < 256 {
		e.w.Write([]byte{OpBinGet, byte(i)})
	} else {
		e.b[0] = OpLongBinGet
		binary.LittleEndian.PutUint32(e.b[1:], i)
		e.w.Write(e.b[:5])
	}
}

func (e *encoder) str(s string) {
	if i, ok := e.strs[s]; ok {
		e.get(i)
		return
	}
	if len(s) < 256 {
		e.w.Write([]byte{OpShortBinUnicode, byte(len(s))})
	} else {
		e.b[0] = OpBinUnicode
		binary.LittleEndian.PutUint32(e.b[1:], uint32(len(s)))
		e.w.Write(e.b[:5])
	}
	e.w.WriteString(s)
	if e.nmemo < math.MaxUint32 {
		e.w.WriteByte(OpMemoize)
		e.strs[s] = e.nmemo
		e.nmemo++
	}
}
