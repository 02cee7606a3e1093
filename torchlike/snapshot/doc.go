// Package snapshot is PyTorch's memory snapshot format, kept in the torch
// house: it reads the dict torch.cuda.memory._dump_snapshot writes
// (allocator-spec.md §1.12), reconstructs the allocator's layout at the
// start of its trace, and serves the trace as membench events.
//
// It may import torchlike (the allocator's constants and round_size, which
// the reconstruction applies exactly as the model does: one copy of each
// rule), internal/pickle and traces; nothing of ours imports it but the
// validator, the harness and tests. traces detects a snapshot from its
// content (a pickle's first opcode, or a JSON object) and this package's
// init registers the reader (traces.RegisterFormat), so a program that
// links the harness opens snapshots like every other trace.
//
// # Events
//
// The reader serves one device's trace (OpenOptions.Device, or the lowest
// device with trace entries): first one alloc for every block the
// reconstruction finds live before the first entry (a warm start), then
// alloc entries as allocs and the entry that returns a block's memory as
// its free (see Role); oom and snapshot entries become marks. Every alloc
// gets a fresh id, since recorded addresses are reused.
//
// # Writing
//
// EncodePickle writes a Snapshot back as the pickle _dump_snapshot writes
// (write.go: empty frames, PyTorch's allocator_settings or, for another
// allocator's replay, ForeignSettings that say which model made it), for
// `membench export --format memory-viz`; snaptest shapes the frames of
// test recordings on the same writer (ValueFrames).
//
// # Decoding
//
// Decode accepts the pickle that PyTorch writes and the JSON dump of the
// same dict. A Snapshot holds only the segments, the per-device traces and
// the allocator settings. Fields that older PyTorch releases do not write
// get defaults (a missing time_us is 0, a missing block address is the end
// of the previous block, a missing requested_size is the block size); a
// field of the wrong type is an error naming its path, such as
// "device_traces[0][17].size: want int, got str".
//
// The pickle is decoded by streaming it (DecodePickle): the safe pickle
// machine of membench/internal/pickle, which never executes anything,
// runs the opcodes once, and this package's Builder receives each
// segment, block and trace entry dict as it is filled, straight into its
// Segment, Block or TraceEntry. Stack frames, annotations and keys the
// snapshot does not use are read past without being built; of a trace
// entry's frames only what validation needs is kept, its FrameClass
// (whether a frame is torch.cuda.empty_cache or the allocator's malloc):
// the machine tags every string it reads for the builder
// (pickle.Tagger) and carries the tags through the containers it skips,
// memo references included, so the class costs nothing per frame. The reason is
// cost and safety: building the whole object graph first cost 3.6 to
// 4.4 µs of CPU and about nine allocations per trace entry (20 to 40
// times the replay itself), and expanding references the pickle shares
// let a 40 KB file ask for gigabytes. Now a real snapshot costs a fraction
// of an allocation per entry, time is linear in the file, and memory is
// what the snapshot holds plus bounded working state.
//
// Trace entries and blocks, the many, are flat records to the machine
// (the builder is a pickle.FlatBuilder): when one starts, the machine
// reads the whole dict, frames included, in one pass over its buffered
// bytes if it has the opcode shape Python's pickler writes, and hands
// the builder its pairs in one call; its memo entries, kept text, depths
// and tags are what opcode-by-opcode decoding would leave. A trace
// entry goes a shorter way still (the builder is a pickle.RecordBuilder):
// its fields (action, addr, size, stream, time_us, device_free, frames)
// are decided once per key string (Slot), and the machine stores each
// value straight into its field and hands the builder the record
// (SetRecord), without a list of pairs to walk again. Anything
// unexpected (an opcode or value of another kind, a field twice, the
// end of the buffer, a limit about to be reached) makes it undo what it
// stored and fall back, to the pairs and then to the general path, for
// that record alone, which gives the same Snapshot or the same error at
// the same offset; the tests compare the three on every shared
// snapshot, on generated and mutated pickles and under fuzzing
// (pickle.Limits.NoFastPath, NoRecordPath). The builder keeps entries
// without pointers (actions by index) until their trace is complete, so
// that the collector neither scans the chunks nor runs write barriers
// when they are copied.
//
// The trace reader goes further: it never builds the []TraceEntry of a
// Snapshot. It decodes each trace into one pointer-free buffer
// (rawTrace), which the reconstruction and the replay walk with the
// actions as indices, and it gives that buffer, the address index and
// the per-entry slots and roles back to pools once it has served the
// last event, for the next import: building the trace's TraceEntry
// values (a write barrier per entry while the collector marked) and
// allocating a trace's worth of megabytes per import, which made the
// collector run two or three times as often, were about a fifth of an
// import. InitialState and Reconstruct, which take a Snapshot, convert
// its trace first. Issue 11 asked for 300 ns or less per entry; the
// figures per shared snapshot are in the README.
//
// The rest of what an import allocated and dropped goes around the same
// way (importBufs): the Snapshot's segments and the arrays their blocks
// are carved from, the reconstruction's segments, the Layout's segments
// and blocks, and the reader's warm-start events, which nothing reads
// once the reader has served its trace. They were about 95 KB of the
// 127 KB a ctx128 import allocated (38 KB now), and the collector ran
// every 25 imports or so; in CPU profiles a tenth of the import was
// the collector's and its preemptions (runtime.asyncPreempt alone 7%,
// 1% after). TestImportBufsReused compares imports that take the
// buffers of the one before, large and small alternating, with imports
// after emptied pools.
//
// With them, the record chaining and the recycled object table of
// package pickle, 12 interleaved rounds against 5ea6c3e (2026-11-24,
// 19:17-19:27, the quietest of four batches on the shared machine)
// gave, in cpu-ns an entry: ctx128 318 -> 257 (-19%, p=0.005), opt125m
// 211 -> 181 (-14%, p=0.008), ctx256 292 -> 258 (-11%, p=0.017); the
// fixed cost 32.9 -> 26.3 cpu-µs an import (-20%, p=0.007), 88 -> 77
// allocations. In 22 later rounds under heavier load, where every
// figure was a third higher, ctx128 was 11% faster (p=0.024) and the
// newer binary faster in 19 of the 22 pairs.
//
// The per-entry path avoids copying a freshly built struct whole: a
// trace entry's record is assigned in place in the builder's table, and
// the reader writes each event into Next's result. Built on the stack
// with narrow stores and copied out with wide loads, both waited on the
// store buffer for every entry (the hottest instructions of openEntry
// and Next in CPU profiles); package pickle does the same for its Val
// copies. With those, refRun's tighter loop, FRAME opcodes read on the
// fast path and the machine, its stack and the segments list reused or
// sized, the gpt2-medium inference snapshot (ctx128) went from 391 to
// 340 cpu-ns an entry (medians of 20 interleaved runs on a machine
// shared with four other benchmarking sessions, which inflates both by
// about a sixth: -13%, p=0.003) and from 169 to 115 KB allocated an
// import; the fixed cost of an import (BenchmarkSnapshotImportFixed)
// from 36 to 33 cpu-µs (-10%, p=0.011) and from 96 to 88 allocations. About 45
// of those 88 are allocator_settings, which is decoded as generic
// values and formatted (decodeSettings); the rest are one or two each
// for the builder, the Snapshot, the Layout and its blocks, the
// reader, its Meta and the warm-start events. The import buffers take
// seven of those off and the machine's recycled object table four more
// (77 an import): what is left besides the settings' generic values
// (Machine.Any's boxes, 21; their dicts, tuples and formatting, about
// 25) is a few small structs each (builder, Snapshot, reader, recon,
// address index, Meta and its strings, action counts) and the
// segments' pool id pairs, decoded as generic tuples.
//
// The allocator_settings' generic values cost less since (2026-11-24,
// 21:00): package pickle hands out again the boxes it made for their
// str keys and for the int keys of roundup_power2_divisions (kept from
// one import to the next), and formatValue renders the settings into
// one buffer per settings dict rather than a strings.Builder grown from
// nothing for each value; the reader's Meta is allocated at its final
// size, its action counts and time origin built on the stack, and the
// machine's tables' box and slice of memo blocks reused. The fixed cost
// went from 77 to 41 allocations an import, a small snapshot's from 4.10
// to 2.01 allocations an entry (torch-compile-cross-entropy, 21
// entries), 1.77 to 0.83 (liger-cross-entropy, 47) and 0.90 to 0.44
// (cs336-lm-peak-probe, 97); the large recordings' by 8 to 40% (to
// 0.007-0.039 an entry). CPU time moved within the noise of the shared
// machine: 12 interleaved rounds against 468508d (21:26-21:30) gave
// 26.1 -> 25.0 cpu-µs an import for the fixed cost (p=0.71), 55.3 ->
// 52.8, 70.9 -> 65.8 and 90.0 -> 88.3 for the three small snapshots
// (1.36, 1.16 and 1.22 ns a byte now), and 189 -> 193, 270 -> 259 and
// 263 -> 262 cpu-ns an entry for opt125m, ctx256 and ctx128 (p >= 0.29
// each). Cachegrind counts 2,300 more instructions an import in this
// module's code for the fixed cost (the boxes' hashing, the depth
// records), 7,200 fewer in the runtime's allocation and collection, and
// the same in this module's code for ctx128 (349.6 million for 22
// imports, from 350.0). What remains of the 41: the settings' dicts and
// the Settings (about 12), the segments' pool id tuples (one each, and
// their backing array), the builder, Snapshot, reader, Layout, address
// index and reconstruction (one or two each), and the Meta's strings.
//
// The machine decides where a new container will be stored from the
// stack (a dict's pending key sits above its MARK); a pickle built in an
// unusual order gets its containers built as generic values and
// converted, which gives the same Snapshot. A segment, block, trace or
// entry referenced twice through the memo is refused: PyTorch never
// shares them, and copying one out for each reference is how tiny files
// became huge.
//
// # Resource limits
//
// Every input, valid or not, is decoded within fixed bounds, each
// reported, when exceeded, as an error that names the file offset and the
// limit (and wraps ErrLimit):
//
//   - nesting depth 1000, stack 262,144 values and marks, memo 1,048,576
//     entries, 64 MiB of kept text, 2,097,152 generic container items
//     (pickle.DefaultLimits); the depth of generic values (the
//     allocator_settings) is exact however the pickle reaches them
//     through the memo, and one that contains itself is refused
//     (package pickle, Nesting depth); TestFastPathGenericDepth
//     compares the paths on snapshots that fill generic lists after
//     nesting them;
//   - integers of at most 4300 digits (protocol 0) or 1800 bytes (LONG4)
//     in a pickle, at most 40 characters in JSON; JSON nesting 1000;
//   - 8,388,608 segments, blocks and trace entries (Limits.MaxRecords,
//     40 to 130 bytes each);
//   - allocator_settings: at most 256 keys, each value's text cut at
//     1 KiB.
//
// Under them the decoder's working state stays below about 300 MB
// whatever the input, the decoded records below about 1 GB, and the time
// is linear in the (decompressed) input; a valid snapshot costs what its
// segments and entries hold.
//
// # Unknown actions
//
// A trace entry whose action this version does not know is not replayed;
// the reader counts such entries in its Meta (IgnoredEntriesKey, which
// the CLI prints as a note), and a trace in which no entry has a known
// action is an error naming the file and the first entry, since replaying
// it would give an empty trace and all-zero results.
//
// # Why a reconstruction is needed
//
// The trace is a ring buffer (§1.12): when recording starts after the
// program has already allocated memory, or when max_entries overwrote the
// oldest entries, the first entry does not see an empty allocator. Some
// blocks are already live, some segments are already reserved, and a
// replay that started from nothing would free blocks it never saw
// allocated and would miss the memory that the early blocks pin. The
// final segments, on the other hand, are a complete picture of the end of
// the trace. InitialState therefore starts from the final segments and
// undoes the trace from its last entry to its first, as PyTorch's
// MemoryViz does for its "Allocator State History" view.
//
// # The backward walk
//
// The state is a set of segments (sorted by address) and, inside each, the
// live blocks (allocated, or pending: freed by the program but held until
// stream events complete, §1.8). Free space is implicit: it is the gaps.
// At the end of the trace every block whose state is not "inactive" is
// live with its recorded size and requested size, and
// "active_pending_free" blocks are pending.
//
// Each entry is then undone, last to first:
//
//   - alloc: the block did not exist before; it must be live at that point
//     (otherwise the trace contradicts itself, and InitialState fails with
//     an EntryError naming the entry), and it is removed.
//   - free_completed: the block existed before; it is added back. Its
//     requested size is the entry's size; its size is round_size of that
//     (§1.2, with the snapshot's roundup_power2_divisions). Because a
//     free_completed always follows its free_requested, the block is
//     pending just before it; undoing the free_requested, if the trace
//     holds it, clears the flag, so a block whose request fell off the
//     front of the ring buffer is pending at the start, as it really was.
//     A "free", or a free_requested that is the free itself, is undone the
//     same way but without the pending flag. The address must lie in a
//     segment that exists at that point and not in a live block.
//   - free_requested: the block was not yet freed by the program; it loses
//     its pending flag. Which free_requested entries start a pending
//     period and which are the free itself is decided before the walk, in
//     a forward pass (Roles): a free_requested pairs with the next
//     free_completed of its address. An unpaired one is a pending block if
//     the final segments show the block live (pending at the end), and is
//     otherwise the free itself. That is the normal reading of a trace
//     without any free_completed (old releases, or a trace in which
//     MemoryViz fused each pair into "free", which is always a free); in a
//     trace that has free_completed entries it is a guess, recorded as an
//     Assumption. The same pass rejects a second free of an address that
//     was not allocated again (a double free), naming the second entry,
//     with an error wrapping ErrFreeNotLive.
//   - segment_alloc: the segment did not exist before; it must hold no live
//     block at that point, and it is removed.
//   - segment_free: the segment existed, entirely free, and is added. Its
//     pool follows from its size: small-pool segments are always 2 MiB and
//     large-pool segments at least 10 MiB (§1.4).
//   - segment_map (expandable segments, §1.10): the range was not mapped
//     before. An expandable segment appears in the snapshot as one segment
//     per contiguous mapped run, so the range is cut out of its run, which
//     splits in two when the range lies in its middle.
//   - segment_unmap: the range was mapped before; it joins the runs that end
//     at its start or begin at its end if they are of its stream and pool.
//     PyTorch keeps one reservation per stream and pool, and two pools'
//     reservations may be adjacent, so the pool decides. A range that is
//     not a whole number of large-pool pages (20 MiB, or the recorded
//     large_segment_size_mb) is small-pool pages; one that is takes the
//     pool of runs of one pool on both sides. Otherwise it is a run of its
//     own whose pool is open until an earlier entry settles it: a block
//     freed in it (a block of at most 1 MiB is the small pool's, §1.2), or
//     a map or a block reaching across from the run beside it, which joins
//     them. One still open at the first entry joins the run of its stream
//     beside it (the lower one when there are two of different pools), or
//     is taken as large alone, with an Assumption either way.
//   - oom, snapshot, user_defined and unknown actions change nothing.
//
// # Block sizes
//
// Addresses and requested sizes come straight from the trace; a block's
// size does not, because of the split rule (§1.6). In the large pool of a
// non-expandable segment a free block is split only when the remainder is
// more than 1 MiB, so an allocation can own up to 1 MiB beyond its rounded
// size. It follows that every free block there is larger than 1 MiB (split
// remainders are, freed large blocks are, and merging only grows them),
// which gives a rule that holds at every moment: a free gap of at most
// 1 MiB directly after a live block is that block's own unsplit
// remainder. The reconstruction gives a re-added block its rounded size and
// grows it over such a gap whenever one appears behind it (when it is
// added, and when a block is added after it), so the size is exact as soon
// as the block's surroundings ever reveal it during the walk. When they
// never do (the space behind the block was always a free gap of more than
// 1 MiB), the remainder is taken as split off: Size is the rounded size
// and MaxSize says how much larger the block could be. Cutting the real
// opt125m snapshot at about a hundred points left 2,722 block sizes
// uncertain, and the guess was right for all of them (compared with a
// forward replay); on random traces of a toy allocator in the tests it is
// right for about 99% of them. With max_split_size set, a block of that
// size or more is its whole segment (no request splits one, a smaller
// request takes none, and no segment that large is ever split;
// allocator-spec §1.5–§1.6): one re-added alone at its segment's start,
// with less than max_non_split_rounding behind it, is given the segment
// exactly. That holds for the settings the snapshot reports; a program
// that set max_split_size while it ran (torch.cuda.memory's
// _set_allocator_settings) may hold a block that large split from its
// segment before then, which the rule then reads as its whole segment.
// (large_segment_size_mb more than 1 MiB above max_split_size_mb would
// split segments that large too; torchlike refuses that pair, and the
// rule is off when the settings do not parse.) A block of max_split_size
// or more anywhere else means the recording does not fit the rule; its
// MaxSize allows a remainder of up to max_non_split_rounding less 512
// bytes (a request of max_split_size or more takes a cached block whole
// when it is less than that larger), and a block the rule gave its
// segment that a block freed earlier then cuts is read as if the rule had
// not applied. A validator whose replay diverges from a start with
// uncertain sizes reads it again with every block at its MaxSize
// (LayoutOptions.Tails). In the small pool and in expandable segments every
// remainder of 512 bytes or more is split (§1.6), so the rounded size is
// exact there. Sizes that contradict the layout (a rounded size running
// into the next block, which happens when a snapshot lacks its rounding
// settings) are cut to fit and recorded as Assumptions.
//
// # What is reported
//
// Layout holds the segments at the start (for expandable segments, the
// mapped runs) with their live blocks, the Role of every entry (which a
// replayer uses to decide which entry frees a block) and the Assumptions.
// A cold-start trace yields a Layout without segments; otherwise
// NumBlocks and len(Segments) say how warm the start was.
package snapshot
