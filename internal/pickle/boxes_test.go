package pickle

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestAnyBoxes: the boxes Any hands out again hold the value asked for,
// whatever collides in the tables (random short strings and ints, each
// boxed a few times over), and a string's box is a copy of its own.
func TestAnyBoxes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 901))
	var x anyBoxes
	var strs []string
	var ints []int64
	for range 2000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = "ab8_2x"[r.IntN(6)]
		}
		strs = append(strs, string(b))
		ints = append(ints, r.Int64N(1<<20)-1<<19)
	}
	for range 4 {
		for i, s := range strs {
			buf := []byte(s) // the machine's string, overwritten below
			got := x.str(string(buf))
			clear(buf)
			if got.(string) != s {
				t.Fatalf("str(%q) = %q", s, got)
			}
			if got := x.int(ints[i]); got.(int64) != ints[i] {
				t.Fatalf("int(%d) = %v", ints[i], got)
			}
		}
	}
	// A box outlives the bytes it was made from.
	b := []byte("max_split_size")
	x.str(string(b))
	got := x.str(string(b))
	copy(b, "XXXXXXXXXXXXXX")
	if got.(string) != "max_split_size" {
		t.Fatalf("a box shares the machine's bytes: %q", got)
	}
}

// TestAnyBoxesReused: a recycled machine's boxes serve the next, so that
// decoding the same generic dict again (string keys, ints beyond 255)
// allocates less, gives the same value, and a pickle decoded in between
// with other strings in the recycled text blocks changes nothing.
func TestAnyBoxesReused(t *testing.T) {
	var p bytes.Buffer
	p.WriteString("\x80\x04}\x94(")
	for i := range 12 {
		k := fmt.Sprintf("setting_%02d", i)
		fmt.Fprintf(&p, "\x8c%c%s\x94M%c%c", len(k), k, byte(i), 1+byte(i))
	}
	p.WriteString("u.")
	other := strings.NewReplacer("setting", "zzzzzzz").Replace(p.String())
	want := func(s string) any {
		d := NewDict()
		for i := range 12 {
			name := "setting"
			if strings.Contains(s, "zzz") {
				name = "zzzzzzz"
			}
			d.Set(fmt.Sprintf("%s_%02d", name, i), int64(i)|int64(1+i)<<8)
		}
		return d
	}
	decode := func(s string) any {
		x, m := runAny(t, strings.NewReader(s))
		if w := want(s); !eq(x, w) {
			t.Fatalf("decoded %v, want %v", x, w)
		}
		m.Recycle()
		return x
	}
	first := testing.AllocsPerRun(1, func() { decode(p.String()) })
	decode(p.String())
	decode(other)
	later := testing.AllocsPerRun(20, func() { decode(p.String()) })
	t.Logf("%.0f allocations a decode, %.0f the first", later, first)
	if later > first-20 {
		t.Fatalf("%.0f allocations a decode with the boxes kept, %.0f without", later, first)
	}
}

// TestAnyBoxesSameHash: strings of the same length and the same first
// and last eight bytes have the same hash (strHash reads no more), and
// each must still decode to itself, whichever comes first and however
// often, over machines that hand their boxes to the next; so must ints
// beyond the runtime's static boxes, a hundred of them for the int
// table's 64 slots, so that some share one.
func TestAnyBoxesSameHash(t *testing.T) {
	a, b := "abcdefghXXXXijklmnop", "abcdefghYYYYijklmnop"
	if strHash(a) != strHash(b) {
		t.Fatalf("strHash(%q) != strHash(%q): pick two strings it cannot tell apart", a, b)
	}
	for round := range 6 {
		var want []any
		for i := range 4 {
			s := a
			if (i+round)%3 == 1 {
				s = b
			}
			want = append(want, s)
		}
		for i := range 100 {
			want = append(want, int64(1000+i*(round+1)))
		}
		var p bytes.Buffer
		p.WriteString("\x80\x04](")
		for _, x := range want {
			switch x := x.(type) {
			case string:
				fmt.Fprintf(&p, "\x8c%c%s", len(x), x)
			case int64:
				fmt.Fprintf(&p, "I%d\n", x)
			}
		}
		p.WriteString("e.")
		x, m := runAny(t, bytes.NewReader(p.Bytes()))
		if got := x.(*List).Items; !slices.Equal(got, want) {
			t.Fatalf("round %d: decoded %v, want %v", round, got, want)
		}
		m.Recycle()
	}
}

// runAny decodes the pickle r holds into a generic value on a new
// machine, which it returns for the caller to recycle.
func runAny(t *testing.T, r io.Reader) (any, *Machine) {
	t.Helper()
	m := NewMachine(r, nil, NodeValue, DefaultLimits)
	v, err := m.Run()
	if err != nil {
		t.Fatal(err)
	}
	x, err := m.Any(&v)
	if err != nil {
		t.Fatal(err)
	}
	return x, m
}
