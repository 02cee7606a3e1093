package bfc

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"membench/internal/freeset"
	"membench/strategies"
)

// binsState prints every field of the free chunks' sets, the sets
// behind the pointers included (fmt prints unexported fields), to
// compare an allocator's free chunks before and after a call.
func binsState(f *freeBins) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n", *f)
	for _, s := range append([]*freeset.Set{f.one, f.spareOne, f.big}, f.small...) {
		if s != nil {
			fmt.Fprintf(&b, "%+v\n", *s)
		}
	}
	return b.String()
}

// TestTouchMallocChangesNothing replays one random sequence through two
// allocators, 16,000 allocations, a quarter of them freed, then 10,000
// frees and allocations in turn, so that the free chunks pass from the
// sorted array to one set to the exact-size bins; one allocator is touched (TouchMalloc)
// before every allocation with its size and with random sizes (as the
// replay touches an allocation ahead, and sizes that may never come,
// including none and more than any region). A TouchMalloc must leave
// the free sets and the chunk records exactly as they were (checked
// field by field for one in 500), and both
// allocators must place every allocation alike and end alike and sound.
func TestTouchMallocChangesNothing(t *testing.T) {
	d, _ := strategies.ParseDevice("a100-80g")
	opts := Options{Limit: 4 * gib}
	touched := New(opts, strategies.NewMemory(&d))
	plain := New(opts, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(13, 14))
	size := func() int64 {
		if rng.IntN(100) == 0 {
			return 1<<20 + rng.Int64N(4<<20)
		}
		return 1 + rng.Int64N(64<<10)
	}
	checks := 0
	touch := func(n int64) {
		checks++
		if checks%500 != 0 {
			// The whole state is printed for one touch in 500 (it
			// takes milliseconds); every touch counts in the
			// placements compared below.
			touched.TouchMalloc(n, 0)
			return
		}
		f, chunks := binsState(touched.free), slices.Clone(touched.chunks)
		touched.TouchMalloc(n, 0)
		if f != binsState(touched.free) || !slices.Equal(chunks, touched.chunks) {
			t.Fatalf("TouchMalloc(%d) changed the allocator", n)
		}
	}
	var hs []strategies.Handle
	sawBins := false
	for k := 0; k < 30000; k++ {
		// 16,000 allocations, then a quarter of them freed (thousands
		// of holes, more than binAt free chunks at once), then a free
		// and an allocation in turn.
		if k >= 16000 {
			i := rng.IntN(len(hs))
			touched.Free(hs[i])
			plain.Free(hs[i])
			hs[i] = hs[len(hs)-1]
			hs = hs[:len(hs)-1]
			if k < 20000 {
				continue
			}
		}
		n := size()
		sawBins = sawBins || !touched.free.inFew && touched.free.one == nil
		if k%7 == 0 {
			touch(size())
		}
		if k%11 == 0 {
			touch([]int64{0, -1, 1 << 62}[k%3])
		}
		touch(n)
		h1, ok1 := touched.Malloc(n, 0)
		h2, ok2 := plain.Malloc(n, 0)
		if h1 != h2 || ok1 != ok2 {
			t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
		}
		if !ok1 {
			continue
		}
		if a1, s1 := touched.Chunk(h1); true {
			if a2, s2 := plain.Chunk(h2); a1 != a2 || s1 != s2 {
				t.Fatalf("step %d: %d B at %d (%d B) touched, %d (%d B) not", k, n, a1, s1, a2, s2)
			}
		}
		hs = append(hs, h1)
	}
	if !sawBins {
		t.Fatal("the free chunks never reached the exact-size bins: TouchMalloc was never asked anything")
	}
	var l1, l2 []strategies.Segment
	touched.Layout(func(s strategies.Segment) { l1 = append(l1, s) })
	plain.Layout(func(s strategies.Segment) { l2 = append(l2, s) })
	if !reflect.DeepEqual(l1, l2) {
		t.Fatal("the layouts differ")
	}
	for _, a := range []*Allocator{touched, plain} {
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
