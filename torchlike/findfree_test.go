package torchlike

import (
	"math/rand/v2"
	"testing"

	"membench/internal/freeset"
	"membench/strategies"
)

// freeOne frees a random one of live half the time, as the random
// workloads below do, and reports whether it did.
func freeOne(a *Allocator, rng *rand.Rand, live *[]strategies.Handle) bool {
	l := *live
	if len(l) == 0 || rng.IntN(2) != 0 {
		return false
	}
	i := rng.IntN(len(l))
	a.Free(l[i])
	l[i] = l[len(l)-1]
	*live = l[:len(l)-1]
	return true
}

// request is the params Malloc builds for a request of size bytes on
// stream: the rounded size and its pool.
func request(a *Allocator, size, stream int64) params {
	p := params{size: a.cfg.roundSize(size), stream: stream, pool: &a.large, block: none}
	if p.size <= SmallSize {
		p.pool = &a.small
	}
	return p
}

// TestFastFitAsFindFreeBlock: wherever fastFit holds, Malloc's short
// search allocates from the block findFreeBlock finds (at its address), or
// from a new segment when it finds none,
// on random workloads of both pools and three streams — so that a best fit
// of another stream, or none at all, is refused as findFreeBlock refuses
// it — under the configurations that keep fastFit (the default, power-of-
// two rounding, a memory fraction without garbage collection, expandable
// segments). Each case
// must meet every outcome: a hit, a miss with nothing above the request,
// and a miss with only another stream's block above it.
func TestFastFitAsFindFreeBlock(t *testing.T) {
	for _, knobs := range []string{"", "roundup_power2_divisions=4", "per_process_memory_fraction=0.5", "expandable_segments=true"} {
		t.Run("knobs="+knobs, func(t *testing.T) {
			a := newTorch(t, knobs, strategies.DefaultDevice)
			rng := rand.New(rand.NewPCG(6, 1))
			var live []strategies.Handle
			var hits, nothing, otherStream int
			for range 20000 {
				if freeOne(a, rng, &live) {
					continue
				}
				size := 1 + rng.Int64N(64<<10)
				if rng.IntN(8) == 0 {
					size = 1 + rng.Int64N(24<<20)
				}
				stream := rng.Int64N(3)
				if !a.fastFit() {
					t.Fatal("fastFit does not hold")
				}
				p := request(a, size, stream)
				k, want := a.findFreeBlock(&p)
				devAllocs := a.stats.NumDeviceAlloc
				h, ok := a.Malloc(size, stream)
				if !ok {
					t.Fatalf("size %d stream %d: out of memory", size, stream)
				}
				live = append(live, h)
				// The allocation keeps the low end of the block found;
				// without one, it is a new segment's.
				switch b := &a.arena[h]; {
				case want && (b.addr != k.Addr || a.stats.NumDeviceAlloc != devAllocs):
					t.Fatalf("size %d stream %d: allocated at %#x (device allocations %d → %d), findFreeBlock found %+v",
						p.size, stream, b.addr, devAllocs, a.stats.NumDeviceAlloc, k)
				case !want && a.stats.NumDeviceAlloc != devAllocs+1:
					t.Fatalf("size %d stream %d: findFreeBlock found nothing, yet no segment was allocated", p.size, stream)
				case want:
					hits++
				case k.Size == 0:
					nothing++
				default:
					otherStream++
				}
			}
			if hits == 0 || nothing == 0 || otherStream == 0 {
				t.Errorf("outcomes met: %d hits, %d with nothing above, %d with another stream's block above; want each", hits, nothing, otherStream)
			}
			if err := a.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// refExpandableFit is get_free_block's walk over expandable blocks as
// upstream writes it, the reference for findFreeBlock's: from the best
// fit k, step to the next block on the stream while the current one is
// expandable and the next can grow to less than it can.
func refExpandableFit(a *Allocator, pl *pool, stream int64, k freeset.Key) freeset.Key {
	for a.arena[k.B].es != none {
		nk, ok := pl.blocks.After(k)
		if !ok || nk.Stream != stream || a.expandableSize(nk.B) >= a.expandableSize(k.B) {
			break
		}
		k = nk
	}
	return k
}

// TestExpandableFitAsUpstream: with expandable segments, findFreeBlock's
// walk, which stops at a block that cannot grow without looking further,
// chooses the block upstream's walk chooses, at every allocation of random
// workloads of both pools and two streams; and the walk must step on
// (upstream's loop body runs) at some of them, or the shortcut was never
// put to the test.
func TestExpandableFitAsUpstream(t *testing.T) {
	dev, err := strategies.ParseDevice(strategies.DefaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	a := New(Config{ExpandableSegments: true}, strategies.NewMemory(&dev))
	rng := rand.New(rand.NewPCG(6, 2))
	var live []strategies.Handle
	var stepped, checked int
	for range 20000 {
		if freeOne(a, rng, &live) {
			continue
		}
		size := 1 + rng.Int64N(256<<10)
		if rng.IntN(6) == 0 {
			size = 1 + rng.Int64N(48<<20)
		}
		stream := rng.Int64N(2)
		p := request(a, size, stream)
		if k, ok := p.pool.blocks.LowerBound(freeset.Key{Stream: stream, Size: p.size}); ok && k.Stream == stream {
			want := refExpandableFit(a, p.pool, stream, k)
			got, _ := a.findFreeBlock(&p)
			if got != want {
				t.Fatalf("size %d stream %d: findFreeBlock chose %+v, upstream's walk %+v", p.size, stream, got, want)
			}
			checked++
			if want != k {
				stepped++
			}
		}
		if h, ok := a.Malloc(size, stream); ok {
			live = append(live, h)
		}
	}
	if checked == 0 || stepped == 0 {
		t.Errorf("%d best fits checked, %d where the walk stepped on; want some of each", checked, stepped)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
