package pickle

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// TestObjectSweep runs enough objects through the object table for its
// slots to be swept and reused: values still on the stack, in the memo or
// in containers keep theirs.
func TestObjectSweep(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x02]\x94(") // the list (memo 0), MARK
	big9 := "\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09"
	const n = 20000
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("b%d", i)
		p.WriteString(big9 + "0") // a big int, dropped
		p.WriteString("C" + string(rune(len(s))) + s)
		if i%1000 == 0 {
			p.WriteString("r" + string([]byte{byte(i / 1000), 0, 0, 1})) // LONG_BINPUT 2^24+k
		}
		p.WriteString(")0]0}0") // containers, dropped
		long := strings.Repeat("s", internMax+1) + s
		p.WriteString("X" + string([]byte{byte(len(long)), 0, 0, 0}) + long + "0")
	}
	p.WriteString("e") // APPENDS
	for k := 0; k < n/1000; k++ {
		p.WriteString("j" + string([]byte{byte(k), 0, 0, 1}) + "a") // LONG_BINGET, APPEND
	}
	p.WriteString(big9 + "a.")
	v, err := Decode(bytes.NewReader(p.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	items := v.(*List).Items
	if len(items) != n+n/1000+1 {
		t.Fatalf("%d items", len(items))
	}
	for i := 0; i < n; i++ {
		if b, ok := items[i].([]byte); !ok || string(b) != fmt.Sprintf("b%d", i) {
			t.Fatalf("item %d: %v", i, items[i])
		}
	}
	for k := 0; k < n/1000; k++ {
		if b, ok := items[n+k].([]byte); !ok || string(b) != fmt.Sprintf("b%d", 1000*k) {
			t.Fatalf("memo item %d: %v", k, items[n+k])
		}
	}
	want, _ := new(big.Int).SetString("090807060504030201", 16)
	if z, ok := items[len(items)-1].(*big.Int); !ok || z.Cmp(want) != 0 {
		t.Fatalf("big: %v", items[len(items)-1])
	}
}

// TestSkipBatch checks that a batch of GETs appended to a skipped list
// (run without pushing them) ends as the same batch run one opcode at a
// time does: the same depth limit, the same errors at the same offsets.
func TestSkipBatch(t *testing.T) {
	lim := DefaultLimits
	lim.MaxDepth = 3
	run := func(p string, root Node) (Val, error) {
		return NewMachine(strings.NewReader(p), nil, root, lim).Run()
	}
	// Lists nested through the memo: each level holds the previous one
	// twice (and is dropped from the stack).
	nest := func(levels int) string {
		p := "]\x940"
		for k := 1; k < levels; k++ {
			p += "](" + "h" + string(rune(k-1)) + "h" + string(rune(k-1)) + "e\x940"
		}
		return p
	}
	for _, c := range []struct {
		name, p string
		want    string
	}{
		{"depth ok", "\x80\x02]" + nest(3) + ".", ""},
		{"depth over", "\x80\x02]" + nest(4) + ".", "nesting depth 4 exceeds the limit of 3"},
		{"undefined", "\x80\x02](h\x05e.", "memo index 5 not defined"},
		{"long get undefined", "\x80\x02]\x94(j\x00\x00\x00\x00j\x07\x00\x00\x00e.", "memo index 7 not defined"},
		{"not a batch", "\x80\x02]\x94]\x94(h\x00Ne.", ""},
	} {
		_, err1 := run(c.p, NodeSkip)
		_, err2 := run(c.p, NodeValue)
		for _, err := range []error{err1, err2} {
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Errorf("%s: skipped %v, built %v", c.name, err1, err2)
		}
	}
}

// TestMemoBlocksComeBackClean: a machine's memo chunks go back to the
// pool with only their used slots cleaned, so the slots a pickle stored
// in (through MEMOIZE, BINPUT and LONG_BINPUT, in the first chunk and
// the second) must read as undefined to the next pickle, which
// allocates both chunks again (500 MEMOIZEs, then a LONG_BINPUT into the
// second chunk) but does not store in them.
func TestMemoBlocksComeBackClean(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x04")
	for i := 0; i < 1500; i++ {
		p.WriteString("N\x940") // None, MEMOIZE, POP
	}
	p.WriteString("Nq\x050")             // BINPUT 5 again
	p.WriteString("Nr\xe0\x05\x00\x000") // LONG_BINPUT 1504
	p.WriteString("N.")
	var q bytes.Buffer
	q.WriteString("\x80\x04")
	for i := 0; i < 500; i++ {
		q.WriteString("N\x940")
	}
	q.WriteString("Nr\x24\x04\x00\x000") // LONG_BINPUT 1060
	for _, idx := range []int{500, 777, 1023, 1024, 1499, 1504, 1600} {
		if _, err := Decode(bytes.NewReader(p.Bytes())); err != nil {
			t.Fatal(err)
		}
		get := q.String() + "j" + string([]byte{byte(idx), byte(idx >> 8), 0, 0}) + "."
		_, err := Decode(strings.NewReader(get))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("memo index %d not defined", idx)) {
			t.Errorf("GET %d after a pickle that stored it: %v, want memo index not defined", idx, err)
		}
	}
	// The second pickle's own slots are defined.
	if v, err := Decode(strings.NewReader(q.String() + "j\x24\x04\x00\x00.")); err != nil || v != nil {
		t.Errorf("GET 1060: %v, %v; want None", v, err)
	}
}
