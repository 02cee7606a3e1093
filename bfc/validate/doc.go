// Package validate checks the BFC model (package bfc, TSL's
// bfc_allocator.cc as allocator-spec §2 restates it) against the
// allocator's own recordings: the MemoryAllocation and MemoryDeallocation
// events of a TensorBoard / XProf profile (package xprof), which give for
// every request the chunk the allocator handed out, its address, and the
// bytes in use after it.
//
// # What a recording determines
//
// Profiles start warm: a training step is profiled after the weights were
// loaded, so the allocator's memory before the first event is unknown
// except for the bytes in use then and the chunks the window frees
// without having allocated them. The validator keeps, by address, what
// the window has shown: chunks known live, chunks known free, and gaps
// (memory never shown: buffers allocated before the window and never
// freed in it, free memory the window never needed, or no region at all).
//
// Each allocation is judged on that knowledge, by the BFC's rule:
// FindChunkPtr takes the smallest free chunk that fits the request
// rounded to 256 bytes, ties to the lowest address, keeps its low end, and
// splits it by bfc.Splits (§2.2); the same function decides splits in the
// model. A decision is determined when nothing unseen could change the
// model's answer; otherwise it is reported undetermined, with the reason,
// and never counted as agreement:
//
//   - the recording placed the allocation in memory the window had not
//     shown as one free chunk (a gap, or free chunks not known to be in
//     one region);
//   - the chosen known free chunk borders unseen memory below it, so the
//     real chunk may start lower;
//   - it borders unseen memory above, and a larger real chunk would split
//     differently or lose to another chunk;
//   - a known free chunk too small for the request borders unseen memory
//     through which it might fit, better.
//
// Free chunks that meet at an address coalesce only when that address
// lies strictly inside some chunk the recording shows, that is inside one
// region: the BFC never coalesces across regions (§2.3), and a profile
// does not record where regions begin. The model never places a request in
// memory the window has not shown free: hidden free memory that would fit
// better cannot be seen, so a determined agreement means "agrees with the
// BFC given every chunk the window shows", the most a warm window can say.
//
// # Learning from decisions
//
// After judging an allocation, the validator applies the recorded decision
// (the model is kept on the recording's path, so every decision is judged
// on the state the real allocator had, and one divergence does not cascade)
// and learns from it what the BFC's rules imply of unseen memory: the chunk
// chosen started at the allocation's address, so nothing free lay just
// below it in its region; a chunk handed out whole, larger than the
// rounded request, was exactly that large, so nothing free lay just above
// it. Only facts that cannot change unseen are kept (see state.learn), and
// later decisions are predicted from them: a prediction that the
// recording then contradicts is a disagreement.
//
// The rules are the model's own (bfc.RoundedBytes, bfc.Splits, the
// (size, address) order of internal/freeset that the allocator searches),
// and a test records windows from bfc.Allocator itself and requires them
// to validate with no disagreement: the state kept here, with its
// unknowns, is the one place the BFC's coalescing is restated, because
// the allocator's own chunks cannot hold memory whose state is unknown.
//
// Bytes in use after each event are compared with the model's accounting
// (in use changes by exactly the chunk handed out or taken back, not the
// request).
//
// The package imports bfc, strategies, xprof and internal/freeset.
package validate
