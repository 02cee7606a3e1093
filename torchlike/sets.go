package torchlike

import "github.com/tidwall/btree"

// fkey orders the free blocks of a pool as PyTorch's BlockComparatorSize
// does (allocator-spec §1.3): stream, then size, then address, streams and
// addresses compared as unsigned pointers. b is the block's arena index and
// takes no part in the order (addresses are unique within a pool).
type fkey struct {
	stream, size, addr int64
	b                  int32
}

func lessSize(x, y fkey) bool {
	if x.stream != y.stream {
		return uint64(x.stream) < uint64(y.stream)
	}
	if x.size != y.size {
		return x.size < y.size
	}
	return uint64(x.addr) < uint64(y.addr)
}

// lessAddr is BlockComparatorAddress, the order of a pool's unmapped
// expandable blocks: stream, then address.
func lessAddr(x, y fkey) bool {
	if x.stream != y.stream {
		return uint64(x.stream) < uint64(y.stream)
	}
	return uint64(x.addr) < uint64(y.addr)
}

// set is an ordered set of block keys. Its search callbacks are bound once
// at construction so that a lookup on the replay's hot path allocates
// nothing (a fresh closure per call would escape to the heap).
type set struct {
	t      *btree.BTreeG[fkey]
	found  fkey
	ok     bool
	visitF func(fkey) bool
}

func newSet(less func(a, b fkey) bool) *set {
	s := &set{t: btree.NewBTreeGOptions(less, btree.Options{NoLocks: true, Degree: 16})}
	s.visitF = func(k fkey) bool { s.found, s.ok = k, true; return false }
	return s
}

func (s *set) insert(k fkey) { s.t.Set(k) }
func (s *set) remove(k fkey) {
	if _, ok := s.t.Delete(k); !ok {
		panic("torchlike: removing a block that is not in its set")
	}
}
func (s *set) len() int { return s.t.Len() }

// lowerBound is the first key not less than k.
func (s *set) lowerBound(k fkey) (fkey, bool) {
	s.ok = false
	s.t.Ascend(k, s.visitF)
	return s.found, s.ok
}

// after is the first key strictly greater than k.
func (s *set) after(k fkey) (fkey, bool) {
	s.ok = false
	first := true
	s.t.Ascend(k, func(x fkey) bool {
		if first && x == k {
			first = false
			return true
		}
		s.found, s.ok = x, true
		return false
	})
	return s.found, s.ok
}

// before is the last key strictly less than k.
func (s *set) before(k fkey) (fkey, bool) {
	s.ok = false
	s.t.Descend(k, func(x fkey) bool {
		if x == k {
			return true
		}
		s.found, s.ok = x, true
		return false
	})
	return s.found, s.ok
}

// items returns the keys in order: for the rare whole-pool passes
// (empty_cache, garbage collection), which mutate the set as they go.
func (s *set) items() []fkey { return s.t.Items() }
