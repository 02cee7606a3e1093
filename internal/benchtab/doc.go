// Package benchtab builds benchstat's comparison tables in process: the
// one implementation behind `membench compare` and the comparison tables
// of the HTML report.
//
// # Why it exists
//
// membench prints its outcomes in the Go benchmark format so that
// benchstat (golang.org/x/perf/cmd/benchstat, pinned in go.mod) can
// compare them. Two places want those comparisons without running a
// separate tool: the compare command, which must fail on a missing file
// or a malformed line where benchstat prints a message and exits 0, and
// the report, which draws the same tables in HTML. benchstat keeps its
// table builder in an internal package, so this package rebuilds it from
// the public packages it is made of, and both users call it: a figure in
// the report is the figure `membench compare` prints.
//
// # How a comparison is made
//
// The shape follows benchstat's internal benchtab: a Builder collects
// results, builds Tables, and the Tables render themselves as text, CSV
// or JSON.
//
//   - builder.go: NewBuilder parses the -table, -row, -col and -ignore
//     projections and the -filter expression with benchproc; Add projects
//     each result onto a (table, row, column) cell, the unit being part of
//     the table key; AddUnit records Unit lines (assume=, better=); Build
//     orders the keys (first observation, or @alpha, @num, @(fixed list)),
//     summarises each cell with benchmath under the unit's assumption
//     (exact: the mode, no interval; nothing, the default: the median and
//     its order-statistic confidence interval; normal: the mean and its t
//     interval) and compares it with its row's cell in the first column
//     (exact: always a delta; nothing: Mann-Whitney U test; normal: Welch
//     t-test; "~" unless p < alpha).
//   - read.go: Read and ReadFiles feed a Builder from benchfmt inputs with
//     benchstat's file rules (label=path, path#0 for a repeated path, "-"
//     for stdin).
//   - cut.go: EndCheck refuses an input whose last line has no newline
//     (ErrCutShort, with its file and line), for Read and for the report's
//     charts.ReadResults: benchfmt reads a result line cut short as it
//     stands, its last metrics gone or a cut unit name read as another
//     unit, the silent loss the trace readers refuse too (issue 11).
//   - table.go: the Tables, Table, Row, Cell, Delta and Geomean a Build
//     returns, with the figures every renderer shares: the ± range, the
//     delta, each row's centres scaled to one prefix (benchunit: SI, or
//     Ki, Mi, Gi for a unit that counts bytes) and whether a change is an
//     improvement.
//   - text.go, csv.go, json.go: the three formats.
//
// The last row of each table is the geometric mean of every column and of
// every column's ratios to the baseline, as benchstat computes it: the
// geomean of the per-row ratios rather than the ratio of the geomeans, so
// that a column with a different benchmark set still gives a sensible
// (if flagged) figure.
//
// # Where it departs from benchstat
//
// Every departure is stricter:
//
//   - syntax errors in the inputs (benchfmt.SyntaxError, naming the file
//     and line) and unreadable or missing files are errors; benchstat
//     prints them and carries on, exiting 0;
//   - a filter that leaves no result is an error;
//   - cells that pool results from more than one input file because no
//     projection keeps .file are reported (benchstat pools them silently);
//   - assume=normal is honoured (mean, Student t interval, Welch t-test);
//     benchstat treats every value but "exact" as assume=nothing. Any
//     other assume value is an error.
//
// The text layout (column widths and padding) is membench's own; the
// tokens on every line are benchstat's, and the tests require the pinned
// benchstat to print the same tokens. The CSV is benchstat's byte for
// byte, except that warnings name columns past Z as a spreadsheet does
// (AA, AB, ...) where benchstat writes BA, BB, ....
//
// # What it may import
//
// The standard library and golang.org/x/perf's benchfmt, benchproc,
// benchmath and benchunit; no package of membench. It knows nothing of
// allocators, traces or the report's page, so that the harness, charts
// and cmd/membench can all use it without an import cycle. Its users are
// cmd/membench (the compare command) and charts (the report's tables).
package benchtab
