package tpurt

import "membench/internal/hugemem"

// records are the buffers' records by handle, with the handles of freed
// buffers to reuse (the scheme of internal/slab, which the model used
// before): their array grows through hugemem, so that at 10^6 live
// buffers its 16 MB, which frees read at random, sit in huge pages.
type records struct {
	items  []buffer
	unused []int32
}

// Put stores v in a free slot, a reused one first, and returns its
// handle. The caller makes room first (full, grow), so that the array
// grows through hugemem and not by append; Put stays small enough to
// inline into the placement.
func (s *records) Put(v buffer) int32 {
	if k := len(s.unused); k > 0 {
		h := s.unused[k-1]
		s.unused = s.unused[:k-1]
		s.items[h] = v
		return h
	}
	s.items = append(s.items, v)
	return int32(len(s.items) - 1)
}

// full reports whether a Put would need a larger array.
func (s *records) full() bool { return len(s.unused) == 0 && len(s.items) == cap(s.items) }

// grow makes room for more records.
func (s *records) grow() { s.items = hugemem.Grow(s.items, len(s.items)+1) }

// At is the record of handle h.
func (s *records) At(h int32) *buffer { return &s.items[h] }

// Release makes h's slot reusable.
func (s *records) Release(h int32) { s.unused = append(s.unused, h) }

// Len is the slots ever used.
func (s *records) Len() int { return len(s.items) }

// All is every slot, freed ones included.
func (s *records) All() []buffer { return s.items }

// Clear empties the records, keeping their storage.
func (s *records) Clear() {
	clear(s.items)
	s.items, s.unused = s.items[:0], s.unused[:0]
}
