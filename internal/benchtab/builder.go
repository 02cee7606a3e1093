package benchtab

// Compare builds benchstat's comparison tables in process.
//
// benchstat (golang.org/x/perf/cmd/benchstat) keeps its table builder in
// an internal package, so this file rebuilds what that builder does from
// the public packages it is made of:
//
//   - benchproc parses the -table, -row, -col and -ignore projections and
//     the -filter expression, projects every result onto a (table, row,
//     column) cell and orders the keys (first observation, or @alpha,
//     @num, @(fixed list));
//   - benchmath turns each cell's values into a Sample, summarises it
//     under the unit's assumption (assume=exact: the mode, no interval;
//     assume=nothing, the default: the median and its order-statistic
//     confidence interval) and compares it with the row's cell in the
//     first column (exact: always a delta; nothing: Mann-Whitney U test,
//     "~" unless p < alpha);
//   - benchunit scales each row's centres to one SI or IEC prefix (units
//     whose numerator counts bytes use Ki, Mi, Gi).
//
// The last row of each table is the geometric mean of every column and of
// every column's ratios to the baseline, as benchstat computes it: the
// geomean of the per-row ratios rather than the ratio of the geomeans, so
// that a column with a different benchmark set still gives a sensible
// (if flagged) figure.
//
// Deliberate departures from benchstat, all of them stricter:
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
// tokens on every line are benchstat's. The CSV is benchstat's byte for
// byte, except that warnings name columns past Z as a spreadsheet does
// (AA, AB, ...) where benchstat writes BA, BB, ....

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"
)

// CompareOptions configures Compare. Start from DefaultCompareOptions:
// every field is used as given (an empty Table means one table per unit).
type CompareOptions struct {
	// Table, Row and Col are benchproc projections (benchstat's -table,
	// -row and -col) that split the results into tables, rows and
	// columns. Every table is further split by unit. Keys: .name,
	// .fullname, .file, /{name-key}, {file-key}, .config; each may carry
	// a sort order (@alpha, @num, @(v1 v2 ...)).
	Table, Row, Col string
	// Ignore lists keys left out of .config and .fullname and not used
	// to detect pooled results (benchstat's -ignore).
	Ignore string
	// Filter is a benchproc filter expression; "*" keeps everything.
	Filter string
	// Confidence is the level of the confidence intervals, in [0, 1].
	Confidence float64
	// Alpha is the significance level of the comparisons, in [0, 1]:
	// a delta is shown only if p < Alpha.
	Alpha float64
}

// DefaultCompareOptions are benchstat's defaults.
var DefaultCompareOptions = CompareOptions{
	Table:      ".config",
	Row:        ".fullname",
	Col:        ".file",
	Filter:     "*",
	Confidence: 0.95,
	Alpha:      benchmath.DefaultThresholds.CompareAlpha,
}

// Comparison is a sequence of comparison tables, one for each distinct
// table key and unit, in benchstat's order.
type Comparison struct {
	Tables []*CompareTable
	// Warnings concern the comparison as a whole rather than one cell.
	Warnings []string
}

// CompareField is one field of a projected key: a projection key such
// as ".file", "/strategy" or a file configuration key, and its value.
type CompareField struct {
	Key, Value string
}

// CompareTable compares the results of one table key and unit. Cells are
// compared within each row with the cell in the first (baseline) column.
type CompareTable struct {
	// Config is the table key less its unit: every field of the -table
	// projection, in order, with its value in this table ("" if unset).
	// All tables of a Comparison have the same fields.
	Config []CompareField
	// Unit is the tidied unit (ns/op becomes sec/op, MB/s B/s).
	Unit string
	// Assumption is the unit's distributional assumption: "exact",
	// "nothing" or "normal".
	Assumption string
	// Better is +1 if higher values are better, -1 if lower values are,
	// 0 if unknown (Unit line better=, or benchstat's built-in defaults).
	Better int
	Cols   []CompareCol
	Rows   []CompareRow
	// Geomean summarises each column (indexed as Cols). benchstat's
	// text format omits it for a table of one row; its CSV keeps it.
	Geomean []CompareGeomean

	cols []benchproc.Key
}

// CompareCol is a column of a table: a key of the -col projection.
type CompareCol struct {
	// Label is the key's non-empty values joined by spaces.
	Label  string
	Fields []CompareField
}

// CompareRow is a row of a table: a key of the -row projection.
type CompareRow struct {
	Label  string
	Fields []CompareField
	// Cells is indexed as the table's Cols; nil where the row has no
	// results in that column.
	Cells []*CompareCell
}

// CompareCell summarises the results of one row and column.
type CompareCell struct {
	// Values is the sample, in ascending order.
	Values []float64
	// Center is the summary (exact: the mode; nothing: the median;
	// normal: the mean) and Lo, Hi the bounds of its confidence
	// interval (±Inf when there are too few values for one).
	Center, Lo, Hi float64
	// Confidence is the interval's actual level (1 for exact).
	Confidence float64
	// Range is the interval as benchstat prints it after "±": the
	// larger distance of a bound from the centre as a rounded percent
	// ("3%"), "∞" without an interval, "?" if a bound's sign differs.
	Range string
	// Notes are warnings about the sample and its summary: results that
	// differ in a key no projection shows, too few values for an
	// interval, an exact unit with differing values.
	Notes []string
	// Delta compares the cell with the row's baseline cell; nil in the
	// first column and when the row has no baseline cell.
	Delta *CompareDelta
}

// RangePct is the interval's half-width as a percentage of the centre,
// unrounded (the larger side), and whether it is finite and meaningful.
func (c *CompareCell) RangePct() (float64, bool) {
	if math.IsInf(c.Lo, 0) || math.IsInf(c.Hi, 0) || math.IsNaN(c.Lo) || math.IsNaN(c.Hi) {
		return 0, false
	}
	sign := func(x float64) int {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}
	if sign(c.Lo) != sign(c.Center) || sign(c.Hi) != sign(c.Center) {
		return 0, false
	}
	if c.Center == 0 {
		return 0, true
	}
	return 100 * math.Max(c.Hi/c.Center-1, 1-c.Lo/c.Center), true
}

// CompareDelta is a cell's comparison with its row's baseline cell.
type CompareDelta struct {
	// Base is the baseline cell's centre.
	Base float64
	// Text is the delta as benchstat prints it: "~" when the difference
	// is not significant, "+5.00%", "0.00%", or "?" for a zero baseline.
	Text string
	// P is the p-value of the test (0 for exact units, which are not
	// tested), Alpha the significance level, N1 and N2 the sizes of the
	// baseline and this sample.
	P, Alpha float64
	N1, N2   int
	// Test is benchstat's annotation without parentheses: "p=0.000
	// n=10", "n=10+8", or "n=1" for exact units.
	Test string
	// Notes are warnings about the test (too few values, all equal).
	Notes []string
}

// Significant reports whether the delta is shown rather than "~".
func (d *CompareDelta) Significant() bool { return !(d.P > d.Alpha) }

// Pct is the change from the baseline centre in percent, unrounded, and
// false if the baseline centre is zero and the centres differ.
func (d *CompareDelta) Pct(center float64) (float64, bool) {
	if center == d.Base {
		return 0, true
	}
	if d.Base == 0 {
		return 0, false
	}
	return (center/d.Base - 1) * 100, true
}

// CompareGeomean is the summary row's entry for one column.
type CompareGeomean struct {
	// Center is the geometric mean of the column's centres; HasCenter is
	// false if any centre is not positive.
	HasCenter bool
	Center    float64
	// Ratio is the geometric mean of the column's ratios to the
	// baseline (1 means no change); HasRatio is false in the first
	// column and if a ratio is not positive or a baseline is zero.
	HasRatio bool
	Ratio    float64
	Notes    []string
}

// DeltaText is the geomean change as benchstat prints it: "+2.47%", or
// "?" without a ratio. It is "" for the baseline column.
func (g *CompareGeomean) DeltaText(col int) string {
	if col == 0 {
		return ""
	}
	if !g.HasRatio {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", (g.Ratio-1)*100)
}

// CompareInput is one benchfmt input of Compare.
type CompareInput struct {
	// Label is the input's .file value (the column label by default).
	Label string
	// Name names the input in error messages (its path).
	Name string
	R    io.Reader
}

// CompareFiles reads the benchfmt files args as benchstat does and
// compares them: an argument label=path sets the file's .file label, a
// path given twice is told apart as path#0, path#1, and "-" reads stdin.
// Every file is opened before any is read, so a missing file is an error
// up front.
func CompareFiles(args []string, stdin io.Reader, opts CompareOptions) (*Comparison, error) {
	if len(args) == 0 {
		return nil, errors.New("no input files")
	}
	type arg struct{ path, label string }
	var as []arg
	count := make(map[string]int)
	labelled := make([]bool, len(args))
	for i, a := range args {
		path, label := a, a
		if j := strings.IndexByte(a, '='); j >= 0 {
			label, path = a[:j], a[j+1:]
			labelled[i] = true
		} else {
			count[path]++
		}
		as = append(as, arg{path, label})
	}
	seen := make(map[string]int)
	for i := range as {
		if !labelled[i] && count[as[i].path] > 1 {
			as[i].label = fmt.Sprintf("%s#%d", as[i].path, seen[as[i].path])
			seen[as[i].path]++
		}
	}
	var inputs []CompareInput
	for _, a := range as {
		if a.path == "-" {
			if stdin == nil {
				return nil, errors.New("-: no standard input")
			}
			inputs = append(inputs, CompareInput{a.label, "<stdin>", stdin})
			continue
		}
		f, err := os.Open(a.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		inputs = append(inputs, CompareInput{a.label, a.path, f})
	}
	return Compare(inputs, opts)
}

// Compare reads the inputs in order and builds benchstat's tables.
// Syntax errors (*benchfmt.SyntaxError, which name the file and line)
// are returned joined, after the whole input has been read.
func Compare(inputs []CompareInput, opts CompareOptions) (*Comparison, error) {
	b, err := newCompareBuilder(opts)
	if err != nil {
		return nil, err
	}
	var rd benchfmt.Reader
	var bad []error
	for _, in := range inputs {
		rd.Reset(in.R, in.Name, ".file", in.Label)
		for rd.Scan() {
			switch rec := rd.Result().(type) {
			case *benchfmt.SyntaxError:
				bad = append(bad, rec)
			case *benchfmt.UnitMetadata:
				if rec.Key == "assume" {
					if _, ok := cmpAssumptions[rec.Value]; !ok {
						f, l := rec.Pos()
						bad = append(bad, fmt.Errorf("%s:%d: unit %s: assume=%s (want exact, nothing or normal)", f, l, rec.OrigUnit, rec.Value))
					}
				}
			case *benchfmt.Result:
				b.add(rec)
			}
		}
		if err := rd.Err(); err != nil {
			return nil, err
		}
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	if len(b.tables) == 0 {
		if b.nResults == 0 {
			return nil, errors.New("no benchmark results in the input")
		}
		return nil, fmt.Errorf("no result matches -filter %q and the projections' fixed orders", opts.Filter)
	}
	return b.finish(benchfmt.UnitMetadataMap(rd.Units())), nil
}

var cmpAssumptions = map[string]benchmath.Assumption{
	"exact":   benchmath.AssumeExact,
	"nothing": benchmath.AssumeNothing,
	"normal":  benchmath.AssumeNormal,
}

type cmpCellKey struct{ row, col benchproc.Key }

type compareBuilder struct {
	opts                           CompareOptions
	thresholds                     benchmath.Thresholds
	filter                         *benchproc.Filter
	tableBy, rowBy, colBy, residue *benchproc.Projection
	unitField                      *benchproc.Field
	keepsFile                      bool // some projection shows or ignores .file

	tables   map[benchproc.Key]*cmpTableAcc
	nResults int
	warnings []string
}

type cmpTableAcc struct {
	rows, cols map[benchproc.Key]bool
	cells      map[cmpCellKey]*cmpCellAcc
}

type cmpCellAcc struct {
	values  []float64
	residue map[benchproc.Key]bool
	files   map[string]bool
}

func newCompareBuilder(opts CompareOptions) (*compareBuilder, error) {
	if opts.Confidence < 0 || opts.Confidence > 1 {
		return nil, fmt.Errorf("-confidence %v: must be in [0, 1]", opts.Confidence)
	}
	if opts.Alpha < 0 || opts.Alpha > 1 {
		return nil, fmt.Errorf("-alpha %v: must be in [0, 1]", opts.Alpha)
	}
	b := &compareBuilder{opts: opts, tables: make(map[benchproc.Key]*cmpTableAcc)}
	b.thresholds = benchmath.DefaultThresholds
	b.thresholds.CompareAlpha = opts.Alpha
	var err error
	if b.filter, err = benchproc.NewFilter(opts.Filter); err != nil {
		return nil, fmt.Errorf("parsing -filter: %w", err)
	}
	// One parser for all projections, so that keys named in one are
	// left out of .config and .fullname in the others.
	var p benchproc.ProjectionParser
	if b.tableBy, b.unitField, err = p.ParseWithUnit(opts.Table, b.filter); err != nil {
		return nil, fmt.Errorf("parsing -table: %w", err)
	}
	if b.rowBy, err = p.Parse(opts.Row, b.filter); err != nil {
		return nil, fmt.Errorf("parsing -row: %w", err)
	}
	if b.colBy, err = p.Parse(opts.Col, b.filter); err != nil {
		return nil, fmt.Errorf("parsing -col: %w", err)
	}
	ignore, err := p.Parse(opts.Ignore, b.filter)
	if err != nil {
		return nil, fmt.Errorf("parsing -ignore: %w", err)
	}
	b.residue = p.Residue()
	for _, proj := range []*benchproc.Projection{b.tableBy, b.rowBy, b.colBy, ignore} {
		for _, f := range proj.FlattenedFields() {
			if f.Name == ".file" {
				b.keepsFile = true
			}
		}
	}
	return b, nil
}

func (b *compareBuilder) add(res *benchfmt.Result) {
	b.nResults++
	if ok, err := b.filter.Apply(res); !ok {
		if err != nil {
			b.warnings = append(b.warnings, err.Error())
		}
		return
	}
	tableKeys := b.tableBy.ProjectValues(res)
	ck := cmpCellKey{b.rowBy.Project(res), b.colBy.Project(res)}
	resid := b.residue.Project(res)
	file := res.GetConfig(".file")
	for i, tk := range tableKeys {
		t := b.tables[tk]
		if t == nil {
			t = &cmpTableAcc{rows: make(map[benchproc.Key]bool), cols: make(map[benchproc.Key]bool), cells: make(map[cmpCellKey]*cmpCellAcc)}
			b.tables[tk] = t
		}
		c := t.cells[ck]
		if c == nil {
			c = &cmpCellAcc{residue: make(map[benchproc.Key]bool), files: make(map[string]bool)}
			t.cells[ck] = c
			t.rows[ck.row] = true
			t.cols[ck.col] = true
		}
		c.values = append(c.values, res.Values[i].Value)
		c.residue[resid] = true
		c.files[file] = true
	}
}

// cmpSortedKeys returns m's keys in the projection's order.
func cmpSortedKeys(m map[benchproc.Key]bool) []benchproc.Key {
	keys := make([]benchproc.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	return keys
}

func cmpKeyFields(k benchproc.Key, skip *benchproc.Field) []CompareField {
	var fs []CompareField
	for _, f := range k.Projection().FlattenedFields() {
		if f == skip {
			continue
		}
		fs = append(fs, CompareField{f.Name, k.Get(f)})
	}
	return fs
}

func (b *compareBuilder) finish(units benchfmt.UnitMetadataMap) *Comparison {
	out := &Comparison{Warnings: b.warnings}
	pooled := make(map[string]bool)
	for _, tk := range cmpSortedKeys(cmpKeySet(b.tables)) {
		acc := b.tables[tk]
		unit := tk.Get(b.unitField)
		assume := units.Get(unit, "assume")
		name := "nothing"
		if assume != nil {
			name = assume.Value
		}
		t := &CompareTable{
			Config:     cmpKeyFields(tk, b.unitField),
			Unit:       unit,
			Assumption: name,
			Better:     units.GetBetter(unit),
			cols:       cmpSortedKeys(acc.cols),
		}
		for _, c := range t.cols {
			t.Cols = append(t.Cols, CompareCol{c.StringValues(), cmpKeyFields(c, nil)})
		}
		b.fillRows(t, acc, cmpAssumptions[name], pooled)
		t.Geomean = cmpGeomeanRow(t)
		out.Tables = append(out.Tables, t)
	}
	if len(pooled) > 0 && !b.keepsFile {
		files := make([]string, 0, len(pooled))
		for f := range pooled {
			files = append(files, f)
		}
		slices.Sort(files)
		out.Warnings = append(out.Warnings, fmt.Sprintf("some cells pool results from several input files (%s): keep .file in -col, -row or -table, or pass -ignore .file", strings.Join(files, ", ")))
	}
	return out
}

func cmpKeySet[V any](m map[benchproc.Key]V) map[benchproc.Key]bool {
	s := make(map[benchproc.Key]bool, len(m))
	for k := range m {
		s[k] = true
	}
	return s
}

func (b *compareBuilder) fillRows(t *CompareTable, acc *cmpTableAcc, assume benchmath.Assumption, pooled map[string]bool) {
	rows := cmpSortedKeys(acc.rows)
	samples := make(map[cmpCellKey]*benchmath.Sample, len(acc.cells))
	summaries := make(map[cmpCellKey]benchmath.Summary, len(acc.cells))
	for ck, c := range acc.cells {
		s := benchmath.NewSample(c.values, &b.thresholds)
		samples[ck] = s
		summaries[ck] = assume.Summary(s, b.opts.Confidence)
	}
	for _, r := range rows {
		row := CompareRow{Label: r.StringValues(), Fields: cmpKeyFields(r, nil), Cells: make([]*CompareCell, len(t.cols))}
		for j, c := range t.cols {
			ck := cmpCellKey{r, c}
			ca, ok := acc.cells[ck]
			if !ok {
				continue
			}
			s, sum := samples[ck], summaries[ck]
			cell := &CompareCell{
				Values: s.Values, Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi,
				Confidence: sum.Confidence, Range: sum.PctRangeString(),
			}
			if vary := benchproc.NonSingularFields(cmpSortedKeys(ca.residue)); len(vary) > 0 {
				names := make([]string, len(vary))
				for i, f := range vary {
					names[i] = f.Name
				}
				cell.Notes = append(cell.Notes, "benchmarks vary in "+strings.Join(names, ", "))
			}
			cell.Notes = append(cell.Notes, cmpErrorStrings(sum.Warnings)...)
			if assume == benchmath.AssumeNormal && len(s.Values) < 2 {
				cell.Notes = append(cell.Notes, fmt.Sprintf("need >= 2 samples for confidence interval at level %v", b.opts.Confidence))
			}
			if len(ca.files) > 1 {
				for f := range ca.files {
					pooled[f] = true
				}
			}
			baseKey := cmpCellKey{r, t.cols[0]}
			if base, ok := samples[baseKey]; ok && j > 0 {
				cmp := assume.Compare(base, s)
				if assume == benchmath.AssumeNormal {
					// benchmath's t-test leaves Alpha zero, which
					// would print every delta as "~".
					cmp.Alpha = b.thresholds.CompareAlpha
				}
				baseCenter := summaries[baseKey].Center
				cell.Delta = &CompareDelta{
					Base: baseCenter, Text: cmp.FormatDelta(baseCenter, sum.Center),
					P: cmp.P, Alpha: cmp.Alpha, N1: cmp.N1, N2: cmp.N2,
					Test: cmp.String(), Notes: cmpErrorStrings(cmp.Warnings),
				}
			}
			row.Cells[j] = cell
		}
		t.Rows = append(t.Rows, row)
	}
}

func cmpErrorStrings(errs []error) []string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return s
}

// cmpGeomean is the geometric mean of xs, NaN if any is not positive. It
// averages logarithms incrementally, as benchstat's statistics package
// does, so that the last digits agree.
func cmpGeomean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := 0.0
	for i, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		m += (math.Log(x) - m) / float64(i+1)
	}
	return math.Exp(m)
}

func cmpGeomeanRow(t *CompareTable) []CompareGeomean {
	nBase := 0
	for _, r := range t.Rows {
		if r.Cells[0] != nil {
			nBase++
		}
	}
	g := make([]CompareGeomean, len(t.Cols))
	for j := range t.Cols {
		s := &g[j]
		var centers, ratios []float64
		zeroBase := false
		for _, r := range t.Rows {
			c := r.Cells[j]
			if c == nil {
				continue
			}
			centers = append(centers, c.Center)
			if c.Delta == nil {
				continue
			}
			switch {
			case c.Center == c.Delta.Base:
				ratios = append(ratios, 1)
			case c.Delta.Base == 0:
				zeroBase = true
				ratios = append(ratios, 0)
			default:
				ratios = append(ratios, c.Center/c.Delta.Base)
			}
		}
		if j > 0 && nBase != len(ratios) {
			s.Notes = append(s.Notes, "benchmark set differs from baseline; geomeans may not be comparable")
		}
		if gm := cmpGeomean(centers); math.IsNaN(gm) {
			s.Notes = append(s.Notes, "summaries must be >0 to compute geomean")
		} else {
			s.HasCenter, s.Center = true, gm
		}
		if j > 0 && !zeroBase {
			if gm := cmpGeomean(ratios); math.IsNaN(gm) {
				s.Notes = append(s.Notes, "ratios must be >0 to compute geomean")
			} else {
				s.HasRatio, s.Ratio = true, gm
			}
		}
	}
	return g
}

// rowScaler is the scale benchstat uses for a row's centres: one prefix
// for the whole row, chosen by its smallest non-zero centre.
func (t *CompareTable) rowScaler(r *CompareRow) benchunit.Scaler {
	var vals []float64
	for _, c := range r.Cells {
		if c != nil {
			vals = append(vals, c.Center)
		}
	}
	return benchunit.CommonScale(vals, benchunit.ClassOf(t.Unit))
}

// cmpSuperscript writes n with superscript digits, as footnote marks.
func cmpSuperscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	ds := []rune(digits)
	s := []rune(fmt.Sprint(n))
	for i, r := range s {
		s[i] = ds[r-'0']
	}
	return string(s)
}

// cmpFootnotes numbers distinct notes in order of first appearance.
type cmpFootnotes struct {
	list []string
	num  map[string]int
}

// marks returns the marks for notes, separated by spaces.
func (f *cmpFootnotes) marks(notes ...[]string) string {
	var ms []string
	for _, ns := range notes {
		for _, n := range ns {
			i, ok := f.num[n]
			if !ok {
				if f.num == nil {
					f.num = make(map[string]int)
				}
				f.list = append(f.list, n)
				i = len(f.list)
				f.num[n] = i
			}
			ms = append(ms, cmpSuperscript(i))
		}
	}
	return strings.Join(ms, " ")
}

// configLines returns the "key: value" lines printed above table i: the
// fields of its key that differ from the previous table's (all of them
// for the first table), as benchstat prints them.
func (c *Comparison) configLines(i int) []string {
	var lines []string
	for k, f := range c.Tables[i].Config {
		if i == 0 || c.Tables[i-1].Config[k].Value != f.Value {
			lines = append(lines, f.Key+": "+f.Value)
		}
	}
	return lines
}

// WriteText writes the tables in benchstat's text layout: the table key
// lines, a header of column labels and units, a row per benchmark with
// the centre, "± range", the delta and "(p=… n=…)", the geomean row, and
// the footnotes the superscript marks refer to.
func (c *Comparison) WriteText(w io.Writer) error {
	var sb strings.Builder
	for i, t := range c.Tables {
		if i > 0 {
			sb.WriteByte('\n')
		}
		for _, l := range c.configLines(i) {
			sb.WriteString(l)
			sb.WriteByte('\n')
		}
		t.writeText(&sb)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func cmpWidth(s string) int { return utf8.RuneCountInString(s) }

func cmpPadRight(s string, w int) string { return s + strings.Repeat(" ", max(0, w-cmpWidth(s))) }
func cmpPadLeft(s string, w int) string  { return strings.Repeat(" ", max(0, w-cmpWidth(s))) + s }
func cmpPadCenter(s string, w int) string {
	l := max(0, (w-cmpWidth(s))/2)
	return cmpPadRight(strings.Repeat(" ", l)+s, w)
}

// cmpTextCell is one logical column's text in one row.
type cmpTextCell struct {
	center, rng, notes  string
	delta, test, dnotes string
	plusMinus           bool
}

// cmpTextCol is one logical column's layout: sub-column widths and the
// padding that makes room for headers wider than the values.
type cmpTextCol struct {
	lp, wc, wr, wn, wd, wt, wdn, rp int
}

func (k *cmpTextCol) centerPart() int {
	w := k.lp + k.wc + 3 + k.wr
	if k.wn > 0 {
		w += 1 + k.wn
	}
	return w
}

func (k *cmpTextCol) deltaPart(j int) int {
	if j == 0 {
		return 0
	}
	w := 2 + k.wd + 1 + k.wt
	if k.wdn > 0 {
		w += 1 + k.wdn
	}
	return w
}

func (k *cmpTextCol) width(j int) int { return k.centerPart() + k.deltaPart(j) + k.rp }

func (t *CompareTable) writeText(sb *strings.Builder) {
	var fn cmpFootnotes
	cls := benchunit.ClassOf(t.Unit)
	body := make([][]*cmpTextCell, len(t.Rows))
	for i := range t.Rows {
		r := &t.Rows[i]
		sc := t.rowScaler(r)
		body[i] = make([]*cmpTextCell, len(t.Cols))
		for j, c := range r.Cells {
			if c == nil {
				continue
			}
			tc := &cmpTextCell{center: sc.Format(c.Center), rng: c.Range, plusMinus: true, notes: fn.marks(c.Notes)}
			if c.Delta != nil {
				tc.delta = c.Delta.Text
				tc.test = "(" + c.Delta.Test + ")"
				tc.dnotes = fn.marks(c.Delta.Notes)
			}
			body[i][j] = tc
		}
	}
	labels := make([]string, 0, len(t.Rows)+1)
	for _, r := range t.Rows {
		labels = append(labels, r.Label)
	}
	if len(t.Rows) > 1 {
		gm := make([]*cmpTextCell, len(t.Cols))
		for j := range t.Cols {
			g := &t.Geomean[j]
			tc := &cmpTextCell{}
			if g.HasCenter {
				tc.center = benchunit.Scale(g.Center, cls)
			}
			tc.delta = g.DeltaText(j)
			if j == 0 {
				tc.notes = fn.marks(g.Notes)
			} else {
				tc.dnotes = fn.marks(g.Notes)
			}
			gm[j] = tc
		}
		body = append(body, gm)
		labels = append(labels, "geomean")
	}

	// Widths of the sub-columns.
	cols := make([]cmpTextCol, len(t.Cols))
	for j := range cols {
		k := &cols[j]
		for _, row := range body {
			tc := row[j]
			if tc == nil {
				continue
			}
			k.wc = max(k.wc, cmpWidth(tc.center))
			k.wr = max(k.wr, cmpWidth(tc.rng))
			k.wn = max(k.wn, cmpWidth(tc.notes))
			k.wd = max(k.wd, cmpWidth(tc.delta))
			k.wt = max(k.wt, cmpWidth(tc.test))
			k.wdn = max(k.wdn, cmpWidth(tc.dnotes))
		}
		// The unit is centred over the values, "vs base" left-aligned
		// over the deltas.
		if extra := cmpWidth(t.Unit) - k.centerPart(); extra > 0 {
			k.lp += extra
		}
		if j > 0 {
			if extra := cmpWidth("vs base") - (k.deltaPart(j) - 2); extra > 0 {
				k.wt += extra
			}
		}
	}
	// Column labels, one header line per field of the -col projection;
	// a label spanning several columns widens the last one.
	kh := benchproc.NewKeyHeader(t.cols)
	var levels [][]*benchproc.KeyHeaderNode
	for nodes := kh.Top; len(nodes) > 0; {
		levels = append(levels, nodes)
		var next []*benchproc.KeyHeaderNode
		for _, n := range nodes {
			next = append(next, n.Children...)
		}
		nodes = next
	}
	span := func(n *benchproc.KeyHeaderNode) int {
		w := 0
		for j := n.Start; j < n.Start+n.Len; j++ {
			w += cols[j].width(j)
		}
		return w + 3*(n.Len-1)
	}
	for l := len(levels) - 1; l >= 0; l-- {
		for _, n := range levels[l] {
			extra := cmpWidth(n.Value) - span(n)
			if extra <= 0 {
				continue
			}
			if n.Len == 1 {
				k := &cols[n.Start]
				k.lp += extra / 2
				k.rp += extra - extra/2
			} else {
				cols[n.Start+n.Len-1].rp += extra
			}
		}
	}

	lw := 0
	for _, l := range labels {
		lw = max(lw, cmpWidth(l))
	}
	line := func(s string) {
		sb.WriteString(strings.TrimRight(s, " "))
		sb.WriteByte('\n')
	}
	for _, nodes := range levels {
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", lw))
		for _, n := range nodes {
			b.WriteString(" │ ")
			b.WriteString(cmpPadCenter(n.Value, span(n)))
		}
		b.WriteString(" │")
		line(b.String())
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", lw))
	for j := range cols {
		k := &cols[j]
		b.WriteString(" │ ")
		b.WriteString(cmpPadCenter(t.Unit, k.centerPart()))
		if j > 0 {
			b.WriteString("  ")
			b.WriteString(cmpPadRight("vs base", k.deltaPart(j)-2))
		}
		b.WriteString(strings.Repeat(" ", k.rp))
	}
	b.WriteString(" │")
	line(b.String())

	for i, row := range body {
		var b strings.Builder
		b.WriteString(cmpPadRight(labels[i], lw))
		for j, tc := range row {
			k := &cols[j]
			b.WriteString("   ")
			if tc == nil {
				b.WriteString(strings.Repeat(" ", k.width(j)))
				continue
			}
			b.WriteString(strings.Repeat(" ", k.lp))
			b.WriteString(cmpPadLeft(tc.center, k.wc))
			if tc.plusMinus {
				b.WriteString(" ± ")
				b.WriteString(cmpPadLeft(tc.rng, k.wr))
			} else {
				b.WriteString(strings.Repeat(" ", 3+k.wr))
			}
			if k.wn > 0 {
				b.WriteString(" " + cmpPadRight(tc.notes, k.wn))
			}
			if j > 0 {
				b.WriteString("  " + cmpPadLeft(tc.delta, k.wd))
				b.WriteString(" " + cmpPadRight(tc.test, k.wt))
				if k.wdn > 0 {
					b.WriteString(" " + cmpPadRight(tc.dnotes, k.wdn))
				}
			}
			b.WriteString(strings.Repeat(" ", k.rp))
		}
		line(b.String())
	}
	for i, n := range fn.list {
		fmt.Fprintf(sb, "%s %s\n", cmpSuperscript(i+1), n)
	}
}

// cmpSpreadsheetCol names column i (from 0) as a spreadsheet does: A … Z,
// AA, AB, ….
func cmpSpreadsheetCol(i int) string {
	var s []byte
	for i++; i > 0; i = (i - 1) / 26 {
		s = append([]byte{byte('A' + (i-1)%26)}, s...)
	}
	return string(s)
}

// WriteCSV writes the tables as benchstat's -format csv does: per table,
// its key lines, a line per field of the -col projection naming each
// column, a header line (unit, CI, and "vs base", P after the first
// column), one line per row with each column's centre (unrounded, in
// the tidied unit), range, delta and test, and the geomean line. Notes
// go to warnings as "B3: message", naming the spreadsheet cell.
func (c *Comparison) WriteCSV(w, warnings io.Writer) error {
	cw := csv.NewWriter(w)
	line := 1
	for i, t := range c.Tables {
		if i > 0 {
			cw.Write([]string{""})
			line++
		}
		for _, l := range c.configLines(i) {
			cw.Write([]string{l})
			line++
		}
		line += t.writeCSV(cw, line, warnings)
	}
	cw.Flush()
	return cw.Error()
}

func (t *CompareTable) writeCSV(cw *csv.Writer, first int, warnings io.Writer) int {
	// Column j starts at start(j): label, then center and CI for the
	// baseline, then center, CI, delta and P for each other column.
	start := func(j int) int {
		if j == 0 {
			return 1
		}
		return 3 + 4*(j-1)
	}
	n := 0
	var rec []string
	to := func(col int) {
		for len(rec) < col {
			rec = append(rec, "")
		}
	}
	emit := func() {
		cw.Write(rec)
		rec = rec[:0]
		n++
	}
	warn := func(notes []string) {
		for _, m := range notes {
			fmt.Fprintf(warnings, "%s%d: %s\n", cmpSpreadsheetCol(len(rec)), first+n, m)
		}
	}
	if len(t.Cols) > 0 {
		for f := range t.Cols[0].Fields {
			for j, col := range t.Cols {
				to(start(j))
				rec = append(rec, col.Fields[f].Value)
			}
			to(start(len(t.Cols)))
			emit()
		}
	}
	for j := range t.Cols {
		to(start(j))
		rec = append(rec, t.Unit, "CI")
		if j > 0 {
			rec = append(rec, "vs base", "P")
		}
	}
	emit()
	for _, r := range t.Rows {
		rec = append(rec, r.Label)
		for j, c := range r.Cells {
			if c == nil {
				continue
			}
			to(start(j))
			warn(c.Notes)
			rec = append(rec, fmt.Sprint(c.Center), c.Range)
			if c.Delta != nil {
				warn(c.Delta.Notes)
				rec = append(rec, c.Delta.Text, c.Delta.Test)
			}
		}
		emit()
	}
	rec = append(rec, "geomean")
	for j := range t.Cols {
		g := &t.Geomean[j]
		to(start(j))
		warn(g.Notes)
		if g.HasCenter {
			rec = append(rec, fmt.Sprint(g.Center))
		}
		if j > 0 {
			to(start(j) + 2)
			rec = append(rec, g.DeltaText(j))
		}
	}
	to(start(len(t.Cols)))
	emit()
	return n
}

// cmpJSON and the types below are the JSON format (see WriteJSON).
type cmpJSON struct {
	Tables   []cmpJSONTable `json:"tables"`
	Warnings []string       `json:"warnings,omitempty"`
}

type cmpJSONTable struct {
	Config     []cmpJSONField   `json:"config"`
	Unit       string           `json:"unit"`
	Assumption string           `json:"assumption"`
	Better     string           `json:"better,omitempty"`
	Columns    []cmpJSONColumn  `json:"columns"`
	Rows       []cmpJSONRow     `json:"rows"`
	Geomean    []cmpJSONGeomean `json:"geomean"`
}

type cmpJSONField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type cmpJSONColumn struct {
	Label string         `json:"label"`
	Key   []cmpJSONField `json:"key"`
}

type cmpJSONRow struct {
	Label string         `json:"label"`
	Key   []cmpJSONField `json:"key"`
	Cells []*cmpJSONCell `json:"cells"`
}

type cmpJSONCell struct {
	N          int           `json:"n"`
	Values     []*float64    `json:"values"`
	Center     *float64      `json:"center"`
	Low        *float64      `json:"low"`
	High       *float64      `json:"high"`
	Confidence *float64      `json:"confidence"`
	Range      string        `json:"range"`
	RangePct   *float64      `json:"range_pct"`
	Notes      []string      `json:"notes,omitempty"`
	Delta      *cmpJSONDelta `json:"delta,omitempty"`
}

type cmpJSONDelta struct {
	Base        *float64 `json:"base"`
	Text        string   `json:"text"`
	Pct         *float64 `json:"pct"`
	Significant bool     `json:"significant"`
	P           *float64 `json:"p,omitempty"`
	Alpha       float64  `json:"alpha"`
	NBase       int      `json:"n_base"`
	N           int      `json:"n"`
	Test        string   `json:"test"`
	Notes       []string `json:"notes,omitempty"`
}

type cmpJSONGeomean struct {
	Center   *float64 `json:"center"`
	Ratio    *float64 `json:"ratio,omitempty"`
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	Text     string   `json:"text,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// cmpNum is x for JSON: nil (null) unless x is finite.
func cmpNum(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func cmpJSONFields(fs []CompareField) []cmpJSONField {
	out := make([]cmpJSONField, len(fs))
	for i, f := range fs {
		out[i] = cmpJSONField{f.Key, f.Value}
	}
	return out
}

// WriteJSON writes the tables as one indented JSON object, with every number unscaled in the table's
// (tidied) unit and null where a bound is infinite or a figure undefined:
//
//	{
//	  "tables": [{
//	    "config":     [{"key": "goos", "value": "linux"}, ...],  // table key less the unit
//	    "unit":       "sec/op",
//	    "assumption": "exact" | "nothing" | "normal",
//	    "better":     "lower" | "higher",                      // omitted if unknown
//	    "columns":    [{"label": "old.txt", "key": [{"key": ".file", "value": "old.txt"}]}, ...],
//	    "rows": [{
//	      "label": "Encode/format=json-48",
//	      "key":   [{"key": ".fullname", "value": "Encode/format=json-48"}],
//	      "cells": [                                            // one per column, null if empty
//	        {"n": 10, "values": [...],                          // the sample, ascending
//	         "center": 1.718e-06, "low": 1.71e-06, "high": 1.74e-06,
//	         "confidence": 0.95,                                // the interval's actual level
//	         "range": "1%", "range_pct": 1.28,                  // "±" as printed, and unrounded
//	         "notes": ["..."],                                  // footnotes of the text format
//	         "delta": {                                         // absent in the first column
//	           "base": 1.718e-06,                               // the baseline cell's centre
//	           "text": "-17.20%" | "~" | "0.00%" | "?",
//	           "pct": -17.20,                                   // unrounded, even when "~"
//	           "significant": true,                             // p < alpha (always for exact)
//	           "p": 0.00001, "alpha": 0.05,                     // p omitted for exact units
//	           "n_base": 10, "n": 10,
//	           "test": "p=0.000 n=10",
//	           "notes": ["..."]}}]}],
//	    "geomean": [                                            // one per column
//	      {"center": 2.29e-06, "ratio": 0.91, "delta_pct": -8.94, "text": "-8.94%", "notes": [...]}]
//	  }],
//	  "warnings": ["..."]
//	}
func (c *Comparison) WriteJSON(w io.Writer) error {
	out := cmpJSON{Tables: []cmpJSONTable{}, Warnings: c.Warnings}
	for _, t := range c.Tables {
		jt := cmpJSONTable{Config: cmpJSONFields(t.Config), Unit: t.Unit, Assumption: t.Assumption}
		switch t.Better {
		case 1:
			jt.Better = "higher"
		case -1:
			jt.Better = "lower"
		}
		for _, col := range t.Cols {
			jt.Columns = append(jt.Columns, cmpJSONColumn{col.Label, cmpJSONFields(col.Fields)})
		}
		for _, r := range t.Rows {
			jr := cmpJSONRow{Label: r.Label, Key: cmpJSONFields(r.Fields), Cells: make([]*cmpJSONCell, len(r.Cells))}
			for j, c := range r.Cells {
				if c == nil {
					continue
				}
				jc := &cmpJSONCell{
					N: len(c.Values), Center: cmpNum(c.Center), Low: cmpNum(c.Lo), High: cmpNum(c.Hi),
					Confidence: cmpNum(c.Confidence), Range: c.Range, Notes: c.Notes,
				}
				for _, v := range c.Values {
					jc.Values = append(jc.Values, cmpNum(v))
				}
				if p, ok := c.RangePct(); ok {
					jc.RangePct = cmpNum(p)
				}
				if d := c.Delta; d != nil {
					jd := &cmpJSONDelta{
						Base: cmpNum(d.Base), Text: d.Text, Significant: d.Significant(),
						Alpha: d.Alpha, NBase: d.N1, N: d.N2, Test: d.Test, Notes: d.Notes,
					}
					if p, ok := d.Pct(c.Center); ok {
						jd.Pct = cmpNum(p)
					}
					if t.Assumption != "exact" {
						jd.P = cmpNum(d.P)
					}
					jc.Delta = jd
				}
				jr.Cells[j] = jc
			}
			jt.Rows = append(jt.Rows, jr)
		}
		for j := range t.Geomean {
			g := &t.Geomean[j]
			jg := cmpJSONGeomean{Text: g.DeltaText(j), Notes: g.Notes}
			if g.HasCenter {
				jg.Center = cmpNum(g.Center)
			}
			if g.HasRatio {
				jg.Ratio = cmpNum(g.Ratio)
				jg.DeltaPct = cmpNum((g.Ratio - 1) * 100)
			}
			jt.Geomean = append(jt.Geomean, jg)
		}
		out.Tables = append(out.Tables, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
