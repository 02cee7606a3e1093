package heapsim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"membench/internal/radix"
)

// Buffer is one value the heap simulator places: a size and the logical
// times during which it is live.
type Buffer struct {
	// ID breaks the last ties of both orders, as the HloValue's id does
	// upstream (the BufferInterval comparators end with *buffer, and
	// HloValue compares by id); buffers of equal ID fall back to their
	// index in the slice given to Pack.
	ID int64
	// Size is the bytes the buffer needs. A buffer of size 0 is given
	// the chunk [0, 0) and takes no space (the degenerate case of
	// GlobalDecreasingSizeBestFitHeap::Alloc).
	Size int64
	// Start and End are the first and the last logical time at which the
	// buffer is live, both inclusive (allocator-spec §6.2: each Alloc and
	// each Free advances the clock; BufferInterval's start and end).
	Start, End int64
	// ShareWith, when not 0, is 1 + the index of an earlier buffer whose
	// chunk this one shares (HeapAlgorithm::ShareWith: values XLA must
	// place at one address, such as an in-place update of its operand).
	// A shared chunk is as large as the largest buffer sharing it, and no
	// buffer may overlap it in space while any buffer sharing it is live
	// (GetTransitiveColocations, GetMaxColocationSize).
	ShareWith int
}

// Order is the order in which GlobalDecreasingSizeBestFitHeap places the
// buffers (its PackingStrategy), or Best, the choice between the two that
// buffer assignment makes.
type Order uint8

const (
	// Best packs in both orders and keeps the smaller heap, the spatial
	// one on a tie: ChooseBestHeapAlgorithm::Finish keeps the first
	// strictly smaller result, and buffer_assignment.cc lists kSpatial
	// before kTemporal (allocator-spec §3.1, §6.2).
	Best Order = iota
	// Spatial is kSpatial: size descending, then live-range length
	// descending, then id (GetSpatialBufferIntervalCompare).
	Spatial
	// Temporal is kTemporal: the length of the span from the earliest
	// start to the latest end of the buffers sharing the chunk
	// descending, then size descending, then id
	// (GetTemporalBufferIntervalCompare).
	Temporal
)

var orderNames = [...]string{Best: "best", Spatial: "spatial", Temporal: "temporal"}

func (o Order) String() string {
	if int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("Order(%d)", o)
}

// ParseOrder reads an Order by its String.
func ParseOrder(s string) (Order, error) {
	for o, n := range orderNames {
		if n == s {
			return Order(o), nil
		}
	}
	return 0, fmt.Errorf("unknown order %q (valid: best, spatial, temporal)", s)
}

// Options configure Pack.
type Options struct {
	// Alignment is the alignment of every chunk's offset: the free
	// space after a chunk starts at its end rounded up to it
	// (ComputeAlignedChunkEnd). Buffer assignment passes 16 in older
	// trees and kXlaAllocatedBufferAlignBytes = 256 in the newest
	// (allocator-spec §6.2). 0 means 1, no alignment.
	Alignment int64
	// Order is the placement order; the zero value is Best.
	Order Order
}

// Chunk is a buffer's place in the heap: bytes [Offset, Offset+Size).
type Chunk struct {
	Offset, Size int64
}

// End is the first byte after the chunk.
func (c Chunk) End() int64 { return c.Offset + c.Size }

// Result is a packing: each buffer's chunk, in the order of the buffers
// given, and the heap they need.
type Result struct {
	// Chunks holds each buffer's chunk. A buffer that shares a chunk
	// gets the whole shared chunk, as upstream's chunk_map records it.
	Chunks []Chunk
	// HeapSize is the largest chunk end, the heap the packing needs.
	HeapSize int64
	// Order is the order that produced the packing, Spatial or Temporal.
	Order Order
}

// Pack places every buffer with XLA's GlobalDecreasingSizeBestFitHeap:
// in the order opt.Order gives, each chunk goes into the smallest free
// piece of the heap that fits it among the chunks already placed whose
// buffers are live at the same time, ties to the lowest offset, or at
// the end of the heap when no piece fits. The package comment describes
// the algorithm, its sources and its cost.
func Pack(bufs []Buffer, opt Options) (Result, error) {
	align := opt.Alignment
	if align == 0 {
		align = 1
	}
	if align < 0 {
		return Result{}, fmt.Errorf("heapsim: alignment %d is negative", align)
	}
	p, err := newPacker(bufs, align)
	if err != nil {
		return Result{}, err
	}
	switch opt.Order {
	case Spatial, Temporal:
		return p.pack(opt.Order), nil
	case Best:
		s := p.pack(Spatial)
		if t := p.pack(Temporal); t.HeapSize < s.HeapSize {
			return t, nil
		}
		return s, nil
	}
	return Result{}, fmt.Errorf("heapsim: unknown order %v", opt.Order)
}

// PeakLive is the most bytes live at one time: what XLA's
// NoFragmentationStatsHeap reports, and a floor under every packing's
// heap, since chunks live at the same time are disjoint. A shared chunk
// counts once, at its size, while any buffer sharing it is live.
func PeakLive(bufs []Buffer) (int64, error) {
	g, err := newGroups(bufs)
	if err != nil {
		return 0, err
	}
	type step struct{ t, d int64 }
	var steps []step
	var ivs [][2]int64
	for _, r := range g.roots {
		ivs = append(ivs[:0], [2]int64{bufs[r].Start, bufs[r].End})
		for _, m := range g.members(r) {
			ivs = append(ivs, [2]int64{bufs[m].Start, bufs[m].End})
		}
		slices.SortFunc(ivs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		// The union of the intervals: the chunk is held while any is live.
		s, e := ivs[0][0], ivs[0][1]
		for _, iv := range ivs[1:] {
			if iv[0] <= e {
				e = max(e, iv[1])
				continue
			}
			steps = append(steps, step{s, g.size[r]}, step{e + 1, -g.size[r]})
			s, e = iv[0], iv[1]
		}
		steps = append(steps, step{s, g.size[r]}, step{e + 1, -g.size[r]})
	}
	// Releases at t before acquisitions at t: an interval ending at t-1
	// does not overlap one starting at t.
	slices.SortFunc(steps, func(a, b step) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	var live, peak int64
	for _, s := range steps {
		live += s.d
		peak = max(peak, live)
	}
	return peak, nil
}

// groups resolves ShareWith: each buffer of positive size belongs to the
// group of its root, the first buffer of its chain of ShareWith links.
type groups struct {
	root    []int32 // root of each buffer (-1 for a buffer of size 0)
	memOff  []int32 // members of root r are mem[memOff[r]:memOff[r+1]]
	mem     []int32
	size    []int64 // per root: the largest size in its group
	roots   []int32 // roots of positive size, in index order
	minStar []int64 // per root: earliest start in its group
	maxEnd  []int64 // per root: latest end in its group
}

func (g *groups) members(r int32) []int32 { return g.mem[g.memOff[r]:g.memOff[r+1]] }

// maxTotal bounds the sum of the chunk sizes (plus one alignment each), so
// that no offset or heap size can overflow: 2^61 bytes, 2 EiB.
const maxTotal = 1 << 61

func newGroups(bufs []Buffer) (*groups, error) {
	n := len(bufs)
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("heapsim: %d buffers, more than %d", n, math.MaxInt32)
	}
	g := &groups{root: make([]int32, n), memOff: make([]int32, n+1), size: make([]int64, n),
		minStar: make([]int64, n), maxEnd: make([]int64, n)}
	count := make([]int32, n)
	for i, b := range bufs {
		switch {
		case b.Size < 0:
			return nil, fmt.Errorf("heapsim: buffer %d (id %d): negative size %d", i, b.ID, b.Size)
		case b.Start > b.End:
			return nil, fmt.Errorf("heapsim: buffer %d (id %d): live from %d to %d, ends before it starts", i, b.ID, b.Start, b.End)
		case b.ShareWith < 0 || b.ShareWith > i:
			return nil, fmt.Errorf("heapsim: buffer %d (id %d): ShareWith %d does not name an earlier buffer", i, b.ID, b.ShareWith)
		}
		g.root[i] = -1
		if b.Size == 0 {
			continue
		}
		if b.ShareWith == 0 {
			g.root[i] = int32(i)
			g.roots = append(g.roots, int32(i))
			g.size[i], g.minStar[i], g.maxEnd[i] = b.Size, b.Start, b.End
			continue
		}
		r := g.root[b.ShareWith-1]
		if r < 0 {
			return nil, fmt.Errorf("heapsim: buffer %d (id %d): shares with buffer %d, whose size is 0", i, b.ID, b.ShareWith-1)
		}
		g.root[i] = r
		count[r]++
		g.size[r] = max(g.size[r], b.Size)
		g.minStar[r] = min(g.minStar[r], b.Start)
		g.maxEnd[r] = max(g.maxEnd[r], b.End)
	}
	var total int64
	for i := range n {
		g.memOff[i+1] = g.memOff[i] + count[i]
		if g.root[i] == int32(i) {
			if g.size[i] >= maxTotal-total {
				return nil, fmt.Errorf("heapsim: the buffers add up to more than %d bytes", int64(maxTotal))
			}
			total += g.size[i] + 1
		}
	}
	g.mem = make([]int32, g.memOff[n])
	fill := slices.Clone(g.memOff[:n])
	for i := range n {
		if r := g.root[i]; r >= 0 && r != int32(i) {
			g.mem[fill[r]] = int32(i)
			fill[r]++
		}
	}
	return g, nil
}

// packer holds what both orders share: the groups, the static interval
// index over every positive-size buffer, and scratch slices reused for
// every placement so that the placement loop allocates nothing once they
// have grown.
type packer struct {
	*groups
	bufs  []Buffer
	align int64
	idx   *index
	leaf  []int32 // leaf of each buffer in idx (meaningless for size 0)
	used  []Chunk
	free  []piece
	// scratch is sortByOffset's second buffer, keyed its radix sort's.
	scratch []Chunk
	keyed   [2][]radix.Keyed
}

// piece is a free piece of the heap, [start, end); the tail's end is
// math.MaxInt64 (upstream's INT64_MAX).
type piece struct{ start, end int64 }

func newPacker(bufs []Buffer, align int64) (*packer, error) {
	g, err := newGroups(bufs)
	if err != nil {
		return nil, err
	}
	if len(g.roots) > 0 && int64(len(g.roots))*align > maxTotal {
		return nil, fmt.Errorf("heapsim: alignment %d over %d chunks overflows", align, len(g.roots))
	}
	starts := make([]int64, len(bufs))
	ends := make([]int64, len(bufs))
	var ids []int32
	for i, b := range bufs {
		starts[i], ends[i] = b.Start, b.End
		if g.root[i] >= 0 {
			ids = append(ids, int32(i))
		}
	}
	idx, leaves := newIndex(ids, starts, ends)
	leaf := make([]int32, len(bufs))
	for k, id := range ids {
		leaf[id] = leaves[k]
	}
	return &packer{groups: g, bufs: bufs, align: align, idx: idx, leaf: leaf}, nil
}

// sorted returns the roots in the placement order o
// (GlobalDecreasingSizeBestFitHeap::GetSortedBufferIntervals).
func (p *packer) sorted(o Order) []int32 {
	rs := slices.Clone(p.roots)
	b := p.bufs
	slices.SortFunc(rs, func(x, y int32) int {
		var c int
		switch o {
		case Spatial:
			// (-size, start - end, id): the root's own size and range.
			c = cmp.Or(cmp.Compare(b[y].Size, b[x].Size),
				cmp.Compare(b[x].Start-b[x].End, b[y].Start-b[y].End))
		default:
			// (min colocation start - max colocation end, -size, id).
			c = cmp.Or(cmp.Compare(p.minStar[x]-p.maxEnd[x], p.minStar[y]-p.maxEnd[y]),
				cmp.Compare(b[y].Size, b[x].Size))
		}
		return cmp.Or(c, cmp.Compare(b[x].ID, b[y].ID), cmp.Compare(x, y))
	})
	return rs
}

// pack is GlobalDecreasingSizeBestFitHeap::Finish in order o: each root
// in turn gets FindChunkCandidate's chunk, committed for itself and every
// buffer sharing it (CommitChunkAndInterval).
func (p *packer) pack(o Order) Result {
	p.idx.reset()
	res := Result{Chunks: make([]Chunk, len(p.bufs)), Order: o}
	for _, r := range p.sorted(o) {
		c := Chunk{Offset: p.find(r, -1), Size: p.size[r]}
		p.commit(r, c, res.Chunks)
		res.HeapSize = max(res.HeapSize, c.End())
	}
	return res
}

// commit records c as the chunk of root r and of the buffers sharing it.
func (p *packer) commit(r int32, c Chunk, chunks []Chunk) {
	p.idx.commit(p.leaf[r], c)
	chunks[r] = c
	for _, m := range p.members(r) {
		p.idx.commit(p.leaf[m], c)
		chunks[m] = c
	}
}

// find is FindChunkCandidate for root r: the free pieces left by the
// chunks of buffers live at the same time as any buffer of r's group
// (MakeFreeChunksList), then the choice among them (choose). preferred
// is upstream's preferred offset, -1 for none (buffer assignment passes
// none; the upstream test of it is ported).
func (p *packer) find(r int32, preferred int64) int64 {
	used := p.idx.appendOverlapping(p.used[:0], p.bufs[r].Start, p.bufs[r].End)
	for _, m := range p.members(r) {
		used = p.idx.appendOverlapping(used, p.bufs[m].Start, p.bufs[m].End)
	}
	used, p.scratch = sortByOffset(used, p.scratch, &p.keyed)
	p.used = used
	p.free = freePieces(p.free[:0], used, p.bufs[r].Size, p.align)
	return choose(p.free, p.size[r], p.align, preferred)
}

// freePieces is MakeFreeChunksList: used (sorted by offset) merged into
// runs of overlapping chunks; the gap before each run, from the aligned
// end of the previous run, when it holds at least size bytes; and the
// unbounded tail after the last run. Upstream filters the gaps by the
// buffer's own size, and choose then checks the shared chunk's size.
func freePieces(dst []piece, used []Chunk, size, align int64) []piece {
	if len(used) == 0 {
		return append(dst, piece{0, math.MaxInt64})
	}
	var freeStart int64
	runOff, runEnd := used[0].Offset, used[0].End()
	for _, c := range used[1:] {
		if c.Offset < runEnd {
			runEnd = max(runEnd, c.End())
			continue
		}
		if runOff-freeStart >= size {
			dst = append(dst, piece{freeStart, runOff})
		}
		freeStart = max(freeStart, alignUp(runEnd, align))
		runOff, runEnd = c.Offset, c.End()
	}
	if runOff-freeStart >= size {
		dst = append(dst, piece{freeStart, runOff})
	}
	freeStart = max(freeStart, alignUp(runEnd, align))
	return append(dst, piece{freeStart, math.MaxInt64})
}

// choose is FindUnslicedChunkCandidates' choice among the free pieces
// (sorted by start): the preferred offset when it is aligned and the
// piece holding it fits size bytes from there; otherwise the piece of
// smallest extent whose aligned start still fits size bytes, ties to the
// lowest offset (the first found, as upstream replaces only on a strictly
// smaller piece), which is the unbounded tail only when nothing else
// fits. It returns -1 when nothing fits (only for lists without a tail,
// as the upstream tests of SlicedAllocationFinder give).
func choose(free []piece, size, align, preferred int64) int64 {
	if preferred >= 0 && preferred%align == 0 {
		i := sort.Search(len(free), func(i int) bool { return free[i].start > preferred })
		if i > 0 {
			if f := free[i-1]; preferred < f.end && f.end-size >= preferred {
				return preferred
			}
		}
	}
	best, bestExtent := int64(-1), int64(0)
	for _, f := range free {
		s := alignUp(f.start, align)
		if f.end-size < s {
			continue
		}
		if e := f.end - f.start; best < 0 || e < bestExtent {
			best, bestExtent = s, e
		}
	}
	return best
}

// alignUp is ComputeAlignedChunkEnd: x rounded up to a multiple of align.
func alignUp(x, align int64) int64 {
	if align == 1 {
		return x
	}
	return (x + align - 1) / align * align
}

// radixMin is the length from which sortByOffset sorts by radix: below
// it a comparison sort is faster (upstream's AdaptiveHybridSortChunks
// makes the same choice, at 3000 chunks of its own).
const radixMin = 256

// sortByOffset sorts chunks by offset, as MakeFreeChunksList sorts the
// chunks in use, and returns them with the spare buffer (the two may have
// swapped). The chunks overlapping a long-lived buffer number in the
// thousands on a training trace, so the sort is most of a placement's
// cost: a radix sort of their offsets (package radix, with ks as its
// scratch) makes it linear, with no allocation once the buffers have
// grown. Chunks of equal offset keep their order (the merge that follows
// does not depend on it).
func sortByOffset(c, spare []Chunk, ks *[2][]radix.Keyed) (sorted, rest []Chunk) {
	if len(c) < radixMin {
		slices.SortFunc(c, func(a, b Chunk) int { return cmp.Compare(a.Offset, b.Offset) })
		return c, spare
	}
	k := ks[0][:0]
	for i, x := range c {
		k = append(k, radix.Keyed{Key: uint64(x.Offset), I: int32(i)})
	}
	k, ks[1] = radix.Sort(k, ks[1])
	ks[0] = k
	spare = slices.Grow(spare[:0], len(c))
	for _, x := range k {
		spare = append(spare, c[x.I])
	}
	return spare, c
}
