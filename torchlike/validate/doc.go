// Package validate replays a real PyTorch memory snapshot's requests
// through the torch model and compares the model's decisions with the
// recorded ones: segment_alloc, segment_free, segment_map, segment_unmap and
// oom, in order, with sizes and (while they agree) addresses. It is what
// `membench validate` runs, and it is how the project knows the model is
// exact: every shared snapshot agrees entry for entry.
//
// It may import torchlike, torchlike/snapshot and strategies. Nothing in
// the harness depends on it; the validator owns the hooks it needs on the
// model (torchlike.Allocator's OnTrace, OnComplete and AddrHook), so the
// shared strategies.Memory carries none.
//
// # What a snapshot does not say
//
// A recording is not a complete program: the validator infers what it
// lacks and reports each inference.
//
//   - Configuration: the allocator_settings the snapshot records (and the
//     PYTORCH_CUDA_ALLOC_CONF string newer releases add, for knobs the
//     structured fields lack).
//   - The layout when recording began, for a snapshot taken after the model
//     was loaded: torchlike/snapshot reconstructs it from the final segments
//     and it is seeded into the model (torchlike's Seed functions). A block
//     live then may own an unsplit remainder the trace never shows, taken
//     as none; when the replay diverges, the start is read again with
//     every such block owning the largest remainder the trace allows it
//     (with PyTorch before 2.4's rounding too, when that may apply), and
//     if that reading agrees it is named; where neither agrees, the
//     report says the divergence may be the reading's.
//   - The device's capacity, from a recorded OOM's free bytes; or --capacity.
//   - Releases no allocation explains: a burst of segment frees is replayed
//     under competing readings (the next malloc's own release path, an
//     explicit torch.cuda.empty_cache(), a device malloc failure that nothing
//     recorded) on clones of the model, and the reading that reproduces the
//     recording is kept and named in the report. When the recording
//     has stack frames, the frames of the first release choose instead
//     (issue 13): frames in emptyCache are torch.cuda.empty_cache();
//     other frames, in a recording whose frees carry frames too (so that a
//     release's frames are its caller's, not its segment's allocation's),
//     are malloc's retry after a failed device malloc, and the report
//     states the capacity bound that failure implies (the device could
//     not give the segment while the recorded reserved bytes were held).
//     Where no failed malloc reproduces the recording the frames are
//     overruled and counted. Where frames decided, peak reserved must be
//     the recording's. Frees completed just before a burst are read as
//     completions the release path made (synchronize_and_free_events),
//     else as plain frees; with garbage collection on (a threshold and a
//     per-process memory fraction), plain frees first, where the next
//     malloc's own release path then explains the burst:
//     both can reproduce the burst, and the blocks' ages, which garbage
//     collection reads later, differ.
//   - The PyTorch version's rounding: when the current round_size disagrees
//     and a division count is 1, the recording is replayed again with the
//     rule of PyTorch before 2.4 (torchlike.RoundSize's legacy reading), the
//     starting layout reconstructed with the same rule.
//
// Addresses: while the simulation agrees, a new segment takes the address
// the recording gives it, so best-fit ties between segments break as they
// did on the real device; elsewhere the validator hands out addresses of
// its own, clear of every recorded one. With expandable segments the
// reservations' order decides which one a request maps in, and a
// reservation records nothing until a page is mapped in it: one made by
// a malloc that failed takes the first later map of its stream and pool
// in no live reservation (laterMap), and a warm start's runs of a stream
// and pool are seeded into as many reservations as their places need,
// each based at the lowest page the trace shows for it; where the
// recording then maps elsewhere what a reservation's tail would hold,
// it is based lower and the recording replayed again (lowerBases),
// kept only if that agrees.
//
// The card's total memory, which the fraction of
// per_process_memory_fraction and a reservation's size are taken of, is
// not recorded either: Options.Total, else the least it can be.
package validate
