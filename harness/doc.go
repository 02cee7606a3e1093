// Package harness replays traces through the allocator models and turns
// the outcomes into results: the one package that knows every strategy.
//
// The registry (registry.go) maps strategy names to the framework
// packages' constructors, and it is the only place here that names a
// framework. Beyond the Allocator contract, the harness reaches a model
// only through the optional capabilities package strategies declares:
// Layouter for the layouts the report draws (Options.KeepLayout, LayoutAt),
// Defragmenter for defrag-events and defrag-moved-B, and Noter, whose
// notes of the model's own assumptions a Result carries (Result.Notes)
// beside its device's (Result.DeviceNotes) for the CLI and the report to
// print. The harness imports strategies, traces and the framework
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
// Around Replay sit the jobs of the commands — trace × device × strategy
// lists run in parallel in a fixed output order (Jobs, RunJobs, Shard), the
// capacity search (MinCapacity, whose guard against non-monotone fitting
// is documented there), the output formats (benchfmt with assume=exact
// units, tables, CSV, JSON), and Validate, which replays a PyTorch memory
// snapshot through torchlike and compares the allocator's decisions with
// the recorded ones. Comparing results is not the harness's job: benchstat's
// tables are built by internal/benchtab, for `membench compare` and the
// report alike.
//
// Validate's design: the recording drives the model — alloc, free and oom
// entries are requests, segment entries are the answers to compare. Three
// things a snapshot does not record are inferred and each is reported: the
// layout when recording began (torchsnap reconstructs it backwards from
// the final segments), the device's capacity (a recorded OOM's reserved
// plus free bytes), and why memory was released when the model did not
// release it — the program's empty_cache(), the next malloc's own release
// path, or a device malloc that failed without an OOM. The last question is
// answered by replaying each reading on a clone of the model and keeping
// the one that reproduces the recording up to the next allocation. While
// the model agrees, new segments take the recorded addresses, so that
// best-fit ties between segments break as they did on the real device.
package harness
