package freeset

import "membench/internal/hugemem"

// Key orders free blocks as PyTorch's BlockComparatorSize does
// (allocator-spec §1.3): stream, then size, then address, streams and
// addresses compared as unsigned pointers; BFC, which has no streams, uses
// stream 0 and gets its bins' (size, address) order (§2.1). B is the
// block's index in its allocator's arena and takes no part in the order
// (addresses are unique within a set).
type Key struct {
	Stream, Size, Addr int64
	B                  int32
}

// Set is an ordered set of block keys: a pool's free blocks by (stream,
// size, address), or with byAddr its unmapped expandable ranges by
// (stream, address) as BlockComparatorAddress orders them.
//
// It is a B+tree whose nodes sit in two arenas (leaves and inner nodes,
// named by index and recycled, so a steady-state replay allocates
// nothing). Leaves hold up to leafMax sorted keys and are linked in order;
// an inner node holds, for each child, the largest key under it, so that a
// search is one binary search per level and every operation is O(log n)
// with at most one node's keys moved. It replaced a two-level list of
// 128-key chunks, whose insertions and removals each moved about 2 KiB and
// whose top level grew linearly (issue 15: 10^6 live blocks cost 3× 10^3),
// and before that github.com/tidwall/btree, whose comparisons through a
// function value made the replay loop twice as slow
// (BenchmarkOrderedSet).
//
// The finger: every search remembers the path it took and where in the
// leaf it ended, until the tree's shape changes. Remove of the key a
// search just returned, and Insert of a key that belongs where the finger
// points, use it instead of searching again. This is the allocators'
// commonest sequence, best fit then split: find the block (LowerBound),
// take it (Remove), and put the remainder back (Insert), which usually
// lands in the same place, as it sorts just below the block it came from.
// The finger changes no outcome: a key's place in the order is unique, and
// the finger is used only after checking the keys on either side.
type Set struct {
	byAddr bool
	n      int
	height int   // inner levels above the leaves; 0: the root is a leaf
	root   int32 // a leaf when height is 0, else an inner node
	head   int32 // first leaf, tail the last (the root leaf when empty)
	tail   int32
	leaves []leaf
	inners []inner
	freeL  []int32 // recycled leaves
	freeI  []int32 // recycled inner nodes

	// The finger (see Set): path[l] is the inner node at level l (0 is
	// the root) and idx[l] the child taken there; fLeaf and fPos the
	// leaf and position the last search ended at. fOK says it is valid.
	path  [maxHeight]int32
	idx   [maxHeight]int32
	fLeaf int32
	fPos  int32
	fOK   bool
}

const (
	leafMax  = 32
	innerMax = 32
	// maxHeight bounds the inner levels: nodes split in halves, so a
	// tree of height h has held at least 16^h keys.
	maxHeight = 16
	nilNode   = -1
)

type leaf struct {
	n          int32
	prev, next int32
	keys       [leafMax]Key
}

type inner struct {
	n     int32
	max   [innerMax]Key // the largest key under each child
	child [innerMax]int32
}

// New returns an empty set ordered by (stream, size, address), or with
// byAddr by (stream, address).
func New(byAddr bool) *Set {
	s := &Set{byAddr: byAddr}
	s.root = s.newLeaf()
	s.head, s.tail = s.root, s.root
	return s
}

// Less is the set's order.
func (s *Set) Less(x, y Key) bool {
	if x.Stream != y.Stream {
		return uint64(x.Stream) < uint64(y.Stream)
	}
	if !s.byAddr && x.Size != y.Size {
		return x.Size < y.Size
	}
	return uint64(x.Addr) < uint64(y.Addr)
}

func (s *Set) newLeaf() int32 {
	if n := len(s.freeL); n > 0 {
		i := s.freeL[n-1]
		s.freeL = s.freeL[:n-1]
		s.leaves[i] = leaf{prev: nilNode, next: nilNode}
		return i
	}
	s.leaves = append(hugemem.Grow(s.leaves, len(s.leaves)+1), leaf{prev: nilNode, next: nilNode})
	return int32(len(s.leaves) - 1)
}

func (s *Set) newInner() int32 {
	if n := len(s.freeI); n > 0 {
		i := s.freeI[n-1]
		s.freeI = s.freeI[:n-1]
		s.inners[i].n = 0
		return i
	}
	s.inners = append(hugemem.Grow(s.inners, len(s.inners)+1), inner{})
	return int32(len(s.inners) - 1)
}

// lowerIn is the first index in keys whose key is not less than k, by
// binary search: for the maxima of an inner node, which only a large set
// has, where each key compared may be a cache miss.
func (s *Set) lowerIn(keys []Key, k Key) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.Less(keys[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// scan is lowerIn by a scan in order, for the keys of a set that is one
// leaf: a scan mispredicts once, where it stops, and a binary search's
// step half the time, which over the few keys of a small pool costs more
// than the comparisons it saves (gpt-generate's pools hold about 4 and 13
// free blocks; a scan made its torch replay about 7% faster). The full
// leaves of a large set, 16 cache lines each, have the binary search.
func (s *Set) scan(keys []Key, k Key) int {
	for i := range keys {
		if !s.Less(keys[i], k) {
			return i
		}
	}
	return len(keys)
}

// descend walks from the root to the leaf where k belongs, recording the
// path (the finger), and returns the first position in that leaf whose
// key is not less than k. With insert, a k above every key goes to the
// last leaf, and the maxima on its path become k; without, such a k
// reports ok false.
func (s *Set) descend(k Key, insert bool) (lf int32, pos int, ok bool) {
	node := s.root
	for l := 0; l < s.height; l++ {
		in := &s.inners[node]
		i := s.lowerIn(in.max[:in.n], k)
		if i == int(in.n) {
			if !insert {
				s.fOK = false
				return 0, 0, false
			}
			i--
			in.max[i] = k
		}
		s.path[l], s.idx[l] = node, int32(i)
		node = in.child[i]
	}
	lp := &s.leaves[node]
	if s.height == 0 {
		pos = s.scan(lp.keys[:lp.n], k)
	} else {
		pos = s.lowerIn(lp.keys[:lp.n], k)
	}
	s.fLeaf, s.fPos, s.fOK = node, int32(pos), true
	return node, pos, pos < int(lp.n) || insert
}

func (s *Set) Len() int { return s.n }

// LowerBound is the first key not less than k. A set of one leaf, a
// small pool, is scanned here without descend's call (every allocation
// makes this search).
func (s *Set) LowerBound(k Key) (Key, bool) {
	if s.height == 0 {
		lp := &s.leaves[s.root]
		pos := s.scan(lp.keys[:lp.n], k)
		s.fLeaf, s.fPos, s.fOK = s.root, int32(pos), true
		if pos == int(lp.n) {
			return Key{}, false
		}
		return lp.keys[pos], true
	}
	lf, pos, ok := s.descend(k, false)
	if !ok {
		return Key{}, false
	}
	return s.leaves[lf].keys[pos], true
}

// After is the first key greater than k. When k is the key the finger
// points at, or the one after it, no search is needed: expandable
// segments' best fit steps from the key a search found to the keys after
// it. The finger is left on k, where the Remove or Replace of the block
// chosen (k, or the key returned, which the next After finds one place
// on) looks for it.
func (s *Set) After(k Key) (Key, bool) {
	lf, pos := s.fLeaf, int(s.fPos)
	switch {
	case !s.fOK || pos >= int(s.leaves[lf].n):
		var ok bool
		if lf, pos, ok = s.descend(k, false); !ok {
			return Key{}, false
		}
	case s.leaves[lf].keys[pos] == k:
	case pos+1 < int(s.leaves[lf].n) && s.leaves[lf].keys[pos+1] == k:
		pos++
		s.fPos = int32(pos)
	default:
		var ok bool
		if lf, pos, ok = s.descend(k, false); !ok {
			return Key{}, false
		}
	}
	lp := &s.leaves[lf]
	if lp.keys[pos] == k {
		pos++
	}
	if pos < int(lp.n) {
		return lp.keys[pos], true
	}
	if lp.next != nilNode {
		return s.leaves[lp.next].keys[0], true
	}
	return Key{}, false
}

// Before is the last key less than k.
func (s *Set) Before(k Key) (Key, bool) {
	lf, pos, ok := s.descend(k, false)
	var lp *leaf
	if ok {
		lp = &s.leaves[lf]
	} else {
		lp, pos = &s.leaves[s.tail], int(s.leaves[s.tail].n)
	}
	s.fOK = false
	if pos > 0 {
		return lp.keys[pos-1], true
	}
	if lp.prev != nilNode {
		p := &s.leaves[lp.prev]
		return p.keys[p.n-1], true
	}
	return Key{}, false
}

func (s *Set) Min() (Key, bool) {
	if s.n == 0 {
		return Key{}, false
	}
	return s.leaves[s.head].keys[0], true
}

func (s *Set) Max() (Key, bool) {
	if s.n == 0 {
		return Key{}, false
	}
	t := &s.leaves[s.tail]
	return t.keys[t.n-1], true
}

// Contains reports whether k (with its arena index) is in the set.
func (s *Set) Contains(k Key) bool {
	lf, pos, ok := s.descend(k, false)
	return ok && s.leaves[lf].keys[pos] == k
}

// fingerFits reports whether k belongs at the finger's position: above
// the key before it and below the key at it (looking into the
// neighbouring leaves at a leaf's ends).
func (s *Set) fingerFits(k Key) bool {
	lp := &s.leaves[s.fLeaf]
	p := int(s.fPos)
	if p > int(lp.n) {
		return false
	}
	if p > 0 {
		if !s.Less(lp.keys[p-1], k) {
			return false
		}
	} else if lp.prev != nilNode {
		pl := &s.leaves[lp.prev]
		if !s.Less(pl.keys[pl.n-1], k) {
			return false
		}
	}
	if p < int(lp.n) {
		return s.Less(k, lp.keys[p])
	}
	return lp.next == nilNode || s.Less(k, s.leaves[lp.next].keys[0])
}

// Insert adds k, which must not be in the set.
func (s *Set) Insert(k Key) {
	var lf int32
	var pos int
	if s.fOK && s.fingerFits(k) {
		lf, pos = s.fLeaf, int(s.fPos)
		if pos == int(s.leaves[lf].n) {
			// k becomes its leaf's largest key: raise the maxima
			// above it.
			s.setMax(k)
		}
	} else {
		lf, pos, _ = s.descend(k, true)
	}
	s.n++
	lp := &s.leaves[lf]
	if lp.n < leafMax {
		if pos < int(lp.n) {
			copy(lp.keys[pos+1:lp.n+1], lp.keys[pos:lp.n])
		}
		lp.keys[pos] = k
		lp.n++
		s.fPos = int32(pos)
		return
	}
	// Split the full leaf in halves and insert into the half k is in.
	nl := s.newLeaf()
	lp = &s.leaves[lf]
	np := &s.leaves[nl]
	h := int32(leafMax / 2)
	copy(np.keys[:], lp.keys[h:])
	np.n = leafMax - h
	lp.n = h
	np.prev, np.next = lf, lp.next
	if lp.next != nilNode {
		s.leaves[lp.next].prev = nl
	} else {
		s.tail = nl
	}
	lp.next = nl
	if pos <= int(h) {
		copy(lp.keys[pos+1:lp.n+1], lp.keys[pos:lp.n])
		lp.keys[pos] = k
		lp.n++
	} else {
		pos -= int(h)
		copy(np.keys[pos+1:np.n+1], np.keys[pos:np.n])
		np.keys[pos] = k
		np.n++
	}
	s.addChild(s.height-1, lp.keys[lp.n-1], nl, np.keys[np.n-1])
	s.fOK = false
}

// setMax makes k the largest key of the finger's leaf in the maxima on
// the finger's path.
func (s *Set) setMax(k Key) {
	for l := s.height - 1; l >= 0; l-- {
		in := &s.inners[s.path[l]]
		i := s.idx[l]
		in.max[i] = k
		if i != in.n-1 {
			return
		}
	}
}

// addChild records that the node on the path at level l+1 (a leaf when
// l+1 is the height) has split: its largest key is now leftMax, and the
// new node right, whose largest key is rightMax, follows it. A full inner
// node splits in turn; a split root makes a new root.
func (s *Set) addChild(l int, leftMax Key, right int32, rightMax Key) {
	if l < 0 {
		// The root split: a new root above the two halves.
		r := s.newInner()
		in := &s.inners[r]
		in.n = 2
		in.max[0], in.child[0] = leftMax, s.root
		in.max[1], in.child[1] = rightMax, right
		s.root = r
		s.height++
		if s.height > maxHeight {
			panic("freeset: tree too high")
		}
		return
	}
	node, i := s.path[l], int(s.idx[l])
	in := &s.inners[node]
	in.max[i] = leftMax
	if in.n < innerMax {
		insertChild(in, i+1, rightMax, right)
		return
	}
	nn := s.newInner()
	in = &s.inners[node]
	np := &s.inners[nn]
	h := int32(innerMax / 2)
	copy(np.max[:], in.max[h:])
	copy(np.child[:], in.child[h:])
	np.n = innerMax - h
	in.n = h
	if i+1 <= int(h) {
		insertChild(in, i+1, rightMax, right)
	} else {
		insertChild(np, i+1-int(h), rightMax, right)
	}
	s.addChild(l-1, in.max[in.n-1], nn, np.max[np.n-1])
}

func insertChild(in *inner, i int, m Key, c int32) {
	copy(in.max[i+1:in.n+1], in.max[i:in.n])
	copy(in.child[i+1:in.n+1], in.child[i:in.n])
	in.max[i], in.child[i] = m, c
	in.n++
}

// Remove deletes k, which must be in the set.
func (s *Set) Remove(k Key) {
	lf, pos := s.fLeaf, int(s.fPos)
	if !s.fOK || pos >= int(s.leaves[lf].n) || s.leaves[lf].keys[pos] != k {
		var ok bool
		lf, pos, ok = s.descend(k, false)
		if !ok || s.leaves[lf].keys[pos] != k {
			panic("freeset: removing a block that is not in its set")
		}
	}
	s.n--
	lp := &s.leaves[lf]
	if pos < int(lp.n)-1 {
		copy(lp.keys[pos:lp.n-1], lp.keys[pos+1:lp.n])
	}
	lp.n--
	lp.keys[lp.n] = Key{}
	if lp.n == 0 {
		if s.height > 0 {
			s.unlinkLeaf(lf)
			s.removeChild(s.height - 1)
			s.fOK = false
		}
		return
	}
	if pos == int(lp.n) {
		// The largest key went: lower the maxima above the leaf.
		s.setMax(lp.keys[pos-1])
	}
	// The finger stays: it points at k's successor, where a key just
	// below k (a split block's remainder) goes.
}

// Replace puts new in the place of old, which must be in the set (new
// must not be): a split block's remainder in place of the block, a merged
// block in place of the neighbour it absorbed. When new belongs in old's
// leaf, the keys between the two places shift by one and nothing else
// moves, where a Remove and an Insert would each shift the leaf's tail;
// usually the two places are adjacent or the same, as sizes change little
// relative to the blocks around them, so new's place is looked for from
// old's outwards. Otherwise it is Remove then Insert.
func (s *Set) Replace(old, new Key) {
	lf, pos := s.fLeaf, int(s.fPos)
	if !s.fOK || pos >= int(s.leaves[lf].n) || s.leaves[lf].keys[pos] != old {
		var ok bool
		lf, pos, ok = s.descend(old, false)
		if !ok || s.leaves[lf].keys[pos] != old {
			panic("freeset: replacing a block that is not in its set")
		}
	}
	lp := &s.leaves[lf]
	n := int(lp.n)
	if !s.Less(old, new) {
		// new sorts at or before old: it goes to q <= pos, unless q is
		// 0 and new belongs in an earlier leaf.
		q := pos
		for q > 0 && s.Less(new, lp.keys[q-1]) {
			q--
		}
		if q == 0 && lp.prev != nilNode {
			pl := &s.leaves[lp.prev]
			if !s.Less(pl.keys[pl.n-1], new) {
				s.Remove(old)
				s.Insert(new)
				return
			}
		}
		if q < pos { // (copy calls memmove even to move nothing)
			copy(lp.keys[q+1:pos+1], lp.keys[q:pos])
		}
		lp.keys[q] = new
		if pos == n-1 {
			// The leaf's largest key fell.
			s.setMax(lp.keys[n-1])
		}
		s.fPos = int32(q)
		return
	}
	// new sorts after old: it goes to q-1 >= pos once the keys between
	// shift down, unless q is n and new belongs in a later leaf.
	q := pos + 1
	for q < n && s.Less(lp.keys[q], new) {
		q++
	}
	if q == n {
		if lp.next != nilNode && !s.Less(new, s.leaves[lp.next].keys[0]) {
			s.Remove(old)
			s.Insert(new)
			return
		}
		s.setMax(new)
	}
	if q-1 > pos {
		copy(lp.keys[pos:q-1], lp.keys[pos+1:q])
	}
	lp.keys[q-1] = new
	s.fPos = int32(q - 1)
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
// and a root left with one child gives way to it.
func (s *Set) removeChild(l int) {
	node, i := s.path[l], int(s.idx[l])
	in := &s.inners[node]
	copy(in.max[i:in.n-1], in.max[i+1:in.n])
	copy(in.child[i:in.n-1], in.child[i+1:in.n])
	in.n--
	if in.n == 0 {
		// Only a non-root node can empty: a root keeps two children.
		s.freeI = append(s.freeI, node)
		s.removeChild(l - 1)
		return
	}
	if i == int(in.n) {
		// The last child went: this node's largest key is lower.
		m := in.max[in.n-1]
		for l--; l >= 0; l-- {
			p := &s.inners[s.path[l]]
			j := s.idx[l]
			p.max[j] = m
			if j != p.n-1 {
				break
			}
		}
	}
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

// Items returns the keys in order: for the rare whole-pool passes
// (empty_cache, garbage collection), which mutate the set as they go.
func (s *Set) Items() []Key {
	out := make([]Key, 0, s.n)
	for lf := s.head; lf != nilNode; lf = s.leaves[lf].next {
		lp := &s.leaves[lf]
		out = append(out, lp.keys[:lp.n]...)
	}
	return out
}

// Ascend calls fn on each key from the first not less than k, in order,
// until fn returns false. fn must not change the set.
func (s *Set) Ascend(k Key, fn func(Key) bool) {
	lf, pos, ok := s.descend(k, false)
	if !ok {
		return
	}
	s.fOK = false
	for ; lf != nilNode; lf, pos = s.leaves[lf].next, 0 {
		lp := &s.leaves[lf]
		for _, x := range lp.keys[pos:lp.n] {
			if !fn(x) {
				return
			}
		}
	}
}

// Reset empties the set, keeping its nodes' memory for reuse.
func (s *Set) Reset() {
	*s = Set{byAddr: s.byAddr, leaves: s.leaves[:0], inners: s.inners[:0], freeL: s.freeL[:0], freeI: s.freeI[:0]}
	s.root = s.newLeaf()
	s.head, s.tail = s.root, s.root
}

// Clone returns an independent copy of the set.
func (s *Set) Clone() *Set {
	c := *s
	c.leaves = append([]leaf(nil), s.leaves...)
	c.inners = append([]inner(nil), s.inners...)
	c.freeL = append([]int32(nil), s.freeL...)
	c.freeI = append([]int32(nil), s.freeI...)
	return &c
}
