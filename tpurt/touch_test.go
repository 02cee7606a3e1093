package tpurt

import (
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
)

// TestTouchChangesNoPlacement replays one random sequence of 30,000 live
// buffers (tens of thousands of free ranges, past touchSpans, so that
// Touch asks for the free set's leaves and the frees take the kept
// paths) through two heaps, one touched as a replay touches (each free's
// buffer two event pairs ahead, plus touches of freed, stale and absent
// handles) and one never touched: every buffer must land at the same
// offset, and the heaps must end alike and sound.
func TestTouchChangesNoPlacement(t *testing.T) {
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=8GiB")
	touched := New(Options{}, strategies.NewMemory(&d))
	plain := New(Options{}, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(3, 4))
	size := func() int64 {
		if rng.IntN(100) == 0 {
			return 1<<20 + rng.Int64N(2<<20)
		}
		return 512 + rng.Int64N(48<<10)
	}
	const live, steps = 30000, 60000
	hs := make([]strategies.Handle, live)
	for i := range hs {
		n := size()
		h1, ok1 := touched.Malloc(n, 0)
		h2, ok2 := plain.Malloc(n, 0)
		if !ok1 || !ok2 || h1 != h2 {
			t.Fatalf("warm-up %d: handles %d %v and %d %v", i, h1, ok1, h2, ok2)
		}
		hs[i] = h1
	}
	picks := make([]int, steps)
	for k := range picks {
		picks[k] = rng.IntN(live)
	}
	sawSpans := 0
	for k, v := range picks {
		if k+2 < steps {
			touched.Touch(hs[picks[k+2]])
		}
		switch rng.IntN(16) {
		case 0:
			touched.Touch(hs[rng.IntN(live)]) // a free further ahead, or none
		case 1:
			touched.Touch(strategies.Handle(touched.bufs.Len() + 5)) // no such buffer
		case 2:
			touched.Touch(-1)
		}
		sawSpans = max(sawSpans, touched.free.Len())
		touched.Free(hs[v])
		plain.Free(hs[v])
		if k%3 == 0 {
			touched.Touch(hs[v]) // freed: nothing to ask for
		}
		n := size()
		h1, ok1 := touched.Malloc(n, 0)
		h2, ok2 := plain.Malloc(n, 0)
		if !ok1 || !ok2 || h1 != h2 {
			t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
		}
		o1, s1 := touched.Block(h1)
		o2, s2 := plain.Block(h2)
		if o1 != o2 || s1 != s2 || s1 != touched.Round(n) {
			t.Fatalf("step %d: %d B placed at %d (%d B) touched, %d (%d B) not", k, n, o1, s1, o2, s2)
		}
		hs[v] = h1
		if k%10000 == 0 {
			if err := touched.Check(); err != nil {
				t.Fatalf("step %d: %v", k, err)
			}
		}
	}
	if sawSpans < touchSpans {
		t.Fatalf("the free set held at most %d ranges: Touch never asked for a leaf", sawSpans)
	}
	var l1, l2 []strategies.Segment
	touched.Layout(func(s strategies.Segment) { l1 = append(l1, s) })
	plain.Layout(func(s strategies.Segment) { l2 = append(l2, s) })
	if len(l1) != len(l2) {
		t.Fatalf("layouts of %d and %d segments", len(l1), len(l2))
	}
	for i := range l1 {
		if !slices.Equal(l1[i].Blocks, l2[i].Blocks) {
			t.Fatalf("segment %d differs", i)
		}
	}
	for _, a := range []*Allocator{touched, plain} {
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
