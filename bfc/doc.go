// Package bfc models TSL's best-fit-with-coalescing allocator
// (xla/tsl/framework/bfc_allocator.cc), which TensorFlow and XLA (so JAX)
// share on GPU; allocator-spec §2 restates its rules and this file's
// comments cite that section.
//
// Memory comes from the device in regions (one cudaMalloc each). Chunks
// tile a region without gaps and are linked to their address neighbours;
// chunks never span regions, because the GPU sub-allocator does not
// support coalescing (§2.1). A request is rounded to 256 bytes and served
// by the smallest free chunk that fits, ties to the lowest address (§2.2).
// TSL keeps 21 bins by size class and scans them from the request's bin
// upwards, each in (size, address) order; since the bins partition sizes
// into ordered ranges, that scan finds exactly the first chunk of one
// (size, address)-ordered set at or above the request, which is what this
// package finds. While no more than 32 chunks are free it keeps them in
// a sorted array, largest first (smallSet: a real trace's replay keeps a
// dozen free, and takes and returns mostly the smallest); past 32, in one
// such set, a B+tree, until no more than 16 are left; once more than 256
// are free at once, for good, in finer bins that find it sooner:
// one for each size below 1 MiB (every size is a multiple of 256 bytes),
// each by address, with a bitmap of the bins that hold a chunk, and one
// set in (size, address) order for the larger chunks (freeBins). The chunk is split only
// if it is at least twice the request or would waste at least
// max_internal_fragmentation_bytes (128 MiB by default); the allocation
// keeps the low end. A free coalesces with free neighbours in the same
// region (§2.3).
//
// When no chunk fits, Extend asks the device for a new region: with
// allow_growth the region size doubles from 2 MiB, otherwise the first
// region is the whole limit (§2.4). A failed device allocation backs off by
// 0.9 until it succeeds or falls below the request, as the current TSL
// does on every failure. With garbage_collection, a request that still
// fails frees every entirely free region and extends again (§2.5).
//
// Chunks are records of 32 bytes in one arena, named by index; whether a
// chunk is in use is a bit in a bitmap beside it, and its region follows
// from its address. With 10^6 live chunks the records are read at random
// and miss the cache, where the bitmap does not: a free learns from it
// whether its neighbours are free without reading their records, and an
// allocation takes the chunk's size and address from its free-set key
// (issue 15). The exact-size bins serve the same end: with 10^6 live
// chunks about a thousand are free, a handful to a bin.
//
// What remains at 10^6 live chunks (2026-11-24): the allocator alone
// (BenchmarkLive) costs 72-90 cpu-ns/event against 63-66 at 10^3, and in
// a CPU profile of harness.BenchmarkReplayLive at 10^6 (jax, 20 million
// events) its own functions are about a third of the samples (find and
// its free-set search 28 %, a third of that the untimed warm-up's growth
// of the records; Free 5 %; Touch's prefetch of the record 5 %), the
// replay's own trace tracker and event source over half
// (traces.Tracker's Touch 22 % and Alloc 11 %, harness.liveTrace 22 %).
// The records in huge pages (package hugemem, as the TPU model's are)
// measured 0.92-1.03 of their time in one process (median 0.99, six runs
// of a BenchmarkLiveHugePages like tpurt's), so they stay ordinary
// slices. Since the BFC barely grows, the replays' growth from 10^3 to
// 10^6 (x-live1k-cpu 1.6-2.2 for tf and jax on a shared machine) is
// mostly the replay's.
//
// Beyond TSL, the allocator can defragment (Options.Defrag): when a request
// fails although the free bytes inside its regions would hold it, live
// chunks are slid to the low end of each region in address order, leaving
// one free chunk at the top, and the request is retried. No GPU allocator
// does this: it is the what-if of jax-ml/jax#9064 (the `defrag` knob of
// jax and tf on a GPU), costed as bytes moved × 2 over the HBM, or over
// the host link with Options.DefragViaHost, which jax and tf always set
// since a GPU framework cannot move buffers in place. The TPU runtime,
// which does defragment, has its own model (package tpurt).
//
// Beyond the Allocator contract the allocator declares
// strategies.Layouter, Defragmenter, Footprinter, Noter, Placer, Tracer
// (regions taken and given back, chunks a defragmentation moves: the only
// places that look for a tracer) and Toucher. The package imports
// strategies, internal/freeset and internal/prefetch only.
package bfc
