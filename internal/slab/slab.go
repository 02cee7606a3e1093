// Package slab holds an allocator model's records by handle: a slice of
// values whose freed slots are reused, so that a strategies.Handle is an
// index and a steady-state malloc/free allocates nothing. The platform
// path, the TPU runtime model and CUDA's stream-ordered pool keep their
// buffers in one.
package slab

import "membench/internal/hugemem"

// Slab is a slice of T with a free list of slots.
type Slab[T any] struct {
	items  []T
	unused []int32
}

// Put stores v in a free slot, or a new one, and returns its handle.
func (s *Slab[T]) Put(v T) int32 {
	if k := len(s.unused); k > 0 {
		h := s.unused[k-1]
		s.unused = s.unused[:k-1]
		s.items[h] = v
		return h
	}
	s.items = append(s.items, v)
	return int32(len(s.items) - 1)
}

// Full reports whether a Put would need a larger array.
func (s *Slab[T]) Full() bool { return len(s.unused) == 0 && len(s.items) == cap(s.items) }

// GrowHuge makes room for more values in an array grown through
// hugemem, whose large arrays sit in huge pages: a caller whose records
// are read at random by the million (the TPU model's 16 MB of buffers at
// 10^6 live) calls it when Full, before Put, so that Put stays small
// enough to inline. T must hold no pointers (hugemem.Grow).
func (s *Slab[T]) GrowHuge() { s.items = hugemem.Grow(s.items, len(s.items)+1) }

// At is the value of handle h, to read or change in place.
func (s *Slab[T]) At(h int32) *T { return &s.items[h] }

// Release makes h's slot free for a later Put; the value stays until then.
func (s *Slab[T]) Release(h int32) { s.unused = append(s.unused, h) }

// Len is the number of slots, live or free.
func (s *Slab[T]) Len() int { return len(s.items) }

// All is every slot, live or free, by handle: for walks such as layouts
// and invariant checks, which tell live values apart themselves.
func (s *Slab[T]) All() []T { return s.items }

// Clear empties s, keeping its memory for the values put next: a model
// released after its replay hands its slab to the next model built
// (strategies.Releaser), so that a sweep's replays do not each make their
// records anew. The values are cleared, so that the slab holds nothing of
// them.
func (s *Slab[T]) Clear() {
	clear(s.items)
	s.items, s.unused = s.items[:0], s.unused[:0]
}
