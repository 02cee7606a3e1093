package pickle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Limits bound what decoding one pickle may cost, whatever its content.
// Each is checked as the opcode that would exceed it runs, and exceeding
// one is an *Error wrapping ErrLimit that names the limit and the offset.
type Limits struct {
	// MaxDepth bounds the nesting of containers (a list in a list is
	// depth 2). Consumers of decoded values recurse over them. It is
	// exact for generic values, however the pickle reaches their
	// containers (doc.go, Nesting depth), and a container that
	// contains itself is deeper than any MaxDepth.
	MaxDepth int
	// MaxStack bounds the values and MARKs on the machine's stack.
	MaxStack int
	// MaxMemo bounds the memo entries.
	MaxMemo int
	// MaxText bounds the bytes of all the strings, bytes and long
	// integers the decoder keeps (values it skips cost nothing).
	MaxText int64
	// MaxItems bounds the containers and container items built as
	// generic values (a Builder counts what it builds itself).
	MaxItems int
	// NoFastPath runs every opcode through the general path, without
	// the schema-shaped fast path of a FlatBuilder (fast.go). The result
	// is the same, errors included; tests compare the two.
	NoFastPath bool
	// NoRecordPath leaves a RecordBuilder's records to the fast path's
	// generic records (fastRecord), without the record path
	// (record.go), for tests that compare the two.
	NoRecordPath bool
}

// DefaultLimits are the limits of Decode. With them a pickle costs at most
// about 12 MiB of stack, 50 MiB of memo, 64 MiB of text and 170 MiB of
// generic containers, and time linear in its size.
// Real PyTorch snapshots of a few MB use a few percent of each.
var DefaultLimits = Limits{
	MaxDepth: 1000,
	MaxStack: 1 << 18,
	MaxMemo:  1 << 20,
	MaxText:  64 << 20,
	MaxItems: 1 << 21,
}

// MaxIntDigits bounds a protocol-0 integer literal, as Python's
// sys.int_info.default_max_str_digits does; MaxLongBytes bounds a binary
// LONG4 (about as many decimal digits).
const (
	MaxIntDigits = 4300
	MaxLongBytes = 1800
)

// ErrLimit is wrapped by the error for a pickle that exceeds one of the
// Limits.
var ErrLimit = errors.New("resource limit exceeded")

// Kind is the kind of a Val.
type Kind uint8

const (
	kindUnset Kind = iota // a hole in the memo
	KindNone
	KindBool
	KindInt
	KindBigInt  // a *big.Int beyond int64 (Machine.Obj)
	KindFloat   // N holds the bits
	KindStr     // Machine.Str
	KindBytes   // a []byte (Machine.Obj)
	KindValue   // a generic container: *List, *Dict or Tuple (Machine.Obj)
	KindNode    // a Builder's container; N is its handle
	KindSkipped // a value that was not built; N is its offset (see Offset)
	kindShared  // the memo's copy of a Builder's container
)

// Shape is the Python type of a container value.
type Shape uint8

const (
	ShapeNone Shape = iota // not a container
	ShapeDict
	ShapeList
	ShapeSet
	ShapeTuple
)

// Node says how a value is to be built. NodeSkip values are read but not
// built (containers are not allocated, strings not kept unless the memo
// keeps them); NodeValue values are built as generic values (Decode's
// model); any other Node is a Builder's own.
type Node uint8

const (
	NodeSkip  Node = 0
	NodeValue Node = 1
)

// Val is a value on the machine's stack or in its memo: 16 bytes and no
// pointers, so that pushing, memoizing and copying one is cheap and the
// collector has nothing to scan. Strings, bytes, big ints and generic
// containers live in the machine's tables (N is their index; see
// Machine.Str, Machine.Obj, Machine.Any).
type Val struct {
	Kind  Kind
	Shape Shape
	Node  Node // KindNode, KindSkipped, kindShared: the node it was built as
	// Tag holds a Tagger's marks: a string's own, and for a container
	// the union of its items' (kept for skipped values too).
	Tag   uint8
	Depth int32 // nesting depth: 0 for scalars
	// N is the int, the float's bits, the string's index (≥ 0: interned;
	// < 0: ^N is its slot in the object table), the object's slot, the
	// Builder's handle, or the offset of a skipped or shared value (for
	// a skipped container stored in the memo, with its memo slot above
	// offBits: see Offset).
	N int64
}

// offBits is the width of a skipped value's offset in N; a skipped
// container in the memo keeps its slot (plus one) in the bits above, so
// that filling it can refresh the memo's copy (memoRefresh).
const (
	offBits = 40
	offMask = 1<<offBits - 1
)

// Offset is the input offset of a skipped or shared value.
func (v *Val) Offset() int64 {
	if v.Kind == KindSkipped {
		return v.N & offMask
	}
	return v.N
}

// A Tagger marks the strings the machine reads with bits of its choice
// (a Builder that implements it is asked once per string read, kept or
// skipped, and for each interned string only the first time). Every
// container, built or skipped, carries the union of its items' tags in
// Val.Tag, so that a schema can learn something of a value it does not
// build: package snapshot learns which stack frames a trace entry names
// without building them. Only the two low bits survive the fast path
// that reads batches of memo references into a skipped list; a Tagger
// should use no others.
type Tagger interface {
	Tag(s []byte) uint8
}

// IntVal is an int.
func IntVal(n int64) Val { return Val{Kind: KindInt, N: n} }

// Int returns an int value (bool counts, as in Python).
func (v *Val) Int() (int64, bool) {
	if v.Kind == KindInt || v.Kind == KindBool {
		return v.N, true
	}
	return 0, false
}

// Float returns v's float.
func (v *Val) Float() float64 { return math.Float64frombits(uint64(v.N)) }

// TypeName is the Python name of v's type, for error messages.
func (v *Val) TypeName() string {
	switch v.Kind {
	case KindNone:
		return "None"
	case KindBool:
		return "bool"
	case KindInt, KindBigInt:
		return "int"
	case KindFloat:
		return "float"
	case KindStr:
		return "str"
	case KindBytes:
		return "bytes"
	case KindValue, KindNode, KindSkipped, kindShared:
		switch v.Shape {
		case ShapeDict:
			return "dict"
		case ShapeList, ShapeSet:
			return "list"
		case ShapeTuple:
			return "tuple"
		}
	}
	return "value"
}

// Str returns the string of a KindStr value ("" for any other).
func (d *Machine) Str(v *Val) string {
	if v.Kind != KindStr {
		return ""
	}
	if v.N >= 0 {
		return d.strs[v.N]
	}
	s, _ := d.objs[^v.N].(string)
	return s
}

// Obj returns the *big.Int, []byte or generic container (*List, *Dict or
// Tuple) of a KindBigInt, KindBytes or KindValue value (nil for any other).
func (d *Machine) Obj(v *Val) any {
	switch v.Kind {
	case KindBigInt, KindBytes, KindValue:
		return d.objs[v.N]
	}
	return nil
}

// Any returns v in Decode's value model. Builder containers and skipped
// values have none.
func (d *Machine) Any(v *Val) (any, error) {
	switch v.Kind {
	case KindNone:
		return nil, nil
	case KindBool:
		return v.N != 0, nil
	case KindInt:
		return d.tt.boxes.int(v.N), nil
	case KindFloat:
		return v.Float(), nil
	case KindStr:
		if v.N >= 0 {
			return d.tt.boxes.str(d.strs[v.N]), nil
		}
		return d.Str(v), nil
	case KindBigInt, KindBytes, KindValue:
		return d.objs[v.N], nil
	case KindSkipped:
		return nil, fmt.Errorf("the %s at offset %d was skipped but is used here (unsupported structure)", v.TypeName(), v.Offset())
	case KindNode, kindShared:
		return nil, errors.New("a container of the schema is used inside a generic value (unsupported structure)")
	}
	return nil, errors.New("undefined value")
}

func (v *Val) isContainer() bool {
	switch v.Kind {
	case KindValue, KindNode, KindSkipped:
		return v.Shape == ShapeDict || v.Shape == ShapeList || v.Shape == ShapeSet
	}
	return false
}

// A Builder builds the containers of its own Nodes as the machine reads
// them, so that a schema-aware caller gets its structs without a generic
// object graph in between. The machine decides a new container's Node
// from where it will be stored: the container it is being added to (the
// one below the latest MARK, or under the key at the top of the stack)
// and the pending key. Items it adds to a Builder's container are handed
// over by SetItems and Append; a Builder container that the machine
// discards is handed back by Drop.
type Builder interface {
	// Child is the Node of a value to be stored in the Builder's
	// container c under key (nil for a list or set element).
	Child(c *Val, key *Val) Node
	// Open creates an empty container of a Builder node and returns its
	// handle.
	Open(n Node, shape Shape, off int64) (int64, error)
	// SetItems stores key, value pairs (kv alternates them) in c.
	SetItems(c *Val, kv []Val) error
	// Append stores elements in c.
	Append(c *Val, items []Val) error
	// Drop releases a Builder container the machine no longer holds.
	Drop(v *Val)
	// Describe names a Builder node for error messages ("trace entry").
	Describe(n Node) string
	// Shape is the shape a node's container has (ShapeNone: any).
	Shape(n Node) Shape
}

// memoSlack bounds the holes in the memo slice: a PUT index beyond twice
// the number of memo entries (plus this slack) goes to a map instead, so
// that a few bytes of input (a LONG_BINPUT index can be 4 billion) never
// allocate more than a few slots per entry.
const memoSlack = 64

// internMax is the longest string interned, internCap the most strings
// the intern table holds: repeated short strings (actions, keys) then
// cost no allocation.
const (
	internMax = 64
	internCap = 8192
)

// Machine is the streaming pickle machine behind Decode: it runs a
// pickle's opcodes once, in order, with every resource bounded (Limits),
// building each container either as a generic value, through a Builder,
// or not at all.
type Machine struct {
	lim    Limits
	b      Builder
	root   Node
	r      io.Reader
	buf    []byte // the input window (see fill)
	i, n   int    // next unread byte, end of the window's data
	off0   int64  // input offset of buf[0]
	rerr   error  // the reader's error (io.EOF at the end)
	zero   int    // reads that returned nothing
	opPos  int64  // offset of the current opcode
	op     byte
	size   int64 // total input size, or -1 when unknown
	stack  []Val
	marks  []int        // stack heights at each MARK
	sbox   *stacks      // what stack and marks came in from stackPool, to go back in
	memo   []*memoBlock // chunks of memoChunk slots: growing never copies
	memoN  int          // slots in memo
	depths []uint8      // skipDepth of each memo slot (len memoN): refRun's one load a reference
	dbox   *[]uint8     // what depths came in from depthsPool, to go back in
	memoHi int          // one past the highest memo slot ever stored (release cleans below it)
	sparse map[uint64]Val
	nmemo  int // number of memo entries (Python's len(memo))
	tmp    []byte
	text   int64               // bytes of text kept
	items  int                 // generic containers and items built
	intern map[string]int32    // interned string → index in strs
	strs   []string            // the interned strings (strs[0] is "") and the long ones
	scache [256]int32          // recent strs indices by a hash of the bytes (0: none)
	objs   []any               // the object table (Val.N of objects and long strings)
	ofree  []int64             // free slots of objs
	onew   int                 // objects added since the last sweep
	olive  int                 // objects live after the last sweep
	one    [1]Val              // APPEND's item
	built  Val                 // the container fromItems builds
	arena  []byte              // the block kept strings are copied into (keep)
	blocks []*[arenaChunk]byte // every such block, for Recycle
	tagger Tagger              // the Builder's, or nil
	stags  []uint8             // the tag of each string in strs
	flat   FlatBuilder         // the Builder's, or nil (no fast path)
	rb     RecordBuilder       // the Builder's, or nil (no record path)
	rnode  Node                // rb's RecordNode
	slots  *slotTable          // the Slot plus one of each string index met as a key of rnode (record.go)
	slotHi int                 // one past the highest index set in slots
	nrec   int                 // records read by the record path (Records)
	nnext  int                 // dicts fastDict went on to without the dispatch (tests)
	fs     *fastScan           // the fast path's working state (from fastPool while the machine runs)
	tslab  []any               // what is left of the small tuples' backing array (tuple)
	tslabN int                 // the length of the last such array
	gnodes blocks[gnode]       // the depth records of the generic containers, by container id (gnode)
	gedges blocks[gedge]       // the links from generic containers to those they were put in
	ocid   []int32             // the container id plus one of each object slot holding a generic container
	gwork  []int32             // raise's work list
	tt     *textTables         // the box the tables came in and go back in, with Any's boxes
	graise int                 // links raise has followed (bounded by MaxItems)
}

// NewMachine returns a machine reading one pickle from r. b may be nil
// when every node is NodeValue or NodeSkip; root is the top-level value's
// node.
func NewMachine(r io.Reader, b Builder, root Node, lim Limits) *Machine {
	d, _ := machinePool.Get().(*Machine) // zeroed by Recycle
	if d == nil {
		d = new(Machine)
	}
	d.lim, d.b, d.root, d.size = lim, b, root, -1
	switch rr := r.(type) {
	case interface{ Len() int }:
		d.size = int64(rr.Len())
	case *os.File:
		if st, err := rr.Stat(); err == nil && st.Mode().IsRegular() {
			if off, err := rr.Seek(0, io.SeekCurrent); err == nil && off <= st.Size() {
				d.size = st.Size() - off
			}
		}
	}
	d.r = r
	d.buf = windowPool.Get().(*[windowSize]byte)[:]
	if st, ok := stackPool.Get().(*stacks); ok {
		d.stack, d.marks, d.sbox = st.vals, st.marks, st
	} else {
		d.stack = make([]Val, 0, 64)
	}
	if t, ok := textPool.Get().(*textTables); ok {
		d.intern, d.strs, d.stags, d.blocks, d.objs = t.intern, t.strs, t.stags, t.blocks, t.objs
		d.ocid, d.gnodes, d.gedges = t.ocid, t.gnodes, t.gedges
		d.memo, t.memo = t.memo, nil
		d.tt = t
	} else {
		d.intern = make(map[string]int32)
		d.strs = make([]string, 0, 64)
		d.stags = make([]uint8, 0, 64)
		d.tt = new(textTables)
	}
	d.strs = append(d.strs, "")
	d.stags = append(d.stags, 0)
	d.intern[""] = 0
	if t, ok := b.(Tagger); ok {
		d.tagger = t
	}
	if f, ok := b.(FlatBuilder); ok && !lim.NoFastPath {
		d.flat = f
		d.fs = fastPool.Get().(*fastScan)
		if r, ok := f.(RecordBuilder); ok && !lim.NoRecordPath {
			d.rb, d.rnode = r, r.RecordNode()
		}
	}
	return d
}

// Offset is the offset of the opcode being run (or that failed).
func (d *Machine) Offset() int64 { return d.opPos }

func (d *Machine) errf(err error, format string, args ...any) error {
	return &Error{Offset: d.opPos, Op: opName(d.op), Msg: fmt.Sprintf(format, args...), Err: err}
}

func (d *Machine) limitf(format string, args ...any) error {
	return &Error{Offset: d.opPos, Op: opName(d.op), Msg: fmt.Sprintf(format, args...), Err: ErrLimit}
}

func (d *Machine) truncated() error {
	return &Error{Offset: d.opPos, Op: opName(d.op), Msg: "truncated input", Err: io.ErrUnexpectedEOF}
}

// base is the stack height below which the current opcode may not reach:
// like Python's unpickler, items under the latest MARK are out of sight.
func (d *Machine) base() int {
	if len(d.marks) == 0 {
		return 0
	}
	return d.marks[len(d.marks)-1]
}

func (d *Machine) push(v Val) error {
	if len(d.stack)+len(d.marks) >= d.lim.MaxStack {
		return d.limitf("stack of %d values and marks exceeds the limit of %d", len(d.stack)+len(d.marks), d.lim.MaxStack)
	}
	d.stack = append(d.stack, v)
	return nil
}

func (d *Machine) pop() (Val, error) {
	if len(d.stack) <= d.base() {
		return Val{}, d.errf(nil, "stack underflow")
	}
	v := d.stack[len(d.stack)-1]
	d.stack[len(d.stack)-1] = Val{}
	d.stack = d.stack[:len(d.stack)-1]
	return v, nil
}

func (d *Machine) top() (*Val, error) {
	if len(d.stack) <= d.base() {
		return nil, d.errf(nil, "stack underflow")
	}
	return &d.stack[len(d.stack)-1], nil
}

// popMark removes the items pushed since the latest MARK and the mark
// itself. The returned slice aliases the stack: use it before pushing,
// then clear it.
func (d *Machine) popMark() ([]Val, error) {
	if len(d.marks) == 0 {
		return nil, d.errf(nil, "no MARK on the stack")
	}
	k := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	items := d.stack[k:]
	d.stack = d.stack[:k]
	return items, nil
}

// discard drops values the machine no longer holds.
func (d *Machine) discard(items []Val) {
	for i := range items {
		if items[i].Kind == KindNode && d.b != nil {
			d.b.Drop(&items[i])
		}
		items[i] = Val{}
	}
}

// newNode is the node of a value about to be pushed (a container of the
// given shape, or a scalar for ShapeNone), from where it will be stored.
// Pickles fill a container right after creating it: either one item and
// APPEND or SETITEM (the list on top, or the dict below the key on top),
// or a batch after a MARK (the container right below the latest MARK).
// A new value can be the pending value of a dict (decided), an element of
// the list on top, or the next item of the batch; where both of the last
// two are possible, a container goes to the one whose node has its shape
// (the innermost first), and a string is kept unless both skip it. A
// value whose destination cannot be seen (a tuple's items, say) is built
// as a generic value; a Builder checks what it is given anyway.
func (d *Machine) newNode(shape Shape) Node {
	n := len(d.stack)
	base := 0
	var p *Val // batch parent
	if k := len(d.marks); k > 0 {
		base = d.marks[k-1]
		if base >= 1 && (k == 1 || d.marks[k-2] < base) {
			if q := &d.stack[base-1]; q.isContainer() {
				p = q
			}
		}
	} else if n == 0 {
		return d.root
	}
	inner, hasInner := NodeSkip, false
	if n > base {
		t := &d.stack[n-1]
		if !t.isContainer() {
			if n-2 >= base {
				if q := &d.stack[n-2]; q.isContainer() && q.Shape == ShapeDict {
					return d.child(q, t) // the value of a SETITEM
				}
			}
		} else if t.Shape != ShapeDict {
			inner, hasInner = d.child(t, nil), true // an APPEND's element
		} else if shape == ShapeNone {
			inner, hasInner = keyNode(t), true // a SETITEM's key
		}
	}
	outer, hasOuter := NodeSkip, false
	if p != nil {
		hasOuter = true
		if p.Shape != ShapeDict {
			outer = d.child(p, nil)
		} else if (n-base)%2 == 1 {
			outer = d.child(p, &d.stack[n-1])
		} else if shape == ShapeNone {
			outer = keyNode(p)
		} else {
			hasOuter = false // a container is never a key
		}
	}
	switch {
	case hasInner && hasOuter:
		if shape == ShapeNone {
			if inner == NodeSkip && outer == NodeSkip {
				return NodeSkip
			}
			return NodeValue
		}
		if d.fits(inner, shape) {
			return inner
		}
		return outer
	case hasInner:
		return inner
	case hasOuter:
		return outer
	}
	return NodeValue
}

// fits reports whether a container of the shape can be built as node n.
func (d *Machine) fits(n Node, shape Shape) bool {
	if n == NodeSkip || n == NodeValue {
		return true
	}
	s := d.b.Shape(n)
	return s == ShapeNone || s == shape || (s == ShapeList && shape == ShapeSet)
}

func keyNode(p *Val) Node {
	if p.Kind == KindSkipped {
		return NodeSkip
	}
	return NodeValue
}

func (d *Machine) child(p *Val, key *Val) Node {
	switch p.Kind {
	case KindSkipped:
		return NodeSkip
	case KindNode:
		return d.b.Child(p, key)
	}
	return NodeValue
}

func (d *Machine) addText(n int) error {
	d.text += int64(n)
	if d.text > d.lim.MaxText {
		return d.limitf("decoded text of %d bytes exceeds the limit of %d bytes", d.text, d.lim.MaxText)
	}
	return nil
}

func (d *Machine) addItems(n int) error {
	d.items += n
	if d.items > d.lim.MaxItems {
		return d.limitf("%d generic containers and items exceed the limit of %d", d.items, d.lim.MaxItems)
	}
	return nil
}

// nextIsPut reports whether the next opcode stores the top of the stack
// in the memo (a skipped string must then be kept: a later GET may use
// it where it is needed).
func (d *Machine) nextIsPut() bool {
	if d.i >= d.n && !d.fill(1) {
		return false
	}
	switch d.buf[d.i] {
	case OpPut, OpBinPut, OpLongBinPut, OpMemoize:
		return true
	}
	return false
}

// pushStr pushes a string read from the input (b is only valid until the
// next read).
func (d *Machine) pushStr(b []byte, node Node) error {
	if node == NodeSkip && !d.nextIsPut() {
		return d.push(Val{Kind: KindSkipped, N: d.opPos, Tag: d.tag(b)})
	}
	return d.pushKept(b, node == NodeSkip)
}

// pushKept pushes a string the machine keeps: one the schema skips but a
// PUT keeps (skip) outside the intern table when it is long enough
// (strSkippedIndex), any other interned (str).
func (d *Machine) pushKept(b []byte, skip bool) error {
	if skip {
		if i, ok := d.strSkippedIndex(b); ok {
			return d.push(d.strVal(i))
		}
	}
	return d.push(d.str(b))
}

// tag is the Tagger's tag of a string (0 without a Tagger).
func (d *Machine) tag(b []byte) uint8 {
	if d.tagger == nil {
		return 0
	}
	return d.tagger.Tag(b)
}

// str returns a string value of b: interned when short (repeated keys
// and actions then cost no allocation), else in the object table.
func (d *Machine) str(b []byte) Val {
	if i, ok := d.strKeptIndex(b); ok {
		return d.strVal(i)
	}
	return Val{Kind: KindStr, N: ^d.newObj(d.keep(b)), Tag: d.tag(b)}
}

// strVal is the string value of index i of the string table.
func (d *Machine) strVal(i int) Val {
	return Val{Kind: KindStr, N: int64(i), Tag: d.stags[i]}
}

// strKeptIndex is str for the strings that need no slot in the object
// table: all but the short ones met once the intern table is full
// (false). It returns the string's index in the string table (strVal
// makes the value; the fast path takes the index, see setVal). The fast
// path uses it: it never touches the object table, whose sweep would not
// see the values it holds.
func (d *Machine) strKeptIndex(b []byte) (int, bool) {
	if len(b) > internMax {
		return d.longStrIndex(d.keep(b)), true
	}
	// A direct-mapped cache in front of the map: a snapshot's
	// strings are few and repeat.
	h := scacheSlot(b)
	if i := d.scache[h]; i > 0 && d.strs[i] == string(b) {
		return int(i), true
	}
	if i, ok := d.intern[string(b)]; ok {
		d.scache[h] = i
		return int(i), true
	}
	if len(d.intern) < internCap {
		s := d.keep(b)
		d.intern[s] = int32(len(d.strs))
		t := d.tag(b)
		d.strs = append(d.strs, s)
		d.stags = append(d.stags, t)
		return len(d.strs) - 1, true
	}
	return 0, false
}

// scacheSlot is the slot of b in the direct-mapped cache of strings
// (Machine.scache) that strKeptIndex and strSkippedIndex share.
func scacheSlot(b []byte) uint {
	h := uint(len(b))
	if len(b) > 0 {
		h = h*31 + uint(b[0])*7 + uint(b[len(b)-1])
	}
	return h & 255
}

// skipInternMin is the shortest string strSkippedIndex keeps without the
// intern table: at that length the string's slot in strs (17 bytes)
// costs no more than the text MaxText counts for it, so that MaxText
// bounds the slots as it does longStrIndex's.
const skipInternMin = 16

// strSkippedIndex is str for a string the schema skips but a PUT keeps (a
// stack frame's function or file name, which only a later GET can use):
// a snapshot's frames are hundreds of such strings, most of them met
// once, and only a Tagger's tag of them is ever read, so they skip the
// intern map (a hash, a failed probe and an insert each). They are
// still found again when they repeat closely (the direct-mapped cache,
// which such a string joins), and a GET that uses one as a key or a
// value sees an ordinary KindStr. Short ones are interned as before
// (false: the caller runs str), since a slot would cost more than their
// text. Both paths, general and fast, keep such strings here, so the
// intern table fills the same way in each. It returns the string's
// index in the string table, as strKeptIndex does.
func (d *Machine) strSkippedIndex(b []byte) (int, bool) {
	if len(b) < skipInternMin {
		return 0, false
	}
	if len(b) > internMax {
		return d.longStrIndex(d.keep(b)), true
	}
	h := scacheSlot(b)
	if i := d.scache[h]; i > 0 && d.strs[i] == string(b) {
		return int(i), true
	}
	if len(d.strs) >= math.MaxInt32 {
		return 0, false
	}
	i := d.longStrIndex(d.keep(b))
	d.scache[h] = int32(i)
	return i, true
}

// arenaChunk is the size of the blocks kept strings are copied into.
const arenaChunk = 16 << 10

var arenaPool = sync.Pool{New: func() any { return new([arenaChunk]byte) }}

// Recycle gives the machine's text blocks and tables to the next
// machine. The caller promises that no string the machine returned (by
// Str, Any or Obj, directly or inside a value) is used afterwards: they
// would change under it. The machine is unusable after: it goes back
// to a pool, for NewMachine.
func (d *Machine) Recycle() {
	for _, blk := range d.blocks {
		arenaPool.Put(blk)
	}
	clear(d.blocks)
	d.blocks, d.arena = d.blocks[:0], nil
	if len(d.intern) <= internCap {
		// The intern map is bounded; the string tables are kept when
		// they are of a common size (strSkippedIndex and longStrIndex
		// add to them without bound but MaxText's).
		clear(d.intern)
		strs, stags := d.strs, d.stags
		if cap(strs) > recycleStrs {
			strs, stags = nil, nil
		}
		clear(strs)
		// The object table too, emptied (the values it held are the
		// caller's): a snapshot's segments add a pool id pair each,
		// and growing the table from nothing took nine allocations
		// for the 140 of ctx128.
		objs, ocid, gnodes, gedges := d.objs, d.ocid, d.gnodes.reset(), d.gedges.reset()
		if cap(objs) > recycleObjs || cap(ocid) > recycleObjs {
			objs, ocid = nil, nil
		}
		if gnodes.cap() > recycleObjs || gedges.cap() > recycleObjs {
			gnodes, gedges = blocks[gnode]{}, blocks[gedge]{}
		}
		clear(objs)
		// The same box as before (one allocation an import less), with
		// its caches of boxed values (Any).
		t := d.tt
		t.intern, t.strs, t.stags, t.blocks, t.objs = d.intern, strs[:0], stags[:0], d.blocks, objs[:0]
		t.ocid, t.gnodes, t.gedges = ocid[:0], gnodes, gedges
		textPool.Put(t)
	}
	d.intern, d.strs, d.stags, d.objs = nil, nil, nil, nil
	*d = Machine{}
	machinePool.Put(d)
}

// machinePool holds recycled machines, zeroed, for NewMachine: a
// Machine is 1.7 KB with pointers (its string cache, the limits,
// the tables' headers), whose allocation, clearing and scanning were
// about a tenth of the fixed cost of a snapshot's import in CPU
// profiles.
var machinePool sync.Pool // *Machine

// recycleStrs is the largest string table Recycle keeps for the next
// machine (1 MiB of string headers).
const recycleStrs = 1 << 16

// recycleObjs is the largest object table Recycle keeps (64 KiB).
const recycleObjs = 1 << 12

// recycleMemo is the longest slice of memo blocks release keeps for the
// next machine (a memo of a million slots).
const recycleMemo = 1 << 10

// textTables are the string tables of a recycled machine.
type textTables struct {
	intern map[string]int32
	strs   []string
	stags  []uint8
	blocks []*[arenaChunk]byte
	objs   []any // empty
	// The generic containers' tables, empty (pointer-free, so not
	// cleared): allocator_settings builds a dozen such containers.
	ocid   []int32
	gnodes blocks[gnode]
	gedges blocks[gedge]
	memo   []*memoBlock // a released machine's slice of memo blocks, empty
	// Boxes Any made for ints beyond the runtime's static ones and for
	// short strings, kept from one machine to the next (anyBoxes).
	boxes anyBoxes
}

var textPool sync.Pool

// keep returns a string holding a copy of b. Short strings are packed
// into shared blocks (a snapshot's stack frames are hundreds of strings,
// which would otherwise be as many allocations); the strings are never
// written again, and a block lives as long as any string in it, or until
// Recycle.
func (d *Machine) keep(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaChunk/8 {
		return string(b)
	}
	if cap(d.arena)-len(d.arena) < len(b) {
		blk := arenaPool.Get().(*[arenaChunk]byte)
		d.blocks = append(d.blocks, blk)
		d.arena = blk[:0]
	}
	k := len(d.arena)
	d.arena = append(d.arena, b...)
	return unsafe.String(&d.arena[k], len(b))
}

// longStrIndex keeps s, longer than internMax, in strs without interning
// (it costs more text than its slot, so MaxText bounds the slots too) and
// returns its index there.
func (d *Machine) longStrIndex(s string) int {
	t := d.tag(unsafe.Slice(unsafe.StringData(s), len(s)))
	d.strs = append(d.strs, s)
	d.stags = append(d.stags, t)
	return len(d.strs) - 1
}

// newObj stores x in the object table and returns its slot. Slots are
// reused once no value on the stack or in the memo refers to them: a
// sweep, run after as many new objects as the stack, memo and live
// objects hold (so its cost is linear overall), frees the others.
func (d *Machine) newObj(x any) int64 {
	d.onew++
	if len(d.ofree) == 0 && d.onew > 4096 && d.onew > d.olive+cap(d.stack)+d.memoN+len(d.sparse) {
		d.sweep()
	}
	if k := len(d.ofree); k > 0 {
		i := d.ofree[k-1]
		d.ofree = d.ofree[:k-1]
		d.objs[i], d.ocid[i] = x, 0
		return i
	}
	d.objs = append(d.objs, x)
	d.ocid = append(d.ocid, 0)
	return int64(len(d.objs) - 1)
}

// newValue stores the generic container x (a *List, *Dict or Tuple) in
// the object table with a new depth record (gnode) of the given depth
// and tags, and returns its slot.
func (d *Machine) newValue(x any, depth int32, tag uint8) int64 {
	i := d.newObj(x)
	d.ocid[i] = d.gnodes.push(gnode{depth: depth, tag: tag})
	return i
}

// sweep frees the object slots no value on the stack (up to its
// capacity: items being moved sit above its top) or in the memo uses.
func (d *Machine) sweep() {
	used := make([]bool, len(d.objs))
	mark := func(vs []Val) {
		for i := range vs {
			v := &vs[i]
			switch v.Kind {
			case KindBigInt, KindBytes, KindValue:
				used[v.N] = true
			case KindStr:
				if v.N < 0 {
					used[^v.N] = true
				}
			}
		}
	}
	mark(d.stack[:cap(d.stack)])
	mark(d.one[:])
	for _, c := range d.memo {
		mark(c.v[:])
	}
	for _, v := range d.sparse {
		mark([]Val{v})
	}
	d.ofree = d.ofree[:0]
	d.olive = 0
	for i := range d.objs {
		if used[i] {
			d.olive++
		} else {
			d.objs[i] = nil
			d.ofree = append(d.ofree, int64(i))
		}
	}
	d.onew = 0
}

// containerShape is the shape of the container each container opcode
// makes: empty (EMPTY_*) or from the items above a MARK.
var containerShape = [256]Shape{
	OpEmptyList: ShapeList, OpEmptySet: ShapeSet, OpEmptyDict: ShapeDict,
	OpList: ShapeList, OpFrozenSet: ShapeSet, OpDict: ShapeDict, OpTuple: ShapeTuple,
}

// binInt reads the argument of BININT (four bytes, signed), BININT1 (one
// byte) or BININT2 (two bytes, little-endian, unsigned).
func (d *Machine) binInt(op byte) (int64, error) {
	switch op {
	case OpBinInt:
		u, err := d.uint32()
		return int64(int32(u)), err
	case OpBinInt1:
		b, err := d.readByte()
		return int64(b), err
	}
	b, err := d.peekN(2)
	if err != nil {
		return 0, err
	}
	return int64(b[0]) | int64(b[1])<<8, nil
}

// longBytes reads the two's-complement bytes of LONG1 (a one-byte
// length) or LONG4 (a signed four-byte length, bounded by MaxLongBytes).
func (d *Machine) longBytes(op byte) ([]byte, error) {
	if op == OpLong1 {
		n, err := d.readByte()
		if err != nil {
			return nil, err
		}
		return d.peekN(int(n))
	}
	u, err := d.uint32()
	if err != nil {
		return nil, err
	}
	if int32(u) < 0 {
		return nil, d.errf(nil, "negative length %d", int32(u))
	}
	if err := d.checkLen(uint64(u)); err != nil {
		return nil, err
	}
	if u > MaxLongBytes {
		return nil, d.limitf("long integer of %d bytes exceeds the limit of %d bytes", u, MaxLongBytes)
	}
	return d.readData(uint64(u))
}

// textLen reads the length argument of a str or bytes opcode: one byte
// (the SHORT_ forms), four (BINSTRING, BINUNICODE, BINBYTES; BINSTRING's
// is signed) or eight (the 8 forms and BYTEARRAY8).
func (d *Machine) textLen(op byte) (uint64, error) {
	switch op {
	case OpShortBinString, OpShortBinUnicode, OpShortBinBytes:
		n, err := d.readByte()
		return uint64(n), err
	case OpBinString, OpBinUnicode, OpBinBytes:
		u, err := d.uint32()
		if err == nil && op == OpBinString && int32(u) < 0 {
			return 0, d.errf(nil, "negative length %d", int32(u))
		}
		return uint64(u), err
	}
	return d.uint64()
}

// readText reads an n-byte str or bytes argument and pushes it as kind,
// or a Skipped placeholder where the schema skips it and no PUT keeps it.
// Short arguments are read in place from the buffer (and copied only if
// kept); long ones into a buffer of their own, which the value then owns.
func (d *Machine) readText(n uint64, kind Kind) error {
	node := d.newNode(ShapeNone)
	if err := d.checkLen(n); err != nil {
		return err
	}
	var b []byte
	var err error
	short := n <= 4096
	if short {
		// The byte after the text too, when the input has it: b is a
		// slice of the window, and nextIsPut below must not refill the
		// window under it (a string ending the window came back as
		// the bytes read after it).
		if d.n-d.i <= int(n) && d.rerr == nil {
			d.fill(int(n) + 1)
		}
		b, err = d.peekN(int(n))
	} else {
		b, err = d.readData(n)
	}
	if err != nil {
		return err
	}
	skip := node == NodeSkip
	if skip && !d.nextIsPut() {
		return d.push(Val{Kind: KindSkipped, N: d.opPos, Tag: d.tag(b)})
	}
	switch {
	case short && kind == KindStr:
		if err := d.addText(len(b)); err != nil {
			return err
		}
		return d.pushKept(b, skip)
	case short:
		if err := d.addText(len(b)); err != nil {
			return err
		}
		return d.push(Val{Kind: KindBytes, N: d.newObj(append([]byte{}, b...))})
	case kind == KindStr:
		// b is this string's own buffer, never written again: no copy.
		return d.push(d.strVal(d.longStrIndex(unsafe.String(&b[0], len(b)))))
	}
	return d.push(Val{Kind: KindBytes, N: d.newObj(b)})
}

// newContainer pushes an empty container of the given shape.
func (d *Machine) newContainer(shape Shape) error {
	switch node := d.newNode(shape); node {
	case NodeSkip:
		return d.push(Val{Kind: KindSkipped, Shape: shape, Node: node, Depth: 1, N: d.opPos})
	case NodeValue:
		if err := d.addItems(1); err != nil {
			return err
		}
		var v any
		if shape == ShapeDict {
			v = &Dict{}
		} else {
			v = &List{}
		}
		return d.push(Val{Kind: KindValue, Shape: shape, Depth: 1, N: d.newValue(v, 1, 0)})
	default:
		h, err := d.b.Open(node, shape, d.opPos)
		if err != nil {
			return d.errf(err, "")
		}
		return d.push(Val{Kind: KindNode, Shape: shape, Node: node, Depth: 1, N: h})
	}
}

// deepen records that c now holds values as deep as items, and their
// tags. For a generic container the record is its gnode, which the
// containers it was put in follow (nest).
func (d *Machine) deepen(c *Val, items []Val) error {
	var g *gnode
	if c.Kind == KindValue {
		g = d.gnodeOf(c)
		c.Depth, c.Tag = g.depth, g.tag
		if c.Shape != ShapeTuple {
			for i := range items {
				if it := &items[i]; it.Kind == KindValue && it.N == c.N {
					return d.cyclef(c)
				}
			}
		}
	}
	depth, tag := d.itemsDepth(c.Depth, c.Tag, items)
	c.Depth, c.Tag = depth, tag
	if int(c.Depth) > d.lim.MaxDepth {
		return d.limitf("nesting depth %d exceeds the limit of %d", c.Depth, d.lim.MaxDepth)
	}
	if c.Kind == KindSkipped {
		d.memoRefresh(c)
	} else if g != nil && c.Shape != ShapeTuple {
		// (A tuple here is one APPEND or SETITEM is about to refuse.)
		return d.nest(c, g, items)
	}
	return nil
}

// itemsDepth folds the depths and tags of items into a container's
// depth and tag: its depth is at least one more than each item's. A
// generic container's Val is brought up to date from its record first.
func (d *Machine) itemsDepth(depth int32, tag uint8, items []Val) (int32, uint8) {
	for i := range items {
		it := &items[i]
		d.syncValue(it)
		if it.Depth >= depth {
			depth = it.Depth + 1
		}
		tag |= it.Tag
	}
	return depth, tag
}

// gnode is the depth record of a generic container (a *List, *Dict or
// Tuple the machine built): its nesting depth, the union of its items'
// tags, and the first of the links (gedges, index plus one) to the
// containers it was put in. A container's depth lives here, with the
// object, and not in the Val of each reference to it: a pickle reaches
// a container through the memo (under several slots), DUP and the
// stack, and can fill it after it has put it in others, so that any
// copy of the depth would go stale (issue 11: a list stored in two
// slots and read through the second, or nested while empty and filled
// afterwards, undercounted the depth; a stale copy filled with one item
// lowered it). The Val of a generic container carries a copy, brought
// up to date (syncValue) wherever it is read: where it is nested, and
// before a Builder or a caller of Run sees it.
type gnode struct {
	depth int32
	first int32
	tag   uint8
}

// blocks is a table of the depth records (gnodes, gedges), which grow
// by one element at a time to as many as MaxItems and are never shrunk
// while the machine runs: it grows by fixed blocks, never copied, so
// that what it allocates is its final size. Every container has a
// record, an empty one popped at once included, and grown by append
// (which grows a large slice by a quarter, so that the slices a table
// outgrows add up to four times its final size) a pickle of 4 MB of
// EMPTY_DICT POP allocated 326 MiB, past the 256 MiB every input must
// stay within (its dicts alone take 194 MiB); see
// TestDepthRecordsAllocation. The elements are pointer-free and written
// whole by push, so a recycled table is not cleared.
type blocks[T any] struct {
	b []*[recordBlock]T
	n int32
}

// recordBlock is the number of records of a block of a blocks table
// (6 KiB of gnodes).
const recordBlock = 512

// at is the record of index i (below n). The index is taken unsigned, so
// that the division is a shift and the remainder a mask (a signed one
// costs a correction for negative numbers: at took twice the
// instructions, cachegrind).
func (t *blocks[T]) at(i int32) *T {
	return &t.b[uint32(i)/recordBlock][uint32(i)%recordBlock]
}

// push appends x and returns the table's new length (x's index plus one).
func (t *blocks[T]) push(x T) int32 {
	if int(uint32(t.n)/recordBlock) == len(t.b) {
		t.b = append(t.b, new([recordBlock]T))
	}
	*t.at(t.n) = x
	t.n++
	return t.n
}

// cap is how many records the table holds without a new block.
func (t *blocks[T]) cap() int { return len(t.b) * recordBlock }

// reset empties the table, keeping its blocks, and returns it.
func (t *blocks[T]) reset() blocks[T] { t.n = 0; return *t }

// appendDoubling is append for raise's work list, which can grow to as
// many links as MaxItems: it doubles a full slice's capacity, where
// append grows a large slice by a quarter, so that the slices it
// outgrows add up to twice its size rather than four times.
func appendDoubling[T any](s []T, x T) []T {
	if len(s) == cap(s) {
		t := make([]T, len(s), 2*cap(s)+16)
		copy(t, s)
		s = t
	}
	return append(s, x)
}

// gedge links a generic container to one it was put in (parent, a
// container id) and to the next such link of the same container.
type gedge struct{ parent, next int32 }

// gnodeOf is the depth record of the generic container v.
func (d *Machine) gnodeOf(v *Val) *gnode { return d.gnodes.at(d.ocid[v.N] - 1) }

// syncValue brings the depth and tags of a generic container's Val up to
// date from its record; other values have theirs in the Val.
func (d *Machine) syncValue(v *Val) {
	if v.Kind == KindValue {
		g := d.gnodeOf(v)
		v.Depth, v.Tag = g.depth, g.tag
	}
}

// link records that the generic containers among items were put in the
// container of id cid.
func (d *Machine) link(cid int32, items []Val) {
	for i := range items {
		if it := &items[i]; it.Kind == KindValue {
			g := d.gnodeOf(it)
			g.first = d.gedges.push(gedge{parent: cid, next: g.first})
		}
	}
}

// nest records that the generic list, set or dict c, whose record is g,
// now holds items, at the depth and tags deepen found: the items are
// linked to it, and if c was itself put in containers before, what it
// gained reaches them (raise).
func (d *Machine) nest(c *Val, g *gnode, items []Val) error {
	cid := d.ocid[c.N] - 1
	d.link(cid, items)
	if c.Depth == g.depth && c.Tag == g.tag {
		return nil
	}
	g.depth, g.tag = c.Depth, c.Tag
	if g.first == 0 {
		return nil // Python's order: a container is filled before it is put in another
	}
	return d.raise(c, cid)
}

// raise carries the depth and tags that container cid (c) gained to
// every container that holds it, directly or not, as far as they change
// anything. Python's pickler fills a container before it puts it in
// another (the items are written first), so that this never runs on
// its output; a hostile pickle that fills containers after nesting them
// pays for each link followed, and MaxItems bounds the links followed
// over the whole pickle, so that fanning a deepening container out to
// many parents ends in a limit error rather than quadratic time.
//
// When the walk comes back to c, c contains itself (a list appended to
// itself, directly or through others, as Python writes a recursive
// list): its depth is unbounded, and the pickle is refused (cyclef).
// It always comes back then: a container that holds c is at least one
// deeper than c, so c, holding it now, is deeper still, and every
// container on the way from c up to it becomes deeper too.
func (d *Machine) raise(c *Val, cid int32) error {
	work := append(d.gwork[:0], cid)
	defer func() { d.gwork = work[:0] }()
	// The first container found too deep is reported only once the
	// walk has ended without coming back to c: a cycle is the more
	// telling error, and a long one passes MaxDepth on its way round.
	var deep int32
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		gx := *d.gnodes.at(x)
		for e := gx.first; e != 0; e = d.gedges.at(e - 1).next {
			if d.graise++; d.graise > d.lim.MaxItems {
				return d.limitf("%d links followed to update the nesting depth of containers filled after they were nested exceed the limit of %d", d.graise, d.lim.MaxItems)
			}
			p := d.gedges.at(e - 1).parent
			gp := d.gnodes.at(p)
			if gp.depth > gx.depth && gp.tag|gx.tag == gp.tag {
				continue
			}
			if p == cid {
				return d.cyclef(c)
			}
			gp.depth, gp.tag = max(gp.depth, gx.depth+1), gp.tag|gx.tag
			if deep == 0 && int(gp.depth) > d.lim.MaxDepth {
				deep = gp.depth
			}
			work = appendDoubling(work, p)
		}
	}
	if deep > 0 {
		return d.limitf("nesting depth %d exceeds the limit of %d", deep, d.lim.MaxDepth)
	}
	return nil
}

// cyclef is the error for a generic container c that now contains
// itself: a nesting depth without bound, beyond any MaxDepth.
func (d *Machine) cyclef(c *Val) error {
	return d.limitf("the %s contains itself: its nesting depth is unbounded, beyond the limit of %d", c.TypeName(), d.lim.MaxDepth)
}

// memoRefresh copies the depth and tags of a skipped container that is
// in the memo to the memo's copy, which was taken when it was empty:
// every later reference to it (a stack frame a trace entry shares with
// others) must carry what it holds.
func (d *Machine) memoRefresh(c *Val) {
	m := uint64(c.N) >> offBits
	if m == 0 || m > uint64(d.memoN) {
		return
	}
	idx := m - 1
	s := &d.memo[idx/memoChunk].v[idx%memoChunk]
	if s.Kind != KindSkipped || s.N != c.N {
		return // the slot was stored again since
	}
	s.Depth, s.Tag = c.Depth, c.Tag
	d.depths[idx] = skipDepth(s)
}

// memoSkipped marks a skipped container v stored in memo slot idx with
// that slot (see offBits). A container stored twice keeps its first.
func memoSkipped(v *Val, idx uint64) {
	if v.Kind != KindSkipped || v.Shape == ShapeNone || uint64(v.N) > offMask || idx >= 1<<(63-offBits)-1 {
		return
	}
	v.N = v.N&offMask | int64(idx+1)<<offBits
}

// intoSchema gives items to c when c is not a generic container: dropped
// when c is skipped, handed to the Builder (build) when c is a schema
// node; either way the stack slots are cleared and done is true. For a
// generic container done is false and the caller fills it.
func (d *Machine) intoSchema(c *Val, items []Val, build func(*Val, []Val) error) (done bool, err error) {
	switch c.Kind {
	case KindSkipped:
		d.discard(items)
		return true, nil
	case KindNode:
		err := build(c, items)
		clear(items)
		if err != nil {
			return true, d.errf(err, "")
		}
		return true, nil
	}
	return false, nil
}

// appendTo adds list or set elements to the container c.
func (d *Machine) appendTo(c *Val, items []Val) error {
	if err := d.deepen(c, items); err != nil {
		return err
	}
	if !c.isContainer() || c.Shape == ShapeDict {
		return d.errf(nil, "append to %s", c.TypeName())
	}
	if done, err := d.intoSchema(c, items, func(c *Val, v []Val) error { return d.b.Append(c, v) }); done {
		return err
	}
	if err := d.addItems(len(items)); err != nil {
		return err
	}
	l := d.objs[c.N].(*List)
	for i := range items {
		x, err := d.Any(&items[i])
		if err != nil {
			return d.errf(err, "")
		}
		l.Items = append(l.Items, x)
		items[i] = Val{}
	}
	return nil
}

// setItems adds key, value pairs to the dict c.
func (d *Machine) setItems(c *Val, kv []Val, one bool) error {
	if len(kv)%2 != 0 {
		return d.errf(nil, "odd number of items (%d)", len(kv))
	}
	if err := d.deepen(c, kv); err != nil {
		return err
	}
	if !c.isContainer() || c.Shape != ShapeDict {
		if one {
			return d.errf(nil, "set item on %s", c.TypeName())
		}
		return d.errf(nil, "set items on %s", c.TypeName())
	}
	if done, err := d.intoSchema(c, kv, func(c *Val, v []Val) error { return d.b.SetItems(c, v) }); done {
		return err
	}
	if err := d.addItems(len(kv) / 2); err != nil {
		return err
	}
	m := d.objs[c.N].(*Dict)
	m.grow(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		k, err := d.Any(&kv[i])
		if err != nil {
			return d.errf(err, "")
		}
		v, err := d.Any(&kv[i+1])
		if err != nil {
			return d.errf(err, "")
		}
		if err := m.Set(k, v); err != nil {
			return d.errf(err, "")
		}
		kv[i], kv[i+1] = Val{}, Val{}
	}
	return nil
}

// fromItems pushes a container built from the items above a MARK (LIST,
// DICT, FROZENSET, TUPLE).
func (d *Machine) fromItems(shape Shape) error {
	items, err := d.popMark()
	if err != nil {
		return err
	}
	if shape == ShapeDict && len(items)%2 != 0 {
		return d.errf(nil, "odd number of items (%d)", len(items))
	}
	// items alias the stack above its new top: nothing is pushed until
	// they have gone into the new container.
	node := d.newNode(shape)
	// The container is built in the machine's own slot: a local would
	// escape to the heap through the Builder's interface.
	c := &d.built
	*c = Val{}
	if shape == ShapeTuple && node != NodeSkip {
		node = NodeValue
	}
	switch node {
	case NodeSkip:
		*c = Val{Kind: KindSkipped, Shape: shape, Depth: 1, N: d.opPos}
	case NodeValue:
		if err := d.addItems(1); err != nil {
			return err
		}
		switch shape {
		case ShapeDict:
			*c = Val{Kind: KindValue, Shape: shape, Depth: 1, N: d.newValue(&Dict{}, 1, 0)}
		case ShapeTuple:
			// A tuple is built whole: its depth is its items', and
			// its record (gnode) is made with it.
			t := d.tuple(len(items))
			depth, tag := d.itemsDepth(1, 0, items)
			if int(depth) > d.lim.MaxDepth {
				return d.limitf("nesting depth %d exceeds the limit of %d", depth, d.lim.MaxDepth)
			}
			if err := d.addItems(len(items)); err != nil {
				return err
			}
			for i := range items {
				if t[i], err = d.Any(&items[i]); err != nil {
					return d.errf(err, "")
				}
			}
			*c = Val{Kind: KindValue, Shape: shape, Depth: depth, Tag: tag, N: d.newValue(t, depth, tag)}
			d.link(d.ocid[c.N]-1, items)
		default:
			*c = Val{Kind: KindValue, Shape: shape, Depth: 1, N: d.newValue(&List{}, 1, 0)}
		}
	default:
		h, err := d.b.Open(node, shape, d.opPos)
		if err != nil {
			return d.errf(err, "")
		}
		*c = Val{Kind: KindNode, Shape: shape, Node: node, Depth: 1, N: h}
	}
	switch {
	case shape == ShapeTuple && node == NodeSkip:
		// A skipped tuple keeps only its depth and tags (appendTo
		// refuses tuples, which Python cannot append to).
		if err := d.deepen(c, items); err != nil {
			return err
		}
		d.discard(items)
	case shape != ShapeTuple:
		if shape == ShapeDict {
			err = d.setItems(c, items, false)
		} else {
			err = d.appendTo(c, items)
		}
		if err != nil {
			return err
		}
	}
	for i := range items {
		items[i] = Val{}
	}
	return d.push(*c)
}

// tupleN pushes a tuple of the top n values (TUPLE1, TUPLE2, TUPLE3).
// tupleSlab is how many items the backing array of small tuples
// (tuple) holds.
const tupleSlab = 256

// tuple returns a new Tuple of n items. Small ones are cut from a shared
// backing array, each with its capacity at its length (so that an append
// to one copies it rather than overwrite the next): a snapshot's
// segments have a segment_pool_id pair each, which would otherwise cost
// an allocation of its own on top of its boxing.
func (d *Machine) tuple(n int) Tuple {
	if n > 4 {
		return make(Tuple, n)
	}
	if len(d.tslab) < n {
		// The arrays double from 16 items: a small snapshot's few
		// pairs cost 256 bytes rather than 4 KiB an import.
		d.tslabN = min(max(2*d.tslabN, 16), tupleSlab)
		d.tslab = make([]any, d.tslabN)
	}
	t := d.tslab[:n:n]
	d.tslab = d.tslab[n:]
	return t
}

func (d *Machine) tupleN(n int) error {
	if len(d.stack)-d.base() < n {
		return d.errf(nil, "stack underflow")
	}
	d.marks = append(d.marks, len(d.stack)-n)
	return d.fromItems(ShapeTuple)
}

func (d *Machine) memoPut(idx uint64, v Val) error {
	if v.Kind == KindNode {
		v = Val{Kind: kindShared, Shape: v.Shape, Node: v.Node, Depth: v.Depth, N: d.opPos}
	}
	if d.sparse != nil && idx <= 2*uint64(d.nmemo)+memoSlack {
		// The slice is about to hold idx: an older entry in the map
		// must not shadow it (or be counted twice).
		if _, ok := d.sparse[idx]; ok {
			delete(d.sparse, idx)
			d.nmemo--
		}
	}
	if idx >= uint64(d.memoN) && idx <= 2*uint64(d.nmemo)+memoSlack {
		for uint64(d.memoN) <= idx {
			c := memoPool.Get().(*memoBlock) // clean: see release
			d.memo = append(d.memo, c)
			d.memoN += memoChunk
			if d.depths == nil {
				if p, ok := depthsPool.Get().(*[]uint8); ok {
					d.depths, d.dbox = (*p)[:0], p
				}
			}
			d.depths = append(d.depths, make([]uint8, memoChunk)...)
		}
	}
	if idx < uint64(d.memoN) {
		c := d.memo[idx/memoChunk]
		s := &c.v[idx%memoChunk]
		if s.Kind == kindUnset {
			d.nmemo++
		}
		d.memoHi = max(d.memoHi, int(idx)+1)
		*s = v
		d.depths[idx] = skipDepth(&v)
		return d.memoLimit()
	}
	if d.sparse == nil {
		d.sparse = make(map[uint64]Val)
	}
	if _, ok := d.sparse[idx]; !ok {
		d.nmemo++
	}
	d.sparse[idx] = v
	return d.memoLimit()
}

// memoChunk is the number of memo slots allocated at a time.
const memoChunk = 1024

// memoBlock is a chunk of memo slots with, beside each, what a batch of
// GETs into a skipped list needs of it (skipBatch): one byte instead of
// the 16 of its Val, so that the stack frames a snapshot repeats in every
// trace entry are read past without touching the values themselves.
type memoBlock struct {
	v [memoChunk]Val
}

// skipDepth packs what skipBatch needs of v: its nesting depth plus one
// in the low six bits and its tag in the two high ones, or 0 when a
// skipped list may not take v in the fast path: a hole, a Builder's
// container or its memo copy (these need step's checks), a generic
// container (before a new value in a batch it changes the value's node:
// fastBatch must see it), a depth beyond six bits or a tag beyond two.
func skipDepth(v *Val) uint8 {
	switch v.Kind {
	case kindUnset, kindShared, KindNode, KindValue:
		return 0
	}
	if v.Depth < 0 || v.Depth >= 63 || v.Tag > 3 {
		return 0
	}
	return uint8(v.Depth) + 1 | v.Tag<<6
}

func (d *Machine) memoLimit() error {
	if d.nmemo > d.lim.MaxMemo || d.memoN > 2*d.lim.MaxMemo+memoSlack+memoChunk {
		return d.limitf("memo of %d entries exceeds the limit of %d", d.nmemo, d.lim.MaxMemo)
	}
	return nil
}

func (d *Machine) memoGet(idx uint64) (Val, error) {
	if idx < uint64(d.memoN) {
		if v := &d.memo[idx/memoChunk].v[idx%memoChunk]; v.Kind != kindUnset {
			return *v, nil
		}
	}
	if v, ok := d.sparse[idx]; ok {
		return v, nil
	}
	return Val{}, d.errf(nil, "memo index %d not defined", idx)
}

// Run runs the pickle to its STOP opcode and returns the top-level value.
func (d *Machine) Run() (Val, error) {
	v, err := d.run()
	if err != nil {
		d.discard(d.stack)
	}
	d.syncValue(&v)
	d.release()
	if err != nil {
		return Val{}, err
	}
	return v, nil
}

// The window and the memo's chunks are reused by the next machine: a
// snapshot's memo alone is a megabyte.
var (
	windowPool = sync.Pool{New: func() any { return new([windowSize]byte) }}
	memoPool   = sync.Pool{New: func() any { return new(memoBlock) }}
	depthsPool sync.Pool // *[]uint8: a machine's depths, clean
)

// release returns the window and the memo to their pools once the pickle
// has run (the object and string tables stay: Any, Obj and Str use them).
func (d *Machine) release() {
	if len(d.buf) == windowSize {
		windowPool.Put((*[windowSize]byte)(d.buf))
	}
	// A block goes back clean, which costs the slots used rather than
	// the whole block (17 KiB, most of a small snapshot's memo).
	for k, c := range d.memo {
		if n := min(d.memoHi-k*memoChunk, memoChunk); n > 0 {
			clear(c.v[:n])
		}
		memoPool.Put(c)
	}
	if d.depths != nil {
		clear(d.depths[:min(d.memoHi, len(d.depths))])
		if d.dbox == nil {
			d.dbox = new([]uint8)
		}
		*d.dbox = d.depths[:0]
		depthsPool.Put(d.dbox)
		d.depths, d.dbox = nil, nil
	}
	d.memoHi = 0
	if d.slots != nil {
		clear(d.slots[:d.slotHi]) // d.fs's, which goes back to fastPool below
		d.slots, d.slotHi = nil, 0
	}
	if d.fs != nil {
		// Clean already: the scans clear what they use.
		fastPool.Put(d.fs)
		d.fs = nil
	}
	if d.tt != nil && cap(d.memo) <= recycleMemo {
		// The slice of blocks too (an allocation of every import).
		clear(d.memo)
		d.tt.memo = d.memo[:0]
	}
	d.buf, d.memo, d.memoN, d.sparse = nil, nil, 0, nil
	d.i, d.n = 0, 0
	if cap(d.stack) <= recycleStack && cap(d.marks) <= recycleStack {
		// Pointer-free, so put back as it is: append overwrites what a
		// slot held.
		st := d.sbox
		if st == nil {
			st = new(stacks)
		}
		st.vals, st.marks = d.stack[:0], d.marks[:0]
		stackPool.Put(st)
	}
	d.stack, d.marks, d.sbox = nil, nil, nil
}

// stacks are a released machine's stack and marks, for the next one: a
// snapshot's trace is a batch of 1000 entries on the stack, and growing
// the stack to it again was a quarter of the bytes a warm import
// allocated (and so of its collections).
type stacks struct {
	vals  []Val
	marks []int
}

var stackPool sync.Pool // *stacks

// recycleStack is the largest stack (values or marks) stackPool keeps
// (a MiB of values): a hostile pickle may have grown it to MaxStack.
const recycleStack = 1 << 16

func (d *Machine) run() (Val, error) {
	for {
		if d.n-d.i < 16 {
			d.fill(16) // best effort: the arguments are checked anyway
		}
		d.opPos = d.off0 + int64(d.i)
		d.op = 0
		if d.i >= d.n {
			if d.rerr == nil || d.rerr == io.EOF {
				if d.opPos == 0 {
					return Val{}, &Error{Offset: 0, Msg: "empty input", Err: io.ErrUnexpectedEOF}
				}
				return Val{}, &Error{Offset: d.opPos, Msg: "truncated input: no STOP opcode", Err: io.ErrUnexpectedEOF}
			}
			return Val{}, &Error{Offset: d.opPos, Msg: "read", Err: d.rerr}
		}
		op := d.buf[d.i]
		d.i++
		d.op = op
		// The opcodes that make up most of a snapshot, when their
		// argument is in the window and nothing can go wrong; anything
		// else (an error included) is step's.
		if d.n-d.i >= 8 && len(d.stack)+len(d.marks) < d.lim.MaxStack {
			switch op {
			case OpBinGet, OpLongBinGet:
				var idx uint
				k := 1
				if op == OpBinGet {
					idx = uint(d.buf[d.i])
				} else {
					idx, k = uint(binary.LittleEndian.Uint32(d.buf[d.i:])), 4
				}
				if idx < uint(d.memoN) {
					if v := d.memo[idx/memoChunk].v[idx%memoChunk]; v.Kind != kindUnset && v.Kind != kindShared {
						d.i += k
						d.stack = append(d.stack, v)
						continue
					}
				}
			case OpMemoize:
				// The next memo slot, already allocated and free (a
				// memo without a sparse part): memoPut's work, less
				// its checks.
				if t := len(d.stack); d.sparse == nil && t > d.base() && d.nmemo < d.lim.MaxMemo {
					if idx := uint(d.nmemo); idx < uint(d.memoN) {
						c := d.memo[idx/memoChunk]
						if s := &c.v[idx%memoChunk]; s.Kind == kindUnset {
							v := &d.stack[t-1]
							memoSkipped(v, uint64(idx))
							if v.Kind == KindNode {
								*s = Val{Kind: kindShared, Shape: v.Shape, Node: v.Node, Depth: v.Depth, N: d.opPos}
								d.depths[idx] = 0
							} else {
								*s = *v
								d.depths[idx] = skipDepth(v)
							}
							d.nmemo++
							d.memoHi = max(d.memoHi, int(idx)+1)
							continue
						}
					}
				}
			case OpEmptyDict:
				if d.flat != nil {
					if done, err := d.fastDict(); done {
						if err != nil {
							return Val{}, err
						}
						continue
					}
				}
			case OpEmptyList:
				if d.flat != nil && d.fastSkipped() {
					continue
				}
			case OpMark:
				if d.skipBatch() {
					continue
				}
				d.marks = append(d.marks, len(d.stack))
				continue
			case OpBinInt1:
				d.stack = append(d.stack, Val{Kind: KindInt, N: int64(d.buf[d.i])})
				d.i++
				continue
			case OpBinInt2:
				d.stack = append(d.stack, Val{Kind: KindInt, N: int64(binary.LittleEndian.Uint16(d.buf[d.i:]))})
				d.i += 2
				continue
			case OpBinInt:
				d.stack = append(d.stack, Val{Kind: KindInt, N: int64(int32(binary.LittleEndian.Uint32(d.buf[d.i:])))})
				d.i += 4
				continue
			case OpLong1:
				if n := int(d.buf[d.i]); n <= 7 {
					var u uint64
					for j := n; j >= 1; j-- {
						u = u<<8 | uint64(d.buf[d.i+j])
					}
					shift := uint(64 - 8*n)
					if n == 0 {
						u, shift = 0, 0
					}
					d.stack = append(d.stack, Val{Kind: KindInt, N: int64(u<<shift) >> shift})
					d.i += 1 + n
					continue
				}
			}
		}
		if err := d.step(op); err != nil {
			if err == errStop {
				return d.pop()
			}
			return Val{}, err
		}
	}
}

// skipBatch runs, after a MARK, a batch of GETs appended to a skipped
// list (a snapshot's stack frames: MARK, GETs of frames seen before,
// APPENDS) without pushing and discarding each item: what the batch
// changes is only the list's depth. It reports false, having done
// nothing, for any other batch, one not wholly in the window, or one that
// would fail (step then runs it and reports the error).
func (d *Machine) skipBatch() bool {
	t := len(d.stack)
	if t == 0 || (len(d.marks) > 0 && d.marks[len(d.marks)-1] >= t) {
		return false
	}
	c := &d.stack[t-1]
	if c.Kind != KindSkipped || (c.Shape != ShapeList && c.Shape != ShapeSet) {
		return false
	}
	room := d.lim.MaxStack - t - len(d.marks) - 1 // pushes the batch may make
	depth, cnt := int32(-1), 0
	var tag uint8
	buf := d.buf[:d.n]
	for j := d.i; j < len(buf); {
		var idx uint
		switch buf[j] {
		case OpBinGet:
			if j+2 > len(buf) {
				return false
			}
			idx = uint(buf[j+1])
			j += 2
		case OpLongBinGet:
			if j+5 > len(buf) {
				return false
			}
			idx = uint(binary.LittleEndian.Uint32(buf[j+1:]))
			j += 5
		case OpAppends:
			if cnt > 0 && depth >= c.Depth {
				if int(depth)+1 > d.lim.MaxDepth {
					return false
				}
				c.Depth = depth + 1
			}
			c.Tag |= tag
			d.memoRefresh(c)
			d.i = j + 1
			return true
		default:
			return false
		}
		if idx >= uint(d.memoN) {
			return false
		}
		dp := d.depths[idx]
		if dp == 0 {
			return false
		}
		depth = max(depth, int32(dp&63)-1)
		tag |= dp >> 6
		if cnt++; cnt > room {
			return false
		}
	}
	return false
}

var errStop = errors.New("STOP")

// step runs one opcode.
func (d *Machine) step(op byte) error {
	switch op {
	case OpProto:
		b, err := d.readByte()
		if err != nil {
			return err
		}
		if b > maxProtocol {
			return d.errf(nil, "unsupported protocol %d", b)
		}
	case OpFrame:
		// Frames only batch reads; the opcodes inside are decoded the
		// same way, so the length is read and ignored.
		if _, err := d.uint64(); err != nil {
			return err
		}
	case OpStop:
		if len(d.stack) <= d.base() {
			return d.errf(nil, "stack underflow")
		}
		return errStop
	case OpMark:
		if len(d.stack)+len(d.marks) >= d.lim.MaxStack {
			return d.limitf("stack of %d values and marks exceeds the limit of %d", len(d.stack)+len(d.marks), d.lim.MaxStack)
		}
		d.marks = append(d.marks, len(d.stack))
	case OpPop:
		if len(d.stack) > d.base() {
			v, _ := d.pop()
			d.discard([]Val{v})
		} else {
			items, err := d.popMark()
			if err != nil {
				return d.errf(nil, "stack underflow")
			}
			d.discard(items)
		}
	case OpPopMark:
		items, err := d.popMark()
		if err != nil {
			return err
		}
		d.discard(items)
	case OpDup:
		v, err := d.top()
		if err != nil {
			return err
		}
		if v.Kind == KindNode {
			return d.errf(nil, "DUP of a %s (unsupported structure)", d.b.Describe(v.Node))
		}
		return d.push(*v)
	case OpNone:
		return d.push(Val{Kind: KindNone})
	case OpNewTrue:
		return d.push(Val{Kind: KindBool, N: 1})
	case OpNewFalse:
		return d.push(Val{Kind: KindBool})

	case OpInt, OpLong:
		line, err := d.readLine()
		if err != nil {
			return err
		}
		if op == OpInt {
			// Protocol 0 writes the bools as INT "00" and "01".
			switch string(line) {
			case "00":
				return d.push(Val{Kind: KindBool})
			case "01":
				return d.push(Val{Kind: KindBool, N: 1})
			}
		} else if n := len(line); n > 0 && line[n-1] == 'L' {
			line = line[:n-1]
		}
		v, err := d.parseInt(line)
		if err != nil {
			return err
		}
		return d.push(v)
	case OpBinInt, OpBinInt1, OpBinInt2:
		n, err := d.binInt(op)
		if err != nil {
			return err
		}
		return d.push(IntVal(n))
	case OpLong1, OpLong4:
		b, err := d.longBytes(op)
		if err != nil {
			return err
		}
		return d.push(d.long(b))

	case OpFloat:
		line, err := d.readLine()
		if err != nil {
			return err
		}
		f, err := parseFloat(line)
		if err != nil {
			return d.errf(nil, "bad float %q", truncate(line))
		}
		return d.push(Val{Kind: KindFloat, N: int64(math.Float64bits(f))})
	case OpBinFloat:
		b, err := d.peekN(8)
		if err != nil {
			return err
		}
		u := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
		return d.push(Val{Kind: KindFloat, N: int64(u)})

	case OpString:
		node := d.newNode(ShapeNone)
		line, err := d.readLine()
		if err != nil {
			return err
		}
		s, err := unquoteString(line)
		if err != nil {
			return d.errf(nil, "%v", err)
		}
		if err := d.addText(len(s)); err != nil {
			return err
		}
		return d.pushStr([]byte(s), node)
	case OpUnicode:
		node := d.newNode(ShapeNone)
		line, err := d.readLine()
		if err != nil {
			return err
		}
		s := rawUnicodeEscape(line)
		if err := d.addText(len(s)); err != nil {
			return err
		}
		return d.pushStr([]byte(s), node)
	case OpBinString, OpShortBinString, OpShortBinUnicode, OpBinUnicode, OpBinUnicode8,
		OpShortBinBytes, OpBinBytes, OpBinBytes8, OpByteArray8:
		n, err := d.textLen(op)
		if err != nil {
			return err
		}
		switch op {
		case OpShortBinBytes, OpBinBytes, OpBinBytes8, OpByteArray8:
			return d.readText(n, KindBytes)
		}
		return d.readText(n, KindStr)

	case OpEmptyList, OpEmptySet, OpEmptyDict:
		return d.newContainer(containerShape[op])
	case OpList, OpFrozenSet, OpDict, OpTuple:
		return d.fromItems(containerShape[op])
	case OpEmptyTuple:
		if err := d.addItems(1); err != nil {
			return err
		}
		return d.push(Val{Kind: KindValue, Shape: ShapeTuple, Depth: 1, N: d.newValue(Tuple{}, 1, 0)})
	case OpTuple1, OpTuple2, OpTuple3:
		return d.tupleN(int(op-OpTuple1) + 1)

	case OpAppend:
		v, err := d.pop()
		if err != nil {
			return err
		}
		c, err := d.top()
		if err != nil {
			d.discard([]Val{v})
			return err
		}
		d.one[0] = v
		return d.appendTo(c, d.one[:])
	case OpAppends, OpAddItems, OpSetItems:
		items, err := d.popMark()
		if err != nil {
			return err
		}
		c, err := d.top()
		if err != nil {
			d.discard(items)
			return err
		}
		if op == OpSetItems {
			return d.setItems(c, items, false)
		}
		return d.appendTo(c, items)
	case OpSetItem:
		if len(d.stack)-d.base() < 3 {
			return d.errf(nil, "stack underflow")
		}
		n := len(d.stack)
		kv := d.stack[n-2 : n]
		d.stack = d.stack[:n-2]
		return d.setItems(&d.stack[n-3], kv, true)

	case OpPut, OpBinPut, OpLongBinPut, OpMemoize:
		idx, err := d.memoIndex(op)
		if err != nil {
			return err
		}
		v, err := d.top()
		if err != nil {
			return err
		}
		memoSkipped(v, idx)
		return d.memoPut(idx, *v)
	case OpGet, OpBinGet, OpLongBinGet:
		idx, err := d.memoIndex(op)
		if err != nil {
			return err
		}
		v, err := d.memoGet(idx)
		if err != nil {
			return err
		}
		if v.Kind == kindShared {
			return d.errf(nil, "memo index %d is a second reference to the %s stored at offset %d: shared references to a %s are refused (unsupported structure)", idx, d.b.Describe(v.Node), v.N, d.b.Describe(v.Node))
		}
		return d.push(v)

	case OpGlobal, OpStackGlobal, OpReduce, OpBuild, OpInst, OpObj, OpNewObj,
		OpNewObjEx, OpExt1, OpExt2, OpExt4, OpPersID, OpBinPersID,
		OpNextBuffer, OpReadonlyBuffer:
		return &Error{Offset: d.opPos, Op: opName(op), Err: ErrRefused}
	default:
		return &Error{Offset: d.opPos, Msg: fmt.Sprintf("unknown opcode 0x%02x", op)}
	}
	return nil
}

// parseFloat parses a protocol-0 FLOAT argument; out-of-range values
// become ±Inf as in Python.
func parseFloat(line []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(line), 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, err
		}
	}
	return f, nil
}

// anyBoxes are boxed values (an int64 or a string in an interface) that
// Any hands out again instead of boxing the same value anew: the boxing
// of a generic dict's keys and values was about a third of the
// allocations of a small snapshot's import (its allocator_settings: ten
// str keys, each a 16-byte box, and a dict of sixteen int keys up to
// 32768, eight of them beyond the 256 values the runtime keeps boxed).
// They live in the recycled textTables, so that the next import finds
// them: the keys of one snapshot's settings are those of the next. A
// string's box holds a copy of its own (the machine's strings live in
// blocks the next machine overwrites), made the second time a string
// of that hash is boxed, so that strings met once cost no more than
// before. Both tables are direct-mapped: a collision replaces the entry.
type anyBoxes struct {
	ints [64]struct {
		n int64
		b any
	}
	strs [256]strBox
}

// strBox is a boxed string of anyBoxes.
type strBox struct {
	h uint64 // the hash of s, or of a string met once (b nil)
	s string
	b any
}

// int returns n boxed.
func (x *anyBoxes) int(n int64) any {
	if uint64(n) < 256 {
		return n // the runtime's static boxes
	}
	e := &x.ints[uint64(n)*0x9e3779b97f4a7c15>>58]
	if e.b == nil || e.n != n {
		e.n, e.b = n, n
	}
	return e.b
}

// str returns s boxed; s may be a machine's string (see anyBoxes). A
// string has two slots it may take (two bytes of its hash), so that two
// strings of a snapshot rarely evict each other at every import.
func (x *anyBoxes) str(s string) any {
	if len(s) == 0 || len(s) > internMax {
		return s
	}
	h := strHash(s)
	e1, e2 := &x.strs[h>>56], &x.strs[h>>48&255]
	for _, e := range [2]*strBox{e1, e2} {
		if e.h != h {
			continue
		}
		if e.b == nil || e.s != s {
			// The second time: keep a copy of its own.
			c := strings.Clone(s)
			e.s, e.b = c, c
		}
		return e.b
	}
	// The first time: noted in an empty slot, else in one without a
	// box, else in the first.
	e := e1
	switch {
	case e1.h == 0:
	case e2.h == 0, e1.b != nil && e2.b == nil:
		e = e2
	}
	e.h, e.s, e.b = h, "", nil
	return s
}

// strHash is a hash of a string of at most internMax bytes for
// anyBoxes: its length and its first and last eight bytes, mixed by a
// multiplication whose high bits depend on all of them. Two strings of
// the same hash only share slots (str compares the strings); FNV over
// every byte cost 2,400 instructions an import for a snapshot's
// settings.
func strHash(s string) uint64 {
	var a, b uint64
	if n := len(s); n >= 8 {
		p := unsafe.Slice(unsafe.StringData(s), n)
		a, b = binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[n-8:])
	} else {
		for i := 0; i < n; i++ {
			a = a<<8 | uint64(s[i])
		}
	}
	h := (a ^ uint64(len(s))<<56) * 0x9e3779b97f4a7c15
	h = (h ^ h>>29 ^ b) * 0xbf58476d1ce4e5b9
	return h ^ h>>32
}
