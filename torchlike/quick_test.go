package torchlike

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"membench/strategies"
)

// refMalloc is malloc by its general path alone (allocator-spec §1.7):
// round_size, then mallocSlow's get_free_block, whose findFreeBlock
// applies every rule (the stream, max_split_size's refusals, the
// expandable walk) before allocFoundBlock takes the block; none of
// Malloc's short paths (quick, TakeFit, takeDone, fitTried, the
// expandable path).
func refMalloc(a *Allocator, orig, stream int64) (strategies.Handle, bool) {
	if a.cfg.NoCaching {
		return a.mallocNoCache(orig, stream)
	}
	size := a.cfg.roundSize(orig)
	pl := &a.large
	if size <= SmallSize {
		pl = &a.small
	}
	return a.mallocSlow(orig, size, stream, pl, false)
}

// TestMallocAsGeneralPath replays random workloads through Malloc and,
// on a twin allocator, through refMalloc, and compares them after every
// event: the block each allocation gets (its address and size), whether
// it fits, and every statistic; and every few events the layouts and the
// invariants (Check). The configurations are those that take Malloc's
// short paths (the default, expandable segments) and those that must
// not, or only in part (max_split_size, garbage collection, power-of-two
// rounding, a memory fraction), on a device small enough that the
// fallbacks run: release of cached blocks, the retry, OOM. Sizes cover
// both pools and both sides of 1 MiB, 2 MiB and 10 MiB, on three streams,
// so that a best fit of another stream and large-pool remainders of 1
// MiB or less (which do not split) are met, and multiples of 512 KiB, so
// that exact fits are. Each configuration must
// meet out-of-memory failures, or the fallbacks were not tested.
func TestMallocAsGeneralPath(t *testing.T) {
	for _, knobs := range []string{
		"",
		"expandable_segments=true",
		"max_split_size_mb=24",
		"per_process_memory_fraction=0.6,garbage_collection_threshold=0.5",
		"roundup_power2_divisions=4",
		"per_process_memory_fraction=0.5",
		"expandable_segments=true,per_process_memory_fraction=0.5",
	} {
		t.Run("knobs="+knobs, func(t *testing.T) {
			const device = "a100-40g:capacity=256MiB"
			a, r := newTorch(t, knobs, device), newTorch(t, knobs, device)
			rng := rand.New(rand.NewPCG(9, uint64(len(knobs))))
			type pair struct{ a, r strategies.Handle }
			var live []pair
			var ooms int
			for step := range 6000 {
				if len(live) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(live))
					a.Free(live[i].a)
					r.Free(live[i].r)
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
				} else {
					var size int64
					switch rng.IntN(8) {
					case 0:
						size = 1 + rng.Int64N(12<<20)
					case 1:
						size = (1 << 20) + rng.Int64N(1<<20) // large pool, up to 2 MiB
					case 2:
						size = 1 + rng.Int64N(40<<20)
					case 3:
						// 512 KiB to 2 MiB in steps of 512 KiB: best
						// fits of the same size, taken whole, and with
						// expandable segments the tail of a page that
						// could grow (untake).
						size = int64(1+rng.IntN(4)) << 19
					default:
						size = 1 + rng.Int64N(256<<10)
					}
					stream := rng.Int64N(3)
					ha, oka := a.Malloc(size, stream)
					hr, okr := refMalloc(r, size, stream)
					if oka != okr {
						t.Fatalf("step %d: Malloc(%d, %d) fits %v, the general path %v", step, size, stream, oka, okr)
					}
					if !oka {
						ooms++
					} else {
						if ba, br := a.arena[ha], r.arena[hr]; ba.addr != br.addr || ba.size != br.size {
							t.Fatalf("step %d: Malloc(%d, %d) took %d B at %#x, the general path %d B at %#x", step, size, stream, ba.size, ba.addr, br.size, br.addr)
						}
						live = append(live, pair{ha, hr})
					}
				}
				if ga, gr := *a.Stats(), *r.Stats(); ga != gr {
					t.Fatalf("step %d: statistics differ:\n%s", step, statDiff(ga.Map(), gr.Map()))
				}
				if step%500 == 0 {
					if err := sameLayout(a, r); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
			}
			if ooms == 0 {
				t.Errorf("no allocation failed: the fallbacks were not met")
			}
		})
	}
}

// statDiff lists the statistics that differ between got and want.
func statDiff(got, want map[string]int64) string {
	var s string
	for k, w := range want {
		if g := got[k]; g != w {
			s += fmt.Sprintf("  %s: %d, the general path %d\n", k, g, w)
		}
	}
	return s
}

// sameLayout compares the allocators' layouts and checks both.
func sameLayout(a, r *Allocator) error {
	for _, x := range []*Allocator{a, r} {
		if err := x.Check(); err != nil {
			return err
		}
	}
	var la, lr []strategies.Segment
	a.Layout(func(s strategies.Segment) { la = append(la, s) })
	r.Layout(func(s strategies.Segment) { lr = append(lr, s) })
	if fmt.Sprint(la) != fmt.Sprint(lr) {
		return fmt.Errorf("layouts differ:\n%v\n%v", la, lr)
	}
	return nil
}

// TestExactGrowableTail: with expandable segments, a request the size of a
// page's free tail, which an unmapped range follows, has the tail as its
// exact best fit, and the tail can grow; Malloc takes it (nothing can
// grow less) as the general path does. The random workloads above
// rarely meet an exact fit of a tail that can grow; a short path that
// took the best fit from the set and gave it back when it could grow
// (tried, since removed) failed here when it did not give it back.
func TestExactGrowableTail(t *testing.T) {
	const knobs, device = "expandable_segments=true", "a100-40g:capacity=256MiB"
	a, r := newTorch(t, knobs, device), newTorch(t, knobs, device)
	for i, size := range []int64{1 << 20, 1 << 20, 1 << 19, 3 << 19, 1 << 19} {
		ha, oka := a.Malloc(size, 0)
		hr, okr := refMalloc(r, size, 0)
		if !oka || !okr {
			t.Fatalf("allocation %d of %d B failed: Malloc %v, the general path %v", i, size, oka, okr)
		}
		if ba, br := a.arena[ha], r.arena[hr]; ba.addr != br.addr || ba.size != br.size {
			t.Fatalf("allocation %d of %d B: Malloc took %d B at %#x, the general path %d B at %#x", i, size, ba.size, ba.addr, br.size, br.addr)
		}
		if err := sameLayout(a, r); err != nil {
			t.Fatalf("allocation %d of %d B: %v", i, size, err)
		}
	}
}
