// Package freeset is the ordered set that holds an allocator's free
// blocks: PyTorch's pools and TSL's BFC bins both look up the smallest free
// block at or above a size, ties to the lowest address.
//
// It imports nothing of ours; bfc, torchlike and internal/binset
// (torchlike's free sets, which keep small sizes in exact-size classes in
// front of a Set) import it.
package freeset
