package spanset

import "fmt"

// Span is one free range: Size bytes from Start.
type Span struct {
	Start, Size int64
}

// End is the first address after the span.
func (s Span) End() int64 { return s.Start + s.Size }

// none is the null link.
const none int32 = -1

type node struct {
	span        Span
	max         int64 // the largest Size in this node's subtree
	left, right int32
	height      int32
}

// Set holds disjoint spans by start address. Spans are not merged: the
// caller coalesces neighbours (Floor and Get find them) before inserting.
type Set struct {
	nodes []node
	spare []int32
	root  int32
	n     int
}

// New returns an empty set.
func New() *Set { return &Set{root: none} }

// Len is the number of spans.
func (s *Set) Len() int { return s.n }

// Reset empties the set, keeping its storage.
func (s *Set) Reset() {
	s.nodes, s.spare, s.root, s.n = s.nodes[:0], s.spare[:0], none, 0
}

// Largest is the size of the largest span, 0 when the set is empty.
func (s *Set) Largest() int64 {
	if s.root == none {
		return 0
	}
	return s.nodes[s.root].max
}

func (s *Set) height(x int32) int32 {
	if x == none {
		return 0
	}
	return s.nodes[x].height
}

func (s *Set) maxOf(x int32) int64 {
	if x == none {
		return 0
	}
	return s.nodes[x].max
}

// fix recomputes x's height and subtree maximum from its children.
func (s *Set) fix(x int32) {
	nd := &s.nodes[x]
	nd.height = 1 + max(s.height(nd.left), s.height(nd.right))
	nd.max = max(nd.span.Size, s.maxOf(nd.left), s.maxOf(nd.right))
}

func (s *Set) rotateRight(x int32) int32 {
	l := s.nodes[x].left
	s.nodes[x].left = s.nodes[l].right
	s.nodes[l].right = x
	s.fix(x)
	s.fix(l)
	return l
}

func (s *Set) rotateLeft(x int32) int32 {
	r := s.nodes[x].right
	s.nodes[x].right = s.nodes[r].left
	s.nodes[r].left = x
	s.fix(x)
	s.fix(r)
	return r
}

// balance restores the AVL condition at x, whose subtrees are balanced.
func (s *Set) balance(x int32) int32 {
	s.fix(x)
	nd := s.nodes[x]
	switch d := s.height(nd.left) - s.height(nd.right); {
	case d > 1:
		if l := nd.left; s.height(s.nodes[l].left) < s.height(s.nodes[l].right) {
			s.nodes[x].left = s.rotateLeft(l)
		}
		return s.rotateRight(x)
	case d < -1:
		if r := nd.right; s.height(s.nodes[r].right) < s.height(s.nodes[r].left) {
			s.nodes[x].right = s.rotateRight(r)
		}
		return s.rotateLeft(x)
	}
	return x
}

func (s *Set) newNode(sp Span) int32 {
	nd := node{span: sp, max: sp.Size, left: none, right: none, height: 1}
	if k := len(s.spare); k > 0 {
		x := s.spare[k-1]
		s.spare = s.spare[:k-1]
		s.nodes[x] = nd
		return x
	}
	s.nodes = append(s.nodes, nd)
	return int32(len(s.nodes) - 1)
}

// Insert adds sp, which must not overlap a span in the set and must have a
// positive size; it panics on a start already present, a caller's bug.
func (s *Set) Insert(sp Span) {
	if sp.Size <= 0 {
		panic("spanset: inserting an empty span")
	}
	s.root = s.insert(s.root, sp)
	s.n++
}

func (s *Set) insert(x int32, sp Span) int32 {
	if x == none {
		return s.newNode(sp)
	}
	switch at := s.nodes[x].span.Start; {
	case sp.Start < at:
		l := s.insert(s.nodes[x].left, sp)
		s.nodes[x].left = l
	case sp.Start > at:
		r := s.insert(s.nodes[x].right, sp)
		s.nodes[x].right = r
	default:
		panic("spanset: inserting a span whose start is already in the set")
	}
	return s.balance(x)
}

// Remove deletes the span that starts at start; it panics when there is
// none, a caller's bug.
func (s *Set) Remove(start int64) {
	s.root = s.remove(s.root, start)
	s.n--
}

func (s *Set) remove(x int32, start int64) int32 {
	if x == none {
		panic("spanset: removing a span that is not in the set")
	}
	nd := s.nodes[x]
	switch {
	case start < nd.span.Start:
		s.nodes[x].left = s.remove(nd.left, start)
	case start > nd.span.Start:
		s.nodes[x].right = s.remove(nd.right, start)
	default:
		if nd.left == none || nd.right == none {
			child := nd.left
			if child == none {
				child = nd.right
			}
			s.spare = append(s.spare, x)
			return child
		}
		// Two children: take the successor's span, then delete the
		// successor from the right subtree.
		m := nd.right
		for s.nodes[m].left != none {
			m = s.nodes[m].left
		}
		succ := s.nodes[m].span
		s.nodes[x].right = s.remove(nd.right, succ.Start)
		s.nodes[x].span = succ
	}
	return s.balance(x)
}

// SetSize changes the size of the span that starts at start (its place in
// the order is unchanged, so no rebalancing is needed): the TPU model
// shrinks a free range it carves a buffer from, and grows one a freed
// buffer joins. It panics when there is no such span or size is not
// positive, a caller's bug.
func (s *Set) SetSize(start, size int64) {
	if size <= 0 {
		panic("spanset: resizing a span to nothing")
	}
	s.setSize(s.root, start, size)
}

func (s *Set) setSize(x int32, start, size int64) {
	if x == none {
		panic("spanset: resizing a span that is not in the set")
	}
	nd := &s.nodes[x]
	switch {
	case start < nd.span.Start:
		s.setSize(nd.left, start, size)
	case start > nd.span.Start:
		s.setSize(nd.right, start, size)
	default:
		nd.span.Size = size
	}
	s.fix(x)
}

// Get returns the span that starts at start.
func (s *Set) Get(start int64) (Span, bool) {
	for x := s.root; x != none; {
		nd := &s.nodes[x]
		switch {
		case start < nd.span.Start:
			x = nd.left
		case start > nd.span.Start:
			x = nd.right
		default:
			return nd.span, true
		}
	}
	return Span{}, false
}

// Floor returns the span with the largest start not above addr: the span
// that holds addr, or the nearest one below it.
func (s *Set) Floor(addr int64) (Span, bool) {
	var best Span
	ok := false
	for x := s.root; x != none; {
		nd := &s.nodes[x]
		if nd.span.Start <= addr {
			best, ok = nd.span, true
			x = nd.right
		} else {
			x = nd.left
		}
	}
	return best, ok
}

// HighestFit returns the span with the highest start among those of at
// least size bytes.
func (s *Set) HighestFit(size int64) (Span, bool) {
	x := s.root
	if x == none || s.nodes[x].max < size {
		return Span{}, false
	}
	for {
		nd := &s.nodes[x]
		switch {
		case s.maxOf(nd.right) >= size:
			x = nd.right
		case nd.span.Size >= size:
			return nd.span, true
		default:
			// The subtree's maximum is in the left child.
			x = nd.left
		}
	}
}

// Ascend calls fn on each span in address order until fn returns false.
// fn must not change the set.
func (s *Set) Ascend(fn func(Span) bool) {
	s.ascend(s.root, fn)
}

func (s *Set) ascend(x int32, fn func(Span) bool) bool {
	if x == none {
		return true
	}
	nd := s.nodes[x]
	return s.ascend(nd.left, fn) && fn(nd.span) && s.ascend(nd.right, fn)
}

// Check verifies the tree: search order, heights, balance, subtree
// maxima and the count. It is for tests and allocators' Check methods.
func (s *Set) Check() error {
	n, _, _, err := s.check(s.root, minInt, maxInt)
	if err == nil && n != s.n {
		err = errorf("the tree holds %d spans, the count says %d", n, s.n)
	}
	return err
}

const (
	minInt = -1 << 63
	maxInt = 1<<63 - 1
)

func (s *Set) check(x int32, lo, hi int64) (n int, h int32, m int64, err error) {
	if x == none {
		return 0, 0, 0, nil
	}
	nd := s.nodes[x]
	if nd.span.Start < lo || nd.span.Start > hi || nd.span.Size <= 0 {
		return 0, 0, 0, errorf("span %+v out of order or empty", nd.span)
	}
	ln, lh, lm, err := s.check(nd.left, lo, nd.span.Start-1)
	if err != nil {
		return 0, 0, 0, err
	}
	rn, rh, rm, err := s.check(nd.right, nd.span.Start+1, hi)
	if err != nil {
		return 0, 0, 0, err
	}
	h = 1 + max(lh, rh)
	m = max(nd.span.Size, lm, rm)
	if nd.height != h || nd.max != m || lh-rh > 1 || rh-lh > 1 {
		return 0, 0, 0, errorf("node of span %+v: height %d max %d, want %d %d (children %d, %d)", nd.span, nd.height, nd.max, h, m, lh, rh)
	}
	return ln + rn + 1, h, m, nil
}

func errorf(format string, args ...any) error { return fmt.Errorf("spanset: "+format, args...) }
