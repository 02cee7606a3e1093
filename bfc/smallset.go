package bfc

import "membench/internal/freeset"

// smallSet is the free chunks of an allocator that has few free at once,
// in (size, address) order, as a sorted array inside freeBins: the tier
// before one (see freeBins). A real trace's replay keeps a dozen chunks
// free or so (gpt-generate never more than 16), where the B+tree's
// search, finger and node moves were two fifths of the BFC's time per
// event (issue 15); here a best fit is a scan of a few sizes in one or two
// cache lines, and a change moves a few entries.
//
// The array is in descending order, the smallest chunk last: a replay
// takes and returns mostly the smallest chunks (on gpt-generate, a third
// of the removals, insertions and replacements are of the smallest, and
// nearly all of the rest among the four smallest), so that in this order
// most changes move nothing, where in ascending order they moved nearly
// every entry. Its order and results are freeset.Set's for the BFC's keys
// (stream 0, addresses compared unsigned), which
// TestSmallSetMatchesFreeset checks step by step against a freeset.Set.
type smallSet struct {
	n    int
	keys [smallMax]smallKey
}

// smallKey is a free chunk: its size, address and record (freeset.Key
// without the stream, which the BFC does not have).
type smallKey struct {
	size, addr int64
	h          int32
}

// smallMax is the most chunks a smallSet holds; one more moves them to
// one (freeBins.Insert), until few are left again (backToFew).
const smallMax = 32

func toSmall(k freeset.Key) smallKey { return smallKey{k.Size, k.Addr, k.B} }
func (k smallKey) key() freeset.Key  { return freeset.Key{Size: k.size, Addr: k.addr, B: k.h} }
func smallLess(x, y smallKey) bool {
	return x.size < y.size || x.size == y.size && uint64(x.addr) < uint64(y.addr)
}

// items is the set's entries, largest first.
func (s *smallSet) items() []smallKey { return s.keys[:s.n] }

func (s *smallSet) at(i int) *smallKey { return &s.keys[i] }

// fit is the index of the smallest chunk of at least r bytes, the best fit
// (ties to the lowest address, which comes after the higher ones), or -1
// when there is none.
func (s *smallSet) fit(r int64) int {
	i := s.n - 1
	for i >= 0 && s.keys[i].size < r {
		i--
	}
	return i
}

// find is the index of the chunk k, which must be in the set.
func (s *smallSet) find(k smallKey) int {
	i := s.n - 1
	for i >= 0 && smallLess(s.keys[i], k) {
		i--
	}
	if i < 0 || s.keys[i] != k {
		panic("bfc: a free chunk is not in the free set")
	}
	return i
}

// contains reports whether k, with its chunk index, is in the set.
func (s *smallSet) contains(k smallKey) bool {
	for i := range s.n {
		if s.keys[i] == k {
			return true
		}
	}
	return false
}

// removeAt deletes the entry at i. Its moves are a loop, not copy: for
// the few entries moved, memmove's call and dispatch cost more than the
// moves.
func (s *smallSet) removeAt(i int) {
	s.n--
	for ; i < s.n; i++ {
		s.keys[i] = s.keys[i+1]
	}
}

// insert adds k, which is not in the set; the caller has checked that
// there is room. The entries less than k move up by one.
func (s *smallSet) insert(k smallKey) {
	i := s.n
	for i > 0 && smallLess(s.keys[i-1], k) {
		s.keys[i] = s.keys[i-1]
		i--
	}
	s.keys[i] = k
	s.n++
}

// replaceAt puts k in the place of the entry at i, moving the entries
// between where that was and where k belongs by one.
func (s *smallSet) replaceAt(i int, k smallKey) {
	if smallLess(k, s.keys[i]) {
		// k belongs at or after i: the entries after i that are
		// greater than k move down by one.
		for i+1 < s.n && smallLess(k, s.keys[i+1]) {
			s.keys[i] = s.keys[i+1]
			i++
		}
	} else {
		// k belongs at or before i: the entries before i that are
		// less than k move up by one.
		for i > 0 && smallLess(s.keys[i-1], k) {
			s.keys[i] = s.keys[i-1]
			i--
		}
	}
	s.keys[i] = k
}
