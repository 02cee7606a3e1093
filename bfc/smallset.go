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
// Its order and results are freeset.Set's for the BFC's keys (stream 0,
// addresses compared unsigned), which TestSmallSetMatchesFreeset checks
// step by step against a freeset.Set.
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
// one for good (freeBins.Insert).
const smallMax = 32

func toSmall(k freeset.Key) smallKey { return smallKey{k.Size, k.Addr, k.B} }
func (k smallKey) key() freeset.Key  { return freeset.Key{Size: k.size, Addr: k.addr, B: k.h} }
func smallLess(x, y smallKey) bool {
	return x.size < y.size || x.size == y.size && uint64(x.addr) < uint64(y.addr)
}
func (s *smallSet) items() []smallKey  { return s.keys[:s.n] }
func (s *smallSet) at(i int) *smallKey { return &s.keys[i] }

// fit is the index of the first chunk of at least r bytes, the best fit
// (ties to the lowest address), or n when there is none.
func (s *smallSet) fit(r int64) int {
	i := 0
	for i < s.n && s.keys[i].size < r {
		i++
	}
	return i
}

// index is the index of the first key not less than k, from lo on.
func (s *smallSet) index(k smallKey, lo int) int {
	for lo < s.n && smallLess(s.keys[lo], k) {
		lo++
	}
	return lo
}

// find is the index of the chunk k, which must be in the set.
func (s *smallSet) find(k smallKey) int {
	i := s.index(k, 0)
	if i == s.n || s.keys[i] != k {
		panic("bfc: a free chunk is not in the free set")
	}
	return i
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
// there is room.
func (s *smallSet) insert(k smallKey) {
	i := s.index(k, 0)
	for j := s.n; j > i; j-- {
		s.keys[j] = s.keys[j-1]
	}
	s.keys[i] = k
	s.n++
}

// replaceAt puts k in the place of the entry at i, moving the entries
// between where that was and where k belongs by one.
func (s *smallSet) replaceAt(i int, k smallKey) {
	if smallLess(k, s.keys[i]) {
		// k belongs at or below i: the first entry not less than k
		// is at or below i.
		j := 0
		for j < i && smallLess(s.keys[j], k) {
			j++
		}
		for ; i > j; i-- {
			s.keys[i] = s.keys[i-1]
		}
		s.keys[j] = k
		return
	}
	// k belongs at or above i: the entries after i that are less than
	// k move down by one.
	j := s.index(k, i+1)
	for ; i < j-1; i++ {
		s.keys[i] = s.keys[i+1]
	}
	s.keys[j-1] = k
}
