package binset

import "membench/internal/hugemem"

// A spilled class keeps its keys in a B+tree of its own, ordered by
// address alone (unsigned): every key of a class has the class stream and
// the class's size, so the address is all that orders them. The trees of
// all classes share two node arenas (leaves and inner nodes, named by
// index and recycled), so that a steady replay allocates nothing.
//
// Why not the set's freeset.Set, where spilled classes' keys went before:
// at 10^6 live blocks a torch small pool holds about 38,000 free
// fragments in some 70 spilled classes, and every best fit below the
// largest of them, every split remainder and every merged neighbour of
// such a size was a descent of that big tree, whose leaves of 32-byte keys
// (16 cache lines) were cache misses. Here a best fit in a spilled class
// is the class's lowest key, kept in its record as for any class; a
// removal or an insertion descends a tree of one class's keys (a few
// hundred: one inner node, cached, above the leaves), and searches a leaf
// whose addresses fill four cache lines.

const (
	// ctMax is the most keys of a leaf and children of an inner node.
	ctMax = 32
	// ctHeight bounds the inner levels: nodes split in halves, so a
	// tree of height h has held at least 16^h keys.
	ctHeight = 16
	nilNode  = -1
)

// cleaf is a leaf of a class tree: its addresses first, so that a search
// reads ctMax×8 bytes (four lines of a leaf that starts on a line: the
// arena's elements are a whole number of lines, and a large arena starts
// on a page).
type cleaf struct {
	addr       [ctMax]int64
	n          int32
	prev, next int32
	_          int32
	b          [ctMax]int32
	_          [48]byte // to 448 bytes, seven lines
}

// cinner is an inner node of a class tree: for each child, the largest
// address under it.
type cinner struct {
	max   [ctMax]int64
	child [ctMax]int32
	n     int32
}

// ctree is one spilled class's tree.
type ctree struct {
	root, head, tail int32
	height           int32 // inner levels above the leaves; 0: the root is a leaf
	n                int32 // keys
}

// lowerU is the first index in addrs whose address is not below a
// (unsigned), by binary search.
func lowerU(addrs []int64, a uint64) int {
	lo, hi := 0, len(addrs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uint64(addrs[m]) < a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (s *Set) newCLeaf() int32 {
	if n := len(s.freeCL); n > 0 {
		i := s.freeCL[n-1]
		s.freeCL = s.freeCL[:n-1]
		s.cl[i] = cleaf{prev: nilNode, next: nilNode}
		return i
	}
	s.cl = append(hugemem.Grow(s.cl, len(s.cl)+1), cleaf{prev: nilNode, next: nilNode})
	return int32(len(s.cl) - 1)
}

func (s *Set) newCInner() int32 {
	if n := len(s.freeCI); n > 0 {
		i := s.freeCI[n-1]
		s.freeCI = s.freeCI[:n-1]
		s.ci[i].n = 0
		return i
	}
	s.ci = append(hugemem.Grow(s.ci, len(s.ci)+1), cinner{})
	return int32(len(s.ci) - 1)
}

// newTree starts a tree of one leaf holding the keys of a full chunk and
// one more (addr, b), all of them sorted; it returns the tree's index.
func (s *Set) newTree(ch *chunk, addr int64, b int32) int32 {
	lf := s.newCLeaf()
	lp := &s.cl[lf]
	j := 0
	for i := range int(ch.n) {
		if j == i && uint64(addr) < uint64(ch.addr[i]) {
			lp.addr[j], lp.b[j] = addr, b
			j++
		}
		lp.addr[j], lp.b[j] = ch.addr[i], ch.b[i]
		j++
	}
	if j == int(ch.n) {
		lp.addr[j], lp.b[j] = addr, b
		j++
	}
	lp.n = int32(j)
	t := ctree{root: lf, head: lf, tail: lf, n: int32(j)}
	if n := len(s.freeT); n > 0 {
		i := s.freeT[n-1]
		s.freeT = s.freeT[:n-1]
		s.trees[i] = t
		return i
	}
	s.trees = append(s.trees, t)
	return int32(len(s.trees) - 1)
}

// dropTree recycles tree ti, which is empty (its root a leaf).
func (s *Set) dropTree(ti int32) {
	s.freeCL = append(s.freeCL, s.trees[ti].root)
	s.freeT = append(s.freeT, ti)
}

// touchLeaf loads the first address of each of the leaf's four lines of
// addresses before the binary search that follows reads any, so that
// their misses overlap: the search reads the count's line and then up to
// three lines of addresses, each probe's line chosen by the one before,
// and out of the cache each was a wait of its own.
//
// A tree with inner nodes is one of a class with hundreds of keys or
// more, whose leaves at 10^6 live blocks are mostly out of the cache (the
// classes' leaves together are megabytes, and a free's neighbour or a
// split's remainder is in any of them). Measured 2026-11-25 (harness
// BenchmarkReplayLiveSteady, torch, runs of the binaries interleaved):
// at 10^6 live blocks a median 143.9 to 136.1 cpu-ns/event (16 and 13
// runs), at 10^3 68.8 and 69.1.
//
// The loads' xor is compared with a constant, and a count kept of the
// rare leaf where they are equal, only so that the compiler keeps the
// loads: the comparison is a branch predicted not taken. Tried and not
// kept: storing the xor in a field (140.1, eight runs: most likely the
// store held up the loads' retirement); asking for the five lines with
// prefetch.Lines (138.3, but 10^3 70.1: the call costs that where the
// leaves are cached); finding the line by comparing with the first
// address of the last three and searching in it (145.6, four runs);
// counting all 32 addresses without branches (3-10 % slower at both
// sizes).
func (s *Set) touchLeaf(lp *cleaf) {
	if lp.addr[0]^lp.addr[8]^lp.addr[16]^lp.addr[24] == touchMark {
		s.marked++
	}
}

// touchMark is any constant: see touchLeaf.
const touchMark = 0x5bd1e995

// cdescend walks tree t from its root to the leaf where address a
// belongs, recording the path in s.path and s.idx, and returns the first
// position in that leaf whose address is not below a. With insert, an a
// above every address goes to the last leaf, and the maxima on its path
// become a; without, such an a reports ok false.
func (s *Set) cdescend(t *ctree, a int64, insert bool) (lf int32, pos int, ok bool) {
	node := t.root
	for l := 0; l < int(t.height); l++ {
		in := &s.ci[node]
		i := lowerU(in.max[:in.n], uint64(a))
		if i == int(in.n) {
			if !insert {
				return 0, 0, false
			}
			i--
			in.max[i] = a
		}
		s.path[l], s.idx[l] = node, int32(i)
		node = in.child[i]
	}
	lp := &s.cl[node]
	if t.height > 0 {
		s.touchLeaf(lp)
	}
	pos = lowerU(lp.addr[:lp.n], uint64(a))
	return node, pos, pos < int(lp.n) || insert
}

// cinsert adds (a, b), whose address is not in tree t.
func (s *Set) cinsert(t *ctree, a int64, b int32) {
	lf, pos, _ := s.cdescend(t, a, true)
	t.n++
	lp := &s.cl[lf]
	if lp.n < ctMax {
		n := int(lp.n)
		copy(lp.addr[pos+1:n+1], lp.addr[pos:n])
		copy(lp.b[pos+1:n+1], lp.b[pos:n])
		lp.addr[pos], lp.b[pos] = a, b
		lp.n++
		return
	}
	// Split the full leaf in halves and insert into the half a is in.
	nl := s.newCLeaf()
	lp = &s.cl[lf]
	np := &s.cl[nl]
	h := ctMax / 2
	copy(np.addr[:], lp.addr[h:])
	copy(np.b[:], lp.b[h:])
	np.n = int32(ctMax - h)
	lp.n = int32(h)
	np.prev, np.next = lf, lp.next
	if lp.next != nilNode {
		s.cl[lp.next].prev = nl
	} else {
		t.tail = nl
	}
	lp.next = nl
	ip := lp
	if pos > h {
		ip, pos = np, pos-h
	}
	n := int(ip.n)
	copy(ip.addr[pos+1:n+1], ip.addr[pos:n])
	copy(ip.b[pos+1:n+1], ip.b[pos:n])
	ip.addr[pos], ip.b[pos] = a, b
	ip.n++
	s.caddChild(t, int(t.height)-1, lp.addr[lp.n-1], nl, np.addr[np.n-1])
}

// caddChild records that the node on the path at level l+1 (a leaf when
// l+1 is the height) has split: its largest address is now leftMax, and
// the new node right, whose largest address is rightMax, follows it. A
// full inner node splits in turn; a split root makes a new root.
func (s *Set) caddChild(t *ctree, l int, leftMax int64, right int32, rightMax int64) {
	if l < 0 {
		r := s.newCInner()
		in := &s.ci[r]
		in.n = 2
		in.max[0], in.child[0] = leftMax, t.root
		in.max[1], in.child[1] = rightMax, right
		t.root = r
		if t.height++; t.height > ctHeight {
			panic("binset: class tree too high")
		}
		return
	}
	node, i := s.path[l], int(s.idx[l])
	in := &s.ci[node]
	in.max[i] = leftMax
	if in.n < ctMax {
		cinsertChild(in, i+1, rightMax, right)
		return
	}
	nn := s.newCInner()
	in = &s.ci[node]
	np := &s.ci[nn]
	h := int32(ctMax / 2)
	copy(np.max[:], in.max[h:])
	copy(np.child[:], in.child[h:])
	np.n = ctMax - h
	in.n = h
	if i+1 <= int(h) {
		cinsertChild(in, i+1, rightMax, right)
	} else {
		cinsertChild(np, i+1-int(h), rightMax, right)
	}
	s.caddChild(t, l-1, in.max[in.n-1], nn, np.max[np.n-1])
}

func cinsertChild(in *cinner, i int, m int64, c int32) {
	copy(in.max[i+1:in.n+1], in.max[i:in.n])
	copy(in.child[i+1:in.n+1], in.child[i:in.n])
	in.max[i], in.child[i] = m, c
	in.n++
}

// shiftOut removes the leaf's key at pos, moving the later ones down.
func (lp *cleaf) shiftOut(pos int) {
	n := int(lp.n)
	copy(lp.addr[pos:n-1], lp.addr[pos+1:n])
	copy(lp.b[pos:n-1], lp.b[pos+1:n])
	lp.n--
}

// cremoveFirst deletes tree t's lowest key when its head leaf keeps
// another, without a descent (a best fit takes a class's lowest key), and
// reports whether it did; otherwise the leaf would go and the maxima
// above it change, which is cremove's work.
func (s *Set) cremoveFirst(t *ctree) bool {
	lp := &s.cl[t.head]
	if lp.n < 2 {
		return false
	}
	lp.shiftOut(0)
	t.n--
	return true
}

// cremove deletes (a, b) from tree t, and reports whether it was there.
// The tree's last key leaves its root an empty leaf (dropTree).
func (s *Set) cremove(t *ctree, a int64, b int32) bool {
	lf, pos, ok := s.cdescend(t, a, false)
	if !ok || s.cl[lf].addr[pos] != a || s.cl[lf].b[pos] != b {
		return false
	}
	t.n--
	lp := &s.cl[lf]
	lp.shiftOut(pos)
	if lp.n == 0 {
		if t.height > 0 {
			s.cunlink(t, lf)
			s.cremoveChild(t, int(t.height)-1)
		}
		return true
	}
	if pos == int(lp.n) {
		// The largest address went: lower the maxima above the leaf.
		s.csetMax(t, lp.addr[pos-1])
	}
	return true
}

// csetMax makes m the largest address of the path's leaf in the maxima
// on the path.
func (s *Set) csetMax(t *ctree, m int64) {
	for l := int(t.height) - 1; l >= 0; l-- {
		in := &s.ci[s.path[l]]
		i := s.idx[l]
		in.max[i] = m
		if i != in.n-1 {
			return
		}
	}
}

func (s *Set) cunlink(t *ctree, lf int32) {
	lp := &s.cl[lf]
	if lp.prev != nilNode {
		s.cl[lp.prev].next = lp.next
	} else {
		t.head = lp.next
	}
	if lp.next != nilNode {
		s.cl[lp.next].prev = lp.prev
	} else {
		t.tail = lp.prev
	}
	s.freeCL = append(s.freeCL, lf)
}

// cremoveChild removes the child taken at level l of the path, which has
// become empty, from its inner node; an inner node left empty goes too,
// and a root left with one child gives way to it.
func (s *Set) cremoveChild(t *ctree, l int) {
	node, i := s.path[l], int(s.idx[l])
	in := &s.ci[node]
	copy(in.max[i:in.n-1], in.max[i+1:in.n])
	copy(in.child[i:in.n-1], in.child[i+1:in.n])
	in.n--
	if in.n == 0 {
		// Only a non-root node can empty: a root keeps two children.
		s.freeCI = append(s.freeCI, node)
		s.cremoveChild(t, l-1)
		return
	}
	if i == int(in.n) {
		// The last child went: this node's largest address is lower.
		m := in.max[in.n-1]
		for l--; l >= 0; l-- {
			p := &s.ci[s.path[l]]
			j := s.idx[l]
			p.max[j] = m
			if j != p.n-1 {
				break
			}
		}
	}
	for t.height > 0 && node == t.root && in.n == 1 {
		s.freeCI = append(s.freeCI, node)
		t.root = in.child[0]
		t.height--
		if t.height == 0 {
			break
		}
		node = t.root
		in = &s.ci[node]
	}
}

// cfirst is the lowest key of tree t, which is not empty.
func (s *Set) cfirst(t *ctree) (int64, int32) {
	lp := &s.cl[t.head]
	return lp.addr[0], lp.b[0]
}

// clast is the highest key of tree t, which is not empty.
func (s *Set) clast(t *ctree) (int64, int32) {
	lp := &s.cl[t.tail]
	return lp.addr[lp.n-1], lp.b[lp.n-1]
}

// clower is the first key of tree t whose address is not below a.
func (s *Set) clower(t *ctree, a int64) (int64, int32, bool) {
	lf, pos, ok := s.cdescend(t, a, false)
	if !ok {
		return 0, 0, false
	}
	return s.cl[lf].addr[pos], s.cl[lf].b[pos], true
}

// cafter is the first key of tree t after (a, b) in freeset.Set.After's
// sense: a higher address, or a's own address held by another block.
func (s *Set) cafter(t *ctree, a int64, b int32) (int64, int32, bool) {
	lf, pos, ok := s.cdescend(t, a, false)
	if !ok {
		return 0, 0, false
	}
	lp := &s.cl[lf]
	if lp.addr[pos] == a && lp.b[pos] == b {
		pos++
	}
	if pos < int(lp.n) {
		return lp.addr[pos], lp.b[pos], true
	}
	if lp.next != nilNode {
		np := &s.cl[lp.next]
		return np.addr[0], np.b[0], true
	}
	return 0, 0, false
}

// cbefore is the last key of tree t whose address is below a.
func (s *Set) cbefore(t *ctree, a int64) (int64, int32, bool) {
	lf, pos, ok := s.cdescend(t, a, false)
	if !ok {
		x, b := s.clast(t)
		return x, b, true
	}
	lp := &s.cl[lf]
	if pos > 0 {
		return lp.addr[pos-1], lp.b[pos-1], true
	}
	if lp.prev != nilNode {
		p := &s.cl[lp.prev]
		return p.addr[p.n-1], p.b[p.n-1], true
	}
	return 0, 0, false
}
