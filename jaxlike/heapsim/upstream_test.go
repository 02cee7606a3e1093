package heapsim

// XLA's own heap simulator tests, restated as table rows. One row per
// upstream test; each names its source, openxla/xla
// xla/service/heap_simulator/heap_simulator_test.cc, as Suite.Test. The
// expectations (offsets, chunk sizes, heap sizes, counts) are upstream's.
//
// Calls: the rows give upstream's HeapAlgorithm call sequence, "alloc ID
// SIZE", "free ID" and "share ID WITH SIZE" (ShareWith), separated by
// ';'. As in GlobalDecreasingSizeBestFitHeap, every call advances the
// logical clock by one: a buffer is live from the time of its alloc (or
// share) to the time of its free, both inclusive.
//
// Expectations: "ID@OFFSET/SIZE ..." is each buffer's chunk.
//
// Not restated, and why:
//   MinimumMemoryForSequenceTest.*, HeapSimulatorTest.* (Scalar, One,
//       Multiply, MultiplyAdd, FusionOutputsOnlyShareOnce, BufferReusedOnce,
//       MultiplyDot, MultiplyDotAdd, WholeModule, ...): they build HLO
//       modules and check the call sequence the simulator derives from a
//       schedule (liveness, operand sharing); this package starts from
//       the intervals those calls would produce.
//   ConstrainedGlobalDecreasingSizeBestFitHeapTest.*: the per-heap size
//       limit (xla_multiheap_size_constraint_per_heap) splits the buffers
//       over several heaps; it defaults to -1, one heap per colour
//       (allocator-spec §6.2), and is not modelled. FastMerge, FastSplit,
//       PhaseWindow and PhaseWindowEnd orders are other packing strategies
//       than the two buffer assignment chooses between.
//   FindGlobalDecreasingSizeBestFitTest.FindChunkCandidates,
//       SlicedBufferIntervalTest.*, SlicedAllocationFinderTest.* with
//       slices, SliceTimePermutationIteratorTest.*: slicing belongs to
//       memory-space assignment's prefetches, not to buffer assignment.
//       The three SlicedAllocationFinder cases without slices choose a
//       free piece the way every placement here does and are restated.
//   IntervalTreeTest.* removals and the tree's shape (subtree_end, root):
//       the index here is static (an offline plan never removes a chunk);
//       the overlap queries of those tests are restated.
//   IntervalTreeTest.BufferIntervalTreeToAsciiArt*: debugging output.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// calls turns an upstream call sequence into buffers, in order of first
// appearance, with their names.
func calls(t *testing.T, seq string) ([]Buffer, []string) {
	t.Helper()
	var bufs []Buffer
	var names []string
	at := map[string]int{}
	var now int64
	for _, c := range strings.Split(seq, ";") {
		f := strings.Fields(c)
		if len(f) == 0 {
			continue
		}
		num := func(s string) int64 {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("bad number in %q: %v", c, err)
			}
			return n
		}
		switch {
		case f[0] == "alloc" && len(f) == 3:
			at[f[1]] = len(bufs)
			bufs = append(bufs, Buffer{ID: int64(len(bufs)), Size: num(f[2]), Start: now, End: -1})
			names = append(names, f[1])
		case f[0] == "share" && len(f) == 4:
			with, ok := at[f[2]]
			if !ok {
				t.Fatalf("%q shares with an unknown buffer", c)
			}
			at[f[1]] = len(bufs)
			bufs = append(bufs, Buffer{ID: int64(len(bufs)), Size: num(f[3]), Start: now, End: -1, ShareWith: with + 1})
			names = append(names, f[1])
		case f[0] == "free" && len(f) == 2:
			i, ok := at[f[1]]
			if !ok {
				t.Fatalf("%q frees an unknown buffer", c)
			}
			bufs[i].End = now
		default:
			t.Fatalf("bad call %q", c)
		}
		now++
	}
	for i, b := range bufs {
		if b.End < 0 {
			t.Fatalf("buffer %s is never freed", names[i])
		}
	}
	return bufs, names
}

// layout renders a packing as "ID@OFFSET/SIZE ..." in buffer order.
func layout(names []string, r Result) string {
	var parts []string
	for i, c := range r.Chunks {
		parts = append(parts, fmt.Sprintf("%s@%d/%d", names[i], c.Offset, c.Size))
	}
	return strings.Join(parts, " ")
}

func TestUpstreamGlobalDecreasingSizeBestFitHeap(t *testing.T) {
	cases := []struct {
		name   string
		align  int64
		calls  string
		heap   int64
		chunks string
	}{
		{
			name: "GlobalDecreasingSizeBestFitHeapTest.Empty",
			// heap_size 0, one heap, no chunks.
			align: 1, calls: "", heap: 0, chunks: "",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.DecreasingSize",
			align:  1,
			calls:  "alloc a 10; alloc b 30; alloc c 20; alloc d 40; free a; free b; free c; free d",
			heap:   100,
			chunks: "a@90/10 b@40/30 c@70/20 d@0/40",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.DecreasingSizeWithAlignment",
			align:  20,
			calls:  "alloc a 10; alloc b 20; alloc c 50; free a; alloc d 40; free b; free c; free d",
			heap:   120,
			chunks: "a@60/10 b@100/20 c@0/50 d@60/40",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.BestFit",
			align:  1,
			calls:  "alloc a 10; alloc b 20; alloc c 40; free a; alloc d 30; alloc e 50; free b; free c; free d; free e",
			heap:   140,
			chunks: "a@90/10 b@120/20 c@50/40 d@90/30 e@0/50",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.Colocated",
			align:  1,
			calls:  "alloc a 40; free a; alloc b 20; free b; share c a 40; free c",
			heap:   40,
			chunks: "a@0/40 b@0/20 c@0/40",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.ColocatedII",
			align:  1,
			calls:  "alloc a 40; free a; alloc b 20; share c a 40; free c; free b",
			heap:   60,
			chunks: "a@0/40 b@40/20 c@0/40",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.ColocatedIII",
			align:  1,
			calls:  "alloc a 10; free a; alloc b 30; share c a 10; free c; free b",
			heap:   40,
			chunks: "a@30/10 b@0/30 c@30/10",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.ColocatedDifferentSize1",
			align:  1,
			calls:  "alloc a 40; free a; alloc b 20; share c a 30; free c; free b",
			heap:   60,
			chunks: "a@0/40 b@40/20 c@0/40",
		},
		{
			name:   "GlobalDecreasingSizeBestFitHeapTest.ColocatedDifferentSize2",
			align:  1,
			calls:  "alloc a 40; free a; alloc b 20; share c a 50; free c; free b",
			heap:   70,
			chunks: "a@0/50 b@50/20 c@0/50",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bufs, names := calls(t, c.calls)
			// GlobalDecreasingSizeBestFitHeap(alignment) defaults to kSpatial.
			r, err := Pack(bufs, Options{Alignment: c.align, Order: Spatial})
			if err != nil {
				t.Fatal(err)
			}
			if r.HeapSize != c.heap {
				t.Errorf("heap size %d, upstream %d", r.HeapSize, c.heap)
			}
			if got := layout(names, r); got != c.chunks {
				t.Errorf("chunks\n got %s\nwant %s", got, c.chunks)
			}
			// Own: ChooseBestHeapAlgorithm never does worse than the
			// spatial order it tries first.
			b, err := Pack(bufs, Options{Alignment: c.align})
			if err != nil {
				t.Fatal(err)
			}
			if b.HeapSize > r.HeapSize {
				t.Errorf("best heap %d > spatial heap %d", b.HeapSize, r.HeapSize)
			}
		})
	}
}

func TestUpstreamNoFragmentationStatsHeap(t *testing.T) {
	cases := []struct {
		name  string
		calls string
		peak  int64
	}{
		{"NoFragmentationStatsHeapTest.Empty", "", 0},
		{"NoFragmentationStatsHeapTest.Simple",
			"alloc a 10; alloc b 20; alloc c 30; alloc d 30; free a; free b; free c; free d", 90},
		{"NoFragmentationStatsHeapTest.Mixed",
			"alloc a 10; alloc b 20; free b; alloc c 30; free c; alloc d 5; free d; free a", 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bufs, _ := calls(t, c.calls)
			peak, err := PeakLive(bufs)
			if err != nil {
				t.Fatal(err)
			}
			if peak != c.peak {
				t.Errorf("peak live %d, upstream %d", peak, c.peak)
			}
			// Own: every packing needs at least the peak (the
			// fragmentation_size HeapSimulator::Finish reports is the
			// difference, never negative).
			r, err := Pack(bufs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.HeapSize < peak {
				t.Errorf("heap %d below peak live %d", r.HeapSize, peak)
			}
		})
	}
}

// FindGlobalDecreasingSizeBestFitTest.ChunkCandidate: buffers placed one
// at a time in the test's own order with FindChunkCandidate, some with a
// preferred offset, each committed before the next; each step's expected
// (offset, heap size) is upstream's.
func TestUpstreamFindChunkCandidate(t *testing.T) {
	steps := []struct {
		name                   string
		size, start, end, pref int64
		offset, heap           int64
	}{
		{"a", 5, 6, 10, 5, 5, 10},     // preferred offset 5 is returned
		{"b", 10, 3, 5, -1, 0, 10},    // no preference
		{"c", 5, 2, 8, -1, 10, 15},    // no preference
		{"d", 5, 0, 2, 10, 0, 15},     // preferred 10 is occupied
		{"e", 10, 11, 13, 10, 10, 20}, // preferred 10 is returned
		{"f", 5, 3, 5, 20, 20, 25},    // preferred 20 is returned
		{"g", 10, 4, 8, 15, 25, 35},   // preferred 15 is occupied
	}
	bufs := make([]Buffer, len(steps))
	for i, s := range steps {
		bufs[i] = Buffer{ID: int64(i), Size: s.size, Start: s.start, End: s.end}
	}
	p, err := newPacker(bufs, 1)
	if err != nil {
		t.Fatal(err)
	}
	chunks := make([]Chunk, len(bufs))
	var heap int64
	for i, s := range steps {
		off := p.find(int32(i), s.pref)
		c := Chunk{Offset: off, Size: s.size}
		heap = max(heap, c.End())
		if off != s.offset || heap != s.heap {
			t.Errorf("%s: (offset, heap) = (%d, %d), upstream (%d, %d)", s.name, off, heap, s.offset, s.heap)
		}
		p.commit(int32(i), c, chunks)
	}
}

// SlicedAllocationFinderTest's cases without slices: the choice of a free
// piece, given the free pieces, the size (max_colocation_size where it is
// larger than the slice) and the alignment.
func TestUpstreamSlicedAllocationFinderNoSlices(t *testing.T) {
	free := []piece{{5, 7}, {10, 40}, {45, 48}, {60, 70}}
	cases := []struct {
		name  string
		free  []piece
		size  int64
		chunk int64
	}{
		// The full buffer goes in the smallest piece that fits.
		{"SlicedAllocationFinderTest.NoSlices", free, 3, 45},
		// The colocation size (6) does not fit in the smallest piece.
		{"SlicedAllocationFinderTest.NoSlicesLargerMaxColloc", free, 6, 60},
		// Several pieces of size 3: the lowest offset.
		{"SlicedAllocationFinderTest.NoSlicesSmallestTie",
			[]piece{{5, 7}, {10, 13}, {15, 40}, {45, 48}, {60, 70}}, 3, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := choose(c.free, c.size, 1, -1); got != c.chunk {
				t.Errorf("offset %d, upstream %d", got, c.chunk)
			}
		})
	}
}

// IntervalTreeTest's overlap queries, on the static index: every interval
// committed, then the chunks overlapping a time range counted
// (NumChunksOverlappingInTime), their largest end (HeapSizeInInterval) and
// their bytes at each time (MemoryUsedInInterval).
func TestUpstreamIntervalTree(t *testing.T) {
	type iv struct {
		start, end int64
		chunk      Chunk
	}
	build := func(ivs []iv) *index {
		starts := make([]int64, len(ivs))
		ends := make([]int64, len(ivs))
		ids := make([]int32, len(ivs))
		for i, v := range ivs {
			starts[i], ends[i], ids[i] = v.start, v.end, int32(i)
		}
		x, leaves := newIndex(ids, starts, ends)
		for i, v := range ivs {
			x.commit(leaves[i], v.chunk)
		}
		return x
	}
	t.Run("IntervalTreeTest.InsertAndRemoveTwoLevelsLeft", func(t *testing.T) {
		x := build([]iv{{20, 36, Chunk{1, 2}}, {1, 45, Chunk{1, 2}}})
		if n := len(x.appendOverlapping(nil, 10, 25)); n != 2 {
			t.Errorf("overlapping [10, 25]: %d, upstream 2", n)
		}
		if n := len(x.appendOverlapping(nil, 5, 15)); n != 1 {
			t.Errorf("overlapping [5, 15]: %d, upstream 1", n)
		}
	})
	t.Run("IntervalTreeTest.BufferIntervalTreeHeapSize", func(t *testing.T) {
		x := build([]iv{{15, 26, Chunk{0, 16}}, {17, 24, Chunk{16, 32}}, {20, 22, Chunk{32, 32}}})
		for _, q := range []struct{ s, e, want int64 }{{15, 16, 16}, {15, 19, 48}, {15, 22, 64}, {23, 24, 48}, {25, 26, 16}} {
			var h int64
			for _, c := range x.appendOverlapping(nil, q.s, q.e) {
				h = max(h, c.End())
			}
			if h != q.want {
				t.Errorf("heap size in [%d, %d]: %d, upstream %d", q.s, q.e, h, q.want)
			}
		}
	})
	t.Run("IntervalTreeTest.BufferIntervalTreeMemoryUsedInInterval", func(t *testing.T) {
		x := build([]iv{{15, 25, Chunk{0, 16}}, {15, 19, Chunk{16, 32}}, {20, 22, Chunk{32, 32}}})
		want := []int64{48, 48, 48, 48, 48, 16}
		for i, w := range want {
			tm := int64(18 + i)
			var used int64
			for _, c := range x.appendOverlapping(nil, tm, tm) {
				used += c.Size
			}
			if used != w {
				t.Errorf("memory used at %d: %d, upstream %d", tm, used, w)
			}
		}
	})
}
