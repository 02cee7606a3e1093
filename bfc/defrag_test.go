package bfc

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"membench/strategies"
)

// defragProgram runs a random program of allocations and frees, many of
// them too large to fit, through a BFC with defragmentation on, and
// returns what it did: each allocation's chunk or failure, the
// relocations, and the regions at the end.
func defragProgram(t *testing.T, o Options, seed uint64) string {
	t.Helper()
	d, _ := strategies.ParseDevice("gpu:capacity=64MiB")
	a := New(o, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(seed, 11))
	var out strings.Builder
	var live []strategies.Handle
	for i := range 600 {
		if len(live) > 0 && rng.IntN(5) < 2 {
			k := rng.IntN(len(live))
			a.Free(live[k])
			live = append(live[:k], live[k+1:]...)
			continue
		}
		n := rng.Int64N(mib) + 1
		if rng.IntN(4) == 0 {
			n = rng.Int64N(8*mib) + 1
		}
		if h, ok := a.Malloc(n, 0); ok {
			live = append(live, h)
			fmt.Fprintf(&out, "%d: %d at %d\n", i, n, a.chunks[h].ptr)
		} else {
			fmt.Fprintf(&out, "%d: %d failed\n", i, n)
		}
		if i%32 == 0 {
			if err := a.Check(); err != nil {
				t.Fatalf("%+v seed %d step %d: %v", o, seed, i, err)
			}
		}
	}
	fmt.Fprintf(&out, "defrags %d moved %d\n", a.stats.DefragEvents, a.stats.DefragMovedBytes)
	a.Layout(func(s strategies.Segment) { fmt.Fprintf(&out, "%+v\n", s) })
	return out.String()
}

// TestDefragShortcutsAsWalk: defragment, which learns the regions' free
// bytes by reading every chunk only where the pool's free bytes, its
// regions or what it learnt last do not say, relocates what it does when
// it reads every chunk each time (defragWalkAlways), on random programs
// in one region and in many, and it reads fewer chunks, or the test would
// test nothing.
func TestDefragShortcutsAsWalk(t *testing.T) {
	for _, o := range []Options{
		{Limit: 24 * mib, Defrag: true},
		{Limit: 24 * mib, AllowGrowth: true, Defrag: true},
		{Limit: 24 * mib, AllowGrowth: true, GarbageCollection: true, Defrag: true},
	} {
		var defrags int
		for seed := range uint64(20) {
			got := defragProgram(t, o, seed)
			defragWalkAlways = true
			want := defragProgram(t, o, seed)
			defragWalkAlways = false
			if got != want {
				t.Fatalf("%+v seed %d: the shortcuts did otherwise than reading every chunk:\n%s\nwant\n%s", o, seed, got, want)
			}
			if !strings.Contains(got, "defrags 0 ") {
				defrags++
			}
		}
		if defrags == 0 {
			t.Errorf("%+v: no program relocated anything", o)
		}
	}
}

// halfFreed is a BFC on a 64 MiB card filled with chunks of 2 MiB, every
// other one then freed (those of even index), and the chunks.
func halfFreed(o Options) (*Allocator, []strategies.Handle) {
	d, _ := strategies.ParseDevice("gpu:capacity=64MiB")
	a := New(o, strategies.NewMemory(&d))
	var hs []strategies.Handle
	for {
		h, ok := a.Malloc(2*mib, 0)
		if !ok {
			break
		}
		hs = append(hs, h)
	}
	for i := 0; i < len(hs); i += 2 {
		a.Free(hs[i])
	}
	return a, hs
}

// TestDefragStormAsWalk: allocations that fail with defragmentation on,
// with and without an allocation and a free between them, fail as they do
// when every failure learns the regions' free bytes by reading every chunk
// (defragWalkAlways, which must read them, or the storm does not reach the
// question): the regions' kept bytes answer as the chunks do, in one
// region, where the pool's free bytes answer first, and in several, each
// holding too few free bytes though together they would hold the request.
// Reading the chunks at each failure took 26.6 s for 100,000 live chunks
// and as many failures (2026-11-25); the bytes the regions keep are
// checked against their chunks by Check.
func TestDefragStormAsWalk(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		// request is what fails, given the chunks (2 MiB each, every
		// other one freed).
		request int64
	}{
		{"one region, more than the free bytes", Options{Limit: 64 * mib, Defrag: true}, 40 * mib},
		// Regions of 2, 4, 8, 16 and 32 MiB: 62 MiB, 31 of them free,
		// 16 in the largest region.
		{"regions, each too short", Options{Limit: 62 * mib, AllowGrowth: true, Defrag: true}, 20 * mib},
	} {
		for _, between := range []bool{false, true} {
			storm := func() (string, int64) {
				a, _ := halfFreed(c.o)
				free := a.stats.PoolBytes - a.stats.BytesInUse
				if c.request <= 2*mib || (c.o.AllowGrowth && (free < c.request || len(a.order) < 2)) {
					t.Fatalf("%s: %d regions, %d bytes free: the storm would not reach the regions", c.name, len(a.order), free)
				}
				var out strings.Builder
				for i := range 1000 {
					if _, ok := a.Malloc(c.request, 0); ok {
						fmt.Fprintf(&out, "%d: %d bytes fit\n", i, c.request)
					}
					if between {
						h, ok := a.Malloc(2*mib, 0)
						if !ok {
							t.Fatalf("%s: 2 MiB did not fit", c.name)
						}
						fmt.Fprintf(&out, "%d: 2 MiB at %d\n", i, a.chunks[h].ptr)
						a.Free(h)
					}
				}
				if err := a.Check(); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "defrags %d\n", a.stats.DefragEvents)
				return out.String(), a.walked
			}
			got, _ := storm()
			defragWalkAlways = true
			want, walked := storm()
			defragWalkAlways = false
			if got != want {
				t.Errorf("%s (an allocation and a free between failures: %v): the kept bytes answered otherwise than the chunks:\n%s\nwant\n%s", c.name, between, got, want)
			}
			if c.o.AllowGrowth && walked == 0 {
				t.Errorf("%s: the reference read no chunk: the storm does not reach the question", c.name)
			}
		}
	}
}

// TestDefragAfterAllocAndFree: an allocation and a free of the same size
// leave the bytes in use as they were but may move free bytes from one
// region to another, so what defragment learnt before them no longer
// holds: a region that now holds the request is compacted.
func TestDefragAfterAllocAndFree(t *testing.T) {
	// Regions of 2, 4, 8, 16 and 32 MiB, chunks of 2 MiB, every other
	// one freed: 16 MiB free in the last region, 8 in the one before.
	a, hs := halfFreed(Options{Limit: 62 * mib, AllowGrowth: true, Defrag: true})
	if free := a.stats.PoolBytes - a.stats.BytesInUse; free < 18*mib {
		t.Fatalf("%d bytes free: defragment would not look at the regions", free)
	}
	if _, ok := a.Malloc(18*mib, 0); ok {
		t.Fatal("18 MiB fit before the free: the test does not reach its case")
	}
	// The best fit for 2 MiB is the lowest free chunk, in the first
	// region; the free is of a live chunk in the last (the chunks of odd
	// index are live).
	if _, ok := a.Malloc(2*mib, 0); !ok {
		t.Fatal("2 MiB did not fit")
	}
	a.Free(hs[len(hs)-2])
	if _, ok := a.Malloc(18*mib, 0); !ok {
		t.Errorf("18 MiB did not fit after the last region's free bytes rose to 18 MiB")
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestDefragCyclesBounded: defragmentations that each move one chunk
// near the top of a full region read the chunks from the region's hole
// (its lowest free chunk), not from its start: each read every chunk
// (200,000 events of such cycles took 2.2 s in a replay, 2026-11-25).
// Each cycle frees the top chunk and the one two below it and asks for
// their bytes together, which only a defragmentation can give, moving the
// chunk between them.
func TestDefragCyclesBounded(t *testing.T) {
	d, _ := strategies.ParseDevice("gpu:capacity=64MiB")
	a := New(Options{Limit: 64 * mib, Defrag: true}, strategies.NewMemory(&d))
	const size = 32 << 10
	var hs []strategies.Handle
	for {
		h, ok := a.Malloc(size, 0)
		if !ok {
			break
		}
		hs = append(hs, h)
	}
	const cycles = 500
	if len(hs) < 1000 {
		t.Fatalf("%d chunks: too few for the test", len(hs))
	}
	for i := range cycles {
		n := len(hs)
		both := a.chunks[hs[n-1]].size + a.chunks[hs[n-3]].size
		a.Free(hs[n-1])
		a.Free(hs[n-3])
		h, ok := a.Malloc(both, 0)
		if !ok {
			t.Fatalf("cycle %d: the two freed chunks' bytes did not fit after defragmenting", i)
		}
		hs = append(hs[:n-3], hs[n-2], h)
	}
	if ev := a.stats.DefragEvents; ev != cycles {
		t.Fatalf("%d defragmentations, want one a cycle (%d)", ev, cycles)
	}
	if a.compacted > 10*cycles {
		t.Errorf("%d defragmentations of %d chunks read %d chunks, want at most %d", cycles, len(hs), a.compacted, 10*cycles)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
