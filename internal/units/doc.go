// Package units formats the quantities membench shows to people. It holds
// the one byte formatter of the project: a byte count written with the
// largest binary prefix (KiB, MiB, GiB, ...) that keeps the number at
// least 1.
//
// Why one: the run table, the report's figures and chart labels each had a
// formatter of their own, and they had begun to disagree on rounding and
// on negative counts. The callers still differ in one respect, on purpose:
// a table column reads best with a fixed number of decimals, so that the
// figures align (Bytes(n, 2): "654.48 MiB"), while prose and chart labels
// read best with three significant digits (Bytes(n, Auto): "704 MiB",
// "12.5 MiB", "1.50 GiB"). That choice is a parameter, not a second
// formatter. Auto is also the rule of the report's JavaScript helper
// (MB.fn.bytes in charts/report.js), which formats chart axes and
// tooltips in the browser: keep the two in step.
//
// Comparison tables are not formatted here: internal/benchtab scales them
// with benchunit, as benchstat does, so that `membench compare` prints
// benchstat's figures.
//
// What it may import: the standard library only, so that every package of
// membench may use it.
//
// It imports only the standard library; harness, charts and cmd use it.
package units
