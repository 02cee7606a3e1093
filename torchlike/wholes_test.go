package torchlike

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"membench/strategies"
)

// replayRandom runs a random program of n allocations (sizes from a few
// bytes to hundreds of MiB, on a few streams, some freed, some freed with
// pending stream uses, an empty_cache now and then) on a small card, so
// that many fail, and returns everything the allocator did: its trace of
// segment and block actions, each OOM and the final layout.
func replayRandom(seed uint64, cfg Config, n int) string {
	dev, _ := strategies.ParseDevice("a100-40g:capacity=1GiB")
	a := New(cfg, strategies.NewMemory(&dev))
	var out strings.Builder
	a.OnTrace = func(act string, addr, size, stream int64) {
		fmt.Fprintf(&out, "%s %x %d %d\n", act, addr, size, stream)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	var live []strategies.Handle
	for range n {
		switch x := r.IntN(100); {
		case x < 55:
			size := int64(1 + r.IntN(1<<uint(9+r.IntN(20))))
			if h, ok := a.Malloc(size, int64(r.IntN(3))); ok {
				live = append(live, h)
			} else {
				o := a.LastOOM()
				fmt.Fprintf(&out, "oom %d %d %d %d\n", o.Requested, o.Rounded, o.Reserved, o.LargestFree)
			}
		case x < 97 && len(live) > 0:
			k := r.IntN(len(live))
			a.Free(live[k])
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		default:
			a.EmptyCache()
		}
	}
	fmt.Fprintf(&out, "reserved %d\n", a.mem.Reserved())
	a.Layout(func(s strategies.Segment) { fmt.Fprintf(&out, "%+v\n", s) })
	return out.String()
}

// TestReleaseWholesAsScan: release_cached_blocks by the blocks Free noted
// (or, with expandable segments, by the blocks that span a page) does
// what the scan of every cached block did, the same segments freed or
// pages unmapped in the same order, under random programs that fail
// often, with the knobs that change which blocks split (max_split_size,
// the roundup, the garbage collection under a memory fraction, the
// expandable page size).
func TestReleaseWholesAsScan(t *testing.T) {
	cfgs := map[string]Config{"default": DefaultConfig()}
	for _, conf := range []string{"max_split_size_mb=64", "roundup_power2_divisions=4", "garbage_collection_threshold=0.6,per_process_memory_fraction=0.8",
		// Expandable segments: only the blocks that span a page are
		// looked at (pagedBlocks), in the scan's order.
		"expandable_segments=true", "expandable_segments=true,large_segment_size_mb=12", "expandable_segments=true,roundup_power2_divisions=4"} {
		sp, err := strategies.ParseSpec("torch:" + conf)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(sp)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[conf] = c
	}
	for name, cfg := range cfgs {
		for seed := range uint64(20) {
			got := replayRandom(seed, cfg, 3000)
			scanEveryRelease = true
			want := replayRandom(seed, cfg, 3000)
			scanEveryRelease = false
			if got != want {
				t.Fatalf("%s, seed %d: the noted blocks released otherwise than the scan", name, seed)
			}
			if !strings.Contains(got, "oom ") || !strings.Contains(got, "segment_free") && !strings.Contains(got, "segment_unmap") {
				t.Errorf("%s, seed %d: no OOM or no release: the program tests nothing", name, seed)
			}
		}
	}
}

// TestOOMStormLinear: allocations that keep failing while many split
// blocks are cached cost time linear in the trace. 30,000 allocations of
// 1000 B each on their own stream (each a 2 MiB segment, split) fill
// the card, and the 30,000 after fail: release_cached_blocks scanned
// every cached block at each failure, which took 16 s at 50,000.
func TestOOMStormLinear(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-40g:capacity=30GiB")
	a := New(DefaultConfig(), strategies.NewMemory(&dev))
	start := time.Now()
	fails := 0
	for i := range 60000 {
		if _, ok := a.Malloc(1000, int64(i)); !ok {
			fails++
		}
	}
	if fails < 20000 {
		t.Fatalf("%d allocations failed: the test does not reach the OOM path", fails)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("60,000 allocations, %d failing, took %v", fails, d)
	}
}
