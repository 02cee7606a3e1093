package torchlike

import (
	"fmt"
	"strings"
	"testing"

	"membench/strategies"
)

const MiB = 1 << 20

// op is one step of a before/ops/after table: alloc (id, size, stream),
// free (id), freereq / freedone (the two halves of a cross-stream free),
// empty (torch.cuda.empty_cache()).
type op struct {
	kind   string
	id     int
	size   int64
	stream int64
}

func alloc(id int, size int64) op { return op{kind: "alloc", id: id, size: size} }
func free(id int) op              { return op{kind: "free", id: id} }
func empty() op                   { return op{kind: "empty"} }

// layoutString renders an allocator's layout compactly: one line per
// segment, "pool: A<size> F<size> P<size> U<size>" with sizes in bytes.
func layoutString(a *Allocator) string {
	var lines []string
	a.Layout(func(s strategies.Segment) {
		var parts []string
		for _, b := range s.Blocks {
			c := map[strategies.BlockState]string{strategies.BlockFree: "F", strategies.BlockAllocated: "A",
				strategies.BlockPending: "P", strategies.BlockUnmapped: "U"}[b.State]
			if b.State == strategies.BlockUnmapped {
				parts = append(parts, "U")
				continue
			}
			parts = append(parts, fmt.Sprintf("%s%d", c, b.Size))
		}
		lines = append(lines, s.Pool+": "+strings.Join(parts, " "))
	})
	return strings.Join(lines, "\n")
}

type tcase struct {
	name     string
	knobs    string // a torch spec's knobs
	capacity int64  // 0: 80 GiB
	ops      []op
	// expectations
	layout  string
	trace   []string // segment events, "segment_alloc 12582912"
	ooms    []int    // ids whose alloc must fail
	stats   map[string]int64
	wantErr string
}

func run(t *testing.T, tc tcase) *Allocator {
	t.Helper()
	sp, err := strategies.ParseSpec("torch:" + tc.knobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(sp)
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := strategies.ParseDevice("a100-80g")
	if tc.capacity > 0 {
		dev.Capacity = tc.capacity
	}
	a := New(cfg, strategies.NewMemory(&dev))
	var trace []string
	a.OnTrace = func(act string, addr, size, stream int64) {
		trace = append(trace, fmt.Sprintf("%s %d", act, size))
	}
	live := map[int]strategies.Handle{}
	var ooms []int
	for i, o := range tc.ops {
		switch o.kind {
		case "alloc":
			h, ok := a.Malloc(o.size, o.stream)
			if !ok {
				ooms = append(ooms, o.id)
				continue
			}
			live[o.id] = h
		case "free":
			a.Free(live[o.id])
			delete(live, o.id)
		case "freereq":
			a.FreeRequested(live[o.id])
		case "freedone":
			a.FreeCompleted(live[o.id])
			delete(live, o.id)
		case "empty":
			a.EmptyCache()
		}
		if err := a.Check(); err != nil {
			t.Fatalf("after op %d %+v: %v\n%s", i, o, err, layoutString(a))
		}
	}
	if tc.layout != "" {
		if got := layoutString(a); got != strings.TrimSpace(tc.layout) {
			t.Errorf("layout:\n%s\nwant:\n%s", got, strings.TrimSpace(tc.layout))
		}
	}
	if tc.trace != nil && strings.Join(trace, "\n") != strings.Join(tc.trace, "\n") {
		t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(trace, "\n"), strings.Join(tc.trace, "\n"))
	}
	if fmt.Sprint(ooms) != fmt.Sprint(tc.ooms) && !(len(ooms) == 0 && len(tc.ooms) == 0) {
		t.Errorf("failed allocations %v, want %v", ooms, tc.ooms)
	}
	m := a.Stats().Map()
	for k, v := range tc.stats {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("stat %s = %d, want %d", k, got, v)
		}
	}
	return a
}

func TestWorkedExamples(t *testing.T) {
	for _, tc := range []tcase{
		{
			// allocator-spec §5.5: 10 MiB+1 B → 10 MiB+512 in a 12 MiB segment, split.
			name: "split-remainder-over-1MiB", ops: []op{alloc(1, 10*MiB+1)},
			layout: "large: A10486272 F2096640",
			trace:  []string{"segment_alloc 12582912"},
			stats: map[string]int64{"allocated_bytes.all.current": 10*MiB + 512, "requested_bytes.all.current": 10*MiB + 1,
				"inactive_split.all.current": 1, "inactive_split_bytes.all.current": 2*MiB - 512, "segment.large_pool.current": 1},
		},
		{
			// allocator-spec §5.5: 11 MiB+1 B owns the whole 12 MiB segment.
			name: "remainder-under-1MiB-stays-attached", ops: []op{alloc(1, 11*MiB+1)},
			layout: "large: A12582912",
			stats:  map[string]int64{"allocated_bytes.all.current": 12 * MiB, "requested_bytes.all.current": 11*MiB + 1, "inactive_split.all.current": 0},
		},
		{
			name: "small-pool-2MiB-segment", ops: []op{alloc(1, 1000), alloc(2, 1*MiB)},
			layout: "small: A1024 A1048576 F1047552",
			trace:  []string{"segment_alloc 2097152"},
			stats:  map[string]int64{"segment.small_pool.current": 1, "reserved_bytes.small_pool.current": 2 * MiB},
		},
		{
			// 1–10 MiB requests get a 20 MiB segment (§1.4).
			name: "mid-size-20MiB-segment", ops: []op{alloc(1, 5*MiB)},
			layout: "large: A5242880 F15728640", trace: []string{"segment_alloc 20971520"},
		},
		{
			name: "free-merges-and-reuse-best-fit", ops: []op{alloc(1, 5*MiB), alloc(2, 5*MiB), alloc(3, 5*MiB), free(2), alloc(4, 4*MiB), free(1), free(4)},
			// 4 MiB reuses the 5 MiB hole (same size as the tail, lower
			// address), keeping 1 MiB attached (rem ≤ 1 MiB); frees merge.
			layout: "large: F10485760 A5242880 F5242880",
			trace:  []string{"segment_alloc 20971520"},
		},
		{
			name: "best-fit-ties-lowest-address", ops: []op{alloc(1, 12*MiB), alloc(2, 12*MiB), free(1), free(2), alloc(3, 12*MiB)},
			layout: "large: A12582912\nlarge: F12582912",
		},
		{
			name: "streams-never-share", ops: []op{alloc(1, 5*MiB), free(1), {kind: "alloc", id: 2, size: 5 * MiB, stream: 7}},
			layout: "large: F20971520\nlarge: A5242880 F15728640",
			trace:  []string{"segment_alloc 20971520", "segment_alloc 20971520"},
		},
		{
			name: "empty-cache-frees-whole-segments-only", ops: []op{alloc(1, 5*MiB), alloc(2, 16*MiB), free(2), alloc(3, 1000), empty()},
			layout: "large: A5242880 F15728640\nsmall: A1024 F2096128",
			trace:  []string{"segment_alloc 20971520", "segment_alloc 16777216", "segment_alloc 2097152", "segment_free 16777216"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}

func TestFallbacks(t *testing.T) {
	for _, tc := range []tcase{
		{
			// §1.7: miss, cudaMalloc fails, no max_split_size, so
			// release_cached_blocks and a retry that counts.
			name: "empty-cache-retry", capacity: 30 * MiB,
			ops:   []op{alloc(1, 15*MiB), free(1), alloc(2, 18*MiB)},
			trace: []string{"segment_alloc 16777216", "segment_free 16777216", "segment_alloc 18874368"},
			stats: map[string]int64{"num_alloc_retries": 1, "num_ooms": 0, "num_device_alloc": 2, "num_device_free": 1},
		},
		{
			name: "oom", capacity: 30 * MiB,
			ops:   []op{alloc(1, 5*MiB), alloc(2, 40*MiB)},
			ooms:  []int{2},
			trace: []string{"segment_alloc 20971520", "oom 41943040"},
			stats: map[string]int64{"num_alloc_retries": 1, "num_ooms": 1},
		},
		{
			// §1.7 release_available_cached_blocks: with max_split_size
			// the single oversize block ≥ the request goes first, no retry count.
			name: "release-one-oversize-block", capacity: 100 * MiB, knobs: "max_split_size_mb=40",
			ops: []op{alloc(1, 60*MiB), alloc(2, 30*MiB), free(1), alloc(3, 30*MiB)},
			// 30 MiB < MS cannot take the 60 MiB oversize block; cudaMalloc(30)
			// fails (90+30 > 100); release 60 MiB; retry succeeds.
			trace: []string{"segment_alloc 62914560", "segment_alloc 31457280", "segment_free 62914560", "segment_alloc 31457280"},
			stats: map[string]int64{"num_alloc_retries": 0, "oversize_segments.current": 0, "oversize_segments.peak": 1},
		},
		{
			name: "release-several-oversize-blocks", capacity: 130 * MiB, knobs: "max_split_size_mb=20",
			ops: []op{alloc(1, 30*MiB), alloc(2, 30*MiB), alloc(3, 60*MiB), free(1), free(2), alloc(4, 70*MiB)},
			// no 70 MiB block: free oversize blocks from the largest down until
			// 70 MiB are released (two 30 MiB blocks fall short; return false),
			// then release_cached_blocks has nothing left and the retry fits.
			trace: []string{"segment_alloc 31457280", "segment_alloc 31457280", "segment_alloc 62914560",
				"segment_free 31457280", "segment_free 31457280", "segment_alloc 73400320"},
			stats: map[string]int64{"num_alloc_retries": 1},
		},
		{
			// §1.5: a request ≥ MS reuses an oversize block only if it is
			// less than request + 20 MiB larger; never splits it.
			name: "oversize-reuse-tolerance", knobs: "max_split_size_mb=32",
			ops:    []op{alloc(1, 40*MiB), free(1), alloc(2, 38*MiB), free(2), alloc(3, 25*MiB), alloc(4, 100*MiB), free(4), alloc(5, 60*MiB)},
			layout: "large: F41943040\nlarge: A27262976\nlarge: F104857600\nlarge: A62914560",
			stats:  map[string]int64{"oversize_allocations.current": 1, "oversize_allocations.peak": 1, "oversize_segments.current": 3},
		},
		{
			// §1.9: GC needs set_per_process_memory_fraction and a threshold;
			// it frees unsplit cached blocks at least as old as the average.
			name: "garbage-collection", knobs: "per_process_memory_fraction=0.001,garbage_collection_threshold=0.5",
			// allowed max = 0.001 × 80 GiB ≈ 83.9 MB; GC threshold ≈ 41.9 MB.
			ops: []op{alloc(1, 20*MiB), alloc(2, 24*MiB), free(1), free(2), alloc(3, 30*MiB)},
			trace: []string{"segment_alloc 20971520", "segment_alloc 25165824",
				"segment_free 20971520", "segment_free 25165824", "segment_alloc 31457280"},
		},
		{
			name: "fraction-limits-without-cuda", knobs: "per_process_memory_fraction=0.001",
			ops:  []op{alloc(1, 50*MiB), alloc(2, 50*MiB)},
			ooms: []int{2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}

func TestExpandableSegments(t *testing.T) {
	for _, tc := range []tcase{
		{
			name: "map-one-page-and-split", knobs: "expandable_segments=true",
			ops:    []op{alloc(1, 5*MiB)},
			layout: "large-expandable: A5242880 F15728640 U",
			trace:  []string{"segment_map 20971520"},
			stats:  map[string]int64{"segment.all.current": 0, "reserved_bytes.all.current": 20 * MiB, "num_device_alloc": 1},
		},
		{
			name: "grow-into-next-pages", knobs: "expandable_segments=true",
			ops:    []op{alloc(1, 5*MiB), alloc(2, 30*MiB)},
			layout: "large-expandable: A5242880 A31457280 F5242880 U",
			trace:  []string{"segment_map 20971520", "segment_map 20971520"},
		},
		{
			name: "empty-cache-unmaps-and-releases", knobs: "expandable_segments=true",
			ops:   []op{alloc(1, 5*MiB), alloc(2, 30*MiB), free(1), free(2), empty()},
			trace: []string{"segment_map 20971520", "segment_map 20971520", "segment_unmap 41943040"},
			stats: map[string]int64{"reserved_bytes.all.current": 0, "num_device_free": 1},
		},
		{
			name: "empty-cache-keeps-partial-pages", knobs: "expandable_segments=true",
			ops:    []op{alloc(1, 5*MiB), alloc(2, 30*MiB), free(2), empty()},
			layout: "large-expandable: A5242880 F15728640 U",
			trace:  []string{"segment_map 20971520", "segment_map 20971520", "segment_unmap 20971520"},
		},
		{
			name: "small-pool-2MiB-pages", knobs: "expandable_segments=true",
			ops:    []op{alloc(1, 3000), alloc(2, 1*MiB)},
			layout: "small-expandable: A3072 A1048576 F1045504 U",
			trace:  []string{"segment_map 2097152"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}

func TestPendingFree(t *testing.T) {
	// §5.7: allocated_bytes drops at the free request, active_bytes only
	// when the stream events complete; a pending block is not merged or reused.
	tc := tcase{
		ops:    []op{alloc(1, 5*MiB), {kind: "freereq", id: 1}, alloc(2, 5*MiB)},
		layout: "large: P5242880 A5242880 F10485760",
		stats:  map[string]int64{"allocated_bytes.all.current": 5 * MiB, "active_bytes.all.current": 10 * MiB},
	}
	a := run(t, tc)
	_ = a
}

func TestRoundSize(t *testing.T) {
	for _, c := range []struct {
		div     string
		in, out int64
	}{
		{"", 1, 512}, {"", 512, 512}, {"", 513, 1024}, {"", 10*MiB + 1, 10*MiB + 512},
		{"4", 1200, 1536},                                    // below 512×d: plain 512 rounding
		{"4", 3 * 1024, 3 * 1024},                            // 3072 > 2048: next quarter of [2048,4096) is 3072
		{"4", 3*1024 + 1, 3584},                              // next division of 512
		{"4", 1280*MiB + 1, 1536 * MiB},                      // 1 GiB floor, quarters of 256 MiB
		{"4", 1024 * MiB, 1024 * MiB},                        // powers of two stay
		{"[256:1,512:2,1024:4,>:8]", 1200 * MiB, 1280 * MiB}, // 1024 MB slot is 8 after '>' (upstream quirk)
		{"[256:1,512:2,1024:4,>:8]", 600 * MiB, 768 * MiB},   // 512 MB slot: halves
	} {
		cfg := DefaultConfig()
		if c.div != "" {
			d, err := ParseDivisions(c.div)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Divisions = d
		}
		if got := cfg.roundSize(c.in); got != c.out {
			t.Errorf("round_size(%d) with %q = %d, want %d", c.in, c.div, got, c.out)
		}
	}
}

func TestKnobErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"torch:max_split_size_mb=10", ">= 20"},
		{"torch:garbage_collection_threshold=1.5", "(0.0, 1.0)"},
		{"torch:expandable_segment=true", "valid keys: "},
		{"torch:roundup_power2_divisions=3", "power of 2"},
		{"torch:backend=cudaMallocAsyncc", "native, cudaMallocAsync"},
		{"torch:pool_granularity=100B", "not a multiple of 256 B"},
		{"torch:pool_granularity=4096", "did you mean 4096GiB"},
	} {
		sp, _ := strategies.ParseSpec(c.spec)
		_, err := ParseConfig(sp)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.spec, err, c.want)
		}
	}
	// A literal PYTORCH_CUDA_ALLOC_CONF string parses whole.
	sp, err := strategies.ParseSpec("torch:expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(sp)
	if err != nil || !cfg.ExpandableSegments || cfg.MaxSplitSize != 128*MiB || cfg.Divisions[8] != 4 || cfg.Divisions[0] != 1 {
		t.Errorf("literal conf: %+v, %v", cfg, err)
	}
}

// TestCheckCatchesCorruption makes sure the invariant checker is not a
// test that cannot fail: each corruption below must be reported.
func TestCheckCatchesCorruption(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt func(a *Allocator)
	}{
		{"stat", func(a *Allocator) { a.stats.pool[piLarge].g[sAllocatedBytes].allocated++ }},
		{"free-set", func(a *Allocator) {
			k, _ := a.large.blocks.Min()
			a.large.blocks.Remove(k)
		}},
		{"overlap", func(a *Allocator) {
			for i := range a.arena {
				if a.arena[i].inUse() && a.arena[i].allocated() {
					a.arena[i].size += 512
					break
				}
			}
		}},
		{"smaller than its request", func(a *Allocator) {
			for i := range a.arena {
				if a.arena[i].inUse() && a.arena[i].allocated() {
					a.arena[i].req = a.arena[i].size + 1
					break
				}
			}
		}},
		{"off the 512 B alignment", func(a *Allocator) {
			for i := range a.arena {
				if b := a.arena[i]; b.inUse() && b.allocated() && b.next != none && !a.arena[b.next].allocated() {
					a.eraseFromBlocks(b.next)
					a.arena[i].size += 256
					a.arena[b.next].addr += 256
					a.arena[b.next].size -= 256
					a.insertIntoBlocks(b.next)
					break
				}
			}
		}},
		{"unmerged", func(a *Allocator) {
			for i := range a.arena {
				if b := a.arena[i]; b.inUse() && b.allocated() && b.next != none && !a.arena[b.next].allocated() {
					a.arena[i].st &^= stAllocated
					a.stats.splitActive()
					a.stats.decrease(sAllocatedBytes, false, a.arena[i].size)
					a.stats.decrease(sActiveBytes, false, a.arena[i].size)
					a.stats.decrease(sRequestedBytes, false, a.arena[i].req)
					a.insertIntoBlocks(int32(i))
					break
				}
			}
		}},
	} {
		a := run(t, tcase{ops: []op{alloc(1, 5*MiB), alloc(2, 12*MiB)}})
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		c.corrupt(a)
		err := a.Check()
		if err == nil {
			t.Errorf("%s: corruption not detected", c.name)
		} else if strings.HasPrefix(c.name, "smaller") && !strings.Contains(err.Error(), "less than its request") ||
			strings.HasPrefix(c.name, "off the") && !strings.Contains(err.Error(), "multiple of 512") {
			t.Errorf("%s: reported as %v", c.name, err)
		}
	}
}

// TestLegacyRoundup: before PyTorch 2.4, roundup_power2_divisions of 1
// left a request above 512 B unrounded (upstream round_size and
// roundup_power2_next_division at eb42ad6e); since then it rounds to 512.
func TestLegacyRoundup(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Divisions, _ = ParseDivisions("1")
	if got := cfg.roundSize(1000); got != 1024 {
		t.Errorf("modern: %d", got)
	}
	cfg.LegacyRoundup = true
	if got := cfg.roundSize(1000); got != 1000 {
		t.Errorf("legacy: %d", got)
	}
	if got := cfg.roundSize(300); got != 512 {
		t.Errorf("legacy below 512: %d", got)
	}
	cfg.Divisions, _ = ParseDivisions("4")
	if got := cfg.roundSize(3*1024 + 1); got != 3584 {
		t.Errorf("legacy with 4 divisions: %d", got)
	}
}

// TestGarbageCollectionAgesFrees: garbage collection releases the free
// segments that have been free longest (their age counted from their
// free, which Free stamps), not those freed just before. Three whole
// segments are freed at different ages: A first, then C again and again
// (a churn of its size, which ages A), then B; a malloc that nothing
// cached fits, above the threshold, must release A alone, as A's
// release meets the target. Were the frees not stamped, all three would
// be as old and all released.
func TestGarbageCollectionAgesFrees(t *testing.T) {
	const mib = 1 << 20
	// allowed 256 MiB, collection above 64 MiB.
	a := newTorch(t, "per_process_memory_fraction=1.0,garbage_collection_threshold=0.25", "a100-40g:capacity=256MiB")
	malloc := func(size int64) strategies.Handle {
		t.Helper()
		h, ok := a.Malloc(size, 0)
		if !ok {
			t.Fatalf("Malloc(%d) failed", size)
		}
		return h
	}
	ha, hb, hc := malloc(30*mib), malloc(30*mib), malloc(20*mib)
	a.Free(ha)
	a.Free(hc)
	for range 10 {
		a.Free(malloc(20 * mib)) // C's block, stamped again
	}
	a.Free(hb)
	before := a.Stats().NumDeviceFree
	malloc(40 * mib)
	if got := a.Stats().NumDeviceFree - before; got != 1 {
		t.Errorf("garbage collection released %d segments, want 1 (the oldest free)", got)
	}
	if got, want := a.Memory().Reserved(), int64(90*mib); got != want {
		t.Errorf("reserved %d MiB after the collection, want %d MiB (B and C kept)", got/mib, want/mib)
	}
}
