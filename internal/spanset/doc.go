// Package spanset is the ordered set that holds the TPU runtime model's
// free memory: disjoint address ranges (spans) ordered by start address,
// each subtree knowing the largest span it holds. That answers the
// question the TPU runtime's placement asks of every allocation, "the
// highest free range that can hold n bytes" (allocator-spec §6.4, derived
// from the v6e recording in package tpurt), in O(log n), which an
// address-ordered list or a (size, address)-ordered set such as
// internal/freeset cannot.
//
// It is a B+tree whose nodes sit in slices, linked by index, with removed
// nodes recycled: a steady-state replay allocates nothing. It imports
// nothing of ours; tpurt imports it.
package spanset
