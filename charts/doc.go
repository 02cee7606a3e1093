// Package charts writes membench's HTML report: one self-contained page
// that draws replay Results and reads without a network. It simulates
// nothing; it draws what the harness measured.
//
// The page has six parts, each built by one file of this package:
//
//   - verdict.go: first, per trace and device, which strategies fit,
//     each one's peak footprint and placement-frag-% (and smallest card
//     when `membench capacity` results are given), which needs the least
//     among those that fit, what is reserved by policy, and the knob that
//     helps most among those tried;
//   - timeline.go: memory over the trace (events, or time when the trace
//     recorded it) per trace and device, live and reserved bytes of every
//     strategy as step lines, the device's capacity as a line, phase
//     marks as bands and lines, OOMs as points and a labelled line at each
//     failed run's first OOM, with zoom;
//   - peaks.go: peak footprint per trace and strategy over peak live as
//     the floor, placement-frag-%, and frag-% labelled as including the
//     reservation policy;
//   - state.go: the allocator's state at peak live and at peak footprint
//     (every segment or region by address, blocks coloured by state),
//     after PyTorch's memory_viz "allocator state" view; a preallocated
//     region is cut at its peak footprint, the rest one thin item
//     "preallocated, never used";
//   - capacity.go: the smallest capacity each strategy fits in, from
//     `membench capacity` results, against peak live and the device
//     presets;
//   - tables.go: the comparison tables (strategies as columns, deltas
//     against the first), built by internal/benchtab, the implementation
//     behind `membench compare`, so that the page and the command print
//     the same figures; and every run's configuration with the
//     assumptions labelled.
//
// Runs that did not fit: a run in which any allocation failed (fit 0, from
// the replay or a results file) answers nothing about waste, and its
// figures are low because it could not obtain memory. Every part marks it
// "did not fit" with its first OOM's event, and none draws or ranks it as
// the best: its bars reach the device's capacity (100 % in percentage
// charts), hatched in red; it is never "needs the least"; its column of a
// comparison table is never coloured as an improvement, and a table whose
// baseline did not fit colours nothing.
//
// Colours: one per strategy across every chart, legend and table, the
// palette indexed by the strategy's position in the report. Legends are
// the page's own HTML above each chart (Chart.Legend): they wrap, never
// page or truncate, and a click hides or shows a series through ECharts'
// hidden legend.
//
// Charts are built with go-echarts, but the page is assembled here
// (page.go): each chart's option is plain JSON in a
// <script type="application/json"> element, and a small loader
// (report.js) replaces the "__f__name__f__" strings go-echarts uses for
// JavaScript functions with the named helper, initialises the chart and
// records when it has drawn. Keeping the options as JSON means user
// strings (trace names, phase labels) can never break out of a script, and
// tests can read a page's data back without running JavaScript.
//
// ECharts 5.4.3 (the version go-echarts targets) is vendored in echarts/
// with its licence and inlined into every page.
//
// Imports: harness (Results, metrics), strategies (devices, specs),
// internal/benchtab (comparisons) and internal/units (byte counts); no
// framework package and nothing that replays.
//
// Determinism: the same Report gives a byte-identical page. Chart ids are
// derived from positions in the report, series follow the order of the
// Report's runs, and nothing depends on map order, time or randomness.
//
// Size: timelines are already bucketed maxima (harness); Downsample merges
// neighbouring buckets further, keeping the maximum of each bucket so every
// peak survives, and large layouts aggregate blocks too small to see. The
// page for the default corpus is about 2.2 MB, of which ECharts is 1 MB.
//
// Assumptions: the page labels what the devices and the allocator models
// say of themselves (Device.Notes, harness.Result.Notes) and knows no
// framework's assumptions of its own. The package imports harness and
// strategies, go-echarts and x/perf; nothing of ours imports it but cmd.
package charts
