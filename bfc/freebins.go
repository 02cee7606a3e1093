package bfc

import (
	"math/bits"

	"membench/internal/freeset"
)

// freeBins is the allocator's set of free chunks in (size, address)
// order, the order of TSL's bins (package comment): the first chunk at or
// above a size is the best fit, ties to the lowest address.
//
// A chunk smaller than bigSize is kept in the bin of its exact size (sizes
// are multiples of MinAllocationSize, which Check verifies, so a bin is
// size / MinAllocationSize and holds one size), each bin a set of its
// chunks by address, and a bitmap says which bins hold any: a best fit is
// the lowest non-empty bin at or above the request, found in the bitmap
// in a few instructions, and that bin's lowest address. Larger chunks, few
// in any replay, share one set in (size, address) order. A single set of
// every free chunk served before: with 10^6 live chunks it held about a
// thousand, three levels of a B+tree whose two searches per event (the
// best fit, the insertion of a freed chunk) were half of the allocator's
// time, where here a bin holds a handful (issue 15).
//
// The bins are for many free chunks only: until more than binAt chunks
// are free at once, they are all in one set in (size, address) order
// (one), which for a few dozen chunks is a single node, searched in one
// pass, and which a replay makes at once, where each bin's set is made
// when first used (a real trace's short replay of a few hundred sizes
// spent more on making them than it saved). And until more than smallMax
// are free at once, they are in a sorted array (few, a smallSet), which
// for the dozen chunks a real trace keeps free costs a fraction of the
// B+tree's search and moves.
type freeBins struct {
	// few holds every free chunk while inFew, until more than
	// smallMax are free; one takes over then, and gives them back
	// when no more than fewAgain are left (backToFew).
	few   smallSet
	inFew bool
	// backAt is the count of chunks in one at or below which they go
	// back to few: fewAgain, or -1 to keep them in one for good (a
	// reference that places as one set does, in the tests).
	backAt int
	// spareOne is one, emptied, while few holds the chunks: the set
	// to take them again, made once.
	spareOne *freeset.Set
	// one holds every free chunk until the bins take over (nil after),
	// when more than at are free.
	one *freeset.Set
	at  int
	// small holds the bins by size / MinAllocationSize, each by
	// address, as far as the largest bin used (nil until first used).
	small []*freeset.Set
	// used has bit b set when bin b holds a chunk; summary has bit w set
	// when used[w] is not 0.
	used    [numBins / 64]uint64
	summary uint64
	big     *freeset.Set // chunks of bigSize bytes or more
	n       int          // chunks in the bins and the big set
}

const (
	// numBins bounds the exact-size bins: summary has a bit for each
	// word of used.
	numBins = 64 * 64
	// bigSize is the smallest size kept in the big set: 1 MiB.
	bigSize = numBins * MinAllocationSize
)

// binAt is the most free chunks one holds: more go to the bins.
const binAt = 256

func newFreeBins() *freeBins { return &freeBins{inFew: true, at: binAt, backAt: fewAgain} }

// toOne moves the chunks of few to one.
func (s *freeBins) toOne() {
	if s.one = s.spareOne; s.one == nil {
		s.one = freeset.New(false)
	}
	s.spareOne = nil
	for _, k := range s.few.items() {
		s.one.Insert(k.key())
	}
	s.few, s.inFew = smallSet{}, false
}

// fewAgain is the count of free chunks at which one gives them back to
// few (backToFew): half of smallMax, so that a replay whose free chunks
// hover around smallMax moves them at most once per smallMax/2 frees or
// allocations. A real trace's free chunks pass smallMax for a while and
// fall back (resnet50-train: 121 at most, fewer than 32 nine events in
// ten), and with one for good every event after the first pass paid the
// B+tree's cost.
const fewAgain = smallMax / 2

// backToFew moves the chunks of one, no more than smallMax, to few; one,
// emptied, waits in spareOne. The allocator calls it after an event that
// left no more than fewAgain chunks in one (not the bins: a replay that
// had more than binAt free at once keeps its bins for good).
func (s *freeBins) backToFew() {
	n := s.one.Len()
	// few is largest first.
	i := n
	s.one.Ascend(freeset.Key{}, func(k freeset.Key) bool {
		i--
		s.few.keys[i] = toSmall(k)
		return true
	})
	s.few.n = n
	for _, k := range s.few.items() {
		s.one.Remove(k.key())
	}
	s.spareOne, s.one, s.inFew = s.one, nil, true
}

// spread moves the chunks of one into the bins and the big set, for
// good: a replay that had many free chunks at once is likely to again.
func (s *freeBins) spread() {
	keys := s.one.Items()
	s.one, s.big, s.n = nil, freeset.New(false), 0
	for _, k := range keys {
		s.Insert(k)
	}
}

// bin is the exact-size bin of a chunk of size bytes, false for a chunk
// that goes to the big set.
func bin(size int64) (int, bool) {
	if size < bigSize {
		return int(size / MinAllocationSize), true
	}
	return 0, false
}

// next is the lowest non-empty bin at or above b.
func (s *freeBins) next(b int) (int, bool) {
	w := b >> 6
	if m := s.used[w] >> (b & 63); m != 0 {
		return b + bits.TrailingZeros64(m), true
	}
	// The words above w (a shift by 64 leaves nothing).
	m := s.summary >> (w + 1)
	if m == 0 {
		return 0, false
	}
	w += 1 + bits.TrailingZeros64(m)
	return w<<6 + bits.TrailingZeros64(s.used[w]), true
}

// LowerBound is the first chunk, in (size, address) order, not below k,
// which must be a size alone (Key{Size: r}): the best fit for r bytes.
//
// The allocator's find and Free call one themselves while it holds the
// free chunks, and the bins' ways (lowerBound, insert, remove, replace)
// otherwise: these methods, which do either, are too large to inline, and
// a replay of a real trace, which keeps few chunks free, was 4% slower for
// the extra call.
func (s *freeBins) LowerBound(k freeset.Key) (freeset.Key, bool) {
	if s.inFew {
		if i := s.few.fit(k.Size); i >= 0 {
			return s.few.at(i).key(), true
		}
		return freeset.Key{}, false
	}
	if s.one != nil {
		return s.one.LowerBound(k)
	}
	return s.lowerBound(k)
}

func (s *freeBins) lowerBound(k freeset.Key) (freeset.Key, bool) {
	if k.Size < bigSize {
		// A chunk in bin b or above holds at least b times
		// MinAllocationSize bytes: the first bin to look at is k's
		// size rounded up to a bin.
		b := int((k.Size + MinAllocationSize - 1) / MinAllocationSize)
		if nb, ok := s.next(b); ok {
			return s.small[nb].Min()
		}
		return s.big.Min()
	}
	return s.big.LowerBound(k)
}

// Insert adds the free chunk k.
func (s *freeBins) Insert(k freeset.Key) {
	if s.inFew {
		if s.few.n < smallMax {
			s.few.insert(toSmall(k))
			return
		}
		s.toOne()
	}
	if s.one != nil {
		s.one.Insert(k)
		if s.one.Len() > s.at {
			s.spread()
		}
		return
	}
	s.n++
	b, ok := bin(k.Size)
	if !ok {
		s.big.Insert(k)
		return
	}
	if b >= len(s.small) {
		s.small = append(s.small, make([]*freeset.Set, b+1-len(s.small))...)
	}
	set := s.small[b]
	if set == nil {
		set = freeset.New(true)
		s.small[b] = set
	}
	if set.Len() == 0 {
		s.used[b>>6] |= 1 << (b & 63)
		s.summary |= 1 << (b >> 6)
	}
	set.Insert(k)
}

// Remove deletes the free chunk k.
func (s *freeBins) Remove(k freeset.Key) {
	if s.inFew {
		s.few.removeAt(s.few.find(toSmall(k)))
		return
	}
	if s.one != nil {
		s.one.Remove(k)
		return
	}
	s.remove(k)
}

func (s *freeBins) remove(k freeset.Key) {
	s.n--
	b, ok := bin(k.Size)
	if !ok {
		s.big.Remove(k)
		return
	}
	if b >= len(s.small) || s.small[b] == nil {
		panic("bfc: removing a chunk that is not free")
	}
	set := s.small[b]
	set.Remove(k)
	if set.Len() == 0 {
		s.used[b>>6] &^= 1 << (b & 63)
		if s.used[b>>6] == 0 {
			s.summary &^= 1 << (b >> 6)
		}
	}
}

// Replace puts the free chunk new in the place of old: in one step when
// both sizes are in the same bin (or both in the big set), else as a
// Remove and an Insert.
func (s *freeBins) Replace(old, new freeset.Key) {
	if s.inFew {
		s.few.replaceAt(s.few.find(toSmall(old)), toSmall(new))
		return
	}
	if s.one != nil {
		s.one.Replace(old, new)
		return
	}
	s.replace(old, new)
}

func (s *freeBins) replace(old, new freeset.Key) {
	ob, osmall := bin(old.Size)
	nb, nsmall := bin(new.Size)
	switch {
	case !osmall && !nsmall:
		s.big.Replace(old, new)
	case osmall && nsmall && ob == nb:
		s.small[ob].Replace(old, new)
	default:
		s.Remove(old)
		s.Insert(new)
	}
}

// Contains reports whether k, with its chunk index, is a free chunk.
func (s *freeBins) Contains(k freeset.Key) bool {
	if s.inFew {
		return s.few.contains(toSmall(k))
	}
	if s.one != nil {
		return s.one.Contains(k)
	}
	b, ok := bin(k.Size)
	if !ok {
		return s.big.Contains(k)
	}
	return b < len(s.small) && s.small[b] != nil && s.small[b].Contains(k)
}

// Len is the number of free chunks.
func (s *freeBins) Len() int {
	if s.inFew {
		return s.few.n
	}
	if s.one != nil {
		return s.one.Len()
	}
	return s.n
}

// Max is the last free chunk in (size, address) order: the largest.
func (s *freeBins) Max() (freeset.Key, bool) {
	if s.inFew {
		if s.few.n == 0 {
			return freeset.Key{}, false
		}
		return s.few.at(0).key(), true
	}
	if s.one != nil {
		return s.one.Max()
	}
	if s.big.Len() > 0 {
		return s.big.Max()
	}
	if s.summary == 0 {
		return freeset.Key{}, false
	}
	w := 63 - bits.LeadingZeros64(s.summary)
	b := w<<6 + 63 - bits.LeadingZeros64(s.used[w])
	return s.small[b].Max()
}
