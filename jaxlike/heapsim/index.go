package heapsim

import (
	"math"
	"slices"
	"sort"
)

// index answers the one question the placement of a buffer asks: which
// chunks already committed belong to buffers whose live intervals overlap
// a given interval in time. Upstream keeps a dynamic interval tree for it
// (BufferIntervalTree in heap_simulator.cc: a treap keyed by start with
// the subtree's largest end, ApplyToNodesOverlappingInTime). Here every
// interval is known before the first placement (Pack is given them all),
// so the tree can be static: the intervals sorted by start are the leaves
// of a segment tree whose nodes hold the largest end among their leaves'
// committed intervals (math.MinInt64 where none is committed yet).
// Committing a chunk sets one leaf and its O(log n) ancestors; a query
// visits only the leaves whose start is at most the query's end (a prefix,
// found by binary search) and prunes every subtree whose largest committed
// end falls before the query's start. A query reporting k chunks costs
// O((k+1) log n) and allocates nothing once the caller's slice has grown.
// Nothing is ever removed: an offline plan only adds chunks.
type index struct {
	start, end []int64 // leaf intervals, sorted by (start, buffer index)
	chunk      []Chunk // committed chunk per leaf
	max        []int64 // segment tree over the leaves, 1-based, width leaves
	width      int
}

// none marks a segment-tree node with no committed leaf beneath it.
const none = math.MinInt64

// newIndex builds the index over the intervals [starts[i], ends[i]] of the
// items in ids (indexes into starts and ends) and returns it with the leaf
// of each item, in the order of ids.
func newIndex(ids []int32, starts, ends []int64) (*index, []int32) {
	order := slices.Clone(ids)
	slices.SortFunc(order, func(a, b int32) int {
		if starts[a] != starts[b] {
			if starts[a] < starts[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	n := len(order)
	x := &index{start: make([]int64, n), end: make([]int64, n), chunk: make([]Chunk, n)}
	leafOf := make([]int32, len(starts))
	for leaf, id := range order {
		x.start[leaf], x.end[leaf] = starts[id], ends[id]
		leafOf[id] = int32(leaf)
	}
	leaves := make([]int32, len(ids))
	for i, id := range ids {
		leaves[i] = leafOf[id]
	}
	x.width = 1
	for x.width < n {
		x.width *= 2
	}
	x.max = make([]int64, 2*x.width)
	x.reset()
	return x, leaves
}

// reset uncommits every chunk, for the next packing order.
func (x *index) reset() {
	for i := range x.max {
		x.max[i] = none
	}
}

// commit records chunk c for leaf: from now on, queries overlapping the
// leaf's interval report it.
func (x *index) commit(leaf int32, c Chunk) {
	x.chunk[leaf] = c
	i := int(leaf) + x.width
	x.max[i] = x.end[leaf]
	for i > 1 {
		i /= 2
		m := max(x.max[2*i], x.max[2*i+1])
		if x.max[i] == m {
			break // the ancestors already cover it
		}
		x.max[i] = m
	}
}

// appendOverlapping appends to dst the chunk of every committed leaf whose
// interval overlaps [s, e] (both inclusive, as upstream's live ranges),
// in leaf order.
func (x *index) appendOverlapping(dst []Chunk, s, e int64) []Chunk {
	// Leaves [0, p) start no later than e; the rest cannot overlap.
	p := sort.Search(len(x.start), func(i int) bool { return x.start[i] > e })
	if p == 0 {
		return dst
	}
	return x.visit(dst, 1, 0, x.width, p, s)
}

// visit walks node (covering leaves [lo, hi)) for leaves below p whose
// committed end is at least s.
func (x *index) visit(dst []Chunk, node, lo, hi, p int, s int64) []Chunk {
	if lo >= p || x.max[node] < s {
		return dst
	}
	if hi-lo == 1 {
		return append(dst, x.chunk[lo])
	}
	mid := (lo + hi) / 2
	dst = x.visit(dst, 2*node, lo, mid, p, s)
	return x.visit(dst, 2*node+1, mid, hi, p, s)
}
