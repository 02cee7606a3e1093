// Package pickle decodes Python pickles that hold plain data: None, bools,
// ints, floats, strings, bytes, lists, tuples, dicts and sets. It is a
// safe subset of Python's unpickler for protocols 0 to 5: every opcode that
// would look up a global, call a function or build a class instance
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
// EXT1/2/4, PERSID, BINPERSID) and the out-of-band buffer opcodes
// (NEXT_BUFFER, READONLY_BUFFER) are refused with an error naming the
// opcode and its byte offset. Nothing in a pickle is ever executed.
//
// Decoded values are:
//
//	None                  nil
//	bool                  bool
//	int                   int64, or *big.Int when it does not fit
//	float                 float64
//	str                   string (protocol-0/1 STRING opcodes too; bytes as-is)
//	bytes, bytearray      []byte
//	list, set, frozenset  *List
//	tuple                 Tuple
//	dict                  *Dict (insertion order kept)
//
// Containers shared through the pickle memo stay shared (the same *List or
// *Dict pointer), so code walking a decoded value must not assume it is a
// tree; but it is never cyclic: a pickle can describe a list that
// contains itself (Python writes l = [l] and t = ([t],) so), whose
// nesting depth has no bound, and such a pickle is refused as deeper than
// any MaxDepth (see Nesting depth).
//
// # Streaming and limits
//
// Decode runs a Machine: the pickle's opcodes are executed once, in
// order, on a stack of compact values (Val), so the time is linear in the
// input. Nothing in it recurses, and everything it keeps is bounded by
// Limits, because a pickle is a program and a few bytes of one can ask
// for unbounded work: a tuple key nested 40 deep used to take 2^40 steps
// to hash, 5 MB of nesting overflowed the Go stack, and a 1 MB gzip file
// could grow the stack or the memo until memory ran out. Nesting depth,
// stack length, memo entries, text bytes and generic items each have a
// limit, and exceeding one is an *Error wrapping ErrLimit that names the
// limit and the byte offset. Tuple keys are encoded in one linear pass,
// with their own depth and length bounds.
//
// # Nesting depth
//
// MaxDepth is exact for generic values: a pickle is refused, at the
// opcode that does it, as soon as a generic container it built holds
// containers nested more than MaxDepth deep, by whatever route the
// pickle reaches them. The depth is kept with the container (a gnode
// record beside the object table, vm.go), not with the references to
// it: a pickle reaches a container through the memo (under as many
// slots as it likes), DUP and the stack, and may fill it after it has
// put it in others, so that any copy of its depth goes stale. Until
// 2026-11-24 the depth travelled in the Val of each reference, and the
// memo's copy was patched as the container filled; that undercounted
// three ways (issue 11): a container stored in two memo slots and read
// through the second (a reviewer chained that into 0.5 MB of real depth
// 270,299, which decoded), a container nested while empty and filled
// afterwards, and a stale copy filled with one item, which lowered the
// depth the first slot gave (real depth 12 passed MaxDepth 10).
//
// Each record also holds links to the containers its container was put
// in. When a container gains depth after it was nested, the gain is
// carried up the links (raise) as far as it changes anything, and a
// container found too deep fails the opcode. Python's pickler writes a
// container's items before the container goes into another, so that
// on its output raise never runs (no valid snapshot or generic pickle
// of ours changed); on hostile input the links it follows count
// against MaxItems over the whole pickle, which bounds the time of a
// container that gains depth again and again while held by many (a
// list in 100,000 others, deepened 900 times, ends after 2,097,153
// links in 50 ms). The records and links are kept in tables that grow
// by fixed blocks (blocks, vm.go), 12 bytes a container and 8 a link:
// grown by append, the slices they outgrew added up to four times that,
// and 4 MB of EMPTY_DICT POP allocated 326 MiB, past fuzzbound's 256
// MiB (218 MiB with blocks; 194 MiB before the records; a review's
// measurement, 2026-11-24). On a real pickle, BenchmarkDecodeOpt125m
// allocated 31.6 MiB a decode with append, 21.5 MiB with blocks (24.6
// MiB before the records, which also dropped a map), for 0.3% more
// allocations, and its wall time in 8 interleaved rounds on the shared
// machine went from 64.4 ms ± 19% to 49.8 ms ± 15% (p=0.002); the
// depth code's own instructions are about 20M of the decode's 2.2G
// (cachegrind). A walk that comes back to the container it started
// from has found a cycle: the container contains itself, and the
// pickle is refused with an *Error wrapping ErrLimit that says so. A
// cycle always comes back (a container that holds c is deeper than c,
// so c, holding it now, gains depth, and so does everything between).
// TestDepthModel compares the machine with a model that recomputes
// every container's depth after every opcode on random pickles of
// lists, tuples and dicts shared through the memo and DUP.
//
// Two kinds of container keep their depth as before, in their Val: a
// Builder's (which cannot be referenced twice: a second reference is
// refused) and a skipped one (never built, so nothing walks it; a
// skipped list may contain itself). A generic container given to one
// of those counts with the depth it had then; if it gains depth later,
// its own depth, and that of every generic container holding it, is
// still checked, but the Builder's container is not revisited.
// The fast paths never build generic containers: they read a generic
// container's depth from its record (fastBatch, fastGet) where they
// meet a reference to one, so that they stop at the same opcode.
//
// A Builder lets a caller that knows the schema of the pickle take the
// containers it needs as they are built (the machine tells it where each
// new container will be stored: the pending key above a dict's MARK, or
// the list below it), and leave the others unbuilt (NodeSkip): that is how
// package snapshot reads PyTorch snapshots without building the object
// graph, and without reading stack frames at all.
//
// # The fast path
//
// Run one opcode at a time, a small dict costs some twenty dispatches,
// pushes and node decisions, and a PyTorch snapshot is tens of
// thousands of the same small dicts. A Builder that is a FlatBuilder
// names the nodes that are flat records (str keys, scalar values, lists
// it skips); when such a dict starts, the machine reads it in one pass
// over the buffered bytes (fast.go), provided it has exactly the shape
// Python's pickler writes: EMPTY_DICT, its PUT, MARK, the pairs and
// SETITEMS, keys as new strings or memo references, values as ints,
// strings, memo references or a skipped list of frames (memo references
// or new flat frame dicts, in batches of MARK ... APPENDS or one item and
// APPEND). Skipped lists found elsewhere (a segment's frames) are read
// the same way. The pass leaves what the general path would have: the
// record handed to the Builder in one SetItems, every memo entry stored
// (later records refer to them), the same text counted, depths and tags.
// At anything else (another opcode, a dict among the values, the end of
// the window, a PUT that is not into a free allocated slot, a limit that
// would be reached, a full intern table) it undoes what it stored and
// the general path runs the same dict from its start, so that the
// result, and the error and offset for bad input, are the same. Limits'
// NoFastPath turns it off; package snapshot's tests compare both on
// real, generated, mutated and fuzzed snapshots.
//
// A Builder that is also a RecordBuilder has one flat record of fixed
// fields (a snapshot's trace entry), which takes a shorter way still
// (record.go): each key is a memo reference to a str whose field (a
// Slot: an int, a str, a value kept as read or dropped) the Builder
// gave once for that string, and each value lands in its field of a
// Record that the Builder takes in one SetRecord, without the array of
// pairs and the Builder's second pass over it. It accepts fewer shapes
// than fastRecord (each field once, values of the field's type), for
// which SetRecord and SetItems agree by construction, and gives up to
// fastRecord at anything else; Limits' NoRecordPath turns it off for
// the tests that compare the three.
//
// What the fast paths cost is mostly a handful of loops that the Go
// compiler keeps in registers (refRun for a run of frame references,
// fieldRun for an entry's scalar fields) and the copies of Val between
// them. Val has six fields, which the compiler does not split into
// registers: a Val written field by field (a literal, a call's result)
// and then copied whole is read back with one 16-byte load from
// narrower stores, which the processor cannot forward from its store
// buffer, so the load waits for the stores to reach the cache. The
// fast path therefore writes and copies such Vals field by field
// (setVal), and takes a string's index rather than its Val from the
// intern table. Cachegrind does not see these stalls; CPU profiles do.
// A protocol-4 FRAME opcode (Python writes one before a value every
// 64 KB, so mostly inside a frames list) is read past in a batch as
// step reads past it. On the gpt2-medium inference snapshot (ctx128,
// 3,840 entries of 63 frame references each) cachegrind counts about
// 4,250 instructions an entry in this module's code, from 4,560
// (training, ctx256: 3,780 from 3,950; opt125m: 3,120 from 3,250):
// refRun's reference takes 15 instructions instead of 20 (a loop for
// each opcode's runs), fieldRun hands fastFields the key it stops at,
// and 16 entries instead of 30 go the general way.
//
// Consecutive records of a batch (a trace's entries, a segment's
// blocks) are read in one call: after a record, fastDict reads the next
// EMPTY_DICT itself when run would have handed it straight back (a full
// window, the stack below its limit), and takes its node from the batch
// parent alone (nextNode: newNode's answer when the top of the stack is
// a Builder's dict, which TestNextNode checks against newNode on random
// stacks), instead of run's dispatch and newNode's search. With it,
// fieldRun's field index masked rather than bounds-checked and no
// fieldRun call at a record's SETITEMS, cachegrind counts 3,952
// instructions an entry of ctx128 in this module's code (both packages,
// 40 imports less 10), from 4,045 (2026-11-24).
//
// The machine itself (1.7 KB), its stack, and its window, memo, depth
// bytes and string tables go back to pools when a decode ends, for the
// next one: a warm import of that snapshot allocates about 120 KB, from
// 178 KB, most of it what the Snapshot holds.
//
// The boxes Any makes for generic values go around too (anyBoxes, in
// the recycled tables): an int beyond the 256 the runtime keeps boxed,
// or a short string, boxed once is handed out again by the next
// machines, a string's box holding a copy of its own made the second
// time the string is met (the machine's strings live in blocks the next
// machine overwrites). A snapshot's allocator_settings are decoded as
// generic values, and boxing its ten keys and the int keys of its
// roundup_power2_divisions dict was 19 of the 75 allocations of the
// fixed cost of an import (BenchmarkSnapshotImportFixed); with them, the
// tables' own box and the memo's slice of blocks reused, and package
// snapshot's formatting of the settings in one buffer, 41.
//
// Tried and not kept: a byte beside each memo slot holding the Slot of
// the str key stored there (cleared wherever depths is written and at
// release), so that fieldRun reads a key's slot in one load instead of
// three that wait on one another (the memo block, the Val's string
// index, the slot table). It added about 7% to fieldRun's instructions
// (cachegrind) and, in 12 interleaved rounds of the ctx128 import on
// the shared machine (2026-11-24, 18:10), measured 277.0 cpu-ns/entry
// ± 4% against 274.6 ± 5% without it (p=0.51): no gain the runs could
// see, so the loads it shortens are not what the entry waits on.
//
// # Imports
//
// It imports only the standard library: the unpickler is a format reader
// with no knowledge of PyTorch; torchlike/snapshot builds a snapshot on it
// through the Builder hook.
//
// # Writing
//
// Encode writes the same value model back as a protocol-4 pickle limited
// to the opcodes PyTorch's MemoryViz reads, so that `membench export`
// (through torchlike/snapshot) writes snapshots that both Python and the
// viewer open. pickletest, the writer's former home, is now a thin
// wrapper kept for tests.
package pickle
