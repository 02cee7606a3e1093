// Package harness replays traces through the allocator models and turns
// the outcomes into results: the one package that knows every strategy.
//
// The registry (registry.go) maps strategy names to the framework
// packages' constructors, and it is the only place here that names a
// framework. Beyond the Allocator contract, the harness reaches a model
// only through the optional capabilities package strategies declares:
// Layouter for the layouts the report draws (LayoutAt, Options.FindPeakReserved),
// Defragmenter for defrag-events and defrag-moved-B, and Noter, whose
// notes of the model's own assumptions a Result carries (Result.Notes)
// beside its device's (Result.DeviceNotes) for the CLI and the report to
// print, and ProgramLoader, on which a compiled replay on a TPU loads a
// launch's temp as its executable's program (loadProgram), and Placer
// and Tracer, which ExportMemoryViz reads through a wrapper of the
// model (so the replay loop and the models' allocation paths know
// nothing of exports) to write a replay in PyTorch's snapshot format,
// the torch house's (torchlike/snapshot). A trace's own
// statement that it is an approximation (a compiled trace's meta,
// TraceNotes) rides on Result.TraceNotes and Source.Meta, so that every
// command that replays it repeats it; CompileTrace makes such traces. The
// harness imports strategies, traces and the framework
// packages; charts and cmd import it, and it imports neither.
//
// Replay streams a trace's events through one allocator on one device
// model. Per event it does a constant amount of work besides the
// allocator's own: the trace's id semantics (traces.Tracker: unknown ids,
// double frees, bad sizes are input errors naming the file and event), the
// live and peak bytes, and a bucketed-max timeline whose buffer never
// exceeds twice its sample count, so a trace of any length replays in
// memory proportional to its live set. An OOM is an outcome: it is recorded
// with the allocator's account of the moment and the replay goes on
// without the allocation, ignoring its later free.
//
// The loop over a batch is a method of its own (replayer.replay), its
// state in the replayer rather than in ReplayWith's locals: Go keeps no
// register across a call, and with a dozen locals live across the
// model's calls the loop's head reloaded them all after every event. The
// plain allocation and free take the paths written there, the tracker's
// TryFree inlined into it; anything else goes out of line. Measured
// 2026-11-24 against 9f358d2 (cachegrind, BenchmarkReplay on
// gpt-generate under torch): the harness's instructions an event 146.8
// → 122.0 (with cache hits counted, strategies.Memory); timed (8 runs
// interleaved with the base, with the torch model's changes of the same
// pass) the null replay's x-decode-cpu 0.930 → 0.807, tf's 2.005 →
// 1.925.
//
// With a large live set (touchLive ids, 65,536) each free reads its id's
// tracker slot and the model's record of its block at random in tens or
// hundreds of megabytes, and each read would be a cache miss. The replay
// reads its events a batch at a time, so it can see the frees coming: it
// touches a free's slot slotAhead events before it (32; with 10^6 live
// blocks the null replay, about 40 ns an event, reached its frees before
// an 8-event touch was over) and the model's record recordAhead events
// before it (4, through strategies.Toucher, once the slot is in), and at
// the start of each batch the slots of its first frees, which the batch
// before could not see. A small live set is in the cache, and touching it
// cost more than it saved (on gpt-generate every replay took a third
// more time), so below touchLive nothing is touched. The touches change
// no outcome (TestTouchAheadChangesNothing).
//
// The slots must also be reachable without a walk of the page tables for
// each: the tracker takes its pages from 8 MB blocks in huge pages once
// it holds 256 pages, and moves the pages it took before into them
// (traces.Tracker's newPage). It did so from 2,048 pages, and only for
// the pages taken after; in BenchmarkReplayLivePaired that was after the
// warm-up, so that nearly every slot its frees read sat in 4 KiB pages.
// Measured 2026-11-25 (six interleaved runs of each binary): the null
// replay at 10^6 live blocks 30.7-37.5 cpu-ns/event before, 25.1-27.0
// after (x-live1k-cpu 3.27-3.93 to 2.63-2.89), the 10^3 side unchanged.
//
// A replay makes next to no garbage. Its id tracker and batch buffer come
// from the replays before it (replayers), and a model it built hands its
// record arrays on when it is over (strategies.Releaser): a sweep runs
// thousands of short replays per worker, and when each allocated its own
// (42–60 KB a replay of gpt-train, 5–10 KB since), the collector's
// marking competed with the second worker for the machine's cores (issue
// 15).
//
// Around Replay sit the jobs of the commands — trace × device × strategy
// lists planned before anything runs, leaving out a strategy on a device
// it has no model of (Plan), run in parallel in a fixed output order
// (RunJobs, Shard), from sources that standard input joins once spooled
// (StdinSource), the
// capacity search (MinCapacity, whose guard against non-monotone fitting
// is documented there), the output formats (benchfmt with assume=exact
// units, tables, CSV, JSON). Validating a model against a framework's own
// recordings is not the harness's job either: it lives in that framework's
// house (torchlike/validate for PyTorch memory snapshots), as does the
// decoding of the framework's formats, which traces detects and the house
// registers (the harness links torchlike/snapshot for that). Comparing
// results is not the harness's job: benchstat's tables are built by
// internal/benchtab, for `membench compare` and the report alike.
package harness
