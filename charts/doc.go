// Package charts writes membench's HTML report: one self-contained page
// that draws replay Results and reads without a network. It simulates
// nothing; it draws what the harness measured.
//
// The page has five parts, each built by one file of this package:
//
//   - timeline.go: memory over the trace (events, or time when the trace
//     recorded it) per trace and device, live and reserved bytes of every
//     strategy as step lines, phase marks as bands and lines, OOMs as
//     points, with zoom;
//   - peaks.go: peak reserved bytes per trace and strategy with peak live
//     as the floor under each group, and frag-%;
//   - state.go: the allocator's state at peak (every segment or region by
//     address, blocks coloured by state), after PyTorch's memory_viz
//     "allocator state" view;
//   - capacity.go: the smallest capacity each strategy fits in, from
//     `membench capacity` results, against peak live and the device
//     presets;
//   - tables.go: the comparison tables (strategies as columns, deltas
//     against the first), built by internal/benchtab, the implementation
//     behind `membench compare`, so that the page and the command print
//     the same figures; and every run's configuration with the
//     assumptions labelled.
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
// page for the default corpus is about 1.6 MB, of which ECharts is 1 MB.
//
// Assumptions: the page labels what the devices and the allocator models
// say of themselves (Device.Notes, harness.Result.Notes) and knows no
// framework's assumptions of its own. The package imports harness and
// strategies, go-echarts and x/perf; nothing of ours imports it but cmd.
package charts
