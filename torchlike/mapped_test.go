package torchlike

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
)

// overlapsScan is Overlaps as it was, a pass over every block: the
// reference TestOverlapsAsScan compares with.
func overlapsScan(a *Allocator, addr, size int64) bool {
	for i := range a.arena {
		b := &a.arena[i]
		if b.inUse() && b.mapped() && addr < b.addr+b.size && b.addr < addr+size {
			return true
		}
	}
	return false
}

// overlapsStep takes one step of a random program on a: an allocation
// (some failing), a free of a live block, or an empty_cache().
func overlapsStep(a *Allocator, rng *rand.Rand, live *[]strategies.Handle) {
	switch x := rng.IntN(100); {
	case x < 50:
		size := int64(1 + rng.IntN(64<<20))
		if rng.IntN(4) == 0 {
			size = int64(1 + rng.IntN(1<<20))
		}
		if h, ok := a.Malloc(size, int64(rng.IntN(3))); ok {
			*live = append(*live, h)
		}
	case x < 95 && len(*live) > 0:
		k := rng.IntN(len(*live))
		a.Free((*live)[k])
		(*live)[k] = (*live)[len(*live)-1]
		*live = (*live)[:len(*live)-1]
	default:
		a.EmptyCache()
	}
}

// askOverlaps asks a about eight ranges at, inside, across and between
// its blocks, failing where Overlaps and the scan differ (where names the
// moment), and returns how many overlap.
func askOverlaps(t *testing.T, a *Allocator, rng *rand.Rand, where func() string) (yes int) {
	t.Helper()
	for range 8 {
		var addr int64
		if len(a.arena) > 0 {
			b := &a.arena[rng.IntN(len(a.arena))]
			addr = b.addr + rng.Int64N(max(b.size, 1)+1<<20) - 1<<19
		}
		size := 1 + rng.Int64N(4<<20)
		got, want := a.Overlaps(addr, size), overlapsScan(a, addr, size)
		if got != want {
			t.Fatalf("%s: Overlaps(%#x, %d) %v, the scan %v", where(), addr, size, got, want)
		}
		if want {
			yes++
		}
	}
	return yes
}

// TestOverlapsAsScan: Overlaps, a search of the mapped ranges the model
// keeps from its device events once asked, answers as the pass over every
// block did, on random programs of allocations (some failing), frees and
// releases, with and without expandable segments and with caching off,
// asked about ranges at, inside, across and between blocks, first at
// random steps and then at every step.
func TestOverlapsAsScan(t *testing.T) {
	for _, knobs := range []string{"", "expandable_segments=true", "expandable_segments=true,large_segment_size_mb=11", "PYTORCH_NO_CUDA_MEMORY_CACHING=1"} {
		for seed := range uint64(6) {
			a := newTorch(t, knobs, "a100-40g:capacity=1GiB")
			rng := rand.New(rand.NewPCG(seed, 5))
			var live []strategies.Handle
			asked, yes := 0, 0
			for step := range 3000 {
				overlapsStep(a, rng, &live)
				if step < 1000 && rng.IntN(50) != 0 {
					continue
				}
				yes += askOverlaps(t, a, rng, func() string { return fmt.Sprintf("%q seed %d step %d", knobs, seed, step) })
				asked += 8
			}
			if yes == 0 || yes == asked {
				t.Fatalf("%q seed %d: %d of %d ranges overlap: the test asks nothing worth asking", knobs, seed, yes, asked)
			}
		}
	}
}

// TestCloneKeepsOverlaps: a clone of a model that has been asked Overlaps
// keeps the mapped ranges (a copy, not rebuilt from every block at its
// first question, which was half of validating a recording with an
// empty_cache() every few steps over thousands of live blocks), and then
// the clone and the original each answer as a scan of their own blocks
// while they run different programs.
func TestCloneKeepsOverlaps(t *testing.T) {
	for _, knobs := range []string{"", "expandable_segments=true"} {
		a := newTorch(t, knobs, "a100-40g:capacity=1GiB")
		rng := rand.New(rand.NewPCG(1, 9))
		var live []strategies.Handle
		for range 500 {
			overlapsStep(a, rng, &live)
		}
		askOverlaps(t, a, rng, func() string { return fmt.Sprintf("%q before the clone", knobs) })
		mem := *a.mem
		c := a.Clone(&mem)
		if c.mappedSet == nil || c.mappedSet == a.mappedSet {
			t.Fatalf("%q: the clone's mapped ranges are %p, the original's %p: not a copy", knobs, c.mappedSet, a.mappedSet)
		}
		cLive := slices.Clone(live)
		cRng := rand.New(rand.NewPCG(2, 9))
		for step := range 1000 {
			overlapsStep(a, rng, &live)
			overlapsStep(c, cRng, &cLive)
			askOverlaps(t, a, rng, func() string { return fmt.Sprintf("%q the original, step %d", knobs, step) })
			askOverlaps(t, c, cRng, func() string { return fmt.Sprintf("%q the clone, step %d", knobs, step) })
		}
	}
}
