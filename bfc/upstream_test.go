package bfc

// Upstream's own BFC tests, restated as scenarios of the model (see the
// syntax at the top of bfc_test.go). One row per upstream test; each row
// names its source:
//
//   TF  = tensorflow/tensorflow tensorflow/core/common_runtime/gpu/gpu_bfc_allocator_test.cc
//   XLA = openxla/xla xla/tsl/framework/bfc_allocator_test.cc
//
// The expectations are upstream's (allocation sizes, nulls, stats, region
// counts); where a row adds an expectation of its own (an exact layout)
// the comment says so and derives it by hand.
//
// Allocator settings: TF's GPUBFCAllocator(sub, total, name) passes no
// GPUOptions, so allow_growth is false, and garbage_collection comes from
// TF_ENABLE_GPU_GARBAGE_COLLECTION, default true (allocator-spec §2.5, §2.8).
// XLA's BFCAllocator::Options{} has allow_growth = true and
// garbage_collection = false.
//
// Not rewritten, and why:
//   TF  DISABLED_AllocatorReceivesZeroMemory: disabled upstream; it needs a
//       sub-allocator that hands back no memory for a 2^60-byte limit and
//       asserts nothing.
//   TF  Log2FloorNonZeroSlow: tests the bin-index helper; the model keeps
//       its free chunks in bins of one exact size each, not TSL's 21 bins
//       of a power of two each (package comment).
//   TF  ForceAllowGrowth, the TF_FORCE_GPU_ALLOW_GROWTH parsing: that is
//       TF configuration (tflike), not the allocator; the resulting
//       curr_region_allocation_bytes_ is checked below.
//   TF  VirtualAllocatorPromotesReuse, TestNoRegionDeallocation: they need
//       GpuVirtualMemAllocator, whose adjacent regions coalesce. The GPU
//       DeviceMemAllocator the model follows does not coalesce (spec §2.1);
//       the same scenarios with it are PhysicalAllocatorOomsFragmentation
//       and TestRegionDeallocation, both below.
//   TF  BM_Allocation, BM_AllocationThreaded, BM_AllocationDelayed;
//   XLA BM_AllocAndFree, BM_AllocBatchThenFree, BM_SpatialAllocBatchThenFree,
//       BM_AllocAndFreeUnderContention: benchmarks (and threads).
//   XLA OomLogsAllocationAnnotations: the log and its allocation
//       annotations are not modelled; its allocation outcomes are below.
//   XLA RespectsRequestedAlignment for 512..4096,
//       AlignmentWithHardcodedSubAllocatorAlignment (earlier
//       AlignmentWithGpuLikeSubAllocator) for 512..4096, and the alignment
//       mix of StressAllocFree: the model takes no alignment argument; it
//       only guarantees chunks at 256-byte offsets in 2 MiB-aligned
//       regions, so alignments up to 256 are checked below.
//   XLA GetAndClearMemoryStats, the ClearStats half and
//       peak_allocated_bytes: the model has no ClearStats and no
//       peak_allocated_bytes; the GetStats half is below.
//   XLA Spatial* (AllocatesFromEnds, KeepsUpperOffset, SkipsLowerHole,
//       LowerReclaimsGap, ReclaimsGap, UpperAlignmentSuffix,
//       LowerAlignmentPrefix, UpperReclaimsAfterLowerFill, ReusesOwnHoles,
//       UpperOffsetsStable, KeepsLowerOffset, SkipsUpperHole,
//       LowerReclaimsAfterUpperFill, LowerOffsetsStable,
//       GapCarveSplitsExactlyAtBothEnds, HoleReuseKeepsSlackAtBothEnds,
//       DefaultHoleOrderPreservesCoalescing,
//       CollectiveHoleRemainderRemainsUsable, HoleOrderKeepsBestFit,
//       DefaultGapLeavesCollectiveCapacity, ExactHolePolicyAtBothEnds,
//       UpperHoleAlignmentKeepsSlack, UnderContention): spatial
//       partitioning (off by default, spec §2) is not modelled.
//
// Randomised upstream tests (Philox, mt19937) are replayed with Go's PCG:
// their expectations (every allocation succeeds, none overlaps) do not
// depend on the particular draws.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"membench/strategies"
)

// tfGPU is GPUBFCAllocator(sub, limit, "GPU_0_bfc") without GPUOptions.
func tfGPU(limit int64) Options {
	return Options{Limit: limit, GarbageCollection: true, Name: "GPU_0_bfc"}
}

// xlaDefault is BFCAllocator::Options{}.
func xlaDefault(limit int64) Options {
	return Options{Limit: limit, AllowGrowth: true}
}

// opsBuilder accumulates an ops string.
type opsBuilder struct{ strings.Builder }

func (b *opsBuilder) alloc(id string, n int64) { fmt.Fprintf(b, "alloc %s %d\n", id, n) }
func (b *opsBuilder) free(id string)           { fmt.Fprintf(b, "free %s\n", id) }

// allFree asserts every region is one free chunk again.
func allFree(t *testing.T, h *harness) {
	t.Helper()
	for _, s := range h.regions() {
		if len(s.Blocks) != 1 || s.Blocks[0].Size != s.Size {
			t.Errorf("region at %#x is not one free chunk: %d blocks", s.Addr, len(s.Blocks))
		}
	}
}

// fourMiBx128 is the setup of PhysicalAllocatorOomsFragmentation and
// TestRegionDeallocation: 128 allocations of 4 MiB, and their layout with
// allow_growth and a limit of at least 512 MiB. Hand derivation: curr
// starts at 2M; x0 doubles it to 4M (region 4M, no further doubling); x1
// gets a 4M region (curr 8M); then regions of 8, 16, 32, 64, 128 and 256M
// hold 2, 4, 8, 16, 32 and 64 allocations: 4+4+8+...+256 = 512M.
func fourMiBx128() (ops, layout string) {
	var b opsBuilder
	for i := range 128 {
		b.alloc(fmt.Sprintf("x%d", i), 4*mib)
	}
	var regs []string
	first := 0
	for _, n := range []int{1, 1, 2, 4, 8, 16, 32, 64} {
		var toks []string
		for i := first; i < first+n; i++ {
			toks = append(toks, fmt.Sprintf("x%d:4M", i))
		}
		regs = append(regs, strings.Join(toks, " "))
		first += n
	}
	return b.String(), strings.Join(regs, " | ")
}

// freeAllBut127 frees x0..x126.
func freeAllBut127() string {
	var b opsBuilder
	for i := range 127 {
		b.free(fmt.Sprintf("x%d", i))
	}
	return b.String()
}

// binNum is BinNumForSize (spec §2.1), for restating upstream's per-bin
// accounting over the model's chunks.
func binNum(n int64) int {
	b := 0
	for v := max(n, 256) >> 8; v > 1; v >>= 1 {
		b++
	}
	return min(b, 20)
}

type binInfo struct{ inUseChunks, inUseBytes, requested, chunks, bytes int64 }

func bins(h *harness) [21]binInfo {
	var out [21]binInfo
	for _, s := range h.regions() {
		for _, bl := range s.Blocks {
			bi := &out[binNum(bl.Size)]
			bi.chunks++
			bi.bytes += bl.Size
			if bl.State == strategies.BlockAllocated {
				bi.inUseChunks++
				bi.inUseBytes += bl.Size
				bi.requested += bl.Requested
			}
		}
	}
	return out
}

func upstreamCases() []scenario {
	var cases []scenario
	add := func(sc scenario) { cases = append(cases, sc) }

	// TF GPUBFCAllocatorTest.NoDups: sizes 1..1023 round to 256, 512, 768
	// or 1024 (256, 256, 256 and 255 of each): 654336 bytes in use.
	{
		var setup, ops opsBuilder
		for s := int64(1); s < 1024; s++ {
			setup.alloc(fmt.Sprintf("p%d", s), s)
			ops.free(fmt.Sprintf("p%d", s))
		}
		add(scenario{
			name:        "TF:NoDups",
			opts:        tfGPU(1 * gib),
			setup:       setup.String(),
			beforeStats: "allocs=1023 inuse=654336 peak=654336 largest=1024",
			beforeCheck: checkNoOverlap,
			ops:         ops.String(),
			after:       "F1G", // own: everything coalesces back
			stats:       "allocs=1023 inuse=0 peak=654336 largest=1024",
		})
	}

	// TF GPUBFCAllocatorTest.AllocationsAndDeallocations: 255 sizes in
	// [100, 1M], free every other one, a (1<<30)+1 request fails and does
	// not prevent 255 more.
	{
		r := rand.New(rand.NewPCG(123, 17))
		size := func(maxMem int64) int64 { return min(max(int64(r.Uint32())%maxMem, 100), maxMem) }
		var setup, ops opsBuilder
		var live []string
		for i := range 255 {
			setup.alloc(fmt.Sprintf("i%d", i), size(1*mib))
		}
		for i := range 255 {
			if i%2 == 1 {
				setup.free(fmt.Sprintf("i%d", i))
			} else {
				live = append(live, fmt.Sprintf("i%d", i))
			}
		}
		setup.alloc("oom", 1*gib+1)
		for i := range 255 {
			setup.alloc(fmt.Sprintf("j%d", i), size(1*mib))
			live = append(live, fmt.Sprintf("j%d", i))
		}
		for _, id := range live {
			ops.free(id)
		}
		add(scenario{
			name:        "TF:AllocationsAndDeallocations",
			opts:        tfGPU(1 * gib),
			setup:       setup.String(),
			beforeCheck: checkNoOverlap,
			ops:         ops.String(),
			after:       "F1G",
			fail:        "oom",
			stats:       "inuse=0 ooms=1 pool=1G mallocs=1 frees=0",
		})
	}

	// TF GPUBFCAllocatorTest.ExerciseCoalescing: after 1024 rounds of
	// 4K, 8M, 16K and 40M allocated then freed, the stats are (4097, 0,
	// their sum, 40M) and a new 4K allocation lands where the first did.
	{
		var ops opsBuilder
		for range 1024 {
			ops.alloc("t1", 1024*4)
			ops.alloc("t2", 1048576*8)
			ops.alloc("t3", 2048*8)
			ops.alloc("t4", 10485760*4)
			for _, id := range []string{"t1", "t2", "t3", "t4"} {
				ops.free(id)
			}
		}
		add(scenario{
			name:        "TF:ExerciseCoalescing",
			opts:        tfGPU(1 * gib),
			setup:       "alloc first 4096; free first",
			beforeStats: "allocs=1 inuse=0 peak=4096 largest=4096",
			ops:         ops.String(),
			after:       "F1G",
			stats:       "allocs=4097 inuse=0 peak=4096+8M+16384+40M largest=40M pool=1G mallocs=1",
			more: []step{{
				ops: "alloc after 4096",
				check: func(t *testing.T, h *harness) {
					if h.addr["after"] != h.addr["first"] {
						t.Errorf("first_ptr_after %#x != first_ptr %#x", h.addr["after"], h.addr["first"])
					}
				},
			}},
		})
	}

	// TF GPUBFCAllocatorTest.AllocateZeroBufSize: Allocate<float>(0) is null.
	add(scenario{
		name:  "TF:AllocateZeroBufSize",
		opts:  tfGPU(1 * gib),
		ops:   "alloc p 0",
		after: "-",
		fail:  "p",
		stats: "allocs=0 pool=0 mallocs=0",
	})

	// TF GPUBFCAllocatorTest.TracksSizes: TracksAllocationSizes() is true;
	// here, the layout reports each chunk's requested and allocated size.
	add(scenario{
		name:  "TF:TracksSizes",
		opts:  tfGPU(1 * gib),
		ops:   "alloc p 1000",
		after: "p:1K/1000 F1G-1K",
	})

	// TF GPUBFCAllocatorTest.AllocatedVsRequested: one float: requested
	// 4, allocated 256.
	add(scenario{
		name:  "TF:AllocatedVsRequested",
		opts:  tfGPU(1 * gib),
		ops:   "alloc t1 4",
		after: "t1:256/4 F1G-256",
		stats: "inuse=256 largest=256",
	})

	// TF GPUBFCAllocatorTest.TestCustomMemoryLimit: with a 2 MiB limit, 64
	// floats succeed and 2<<20 floats (8 MiB) fail. (The 2015 version: a
	// 1 MiB limit and 1<<20 floats.)
	add(scenario{
		name:  "TF:TestCustomMemoryLimit",
		opts:  tfGPU(2 * mib),
		ops:   "alloc first 256; alloc second 8M",
		after: "first:256 F2M-256",
		fail:  "second",
		stats: "pool=2M mallocs=1 ooms=1",
	})
	add(scenario{
		name:  "TF:TestCustomMemoryLimit (2015 version)",
		opts:  tfGPU(1 * mib),
		ops:   "alloc first 256; alloc second 4M",
		after: "first:256 F1M-256",
		fail:  "second",
	})

	// TF GPUBFCAllocatorTest.AllocationsAndDeallocationsWithGrowth: a 2 GiB
	// limit, 9 sizes in [100, 128M], every other one freed, 9 more in
	// [100, 64M]; all succeed without overlap. The test builds GPUOptions
	// with allow_growth but does not pass them, so it runs without growth;
	// both settings are played.
	for _, growth := range []bool{false, true} {
		r := rand.New(rand.NewPCG(123, 17))
		size := func(maxMem int64) int64 { return min(max(int64(r.Uint32())%maxMem, 100), maxMem) }
		var setup, ops opsBuilder
		var live []string
		for i := 1; i < 10; i++ {
			setup.alloc(fmt.Sprintf("i%d", i), size(1<<27))
		}
		for i := 1; i < 10; i++ {
			if (i-1)%2 == 1 {
				setup.free(fmt.Sprintf("i%d", i))
			} else {
				live = append(live, fmt.Sprintf("i%d", i))
			}
		}
		for i := 1; i < 10; i++ {
			setup.alloc(fmt.Sprintf("j%d", i), size(1<<26))
			live = append(live, fmt.Sprintf("j%d", i))
		}
		for _, id := range live {
			ops.free(id)
		}
		opts := tfGPU(2 * gib)
		opts.AllowGrowth = growth
		add(scenario{
			name:        fmt.Sprintf("TF:AllocationsAndDeallocationsWithGrowth (allow_growth=%v)", growth),
			opts:        opts,
			setup:       setup.String(),
			beforeCheck: checkNoOverlap,
			ops:         ops.String(),
			stats:       "inuse=0",
			check:       allFree,
		})
	}

	// TF GPUBFCAllocatorPrivateMethodsTest.BinDebugInfo: two allocations
	// each of 256<<i, i < 5; bin i holds both (in use, requested 2·256<<i),
	// bin 20 the one free remainder; after freeing the second of each,
	// bin i holds one in use. The exact layouts are this file's own.
	{
		var setup opsBuilder
		for i := range 5 {
			for j := range 2 {
				setup.alloc(fmt.Sprintf("p%d", 2*i+j), 256<<i)
			}
		}
		add(scenario{
			name:   "TF:BinDebugInfo",
			opts:   tfGPU(1 * gib),
			setup:  setup.String(),
			before: "p0:256 p1:256 p2:512 p3:512 p4:1K p5:1K p6:2K p7:2K p8:4K p9:4K F1G-15872",
			beforeCheck: func(t *testing.T, h *harness) {
				for i, bi := range bins(h) {
					want := binInfo{}
					switch {
					case i < 5:
						n := int64(2 * (256 << i))
						want = binInfo{inUseChunks: 2, inUseBytes: n, requested: n, chunks: 2, bytes: n}
					case i == 20:
						want = binInfo{chunks: 1, bytes: 1*gib - 15872}
					}
					if bi != want {
						t.Errorf("bin %d: %+v, want %+v", i, bi, want)
					}
				}
			},
			ops: "free p1; free p3; free p5; free p7; free p9",
			// p9's 4K joins the remainder: 1G - 15872 + 4096.
			after: "p0:256 F256 p2:512 F512 p4:1K F1K p6:2K F2K p8:4K F1G-11776",
			check: func(t *testing.T, h *harness) {
				for i, bi := range bins(h) {
					if i < 5 {
						n := int64(256 << i)
						if bi.inUseChunks != 1 || bi.inUseBytes != n || bi.requested != n || bi.chunks < 1 || bi.bytes < n {
							t.Errorf("bin %d: %+v", i, bi)
						}
					} else if bi.inUseChunks != 0 || bi.requested != 0 {
						t.Errorf("bin %d: %+v, want nothing in use", i, bi)
					}
				}
			},
		})
	}

	// TF GPUBFCAllocatorPrivateMethodsTest.ForceAllowGrowth (the resulting
	// curr_region_allocation_bytes_): RoundedBytes(2 MiB) with growth,
	// RoundedBytes(2 GiB) without; the first region has that size.
	add(scenario{
		name:        "TF:ForceAllowGrowth (allow_growth)",
		opts:        Options{Limit: 2 * gib, AllowGrowth: true, GarbageCollection: true},
		beforeStats: "curr=2M",
		ops:         "alloc p 256",
		after:       "p:256 F2M-256",
	})
	add(scenario{
		name:        "TF:ForceAllowGrowth (no allow_growth)",
		opts:        tfGPU(2 * gib),
		beforeStats: "curr=2G",
		ops:         "alloc p 256",
		after:       "p:256 F2G-256",
	})

	// TF GPUBFCAllocatorTest_SubAllocatorSpecific.PhysicalAllocatorOomsFragmentation:
	// 512 MiB, growth, 128 × 4 MiB, all but the last freed: a
	// 512M-4M request fails with the non-coalescing DeviceMemAllocator.
	// The test's comment says garbage collection is off, while the
	// constructor takes it from the environment (default on); both are
	// played. With it on, the seven free regions hold 256M and
	// 508M > 512M-512M+256M, so nothing is freed either.
	{
		setup, before := fourMiBx128()
		for _, gc := range []bool{true, false} {
			add(scenario{
				name:        fmt.Sprintf("TF:PhysicalAllocatorOomsFragmentation (gc=%v)", gc),
				opts:        Options{Limit: 512 * mib, AllowGrowth: true, GarbageCollection: gc},
				setup:       setup,
				before:      before,
				beforeStats: "pool=512M mallocs=8 regions=8",
				ops:         freeAllBut127() + "alloc big 508M",
				after:       "F4M | F4M | F8M | F16M | F32M | F64M | F128M | F252M x127:4M",
				fail:        "big",
				stats:       "pool=512M frees=0 ooms=1",
			})
		}
	}

	// TF GPUBFCAllocatorPrivateMethodsTest_SubAllocatorSpecific.TestRegionDeallocation:
	// 2 GiB, growth, 128 × 4 MiB make more than one region; with all but
	// the last freed, DeallocateFreeRegions(0) returns true and leaves one
	// region and one free chunk.
	{
		setup, before := fourMiBx128()
		add(scenario{
			name:        "TF:TestRegionDeallocation",
			opts:        Options{Limit: 2 * gib, AllowGrowth: true, GarbageCollection: true},
			setup:       setup,
			before:      before,
			beforeStats: "regions=8",
			ops:         freeAllBut127(),
			check: func(t *testing.T, h *harness) {
				if !h.a.deallocateFreeRegions(0) {
					t.Fatal("DeallocateFreeRegions(0) = false")
				}
				if err := h.a.Check(); err != nil {
					t.Fatal(err)
				}
				if n := h.a.free.Len(); n != 1 {
					t.Errorf("%d chunks in bins, want 1", n)
				}
			},
			more: []step{{
				layout: "F252M x127:4M",
				stats:  "regions=1 frees=7 pool=256M",
			}},
		})
	}

	// XLA BFCAllocatorTest.AllocateAndFree.
	add(scenario{
		name:   "XLA:AllocateAndFree",
		opts:   xlaDefault(1 * mib),
		setup:  "alloc p 512",
		before: "p:512 F1M-512", // own: curr = min(1M, 2M)
		ops:    "free p",
		after:  "F1M",
		stats:  "pool=1M mallocs=1 frees=0",
	})

	// XLA BFCAllocatorTest.DefaultAlignment: aligned to 64.
	add(scenario{
		name:  "XLA:DefaultAlignment",
		opts:  xlaDefault(1 * mib),
		ops:   "alloc p 1",
		check: checkAligned(64, "p"),
	})

	// XLA BFCAllocatorTest.RejectsAllocationWhoseRoundedSizeWouldOverflow:
	// SIZE_MAX-1 (here the largest int64 less one) returns null.
	add(scenario{
		name:  "XLA:RejectsAllocationWhoseRoundedSizeWouldOverflow",
		opts:  xlaDefault(1 * mib),
		ops:   fmt.Sprintf("alloc p %d", int64(math.MaxInt64-1)),
		after: "-",
		fail:  "p",
		stats: "allocs=0 inuse=0 pool=0 mallocs=0",
	})

	// XLA BFCAllocatorTest.OomLogsAllocationAnnotations, its allocations:
	// limit 1024 without growth, 512 succeeds and 2048 fails.
	add(scenario{
		name:  "XLA:OomLogsAllocationAnnotations (outcomes)",
		opts:  Options{Limit: 1024},
		ops:   "alloc p 512; alloc q 2048",
		after: "p:512 F512",
		fail:  "q",
		stats: "ooms=1 pool=1K",
	})

	// XLA BFCAllocatorTest.ExtendTerminatesWhenSubAllocatorAlwaysFails:
	// pool 2048 without growth, every device allocation fails: the
	// backpedal loop (2048, 1792, ..., 256, then 0 < 256) ends and the
	// request returns null. A hang trips the watchdog in TestUpstream.
	add(scenario{
		name:   "XLA:ExtendTerminatesWhenSubAllocatorAlwaysFails",
		opts:   Options{Limit: 2048},
		device: "gpu:capacity=128B",
		ops:    "alloc p 100",
		after:  "-",
		fail:   "p",
		stats:  "mallocs=0 pool=0 ooms=1",
	})

	// XLA BFCAllocatorAlignmentTest.RespectsRequestedAlignment, for the
	// alignments up to 256: a 256 B filler, then 8 × 256 B aligned.
	for _, align := range []int64{32, 64, 128, 256} {
		var ops opsBuilder
		var ids []string
		for i := range 8 {
			id := fmt.Sprintf("p%d", i)
			ops.alloc(id, 256)
			ids = append(ids, id)
		}
		add(scenario{
			name:  fmt.Sprintf("XLA:RespectsRequestedAlignment/%d", align),
			opts:  xlaDefault(1 * mib),
			setup: "alloc filler 256",
			ops:   ops.String(),
			after: "filler:256 p0:256 p1:256 p2:256 p3:256 p4:256 p5:256 p6:256 p7:256 F1M-2304",
			check: checkAligned(align, ids...),
		})
	}

	// XLA BFCAllocatorTest.StressAllocFree: 20 rounds of 350 allocations
	// (10 × 5 alignments × sizes 1, 128, 256, 700, 1024, 4096, 8192) in
	// random order, freed in random order; none fails. Own expectation:
	// a round holds 50 × (256+256+256+768+1024+4096+8192) = 742400 B,
	// carved from the tail of the first 2 MiB region, so one region ever.
	{
		r := rand.New(rand.NewPCG(42, 42))
		sizes := []int64{1, 128, 256, 700, 1024, 4096, 8192}
		var ops opsBuilder
		for range 20 {
			var ids []string
			var sz []int64
			for c := range 10 {
				for a := range 5 {
					for _, s := range sizes {
						ids = append(ids, fmt.Sprintf("c%da%ds%d", c, a, s))
						sz = append(sz, s)
					}
				}
			}
			perm := r.Perm(len(ids))
			for _, i := range perm {
				ops.alloc(ids[i], sz[i])
			}
			for _, i := range r.Perm(len(ids)) {
				ops.free(ids[i])
			}
		}
		add(scenario{
			name:  "XLA:StressAllocFree",
			opts:  xlaDefault(16 * mib),
			ops:   ops.String(),
			after: "F2M",
			stats: "allocs=7000 peak=742400 largest=8K pool=2M mallocs=1 ooms=0",
		})
	}

	// XLA BFCAllocatorTest.AlignmentWithHardcodedSubAllocatorAlignment
	// (earlier AlignmentWithGpuLikeSubAllocator), for alignment 256: after
	// a filler, 8 allocate-and-free rounds are 256-aligned. Own: each
	// round reuses the chunk right after the filler.
	add(scenario{
		name:  "XLA:AlignmentWithHardcodedSubAllocatorAlignment/256",
		opts:  xlaDefault(1 * mib),
		setup: "alloc filler 256",
		ops:   "alloc p0 256; free p0; alloc p1 256; free p1; alloc p2 256; free p2; alloc p3 256; free p3; alloc p4 256; free p4; alloc p5 256; free p5; alloc p6 256; free p6; alloc p7 256; free p7",
		after: "filler:256 F1M-256",
		check: func(t *testing.T, h *harness) {
			for i := range 8 {
				id := fmt.Sprintf("p%d", i)
				if a := h.addr[id]; a%256 != 0 || a != h.addr["filler"]+256 {
					t.Errorf("%s at %#x, want filler+256 = %#x", id, a, h.addr["filler"]+256)
				}
			}
		},
	})

	// XLA BFCAllocatorTest.GetAndClearMemoryStats, the GetStats half:
	// 1024 → (1024, 1024); +2048 → (3072, 3072); free 2048 → (1024, 3072).
	add(scenario{
		name:        "XLA:GetAndClearMemoryStats",
		opts:        xlaDefault(256 * mib),
		beforeStats: "inuse=0 peak=0",
		ops:         "alloc p1 1024",
		stats:       "inuse=1024 peak=1024",
		more: []step{
			{ops: "alloc p2 2048", stats: "inuse=3072 peak=3072"},
			{ops: "free p2", stats: "inuse=1024 peak=3072"},
		},
	})
	return cases
}

func checkAligned(align int64, ids ...string) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		for _, id := range ids {
			if p := h.ptr(id); p%align != 0 {
				t.Errorf("%s at %#x is not %d-aligned", id, p, align)
			}
		}
	}
}

func TestUpstream(t *testing.T) {
	for _, sc := range upstreamCases() {
		t.Run(sc.name, func(t *testing.T) {
			// Upstream's fuse against a stalled Extend loop: a scenario
			// that does not finish crashes the test binary with its name.
			dog := time.AfterFunc(time.Minute, func() { panic(sc.name + ": did not finish within a minute") })
			defer dog.Stop()
			runScenario(t, sc)
		})
	}
}
