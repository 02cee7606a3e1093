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
// bytes to hundreds of MiB, on a few streams, some freed, an empty_cache
// now and then) on a small card, so that many fail, and returns
// everything the allocator did: its trace of segment and block actions,
// each OOM and the final layout, or the first error of its invariants
// (Check). It makes no free with pending stream uses (replayAdversarial
// does).
func replayRandom(seed uint64, cfg Config, n int) string {
	a, out := tracedOn1GiB(cfg)
	r := rand.New(rand.NewPCG(seed, 7))
	var live []strategies.Handle
	for step := range n {
		if step%64 == 0 {
			if err := a.Check(); err != nil {
				return fmt.Sprintf("step %d: %v", step, err)
			}
		}
		switch x := r.IntN(100); {
		case x < 55:
			size := int64(1 + r.IntN(1<<uint(9+r.IntN(20))))
			if h, ok := a.Malloc(size, int64(r.IntN(3))); ok {
				live = append(live, h)
			} else {
				o := a.LastOOM()
				fmt.Fprintf(out, "oom %d %d %d %d\n", o.Requested, o.Rounded, o.Reserved, o.LargestFree)
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
	fmt.Fprintf(out, "reserved %d\n", a.mem.Reserved())
	a.Layout(func(s strategies.Segment) { fmt.Fprintf(out, "%+v\n", s) })
	return out.String()
}

// tracedOn1GiB is an allocator on a 1 GiB card whose segment actions are
// written to out, one line each, for replays to compare.
func tracedOn1GiB(cfg Config) (*Allocator, *strings.Builder) {
	dev, _ := strategies.ParseDevice("a100-40g:capacity=1GiB")
	a := New(cfg, strategies.NewMemory(&dev))
	out := new(strings.Builder)
	a.OnTrace = func(act string, addr, size, stream int64) {
		fmt.Fprintf(out, "%s %x %d %d\n", act, addr, size, stream)
	}
	return a, out
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
		cfgs[conf] = parseTorch(t, conf)
	}
	for name, cfg := range cfgs {
		for seed := range uint64(20) {
			got, want := scanned(func() string { return replayRandom(seed, cfg, 3000) })
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

// TestCollectAsScan: garbage collection by the whole blocks a first scan
// found and Free noted since releases what upstream's scan of every
// cached block at each pass released, in the same order, under random
// programs that fail often, with the knobs that change which blocks split
// or get collected; and the collection acts (the same program without it
// does otherwise).
func TestCollectAsScan(t *testing.T) {
	for _, conf := range []string{
		"garbage_collection_threshold=0.6,per_process_memory_fraction=0.8",
		"garbage_collection_threshold=0.2,per_process_memory_fraction=0.5",
		"garbage_collection_threshold=0.9,per_process_memory_fraction=1.0,max_split_size_mb=64",
		"garbage_collection_threshold=0.4,per_process_memory_fraction=0.7,roundup_power2_divisions=4",
		"garbage_collection_threshold=0.4,per_process_memory_fraction=0.7,expandable_segments=true",
	} {
		cfg := parseTorch(t, conf)
		noGC := cfg
		noGC.GCThreshold = 0
		acted := 0
		for seed := range uint64(20) {
			got, want := scanned(func() string { return replayRandom(seed, cfg, 3000) })
			if got != want {
				t.Fatalf("%s, seed %d: the noted blocks collected otherwise than the scan", conf, seed)
			}
			if got != replayRandom(seed, noGC, 3000) {
				acted++
			}
		}
		if acted == 0 && cfg.GCThreshold > 0 && !cfg.ExpandableSegments {
			t.Errorf("%s: no program changed with the collection: the test tests nothing", conf)
		}
	}
}

// TestCloneKeepsNotes: a clone's notes of whole blocks are its own. Both
// allocators, cloned after a collection and a release have started their
// notes, free different blocks and then release their caches
// (empty_cache, the release's notes) or collect first (a failed
// allocation, the collection's notes); each releases what a scan would.
func TestCloneKeepsNotes(t *testing.T) {
	cfg := parseTorch(t, "garbage_collection_threshold=0.3,per_process_memory_fraction=0.5")
	run := func(collect bool) string {
		dev, _ := strategies.ParseDevice("a100-40g:capacity=1GiB")
		a := New(cfg, strategies.NewMemory(&dev))
		var hs []strategies.Handle
		for range 30 {
			h, ok := a.Malloc(12<<20, 0) // each its own segment
			if ok {
				hs = append(hs, h)
			}
		}
		// A failed allocation collects and releases: both notes begin.
		// Frees noted and another failure leave the notes' arrays with
		// room, which a clone's copy of the allocator would share.
		for k := range 2 {
			if _, ok := a.Malloc(900<<20, 0); ok {
				t.Fatal("900 MiB fitted beside 360 MiB under a 512 MiB limit")
			}
			if k == 0 {
				a.Free(hs[0])
				a.Free(hs[1])
				hs = hs[2:]
			}
		}
		c := a.Clone(strategies.NewMemory(&dev))
		var out strings.Builder
		for k, x := range []*Allocator{a, c} {
			x.OnTrace = func(act string, addr, size, stream int64) {
				fmt.Fprintf(&out, "%d %s %x %d\n", k, act, addr, size)
			}
		}
		for i, h := range hs {
			if i%2 == 0 {
				a.Free(h)
			} else {
				c.Free(h)
			}
		}
		for _, x := range []*Allocator{a, c} {
			if !collect {
				x.EmptyCache()
			} else if _, ok := x.Malloc(900<<20, 0); ok {
				t.Fatal("900 MiB fitted")
			}
		}
		return out.String()
	}
	for _, collect := range []bool{false, true} {
		got, want := scanned(func() string { return run(collect) })
		if got != want {
			t.Errorf("collect %v: clones released otherwise than a scan:\n%s\nwant:\n%s", collect, got, want)
		}
		if !strings.Contains(got, "0 segment_free") || !strings.Contains(got, "1 segment_free") {
			t.Errorf("collect %v: a clone released nothing: the test tests nothing:\n%s", collect, got)
		}
	}
}

// TestCollectStormLinear: allocations that keep failing above the
// collection threshold while many split blocks are cached cost time
// linear in the trace. 20,000 blocks of 1.1 MiB, every other one freed
// (10,000 split free blocks), then 35,000 allocations too large to fit:
// upstream's scan of every cached block at each of them took 3.8 s.
func TestCollectStormLinear(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-40g:capacity=40GiB")
	a := New(parseTorch(t, "garbage_collection_threshold=0.6,per_process_memory_fraction=0.5"), strategies.NewMemory(&dev))
	start := time.Now()
	var hs []strategies.Handle
	for range 20000 {
		if h, ok := a.Malloc(1100<<10, 0); ok {
			hs = append(hs, h)
		}
	}
	for i := 0; i < len(hs); i += 2 {
		a.Free(hs[i])
	}
	fails := 0
	for range 35000 {
		if h, ok := a.Malloc(300<<20, 0); ok {
			a.Free(h)
		} else {
			fails++
		}
	}
	if fails < 30000 || a.large.blocks.Len() < 5000 {
		t.Fatalf("%d allocations failed over %d cached blocks: the test does not reach the storm", fails, a.large.blocks.Len())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%d failed allocations over %d cached blocks took %v", fails, a.large.blocks.Len(), d)
	}
}

// parseTorch is the configuration of the spec torch:knobs.
func parseTorch(t *testing.T, knobs string) Config {
	t.Helper()
	sp, err := strategies.ParseSpec("torch:" + knobs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReleaseMixedSegments: with expandable segments switched on during a
// run (as upstream's tests switch them), a cached cudaMalloc segment is
// released, not unmapped as if it were expandable, when an expandable
// segment cannot grow; and a collection after the switch still reaches
// it. The search for paged blocks (pagedBlocks) assumed that every
// cached block was expandable and indexed a segment of none.
func TestReleaseMixedSegments(t *testing.T) {
	for _, knobs := range []string{"per_process_memory_fraction=0.5", "per_process_memory_fraction=0.5,garbage_collection_threshold=0.9"} {
		a := newTorch(t, knobs, "a100-40g:capacity=240MiB") // 120 MiB allowed
		var got []string
		a.OnTrace = func(act string, addr, size, stream int64) {
			got = append(got, fmt.Sprintf("%s %d", act, size>>20))
		}
		if err := applySettings(a, "expandable_segments:False"); err != nil {
			t.Fatal(err)
		}
		h, ok := a.Malloc(40<<20, 0)
		if !ok {
			t.Fatal("40 MiB did not fit")
		}
		a.Free(h)
		if err := applySettings(a, "expandable_segments:True"); err != nil {
			t.Fatal(err)
		}
		if _, ok := a.Malloc(100<<20, 0); !ok {
			t.Errorf("%s: 100 MiB did not fit once the cached 40 MiB went", knobs)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if want := "segment_alloc 40,segment_free 40,segment_map 100"; strings.Join(got, ",") != want {
			t.Errorf("%s: %s, want %s", knobs, strings.Join(got, ","), want)
		}
	}
}

// scanned returns what run gives as the allocator works and with every
// release and collection scanning the whole cache, its reference.
func scanned(run func() string) (got, want string) {
	got = run()
	scanEveryRelease = true
	defer func() { scanEveryRelease = false }()
	return got, run()
}
