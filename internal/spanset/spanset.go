package spanset

import (
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"membench/internal/hugemem"
	"membench/internal/prefetch"
)

// Span is one free range: Size bytes from Start.
type Span struct {
	Start, Size int64
}

// End is the first address after the span.
func (s Span) End() int64 { return s.Start + s.Size }

// Set holds disjoint spans by start address. Spans are not merged by
// Insert: the caller coalesces neighbours (Floor and Get find them, Join
// does it all) before inserting.
//
// It is a B+tree whose nodes sit in two arenas (leaves and inner nodes,
// named by index and recycled, so a steady-state replay allocates
// nothing). A leaf holds up to nodeMax spans sorted by start, in two
// arrays (starts, sizes) so that a search reads only starts; leaves are
// linked in order. An inner node holds, for each child, a separator (no
// start under the child is below it, every start under the children
// before it is) and the largest size under it, so that HighestFit walks
// down the rightmost child whose largest size suffices. Every operation is
// O(log n) with at most one node's entries moved per level. It replaced an
// AVL tree, whose 25 levels at 10^6 spans made each search two dozen
// cache misses (issue 15: a TPU replay with 10^6 live buffers cost 4.8×
// one with 10^3).
//
// A node is removed only when it empties, never merged with a neighbour:
// the height is that of the largest the set has been, and nodes split in
// halves, so a tree of height h has held at least (nodeMax/2)^h spans.
//
// The finger: every descent remembers the path it took, and HighestFit
// the leaf and position it ended at, until the next descent or change of
// shape. Remove and SetSize of the span HighestFit just returned use it
// instead of searching again: the placement's sequence, find the highest
// fit and carve from it.
type Set struct {
	n      int
	height int   // inner levels above the leaves; 0: the root is a leaf
	root   int32 // a leaf when height is 0, else an inner node
	head   int32 // first leaf, tail the last
	tail   int32
	leaves []leaf
	inners []inner
	freeL  []int32 // recycled leaves
	freeI  []int32 // recycled inner nodes

	// path[l] is the inner node at level l (0 is the root) on the way to
	// the leaf of the last descent, idx[l] the child taken there.
	path [maxHeight]int32
	idx  [maxHeight]int32
	// The finger: the leaf and position of the span HighestFit last
	// returned, valid while fOK.
	fLeaf int32
	fPos  int32
	fOK   bool

	// shape counts the changes of the inner nodes (splits, removals, a
	// Reset): a path found by a descent stays right, whatever the leaves
	// hold, while it is unchanged.
	shape uint64
	// ahead are the paths of the last Prefetch calls, in a ring, for the
	// Joins at their addresses to take instead of descending again.
	ahead   [aheadPaths]aheadPath
	aheadAt int
	aheadN  int // entries of ahead not yet taken
	// aheadNext is the entry of ahead after the one the last Join took:
	// the one the next Join takes when the Joins come in the order of
	// their Prefetches.
	aheadNext int
}

// aheadPaths is how many Prefetch paths the set keeps, a power of two:
// the TPU model asks for the leaf of a free at the touch after the one
// that named it, which the replay makes 8 events (four frees) ahead of
// the free, so that three or four paths wait at a time; eight leave room
// for a caller that asks further ahead.
const aheadPaths = 8

// aheadPath is the descent of a Prefetch: the address, the shape it was
// found in, the leaf and the path to it.
type aheadPath struct {
	x     int64
	shape uint64
	leaf  int32
	ok    bool
	path  [maxHeight]int32
	idx   [maxHeight]int32
}

const (
	nodeMax = 32
	// group is the entries of a node whose largest size the node keeps
	// (gmax): one cache line of sizes. groups is their number.
	group  = 8
	groups = nodeMax / group
	// maxHeight bounds the inner levels: nodes split in halves, so a
	// tree of height h has held at least 16^h spans.
	maxHeight = 16
	nilNode   = -1
)

// A node's header (its count, links and group maxima) fills one cache
// line, and a node is a whole number of lines, so that in an array that
// starts on a line (the arenas' do: huge pages, or the Go heap's page-
// aligned large objects) each group of starts, sizes or maxima is one
// line.
type leaf struct {
	n          int32
	prev, next int32
	_          int32
	// gmax[g] is the largest of size[g*group:(g+1)*group], 0 for a
	// group with no span: the leaf's largest size is the largest of the
	// four, so that a carve that shrinks its largest span rescans one
	// group (a line HighestFit has just read) instead of every size in
	// the leaf (lines it has not). A leaf that is the root (a replay's
	// few free ranges) does not keep them: its spans are in the cache,
	// and its splitting computes them.
	gmax  [groups]int64
	_     [16]byte
	start [nodeMax]int64
	size  [nodeMax]int64
}

type inner struct {
	n int32
	_ int32
	// gmax[g] is the largest of max[g*group:(g+1)*group] among the first
	// n, 0 for a group with none (as leaf.gmax).
	gmax [groups]int64
	_    [24]byte
	// sep[i], for i > 0: no start under child i is below it, and every
	// start under children 0..i-1 is. sep[0] is the smallest int64:
	// child 0 takes everything below sep[1]. The slots past the count
	// hold the largest int64 (rank). A separator may be below the smallest
	// start under its child (a removal leaves it), never above.
	sep   [nodeMax]int64
	max   [nodeMax]int64 // the largest size under each child
	child [nodeMax]int32
}

// New returns an empty set.
func New() *Set {
	s := &Set{}
	s.root = s.newLeaf()
	s.head, s.tail = s.root, s.root
	return s
}

// Clone returns a copy of the set that shares no storage with it: the
// torch model's clones (the validator's readings of a burst, each on a
// copy of the replay) keep their mapped memory this way, where each
// rebuilt it from every block at its first question (half the
// validation of a recording with an empty_cache() every few steps over
// thousands of live blocks: torchlike/validate's
// BenchmarkValidateBursts). The copy's arrays are plain slices, which
// grow into huge pages as any set's do.
func (s *Set) Clone() *Set {
	c := *s
	c.leaves, c.inners = slices.Clone(s.leaves), slices.Clone(s.inners)
	c.freeL, c.freeI = slices.Clone(s.freeL), slices.Clone(s.freeI)
	return &c
}

// Len is the number of spans.
func (s *Set) Len() int { return s.n }

// HugePages reports whether the leaves sit in huge pages (hugemem), as
// they do once their array passes hugemem.Threshold: for tests.
func (s *Set) HugePages() bool { return hugemem.Huge(s.leaves) }

// Reset empties the set, keeping its storage.
func (s *Set) Reset() {
	s.leaves, s.inners, s.freeL, s.freeI = s.leaves[:0], s.inners[:0], s.freeL[:0], s.freeI[:0]
	s.n, s.height, s.fOK = 0, 0, false
	s.shape++
	s.ahead, s.aheadN, s.aheadNext = [aheadPaths]aheadPath{}, 0, 0
	s.root = s.newLeaf()
	s.head, s.tail = s.root, s.root
}

func (s *Set) newLeaf() int32 {
	if n := len(s.freeL); n > 0 {
		i := s.freeL[n-1]
		s.freeL = s.freeL[:n-1]
		s.leaves[i].n, s.leaves[i].prev, s.leaves[i].next = 0, nilNode, nilNode
		s.leaves[i].gmax, s.leaves[i].size = [groups]int64{}, [nodeMax]int64{}
		fill(s.leaves[i].start[:], maxInt)
		return i
	}
	if len(s.leaves) == cap(s.leaves) {
		s.leaves = hugemem.Grow(s.leaves, len(s.leaves)+1)
	}
	s.leaves = append(s.leaves, leaf{prev: nilNode, next: nilNode})
	i := int32(len(s.leaves) - 1)
	fill(s.leaves[i].start[:], maxInt)
	return i
}

// fill sets every slot of xs to x.
func fill(xs []int64, x int64) {
	for i := range xs {
		xs[i] = x
	}
}

func (s *Set) newInner() int32 {
	if n := len(s.freeI); n > 0 {
		i := s.freeI[n-1]
		s.freeI = s.freeI[:n-1]
		s.inners[i].n, s.inners[i].gmax, s.inners[i].max = 0, [groups]int64{}, [nodeMax]int64{}
		fill(s.inners[i].sep[:], maxInt)
		s.inners[i].sep[0] = minInt
		return i
	}
	if len(s.inners) == cap(s.inners) {
		s.inners = hugemem.Grow(s.inners, len(s.inners)+1)
	}
	s.inners = append(s.inners, inner{})
	i := int32(len(s.inners) - 1)
	fill(s.inners[i].sep[:], maxInt)
	s.inners[i].sep[0] = minInt
	return i
}

// maxOf is the largest of xs, 0 for none.
func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// top is the largest of a node's group maxima: the node's largest size.
func top(gm *[groups]int64) int64 {
	return max(max(gm[0], gm[1]), max(gm[2], gm[3]))
}

// groupMax is the largest of group g of xs. The slots of a node past its
// count hold 0 (every removal and split clears the slots it vacates), so
// that the group needs no count: eight loads and seven maxima, without a
// branch.
func groupMax(xs *[nodeMax]int64, g int) int64 {
	x := (*[group]int64)(xs[g*group:])
	return max(max(max(x[0], x[1]), max(x[2], x[3])), max(max(x[4], x[5]), max(x[6], x[7])))
}

// regroup recomputes the group maxima of xs for the groups of entries
// from to to-1: after those entries have moved. The groups after hold
// nothing, before and after the move.
func regroup(gm *[groups]int64, xs *[nodeMax]int64, from, to int) {
	for g := from / group; g*group < to; g++ {
		gm[g] = groupMax(xs, g)
	}
}

// shifted mends the group maxima after an insertion at pos that moved
// the spans after it up a slot, the leaf now holding n: each group from
// pos's took in one span (the new one, or the last of the group before)
// and gave up its last to the group after, and its largest is rescanned
// only when the span it gave up was its largest (regroup's rescan of
// every group from pos's was a tenth of the model's instructions at 10^6
// live buffers).
func (lp *leaf) shifted(pos, n int) {
	in := lp.size[pos]
	for g := pos / group; g*group < n; g++ {
		out := int64(0) // the span that left the group, now the next one's first
		if j := g*group + group; j < n {
			out = lp.size[j&(nodeMax-1)]
		}
		if out != 0 && out == lp.gmax[g] {
			lp.gmax[g] = groupMax(&lp.size, g)
		} else {
			lp.gmax[g] = max(lp.gmax[g], in)
		}
		in = out
	}
}

// grow sets the size of the span at pos to a larger one and raises its
// group's maximum.
func (lp *leaf) grow(pos int, size int64) {
	lp.size[pos] = size
	g := pos / group
	lp.gmax[g] = max(lp.gmax[g], size)
}

// Largest is the size of the largest span, 0 when the set is empty.
func (s *Set) Largest() int64 {
	if s.height == 0 {
		lp := &s.leaves[s.root]
		return maxOf(lp.size[:lp.n])
	}
	return top(&s.inners[s.root].gmax)
}

// descend walks from the root to the leaf whose range holds x, recording
// the path, and returns the leaf and the number of its spans whose start
// is not above x.
func (s *Set) descend(x int64) (int32, int) {
	s.fOK = false
	node := s.walk(x, &s.path, &s.idx)
	if s.height == 0 {
		return node, s.leaves[node].rank(x)
	}
	return node, s.leaves[node].rankAll(x)
}

// walk goes down the inner nodes to the leaf where x belongs, taking at
// each the last child whose separator is not above x (child 0 when none
// is), and records the way in path and idx: descend's, or a Prefetch's
// kept for a later Join.
func (s *Set) walk(x int64, path, idx *[maxHeight]int32) int32 {
	// No start is the largest int64 (a span holds at least a byte), so
	// that x below it counts the same entries and no slot past a count.
	x = min(x, maxInt-1)
	node := s.root
	for l := 0; l < s.height; l++ {
		in := &s.inners[node]
		i := childAt(&in.sep, x)
		path[l], idx[l] = node, int32(i)
		node = in.child[i]
	}
	return node
}

// rank is the number of xs not above x, for x below the largest int64:
// xs is a node's starts or separators, sorted, its slots past the count
// holding the largest int64. It compares x with the first entry of each
// group but the first (the compiler makes each a branch; their loads, one
// a line, do not depend on one another), then counts on from the last of
// those not above x within its group. A node's starts or separators span
// four cache lines: with 10^6 live buffers a descent by address (every
// free) finds the lower nodes out of the cache, and a binary search's
// probes, each depending on the one before, wait for up to three of
// those lines one after the other; a scan from the first entry loads as
// many lines and, at 10^6 live buffers, reads 10 entries a node where
// this reads 4 after the probes. Either mispredicts once, where it stops,
// which is why only a root leaf still ranks this way (2026-11-25): inner
// nodes by childAt and the leaves under them by rankAll, which compare
// without a branch. A root leaf holds a replay's few free ranges, whose
// scans stop at the same few places, and there the count of every
// comparison of a group cost 3-5 % more on gpt-generate (2026-11-24).
func rank(xs *[nodeMax]int64, x int64) int {
	k := 0
	if xs[group] <= x {
		k = group
	}
	if xs[2*group] <= x {
		k = 2 * group
	}
	if xs[3*group] <= x {
		k = 3 * group
	}
	for k < nodeMax && xs[k] <= x {
		k++
	}
	return k
}

// childAt is the last child of an inner node whose separator (xs) is not
// above x, for x below the largest int64: rank(xs, x)-1, without a
// branch. It counts the group firsts not above x, then the separators of
// that group after its first (which is), by adding comparisons' results.
// Why: at 10^6 live buffers a Prefetch's walk down four inner levels ends
// each rank's scan at a place the processor cannot guess, and walk was
// 7.6 of the model's 26 mispredicted branches an event pair (cachegrind,
// tpurt BenchmarkLive, 2026-11-25); ten comparisons and adds cost less
// than a mispredicted exit each level. Leaves under inner nodes count by
// rankAll.
func childAt(xs *[nodeMax]int64, x int64) int {
	k := (b2i(xs[group] <= x) + b2i(xs[2*group] <= x) + b2i(xs[3*group] <= x)) * group
	g := (*[group]int64)(xs[k&(nodeMax-group):])
	// Within the group, a count summed as a tree: its comparisons do
	// not wait for one another, where a binary search's three each
	// waited for the load the one before chose (fewer instructions,
	// a longer chain: 2-3 % slower, 2026-11-25).
	return (k + b2i(g[1] <= x)) + (b2i(g[2] <= x) + b2i(g[3] <= x)) +
		((b2i(g[4] <= x) + b2i(g[5] <= x)) + (b2i(g[6] <= x) + b2i(g[7] <= x)))
}

// rankAll is rank without a branch on the starts, as childAt counts
// (a leaf's first start, unlike an inner node's first separator, may be
// above x): for the leaves below inner nodes, where a Join at 10^6 live
// buffers is one of thousands of leaves and rank's scan ended at a place
// the processor could not guess (cachegrind: 2.4 mispredicted branches
// an event pair). A root leaf keeps rank: a replay's few free ranges,
// whose Joins end at the same few places.
func (lp *leaf) rankAll(x int64) int {
	x = min(x, maxInt-1)
	xs := &lp.start
	k := (b2i(xs[group] <= x) + b2i(xs[2*group] <= x) + b2i(xs[3*group] <= x)) * group
	g := (*[group]int64)(xs[k&(nodeMax-group):])
	return ((k + b2i(g[0] <= x)) + (b2i(g[1] <= x) + b2i(g[2] <= x))) + (b2i(g[3] <= x) +
		(b2i(g[4] <= x) + b2i(g[5] <= x)) + (b2i(g[6] <= x) + b2i(g[7] <= x)))
}

// b2i is 1 for true and 0 for false; the compiler makes it a SETcc, not
// a branch.
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// rank is the number of the leaf's spans whose start is not above x.
func (lp *leaf) rank(x int64) int { return min(rank(&lp.start, x), int(lp.n)) }

// Get returns the span that starts at start.
func (s *Set) Get(start int64) (Span, bool) {
	lf, pos := s.descend(start)
	lp := &s.leaves[lf]
	if pos > 0 && lp.start[pos-1] == start {
		return Span{start, lp.size[pos-1]}, true
	}
	return Span{}, false
}

// Floor returns the span with the largest start not above addr: the span
// that holds addr, or the nearest one below it.
func (s *Set) Floor(addr int64) (Span, bool) {
	lf, pos := s.descend(addr)
	lp := &s.leaves[lf]
	if pos > 0 {
		return Span{lp.start[pos-1], lp.size[pos-1]}, true
	}
	// Every start in this leaf is above addr (its separator was left
	// below them by a removal): the floor ends the leaf before, if any
	// (only the root leaf is ever empty).
	if lp.prev != nilNode {
		q := &s.leaves[lp.prev]
		return Span{q.start[q.n-1], q.size[q.n-1]}, true
	}
	return Span{}, false
}

// HighestFit returns the span with the highest start among those of at
// least size bytes, and leaves the finger on it. Every span holds a size
// of 0 or less (none is empty): such a size asks for 1, because
// lastFitBy takes a node's empty slots and groups, which hold 0, for
// fits of 0 (TestHighestFitAnySize).
func (s *Set) HighestFit(size int64) (Span, bool) { return s.highestFit(max(size, 1)) }

// highestFit is HighestFit for a size of at least 1: Carve's, whose
// sizes are, without HighestFit's test of it.
func (s *Set) highestFit(size int64) (Span, bool) {
	s.fOK = false
	node := s.root
	if s.height == 0 {
		// A root leaf keeps no group maxima: its sizes from the last.
		lp := &s.leaves[node]
		sizes := lp.size[:lp.n]
		j := lastFit(sizes, size)
		if j < 0 {
			return Span{}, false
		}
		s.fLeaf, s.fPos, s.fOK = node, int32(j), true
		return Span{lp.start[j], sizes[j]}, true
	}
	for l := 0; l < s.height; l++ {
		in := &s.inners[node]
		i := lastFitBy(&in.gmax, &in.max, size)
		if i < 0 {
			return Span{}, false // only at the root: deeper maxima promise a fit
		}
		s.path[l], s.idx[l] = node, int32(i)
		node = in.child[i]
	}
	lp := &s.leaves[node]
	j := lastFitBy(&lp.gmax, &lp.size, size)
	s.fLeaf, s.fPos, s.fOK = node, int32(j), true // the maxima above promise a fit
	return Span{lp.start[j&(nodeMax-1)], lp.size[j&(nodeMax-1)]}, true
}

// lastFit is the index of the last of sizes that is at least size, -1
// for none: HighestFit's scan of a node, from its last entry down. On a
// slice the scan needs no bounds check (the index starts below its
// length and falls), where indexing the node's array by a count read
// from memory checked it at every step: 6 instructions a step instead
// of 10, and at 10^6 live buffers a HighestFit scans about 46 entries
// (8, 13 and 12 children in the three upper inner levels, 2 in the
// lowest, 12 spans in the leaf).
func lastFit(sizes []int64, size int64) int {
	i := len(sizes) - 1
	for i >= 0 && sizes[i] < size {
		i--
	}
	return i
}

// lastFitBy is the index of the last of a node's sizes xs that is at
// least size, found by the node's group maxima gm without a branch on
// the sizes: the last group whose largest is at least size (the highest
// bit of a mask of four comparisons), then the last entry of that group
// that is (the last of a run of conditional moves, one a comparison).
// It needs no count (the slots and groups past it hold 0, and size is
// positive), returns a negative index when no group holds size, and
// reads the header's line and one line of sizes. Why: it replaced two
// scans from the node's last entry (of the group maxima, then of the
// group), which at 10^6 live buffers ended at places the processor could
// not guess at each of the four inner levels and the leaf, 6.5 of the
// model's mispredicted branches an event pair (cachegrind, 2026-11-25);
// twelve comparisons cost less. Conditional moves take three
// instructions a comparison, where a mask's bit took five; the compiler
// makes each "if" below a CMOV only because j addresses no load here
// (branchelim turns a conditional move that feeds a load's address into
// a branch), so lastFitBy must not be inlined into HighestFit, whose
// next load j indexes.
//
//go:noinline
func lastFitBy(gm *[groups]int64, xs *[nodeMax]int64, size int64) int {
	// The group by the highest bit of a mask: a conditional move
	// chain here would feed the address of the loads below, which the
	// compiler makes branches instead.
	m := b2i(gm[0] >= size) | b2i(gm[1] >= size)<<1 | b2i(gm[2] >= size)<<2 | b2i(gm[3] >= size)<<3
	g := (bits.Len(uint(m)) - 1) * group
	x := (*[group]int64)(xs[g&(nodeMax-group):])
	j := g // x[0] when no later entry fits: the group's largest does
	if x[1] >= size {
		j = g + 1
	}
	if x[2] >= size {
		j = g + 2
	}
	if x[3] >= size {
		j = g + 3
	}
	if x[4] >= size {
		j = g + 4
	}
	if x[5] >= size {
		j = g + 5
	}
	if x[6] >= size {
		j = g + 6
	}
	if x[7] >= size {
		j = g + 7
	}
	return j
}

// Carve takes size bytes from the highest span that holds them, as the
// TPU model places a buffer: it finds the span as HighestFit does and
// returns it as it was; the span then keeps its low end and shrinks by
// size, or goes when it held exactly size. It is HighestFit followed by
// SetSize or Remove at the same span, without their search for it (the
// finger) and their calls: the placement's whole sequence in one.
func (s *Set) Carve(size int64) (Span, bool) {
	if size <= 0 {
		panic("spanset: carving nothing")
	}
	sp, ok := s.highestFit(size)
	if !ok {
		return sp, false
	}
	lf, pos := s.fLeaf, int(s.fPos)
	if sp.Size == size {
		s.removeAt(lf, pos)
		return sp, true
	}
	s.resizeAt(lf, pos, sp.Size-size)
	return sp, true
}

// Prefetch asks the processor for the leaf that a Join at x would read,
// without waiting for it and without changing the spans: the TPU model
// calls it for a buffer a few events before the buffer's free (the
// replay's touch), so that the Join finds the leaf in the cache. The
// path is kept, with the last few others, for that Join to take while
// no node has split or gone since.
func (s *Set) Prefetch(x int64) {
	e := &s.ahead[s.aheadAt]
	s.aheadAt = (s.aheadAt + 1) % aheadPaths
	if !e.ok {
		s.aheadN++
	}
	node := s.walk(x, &e.path, &e.idx)
	e.x, e.shape, e.leaf, e.ok = x, s.shape, node, true
	prefetchLeaf(&s.leaves[node])
}

// prefetched is descend(x) by a path Prefetch(x) found, if it kept one
// that is still right. A set never prefetched (a small one: the TPU
// model asks only for the leaves of a large free set) looks at no entry.
func (s *Set) prefetched(x int64) (int32, int, bool) {
	if s.aheadN == 0 {
		return 0, 0, false
	}
	// The entry after the one the last Join took first: the TPU model's
	// Joins come in the order of their Prefetches, so that this is
	// nearly always the one, where the scan below (from the newest)
	// passed the three or four newer paths first. tpurt BenchmarkLive at
	// 10^6 live buffers (internal/livepair, four runs each way,
	// 2026-11-25): 12 fewer instructions an event pair (prefetched 95 to
	// 83), 0.957-0.995 of the time with the scan's model built first and
	// 1/1.023-1/1.127 with it built second.
	j := s.aheadNext
	if e := &s.ahead[j]; !e.ok || e.x != x {
		// From the newest path back: a caller that asks a fixed number of
		// calls ahead finds its path at the same step every time, where a
		// scan from slot 0 stopped at a slot that turns with aheadAt, a
		// mispredicted exit (cachegrind, tpurt's live benchmark at 10^6
		// live buffers: 3.75 to 2.13 mispredictions an event pair here,
		// with the leaf's rank).
		j = -1
		for d := 1; d <= aheadPaths; d++ {
			k := (s.aheadAt - d) & (aheadPaths - 1)
			if e := &s.ahead[k]; e.ok && e.x == x {
				j = k
				break
			}
		}
		if j < 0 {
			return 0, 0, false
		}
	}
	e := &s.ahead[j&(aheadPaths-1)]
	s.aheadNext = (j + 1) & (aheadPaths - 1)
	e.ok = false
	s.aheadN--
	if e.shape != s.shape {
		// A node has split or gone since: the path may be wrong, and
		// the Join descends. (The scan left such a path in the ring
		// until a Prefetch took its place.)
		return 0, 0, false
	}
	s.fOK = false
	// Whole arrays: a fixed copy of 64 bytes each, where
	// copying the height's entries called memmove twice.
	s.path, s.idx = e.path, e.idx
	return e.leaf, s.leaves[e.leaf].rankAll(x), true
}

// prefetchLeaf asks for every cache line of a leaf, in one call: nine
// lines, the leaf starting on one (leaf's doc).
func prefetchLeaf(lp *leaf) { prefetch.Lines9(unsafe.Pointer(lp)) }

// A leaf is nine cache lines, as prefetchLeaf asks for (the compiler
// refuses a negative array length when it is not).
var _ [unsafe.Sizeof(leaf{}) - 9*64]byte
var _ [9*64 - unsafe.Sizeof(leaf{})]byte

// find locates the span that starts at start, by the finger when it is
// there, setting the path; it panics when there is none (a caller's bug).
func (s *Set) find(start int64, what string) (int32, int) {
	if s.fOK && s.fPos < s.leaves[s.fLeaf].n && s.leaves[s.fLeaf].start[s.fPos] == start {
		return s.fLeaf, int(s.fPos)
	}
	lf, pos := s.descend(start)
	if pos == 0 || s.leaves[lf].start[pos-1] != start {
		panic("spanset: " + what + " a span that is not in the set")
	}
	return lf, pos - 1
}

// fixMax recomputes the largest size of the leaf at the end of the path
// and carries it up every level of the path to the root (carryMax, which
// no longer stops where nothing changes: see there why).
func (s *Set) fixMax(lf int32) {
	s.carryMax(s.height-1, top(&s.leaves[lf].gmax))
}

// carryMax records m as the largest size under the child taken at level
// l of the path and recomputes every level above from it, to the root:
// at each node the group's largest size over its eight children and the
// node's over its four groups, with max() and no branch on the sizes.
// Why: it carried a change up only as far as it changed anything,
// comparing the old size with the group's and the parent's at each
// level, and at 10^6 live buffers (where the span a placement carves is
// nearly always the largest of every node on its path) those exits fell
// at places the processor could not guess: 224 instructions and 1.25
// mispredicted branches an event pair (cachegrind, tpurt BenchmarkLive,
// 2026-11-25). A level recomputed whole reads the lines the placement's
// HighestFit has just read.
func (s *Set) carryMax(l int, m int64) {
	for ; l >= 0; l-- {
		in := &s.inners[s.path[l&(maxHeight-1)]]
		i := int(s.idx[l&(maxHeight-1)]) & (nodeMax - 1)
		in.max[i] = m
		g := i / group
		in.gmax[g] = groupMax(&in.max, g)
		m = top(&in.gmax)
	}
}

// raiseMax records that a span of size m joined the subtree at level l+1
// of the path: no largest size at level l or above falls. It raises every
// level to the root with max(), where it stopped at the first level whose
// largest size was already at least m: that exit, taken after one level
// or two or three as the sizes fell, was a branch the processor could
// not guess, and the levels' max() cost less than its mispredictions
// (tpurt BenchmarkLive 1000000x, 30 interleaved pairs each way,
// 2026-11-25: 0.965-0.963 of the time at 10^3 live buffers and
// 0.975-0.971 at 10^6, for 24 more instructions an event pair at 10^6
// and 3 fewer at 10^3 in cachegrind).
func (s *Set) raiseMax(l int, m int64) {
	for ; l >= 0; l-- {
		in := &s.inners[s.path[l&(maxHeight-1)]]
		i := int(s.idx[l&(maxHeight-1)]) & (nodeMax - 1)
		in.max[i] = max(in.max[i], m)
		g := i / group
		in.gmax[g] = max(in.gmax[g], m)
	}
}

// SetSize changes the size of the span that starts at start (its place in
// the order is unchanged): the TPU model shrinks a free range it carves a
// buffer from. It panics when there is no such span or size is not
// positive, a caller's bug.
func (s *Set) SetSize(start, size int64) {
	if size <= 0 {
		panic("spanset: resizing a span to nothing")
	}
	lf, pos := s.find(start, "resizing")
	s.resizeAt(lf, pos, size)
}

// resizeAt sets the size of the span at pos of leaf lf, reached by the
// path, and mends the maxima above it. A span that shrinks (a carve's)
// rescans its group and carries the leaf's largest size to the root
// whether or not it was the largest there: at 10^6 live buffers it nearly
// always is, and at 10^3 the two tests, one on the group's largest size
// and one on the parent's, mispredicted (tpurt BenchmarkLive 1000000x,
// 30 interleaved pairs each way, 2026-11-25: 0.979 and 1/1.023 of the
// time at 10^3, the same at 10^6; cachegrind 20 fewer instructions an
// event pair at 10^3, 37 at 10^6). The same in removeAt cost 7-11
// instructions more and no time.
func (s *Set) resizeAt(lf int32, pos int, size int64) {
	lp := &s.leaves[lf]
	old := lp.size[pos]
	if size > old {
		lp.grow(pos, size)
		s.raiseMax(s.height-1, size)
	} else {
		lp.size[pos] = size
		if s.height > 0 {
			g := (pos & (nodeMax - 1)) / group
			lp.gmax[g] = groupMax(&lp.size, g)
			s.fixMax(lf)
		}
	}
	s.fOK = false
}

// shrank mends the maxima above leaf lf, reached by the path, after a
// span of old bytes in it shrank or went: only when it was the largest
// under the leaf.
func (s *Set) shrank(lf int32, old int64) {
	if s.height > 0 && old >= s.inners[s.path[s.height-1]].max[s.idx[s.height-1]] {
		s.fixMax(lf)
	}
}

// Insert adds sp, which must not overlap a span in the set and must have a
// positive size; it panics on a start already present, a caller's bug.
func (s *Set) Insert(sp Span) {
	if sp.Size <= 0 {
		panic("spanset: inserting an empty span")
	}
	lf, pos := s.descend(sp.Start)
	if pos > 0 && s.leaves[lf].start[pos-1] == sp.Start {
		panic("spanset: inserting a span whose start is already in the set")
	}
	s.insertAt(lf, pos, sp)
}

// insertAt puts sp at position pos of the leaf at the end of the path.
func (s *Set) insertAt(lf int32, pos int, sp Span) {
	s.fOK = false
	s.n++
	lp := &s.leaves[lf]
	if lp.n < nodeMax {
		n := int(lp.n)
		if pos < n { // (copy calls memmove even to move nothing)
			copy(lp.start[pos+1:n+1], lp.start[pos:n])
			copy(lp.size[pos+1:n+1], lp.size[pos:n])
		}
		lp.start[pos], lp.size[pos] = sp.Start, sp.Size
		lp.n++
		if s.height > 0 {
			lp.shifted(pos, n+1)
		}
		s.raiseMax(s.height-1, sp.Size)
		return
	}
	// Split the full leaf in halves and insert into the half sp is in.
	nl := s.newLeaf()
	lp = &s.leaves[lf]
	np := &s.leaves[nl]
	const h = nodeMax / 2
	copy(np.start[:], lp.start[h:])
	copy(np.size[:], lp.size[h:])
	clear(lp.size[h:])
	fill(lp.start[h:], maxInt)
	np.n, lp.n = nodeMax-h, h
	np.prev, np.next = lf, lp.next
	if lp.next != nilNode {
		s.leaves[lp.next].prev = nl
	} else {
		s.tail = nl
	}
	lp.next = nl
	into, at := lp, pos
	if pos > h {
		into, at = np, pos-h
	}
	n := int(into.n)
	copy(into.start[at+1:n+1], into.start[at:n])
	copy(into.size[at+1:n+1], into.size[at:n])
	into.start[at], into.size[at] = sp.Start, sp.Size
	into.n++
	regroup(&lp.gmax, &lp.size, 0, nodeMax)
	regroup(&np.gmax, &np.size, 0, nodeMax)
	l := s.addChild(s.height-1, top(&lp.gmax), np.start[0], nl, top(&np.gmax))
	// Above the node that took the new child without splitting, the
	// largest sizes only need to admit sp's.
	s.raiseMax(l-1, sp.Size)
}

// addChild records that the node on the path at level l+1 (a leaf when
// l+1 is the height) has split: its largest size is now leftMax, and the
// new node right, whose spans start at sep or above and whose largest size
// is rightMax, follows it. A full inner node splits in turn; a split root
// makes a new root. It returns the level of the node that took the new
// child without splitting, -1 when the root split. The largest sizes of
// the split nodes are exact; those above the returned level are not
// updated.
func (s *Set) addChild(l int, leftMax, sep int64, right int32, rightMax int64) int {
	s.shape++
	if l < 0 {
		// The root split: a new root above the two halves.
		r := s.newInner()
		in := &s.inners[r]
		in.n = 2
		in.max[0], in.child[0] = leftMax, s.root
		in.sep[1], in.max[1], in.child[1] = sep, rightMax, right
		regroup(&in.gmax, &in.max, 0, 2)
		s.root = r
		s.height++
		if s.height > maxHeight {
			panic("spanset: tree too high")
		}
		return -1
	}
	node, i := s.path[l], int(s.idx[l])
	in := &s.inners[node]
	in.max[i] = leftMax
	if in.n < nodeMax {
		insertChild(in, i+1, sep, rightMax, right)
		regroup(&in.gmax, &in.max, i, int(in.n))
		return l
	}
	nn := s.newInner()
	in = &s.inners[node]
	np := &s.inners[nn]
	const h = nodeMax / 2
	copy(np.sep[:], in.sep[h:])
	copy(np.max[:], in.max[h:])
	copy(np.child[:], in.child[h:])
	clear(in.max[h:])
	fill(in.sep[h:], maxInt)
	np.n, in.n = nodeMax-h, h
	if i+1 <= h {
		insertChild(in, i+1, sep, rightMax, right)
	} else {
		insertChild(np, i+1-h, sep, rightMax, right)
	}
	regroup(&in.gmax, &in.max, 0, nodeMax)
	regroup(&np.gmax, &np.max, 0, nodeMax)
	up := np.sep[0]
	np.sep[0] = minInt
	return s.addChild(l-1, top(&in.gmax), up, nn, top(&np.gmax))
}

func insertChild(in *inner, i int, sep, m int64, c int32) {
	n := int(in.n)
	copy(in.sep[i+1:n+1], in.sep[i:n])
	copy(in.max[i+1:n+1], in.max[i:n])
	copy(in.child[i+1:n+1], in.child[i:n])
	in.sep[i], in.max[i], in.child[i] = sep, m, c
	in.n++
}

// Remove deletes the span that starts at start; it panics when there is
// none, a caller's bug.
func (s *Set) Remove(start int64) {
	lf, pos := s.find(start, "removing")
	s.removeAt(lf, pos)
}

// removeAt deletes the span at pos of the leaf at the end of the path.
func (s *Set) removeAt(lf int32, pos int) {
	s.fOK = false
	s.n--
	lp := &s.leaves[lf]
	n := int(lp.n)
	old := lp.size[pos]
	if pos < n-1 {
		copy(lp.start[pos:n-1], lp.start[pos+1:n])
		copy(lp.size[pos:n-1], lp.size[pos+1:n])
	}
	lp.start[n-1], lp.size[n-1] = maxInt, 0
	lp.n--
	if s.height > 0 {
		regroup(&lp.gmax, &lp.size, pos, n)
	}
	if lp.n == 0 && s.height > 0 {
		s.unlinkLeaf(lf)
		s.removeChild(s.height - 1)
		return
	}
	s.shrank(lf, old)
}

func (s *Set) unlinkLeaf(lf int32) {
	lp := &s.leaves[lf]
	if lp.prev != nilNode {
		s.leaves[lp.prev].next = lp.next
	} else {
		s.head = lp.next
	}
	if lp.next != nilNode {
		s.leaves[lp.next].prev = lp.prev
	} else {
		s.tail = lp.prev
	}
	s.freeL = append(s.freeL, lf)
}

// removeChild removes the child taken at level l of the path, which has
// become empty, from its inner node; an inner node left empty goes too,
// and a root left with one child gives way to it. The largest sizes above
// are recomputed.
func (s *Set) removeChild(l int) {
	s.shape++
	node, i := s.path[l], int(s.idx[l])
	in := &s.inners[node]
	n := int(in.n)
	copy(in.sep[i:n-1], in.sep[i+1:n])
	copy(in.max[i:n-1], in.max[i+1:n])
	copy(in.child[i:n-1], in.child[i+1:n])
	in.sep[0], in.sep[n-1], in.max[n-1] = minInt, maxInt, 0
	in.n--
	regroup(&in.gmax, &in.max, i, n)
	if in.n == 0 {
		// Only a non-root node can empty: a root keeps two children.
		s.freeI = append(s.freeI, node)
		s.removeChild(l - 1)
		return
	}
	s.carryMax(l-1, top(&in.gmax))
	for s.height > 0 && node == s.root && in.n == 1 {
		s.freeI = append(s.freeI, node)
		s.root = in.child[0]
		s.height--
		if s.height == 0 {
			break
		}
		node = s.root
		in = &s.inners[node]
	}
}

// Join returns [start, start+size) to the set, merged with the span that
// ends at start and the one that begins at its end, if there are, and
// returns the span that holds it. It is Get, Remove, Floor and SetSize or
// Insert in one descent when the neighbours share a leaf with the new
// span's place (one search instead of three or four); the range must not
// overlap a span in the set.
func (s *Set) Join(start, size int64) Span {
	if s.height > 0 {
		return s.joinTree(start, size)
	}
	// The root is the only leaf (a replay's few free ranges,
	// gpt-generate's): no path to find or keep, nothing was prefetched
	// (Prefetch is for sets of thousands), no leaf beside it and no
	// largest sizes above it. This way has Join's frame to itself: with
	// the tree's way beside it, whose calls keep values on the stack,
	// each of gpt-generate's Joins cost 3-6 instructions more whenever
	// that way changed (cachegrind, 2026-11-25).
	s.fOK = false
	lf := s.root
	lp := &s.leaves[lf]
	pos := lp.rank(start)
	joinPrev := pos > 0 && lp.start[pos-1]+lp.size[pos-1] == start
	joinNext := pos < int(lp.n) && lp.start[pos] == start+size
	switch {
	case joinPrev && joinNext:
		lp.grow(pos-1, lp.size[pos-1]+size+lp.size[pos])
		sp := Span{lp.start[pos-1], lp.size[pos-1]}
		s.removeAt(lf, pos)
		return sp
	case joinPrev:
		lp.grow(pos-1, lp.size[pos-1]+size)
		return Span{lp.start[pos-1], lp.size[pos-1]}
	case joinNext:
		lp.start[pos] = start
		lp.grow(pos, lp.size[pos]+size)
		return Span{start, lp.size[pos]}
	}
	sp := Span{start, size}
	s.insertAt(lf, pos, sp)
	return sp
}

// joinTree is Join in a set with inner nodes.
func (s *Set) joinTree(start, size int64) Span {
	end := start + size
	lf, pos, ok := s.prefetched(start)
	if !ok {
		lf, pos = s.descend(start)
	}
	lp := &s.leaves[lf]
	n := int(lp.n)
	joinPrev := pos > 0 && lp.start[pos-1]+lp.size[pos-1] == start
	joinNext := pos < n && lp.start[pos] == end
	if (pos == 0 && lp.prev != nilNode || pos == n && lp.next != nilNode) && s.joinsApart(lp, pos, start, end) {
		// A neighbour may be in another leaf: the general way.
		return s.joinApart(start, size)
	}
	switch {
	case joinPrev && joinNext:
		lp.grow(pos-1, lp.size[pos-1]+size+lp.size[pos])
		sp := Span{lp.start[pos-1], lp.size[pos-1]}
		s.removeAt(lf, pos) // fixes the maxima for a leaf of n-1 > 0 spans
		s.raiseMax(s.height-1, sp.Size)
		return sp
	case joinPrev:
		lp.grow(pos-1, lp.size[pos-1]+size)
		s.raiseMax(s.height-1, lp.size[pos-1])
		return Span{lp.start[pos-1], lp.size[pos-1]}
	case joinNext:
		// Its start comes down to start, still above the separators
		// that led the descent here.
		lp.start[pos] = start
		lp.grow(pos, lp.size[pos]+size)
		s.raiseMax(s.height-1, lp.size[pos])
		return Span{start, lp.size[pos]}
	}
	sp := Span{start, size}
	s.insertAt(lf, pos, sp)
	return sp
}

// joinsApart reports whether Join, whose range from start to end has its
// place at pos of leaf lp, an end of the leaf with another leaf on that
// side, must take the general way (joinApart): when the span that ends the
// leaf before ends at start, or when the range's place is past the leaf's
// last span and the range reaches the separator of the leaf after (read
// in the parent, which the descent has just read). Otherwise nothing
// across leaves can join: the range is inserted or joined in its own
// leaf, where its start, at or above the separators that led there, may
// go. Why: Join took the general way (three descents) at either end of a
// leaf (4.7 % of the frees at 10^6 live buffers, 7.6 % at 10^3, most of
// them joining nothing there); tpurt BenchmarkLive 1000000x, 20
// interleaved pairs each way, 2026-11-25: 0.972 and 1/1.029 of the time
// at 10^3, 0.997 and 1/1.005 at 10^6. Reading the leaf after's first
// span too when the range reaches the separator, instead of taking the
// general way, made 10^6 4 % slower, unexplained.
func (s *Set) joinsApart(lp *leaf, pos int, start, end int64) bool {
	if pos == 0 && lp.prev != nilNode {
		q := &s.leaves[lp.prev]
		k := int(q.n-1) & (nodeMax - 1) // a leaf under inner nodes holds a span
		if q.start[k]+q.size[k] == start {
			return true
		}
	}
	if pos != int(lp.n) || lp.next == nilNode {
		return false
	}
	// The leaf after's first start is not below the separator that leads
	// to it; past the parent's last child that separator is in a node
	// above, and the general way is taken.
	in := &s.inners[s.path[(s.height-1)&(maxHeight-1)]]
	i := int(s.idx[(s.height-1)&(maxHeight-1)]) + 1
	return i >= int(in.n) || end >= in.sep[i&(nodeMax-1)]
}

// joinApart is Join with a neighbour in another leaf, one search at a
// time.
func (s *Set) joinApart(start, size int64) Span {
	end := start + size
	if up, ok := s.Get(end); ok {
		s.Remove(end)
		end = up.End()
	}
	if lo, ok := s.Floor(start - 1); ok && lo.End() == start {
		s.SetSize(lo.Start, end-lo.Start)
		return Span{lo.Start, end - lo.Start}
	}
	sp := Span{start, end - start}
	s.Insert(sp)
	return sp
}

// Ascend calls fn on each span in address order until fn returns false.
// fn must not change the set.
func (s *Set) Ascend(fn func(Span) bool) {
	for lf := s.head; lf != nilNode; lf = s.leaves[lf].next {
		lp := &s.leaves[lf]
		for i := range int(lp.n) {
			if !fn(Span{lp.start[i], lp.size[i]}) {
				return
			}
		}
	}
}

// Shape is the number of nodes at each level of the tree, from the root
// (level 0) to the leaves (the last), for the measurements of its fill
// that decide the nodes' sizes and split rules (package doc).
func (s *Set) Shape() []int {
	counts := make([]int, s.height+1)
	level := []int32{s.root}
	for h := 0; h <= s.height; h++ {
		counts[h] = len(level)
		if h == s.height {
			break
		}
		var next []int32
		for _, node := range level {
			in := &s.inners[node]
			next = append(next, in.child[:in.n]...)
		}
		level = next
	}
	return counts
}

// Check verifies the tree: spans in order, disjoint and not empty, the
// leaves linked in order, separators that route every start to its leaf,
// every largest size the largest under its child, no empty node but an
// empty root leaf, and the count. It is for tests and allocators' Check
// methods.
func (s *Set) Check() error {
	var spans []Span
	var walk func(node int32, h int, lo, hi int64, loOK bool) (int64, error)
	// walk returns the largest size under node, whose starts must lie
	// in [lo, hi) (lo only when loOK).
	walk = func(node int32, h int, lo, hi int64, loOK bool) (int64, error) {
		if h == s.height {
			lp := &s.leaves[node]
			if lp.n == 0 && s.height > 0 {
				return 0, errorf("empty leaf %d", node)
			}
			for i := range int(lp.n) {
				st := lp.start[i]
				if loOK && st < lo || st >= hi {
					return 0, errorf("span at %d outside its leaf's range [%d, %d)", st, lo, hi)
				}
				spans = append(spans, Span{st, lp.size[i]})
			}
			for i := int(lp.n); i < nodeMax; i++ {
				if lp.size[i] != 0 || lp.start[i] != maxInt {
					return 0, errorf("leaf %d of %d spans: slot %d holds span %d at %d", node, lp.n, i, lp.size[i], lp.start[i])
				}
			}
			for g := range groups {
				if want := groupMax(&lp.size, g); lp.gmax[g] != want && s.height > 0 {
					return 0, errorf("leaf %d group %d: largest size %d recorded as %d", node, g, want, lp.gmax[g])
				}
			}
			return maxOf(lp.size[:lp.n]), nil
		}
		in := &s.inners[node]
		if in.n == 0 || (node == s.root && in.n < 2) {
			return 0, errorf("inner %d has %d children", node, in.n)
		}
		if in.sep[0] != minInt {
			return 0, errorf("inner %d: separator 0 is %d", node, in.sep[0])
		}
		for i := int(in.n); i < nodeMax; i++ {
			if in.max[i] != 0 || in.sep[i] != maxInt {
				return 0, errorf("inner %d of %d children: slot %d holds largest size %d, separator %d", node, in.n, i, in.max[i], in.sep[i])
			}
		}
		for g := range groups {
			if want := groupMax(&in.max, g); in.gmax[g] != want {
				return 0, errorf("inner %d group %d: largest size %d recorded as %d", node, g, want, in.gmax[g])
			}
		}
		var m int64
		for i := range int(in.n) {
			clo, cloOK, chi := lo, loOK, hi
			if i > 0 {
				clo, cloOK = in.sep[i], true
				if loOK && clo < lo {
					return 0, errorf("inner %d: separator %d below its range's %d", node, clo, lo)
				}
			}
			if i+1 < int(in.n) {
				chi = in.sep[i+1]
			}
			cm, err := walk(in.child[i], h+1, clo, chi, cloOK)
			if err != nil {
				return 0, err
			}
			if cm != in.max[i] {
				return 0, errorf("inner %d child %d: largest size %d recorded as %d", node, i, cm, in.max[i])
			}
			m = max(m, cm)
		}
		return m, nil
	}
	if _, err := walk(s.root, 0, 0, maxInt, false); err != nil {
		return err
	}
	for i, sp := range spans {
		if sp.Size <= 0 {
			return errorf("empty span %+v", sp)
		}
		if i > 0 && spans[i-1].End() > sp.Start {
			return errorf("span %+v overlaps or precedes %+v", spans[i-1], sp)
		}
	}
	if len(spans) != s.n {
		return errorf("the tree holds %d spans, the count says %d", len(spans), s.n)
	}
	var linked []Span
	s.Ascend(func(sp Span) bool { linked = append(linked, sp); return true })
	if len(linked) != len(spans) {
		return errorf("the leaf links reach %d spans of %d", len(linked), len(spans))
	}
	for i := range linked {
		if linked[i] != spans[i] {
			return errorf("the leaf links are out of order at %d", i)
		}
	}
	return nil
}

const (
	maxInt = 1<<63 - 1
	minInt = -1 << 63
)

func errorf(format string, args ...any) error { return fmt.Errorf("spanset: "+format, args...) }
