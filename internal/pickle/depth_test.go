package pickle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
)

// depthCase is a pickle and what decoding it under MaxDepth = lim must
// give: an *Error wrapping ErrLimit at the opcode at offset off whose
// text contains want, or (want "") a value of the given depth.
type depthCase struct {
	name  string
	p     string
	lim   int
	want  string
	off   int   // -1: want no error
	depth int64 // the decoded value's depth (refDepth) when it decodes
}

// TestDepthThroughMemo holds one pickle for each way the memo's copies
// of a generic container used to undercount its nesting depth (issue
// 11), each refused at the opcode that makes the value too deep; and the
// same shapes just within the limit, which decode. Each refused pickle
// decoded without error before the depth was kept with the object.
func TestDepthThroughMemo(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("]", n) + strings.Repeat("a", n) }
	cases := []depthCase{
		// (a) A list stored in two memo slots (PUT twice), filled to
		// depth 9 and read through the second slot, whose copy was
		// taken empty: two lists around it make 11.
		{"two slots", "\x80\x04]\x94\x94" + nest(8) + "0" + "]]h\x01aa.", 10, "nesting depth 11 exceeds the limit of 10", -2, 0},
		{"two slots, within", "\x80\x04]\x94\x94" + nest(8) + "0" + "]h\x01a.", 10, "", -1, 10},
		// (b) A list put in its parent while empty, then filled through
		// the memo: the parent's depth must follow.
		{"filled after nesting", "\x80\x04]\x94]\x94a0h\x01" + nest(9) + "0h\x00.", 10, "nesting depth 11 exceeds the limit of 10", -3, 0},
		{"filled after nesting, within", "\x80\x04]\x94]\x94a0h\x01" + nest(8) + "0h\x00.", 10, "", -1, 10},
		// The same one level down, through a tuple and a dict: the
		// depth reaches every container that holds the list.
		{"filled after nesting, tuple and dict", "\x80\x04]\x94\x85\x94}\x94K\x01h\x01s0h\x00" + nest(8) + "0h\x02.", 10, "nesting depth 11 exceeds the limit of 10", -3, 0},
		// (c) A stale copy (the second slot's, depth 1) filled with one
		// item must not lower the depth the first slot's reference
		// gives: the list is 10 deep, and a list around it 11.
		{"stale copy", "\x80\x04]\x94\x94" + nest(9) + "0h\x01Na0]h\x00a.", 10, "nesting depth 11 exceeds the limit of 10", -2, 0},
		{"stale copy, within", "\x80\x04]\x94\x94" + nest(8) + "0h\x01Na0]h\x00a.", 10, "", -1, 10},
		// A DUP's copy on the stack is as stale as the memo's.
		{"dup", "\x80\x04]2" + nest(9) + "0\x85.", 10, "nesting depth 11 exceeds the limit of 10", -2, 0},
		// A list that contains itself has no depth: refused at the
		// APPEND that closes the cycle, directly, through another list
		// or through a tuple (Python's recursive.p4 and rectuple.p4).
		{"contains itself", "\x80\x02]q\x00h\x00a.", 1000, "contains itself", -2, 0},
		{"contains itself through a list", "\x80\x04]\x94]\x94h\x00aa.", 1000, "contains itself", -2, 0},
		{"contains itself through a tuple", "\x80\x04]\x94h\x00\x85\x94a.", 1000, "contains itself", -2, 0},
		{"contains itself, deep", "\x80\x04]\x94" + nest(5) + "0]h\x00a\x940h\x00h\x01a.", 1000, "contains itself", -2, 0},
	}
	for _, c := range cases {
		checkDepthCase(t, c)
	}
}

// checkDepthCase decodes c.p and checks the outcome. An offset of -2
// names the last opcode of the pickle (or the one before its STOP), -3
// its last APPEND.
func checkDepthCase(t *testing.T, c depthCase) {
	t.Helper()
	lim := DefaultLimits
	lim.MaxDepth = c.lim
	v, err := DecodeLimits(strings.NewReader(c.p), lim)
	if c.want == "" {
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			return
		}
		if got := refDepth(v); got != c.depth {
			t.Errorf("%s: decoded a value of depth %d, want %d", c.name, got, c.depth)
		}
		return
	}
	off := int64(c.off)
	if c.off == -3 {
		off = int64(strings.LastIndexByte(c.p, 'a'))
	}
	if c.off == -2 {
		off = int64(len(c.p) - 1)
		if strings.HasSuffix(c.p, ".") {
			off--
		}
	}
	var pe *Error
	if err == nil || !errors.As(err, &pe) || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), c.want) {
		t.Errorf("%s: got %v, want an *Error wrapping ErrLimit containing %q", c.name, err, c.want)
	} else if pe.Offset != off {
		t.Errorf("%s: offset %d, want %d (%v)", c.name, pe.Offset, off, err)
	}
}

// TestDepthChain is the reviewer's chain (issue 11) in small: each list
// holds the one before, read through the second of its two memo slots,
// 20,000 deep in 200 KB. It decoded without error; it must stop at the
// APPEND that makes depth 1001.
func TestDepthChain(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x04]\x94\x94") // list 0 in slots 0 and 1
	var at1001 int
	for k := 1; k < 20000; k++ {
		p.WriteString("]\x94\x94")                                                          // list k in slots 2k, 2k+1
		p.Write([]byte{'j', byte(2*k - 1), byte((2*k - 1) >> 8), byte((2*k - 1) >> 16), 0}) // list k-1, its second slot
		if k == 1000 {
			at1001 = p.Len()
		}
		p.WriteString("a0")
	}
	p.WriteString("N.")
	_, err := Decode(bytes.NewReader(p.Bytes()))
	var pe *Error
	if err == nil || !errors.As(err, &pe) || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "nesting depth 1001 exceeds the limit of 1000") {
		t.Fatalf("got %v, want nesting depth 1001", err)
	}
	if pe.Offset != int64(at1001) {
		t.Fatalf("offset %d, want %d", pe.Offset, at1001)
	}
}

// refDepth is the nesting depth of a decoded value, computed the plain
// way (recursively, over values known to be acyclic and shallow).
func refDepth(v any) int64 {
	var items []any
	switch v := v.(type) {
	case *List:
		items = v.Items
	case Tuple:
		items = v
	case *Dict:
		items = append(append(items, v.Keys()...), v.Values()...)
	default:
		return 0
	}
	var d int64
	for _, x := range items {
		d = max(d, refDepth(x))
	}
	return d + 1
}

// model is a reference interpreter for the opcodes genDepthPickle
// writes: plain Go containers, whose depths are computed from scratch
// after every opcode.
type mcont struct {
	tuple bool
	dict  bool
	set   bool
	items []*mcont // nil for a scalar item
}

// mdepth is c's nesting depth, or -1 when c contains itself.
func mdepth(c *mcont, path map[*mcont]bool) int64 {
	if c == nil {
		return 0
	}
	if path[c] {
		return -1
	}
	path[c] = true
	defer delete(path, c)
	var d int64
	for _, x := range c.items {
		e := mdepth(x, path)
		if e < 0 {
			return -1
		}
		d = max(d, e)
	}
	return d + 1
}

// genDepthPickle writes a random pickle of lists, sets, tuples and dicts
// that share containers through the memo, fill them after nesting them
// (one item at a time, or a marked batch: APPENDS, ADDITEMS, SETITEMS),
// build them from marked items (LIST, TUPLE, FROZENSET, DICT), DUP and
// store them twice, and reports, from the model, the offset of the first
// opcode after which some container built so far is deeper than lim or
// contains itself (-1: none), and the depth of the value it returns.
func genDepthPickle(r *rand.Rand, n, lim int) (p []byte, fail int, depth int64) {
	var b bytes.Buffer
	b.WriteString("\x80\x04")
	var stack, memo, all []*mcont
	// marks are the stack's lengths at the open MARKs; base is the
	// innermost one's, below which no opcode but the one that closes
	// the mark reaches (the machine, like Python's unpickler, refuses).
	var marks []int
	base := func() int {
		if len(marks) == 0 {
			return 0
		}
		return marks[len(marks)-1]
	}
	isList := func(c *mcont) bool { return c != nil && !c.tuple && !c.dict && !c.set }
	// item pushes a value to put in a batch: None, an int, a new empty
	// list or a container from the memo.
	item := func() {
		switch k := r.IntN(4); {
		case k == 0:
			b.WriteByte('N')
			stack = append(stack, nil)
		case k == 1:
			b.Write([]byte{'K', byte(r.IntN(256))})
			stack = append(stack, nil)
		case k == 2 || len(memo) == 0:
			b.WriteByte(']')
			c := &mcont{}
			stack, all = append(stack, c), append(all, c)
		default:
			i := r.IntN(len(memo))
			b.Write([]byte{'h', byte(i)})
			stack = append(stack, memo[i])
		}
	}
	fail = -1
	for step := 0; step < n || len(marks) > 0; step++ {
		at := b.Len()
		top := len(stack) - 1
		bs := base()
		k := r.IntN(19)
		if step >= n {
			k = 15 // past n steps, close the open marks: LIST
		}
		switch {
		case k <= 1:
			b.WriteByte(']')
			c := &mcont{}
			stack, all = append(stack, c), append(all, c)
		case k == 2:
			b.WriteByte('N')
			stack = append(stack, nil)
		case k == 3 && top >= bs && len(memo) < 250:
			b.WriteByte(0x94)
			memo = append(memo, stack[top])
		case k <= 5 && len(memo) > 0:
			i := r.IntN(len(memo))
			b.Write([]byte{'h', byte(i)})
			stack = append(stack, memo[i])
		case k == 6 && top-1 >= bs && isList(stack[top-1]):
			b.WriteByte('a')
			stack[top-1].items = append(stack[top-1].items, stack[top])
			stack = stack[:top]
		case k == 7 && top >= bs:
			m := min(top+1-bs, 1+r.IntN(3))
			b.WriteByte("\x85\x86\x87"[m-1])
			c := &mcont{tuple: true, items: append([]*mcont(nil), stack[top+1-m:]...)}
			stack, all = append(stack[:top+1-m], c), append(all, c)
		case k == 8 && top >= max(1, bs):
			b.WriteByte('0')
			stack = stack[:top]
		case k == 9 && top >= bs:
			b.WriteByte('2')
			stack = append(stack, stack[top])
		case k == 10:
			b.WriteByte('}')
			c := &mcont{dict: true}
			stack, all = append(stack, c), append(all, c)
		case k == 11 && top-1 >= bs && stack[top-1] != nil && stack[top-1].dict && len(memo) < 250:
			// dict, value -> dict, key, value: the value goes through
			// the memo (MEMOIZE, POP, the key, GET) and SETITEM. Each
			// key is new (a replaced value would still count: see
			// deepen), and an int (depth 0).
			d := stack[top-1]
			vi := len(memo)
			memo = append(memo, stack[top])
			b.Write([]byte{0x94, '0', 'K', byte(len(d.items)), 'h', byte(vi)})
			at = b.Len()
			b.WriteByte('s')
			d.items = append(d.items, stack[top])
			stack = stack[:top]
		case k == 12:
			b.WriteByte(0x8f) // EMPTY_SET
			c := &mcont{set: true}
			stack, all = append(stack, c), append(all, c)
		case k == 13 && len(marks) < 4:
			b.WriteByte('(')
			marks = append(marks, len(stack))
		case k == 14 && len(marks) > 0 && bs >= 1 && bs-1 >= base2(marks) &&
			(isList(stack[bs-1]) || stack[bs-1] != nil && stack[bs-1].set):
			// APPENDS to a list, ADDITEMS to a set: the marked items
			// join the container below the mark.
			c := stack[bs-1]
			if c.set {
				b.WriteByte(0x90)
			} else {
				b.WriteByte('e')
			}
			c.items = append(c.items, stack[bs:]...)
			stack, marks = stack[:bs], marks[:len(marks)-1]
		case k == 15 && len(marks) > 0:
			// LIST, TUPLE or FROZENSET of the marked items.
			c := &mcont{items: append([]*mcont(nil), stack[bs:]...)}
			switch r.IntN(3) {
			case 0:
				b.WriteByte('l')
			case 1:
				b.WriteByte('t')
				c.tuple = true
			default:
				b.WriteByte(0x91)
				c.set = true
			}
			stack, marks, all = append(stack[:bs], c), marks[:len(marks)-1], append(all, c)
		case (k == 16 || k == 17) && top >= bs && (k == 17 || stack[top] != nil && stack[top].dict):
			// A marked batch of key, value pairs with new int keys:
			// SETITEMS into the dict on top, or a new DICT.
			var d *mcont
			if k == 16 {
				d = stack[top]
			} else {
				d = &mcont{dict: true}
			}
			b.WriteByte('(')
			marks = append(marks, len(stack))
			for range r.IntN(4) {
				b.Write([]byte{'K', byte(len(d.items))}) // each key new
				item()
				d.items = append(d.items, stack[len(stack)-1])
			}
			at = b.Len()
			stack, marks = stack[:marks[len(marks)-1]], marks[:len(marks)-1]
			if k == 16 {
				b.WriteByte('u')
			} else {
				b.WriteByte('d')
				stack, all = append(stack, d), append(all, d)
			}
		case k == 18 && len(marks) > 0 && top >= bs:
			// A few more items in the open batch.
			for range 1 + r.IntN(3) {
				item()
			}
			continue
		default:
			continue
		}
		if fail < 0 {
			for _, c := range all {
				if e := mdepth(c, map[*mcont]bool{}); e < 0 || e > int64(lim) {
					fail = at
					break
				}
			}
		}
	}
	if len(stack) == 0 {
		b.WriteByte('N')
		stack = append(stack, nil)
	}
	b.WriteByte('.')
	return b.Bytes(), fail, mdepth(stack[len(stack)-1], map[*mcont]bool{})
}

// base2 is the stack length at the mark below the innermost (0 for
// none): the container that APPENDS or ADDITEMS fills sits between the
// two marks.
func base2(marks []int) int {
	if len(marks) < 2 {
		return 0
	}
	return marks[len(marks)-2]
}

// TestDepthModel compares the machine with the model on random pickles
// that reach containers through the memo and DUP, fill them after they
// are nested, one item at a time or in marked batches, and make cycles:
// the same pickles are refused, at the same opcode, with an ErrLimit; the
// others decode to a value whose depth, computed over the decoded value,
// is the model's. The batches (APPENDS, ADDITEMS, SETITEMS, and LIST,
// TUPLE, FROZENSET and DICT of marked items) catch what single items
// cannot: with the depth of a batch taken from its first two items only,
// every other test passed and this one failed.
func TestDepthModel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 700))
	refused, decoded := 0, 0
	for i := range 3000 {
		lim := 2 + r.IntN(6)
		p, fail, depth := genDepthPickle(r, 5+r.IntN(60), lim)
		l := DefaultLimits
		l.MaxDepth = lim
		v, err := DecodeLimits(bytes.NewReader(p), l)
		what := fmt.Sprintf("pickle %d (limit %d) %q", i, lim, p)
		if fail >= 0 {
			var pe *Error
			if err == nil || !errors.As(err, &pe) || !errors.Is(err, ErrLimit) {
				t.Fatalf("%s: %v, want a limit error at offset %d", what, err, fail)
			}
			if pe.Offset != int64(fail) {
				t.Fatalf("%s: %v, want offset %d", what, err, fail)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := refDepth(v); got != depth {
			t.Fatalf("%s: decoded value of depth %d, the model's is %d", what, got, depth)
		}
		decoded++
	}
	if refused < 300 || decoded < 300 {
		t.Fatalf("%d refused, %d decoded: too few of either to compare", refused, decoded)
	}
}

// TestDepthRecordsAllocation: the depth records (gnode, gedge) cost what
// they hold, 12 bytes a container and 8 a link, and not the slices that
// append outgrows on the way (about four times as much), so that a
// pickle of nothing but new containers stays within fuzzbound's 256 MiB:
// 4 MB of EMPTY_DICT POP allocated 326 MiB with append, 218 MiB with
// blocks (194 MiB before the records). The pickles are of 2^17 empty
// lists popped at once, and of as many appended to a list in the memo
// and popped (a link each); the bytes a container allocated are 57 and
// 81 (41 and 57 before the records), 113 and 169 with append.
func TestDepthRecordsAllocation(t *testing.T) {
	const n = 1 << 17
	for _, c := range []struct {
		body string
		max  float64 // bytes allocated a container
	}{
		{"]0", 70},
		{"]h\x00a0", 100},
	} {
		r := func() io.Reader {
			return &repeatReader{head: "\x80\x04]\x94", body: c.body, n: n, tail: "N."}
		}
		if _, err := Decode(r()); err != nil {
			t.Fatal(err)
		}
		var err error
		_, a := fuzzbound.Measure(func() { _, err = Decode(r()) })
		if err != nil {
			t.Fatal(err)
		}
		if per := float64(a) / n; per > c.max {
			t.Errorf("%q × %d: %.1f bytes allocated a container, want at most %.0f", c.body, n, per, c.max)
		}
	}
}

// recordsBuilder is a FlatBuilder whose root (node 10) is a list of flat
// records (node 11) holding generic values under every key, so that the
// fast path reads a record whose value is a memo reference to a generic
// list.
type recordsBuilder struct{}

func (recordsBuilder) Child(c *Val, key *Val) Node {
	if c.Node == 10 {
		return 11
	}
	return NodeValue
}
func (recordsBuilder) Flat(n Node) bool                       { return n == 11 }
func (recordsBuilder) Open(Node, Shape, int64) (int64, error) { return 0, nil }
func (recordsBuilder) SetItems(*Val, []Val) error             { return nil }
func (recordsBuilder) Append(*Val, []Val) error               { return nil }
func (recordsBuilder) Drop(*Val)                              {}
func (recordsBuilder) Describe(Node) string                   { return "record" }
func (recordsBuilder) Shape(Node) Shape                       { return ShapeNone }

// TestFastPathMemoDepth: a flat record whose value is a memo reference
// to a generic list filled after it was stored (its memo copy says depth
// 1) counts the list's depth from its record (fastGet's syncValue), as
// the general path does, and both stop at the same opcode. Without the
// sync the fast path took the record for 2 deep and the root for 3, and
// the pickle decoded where the general path refused it.
func TestFastPathMemoDepth(t *testing.T) {
	p := "\x80\x04]\x94" + // the root list, node 10
		"}\x94\x8c\x01g\x94]\x94sa" + // a record {"g": L}, L empty in memo 3
		"h\x03(]]]]aaae0" + // L filled through the memo: depth 5
		"(}\x94(h\x02h\x03ue" + // a batch of a record {"g": L} the fast path reads: 6; the root 7
		"N0N0N0N0N0N0." // the ten bytes the fast path wants in the window past a key
	at := int64(strings.LastIndexByte(p, 'e'))
	for _, max := range []int{6, 7} {
		var errs [2]error
		for k, off := range []bool{false, true} {
			lim := DefaultLimits
			lim.MaxDepth, lim.NoFastPath = max, off
			m := NewMachine(strings.NewReader(p), recordsBuilder{}, 10, lim)
			_, errs[k] = m.Run()
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Errorf("MaxDepth %d: fast path %v, general path %v", max, errs[0], errs[1])
		}
		want := ""
		if max == 6 {
			want = "nesting depth 7 exceeds the limit of 6"
		}
		var pe *Error
		switch {
		case want == "" && errs[1] != nil:
			t.Errorf("MaxDepth %d: %v", max, errs[1])
		case want != "" && (errs[1] == nil || !strings.Contains(errs[1].Error(), want) || !errors.As(errs[1], &pe) || pe.Offset != at):
			t.Errorf("MaxDepth %d: got %v, want %q at offset %d", max, errs[1], want, at)
		}
	}
}
