// Command membench replays allocation traces through the accelerator
// allocator models that package harness registers and reports peak
// reserved memory, waste, OOMs and device calls as benchstat-compatible
// results.
//
// The command turns flags into package calls and their results into
// output; it holds no framework knowledge and no replay loop of its own.
// Every replaying command (run, sweep, capacity, report) builds its trace ×
// device × strategy jobs the same way (newMatrix) and runs them through
// harness.RunJobs, and the notes it prints on stderr are those the planned
// jobs carry (the devices' and the allocators' own: assumptions, knobs
// without effect, strategies left out on a device they do not model),
// after what a trace says of itself (a compiled trace's approximation,
// harness.TraceNotes). It
// reads `--trace -` from the app's standard input. It imports
// harness, charts, strategies and traces; for `validate` it lists the
// validators the frameworks' houses declare (strategies.Validator; today
// torchlike/validate's), which the architecture allows cmd to import.
//
// Usage:
//
//	membench run [--trace PATH|NAME]... [--strategy SPEC]... [--device NAME]... [--out FILE] [--format F] [--shard K/N]
//	membench validate [--device-index N]... [--capacity SIZE] RECORDING...
//	membench export --format memory-viz --trace T --strategy S [--device D] --out snap.pickle
//	membench sweep --strategy NAME [--param key=v1,v2]... [run's flags]
//	membench capacity [run's flags]
//	membench compare [--col KEY] [--row KEY] [--filter EXPR] [--format text|csv|json] FILE...
//	membench traces list | show NAME|PATH | convert IN OUT | compile [--donate auto|none] IN OUT | gen KIND
//	membench report [--trace ...] [--strategy ...] [--device ...] [--results FILE]... [--jobs N] --out report.html
//
// See README.md for the strategy and device specs.
package main
