package benchtab

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
)

// Options configures a Builder. Start from DefaultOptions: every field is
// used as given (an empty Table means one table per unit).
type Options struct {
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

// DefaultOptions are benchstat's defaults.
var DefaultOptions = Options{
	Table:      ".config",
	Row:        ".fullname",
	Col:        ".file",
	Filter:     "*",
	Confidence: 0.95,
	Alpha:      benchmath.DefaultThresholds.CompareAlpha,
}

// assumptions are the assume= values a Unit line may give; a unit
// without one is assumed "nothing", as benchstat assumes.
var assumptions = map[string]benchmath.Assumption{
	"exact":   benchmath.AssumeExact,
	"nothing": benchmath.AssumeNothing,
	"normal":  benchmath.AssumeNormal,
}

// cellKey places a result's value in its table.
type cellKey struct{ row, col benchproc.Key }

// A Builder collects results into cells and builds the tables from them.
// Add every result (and AddUnit every Unit line) in input order, since
// keys are ordered by first observation unless a projection says
// otherwise; then Build.
type Builder struct {
	opts                           Options
	thresholds                     benchmath.Thresholds
	filter                         *benchproc.Filter
	tableBy, rowBy, colBy, residue *benchproc.Projection
	unitField                      *benchproc.Field
	keepsFile                      bool // some projection shows or ignores .file

	tables   map[benchproc.Key]*tableAcc
	units    benchfmt.UnitMetadataMap
	nResults int
	warnings []string
	// unfit names the results compared whose fit metric was 0 (notFit).
	unfit []string
}

// FitUnit is the unit of membench's fit metric: 1 when every allocation
// of the replay succeeded, 0 when some failed.
const FitUnit = "fit"

// notFit reports whether res carries a fit metric of 0, or, in results
// written before the fit metric (which the report reads the same way),
// no fit metric and oom-events above 0: a replay cut short by failed
// allocations, whose other figures (peak reserved, frag, device calls)
// describe less of the trace than a run that fit, and so read as better
// beside it. Build warns about every such result that a table compares,
// since benchstat's tables cannot say it.
func notFit(res *benchfmt.Result) bool {
	ooms := false
	for _, v := range res.Values {
		if v.Unit == FitUnit {
			return v.Value == 0
		}
		ooms = ooms || (v.Unit == OOMUnit && v.Value > 0)
	}
	return ooms
}

// OOMUnit is the unit of membench's count of failed allocations, which
// says whether a run fit in results that have no fit metric.
const OOMUnit = "oom-events"

// tableAcc and cellAcc accumulate one table key's results.
type tableAcc struct {
	rows, cols map[benchproc.Key]bool
	cells      map[cellKey]*cellAcc
}

type cellAcc struct {
	values  []float64
	residue map[benchproc.Key]bool
	files   map[string]bool
}

// NewBuilder parses the options' projections and filter. Its errors name
// the option as benchstat's flags do ("parsing -col: ...").
func NewBuilder(opts Options) (*Builder, error) {
	// Written so that NaN, which every comparison fails, is refused too.
	if !(opts.Confidence >= 0 && opts.Confidence <= 1) {
		return nil, fmt.Errorf("-confidence %v: must be in [0, 1]", opts.Confidence)
	}
	if !(opts.Alpha >= 0 && opts.Alpha <= 1) {
		return nil, fmt.Errorf("-alpha %v: must be in [0, 1]", opts.Alpha)
	}
	b := &Builder{opts: opts, tables: make(map[benchproc.Key]*tableAcc), units: make(benchfmt.UnitMetadataMap)}
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

// Add projects a result onto its cells, one for each of its values (the
// unit is part of the table key), unless the filter rejects it. The
// result may be reused once Add returns, as benchfmt.Reader reuses it.
func (b *Builder) Add(res *benchfmt.Result) {
	b.nResults++
	unfit := notFit(res) // before the filter, which may drop the fit value
	if ok, err := b.filter.Apply(res); !ok {
		if err != nil {
			b.warnings = append(b.warnings, err.Error())
		}
		return
	}
	if unfit && len(res.Values) > 0 {
		name := "Benchmark" + string(res.Name)
		if f := res.GetConfig(".file"); f != "" {
			name += " (" + f + ")"
		}
		b.unfit = append(b.unfit, name)
	}
	tableKeys := b.tableBy.ProjectValues(res)
	ck := cellKey{b.rowBy.Project(res), b.colBy.Project(res)}
	resid := b.residue.Project(res)
	file := res.GetConfig(".file")
	for i, tk := range tableKeys {
		t := b.tables[tk]
		if t == nil {
			t = &tableAcc{rows: make(map[benchproc.Key]bool), cols: make(map[benchproc.Key]bool), cells: make(map[cellKey]*cellAcc)}
			b.tables[tk] = t
		}
		c := t.cells[ck]
		if c == nil {
			c = &cellAcc{residue: make(map[benchproc.Key]bool), files: make(map[string]bool)}
			t.cells[ck] = c
			t.rows[ck.row] = true
			t.cols[ck.col] = true
		}
		c.values = append(c.values, res.Values[i].Value)
		c.residue[resid] = true
		c.files[file] = true
	}
}

// AddUnit records a unit's metadata, a key=value of a Unit line: assume
// (exact, nothing or normal) decides how the unit's cells are summarised
// and compared, better which direction of change is an improvement. An
// unknown assume value is an error naming the line.
func (b *Builder) AddUnit(m *benchfmt.UnitMetadata) error {
	if m.Key == "assume" {
		if _, ok := assumptions[m.Value]; !ok {
			f, l := m.Pos()
			return fmt.Errorf("%s:%d: unit %s: assume=%s (want exact, nothing or normal)", f, l, m.OrigUnit, m.Value)
		}
	}
	c := *m
	b.units[m.UnitMetadataKey] = &c
	return nil
}

// Build summarises every cell, compares it with its row's baseline and
// returns the tables. It is an error if no result was added or the
// filter (or a projection's fixed order) kept none.
func (b *Builder) Build() (*Tables, error) {
	if len(b.tables) == 0 {
		if b.nResults == 0 {
			return nil, errors.New("no benchmark results in the input")
		}
		return nil, fmt.Errorf("no result matches -filter %q and the projections' fixed orders", b.opts.Filter)
	}
	out := &Tables{Warnings: b.warnings}
	pooled := make(map[string]bool)
	for _, tk := range sortedKeys(keySet(b.tables)) {
		out.Tables = append(out.Tables, b.table(tk, pooled))
	}
	if len(pooled) > 0 && !b.keepsFile {
		files := make([]string, 0, len(pooled))
		for f := range pooled {
			files = append(files, f)
		}
		slices.Sort(files)
		out.Warnings = append(out.Warnings, fmt.Sprintf("some cells pool results from several input files (%s): keep .file in -col, -row or -table, or pass -ignore .file", strings.Join(files, ", ")))
	}
	if n := len(b.unfit); n > 0 {
		const shown = 5
		names := strings.Join(b.unfit[:min(n, shown)], ", ")
		if n > shown {
			names += fmt.Sprintf(" and %d more", n-shown)
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of the results compared did not fit (fit 0, or oom-events above 0 where fit is absent): %s; "+
			"their figures describe a replay cut short by failed allocations and can read as better than a run that fit: "+
			"compare them by fit and first-oom-event first", n, names))
	}
	return out, nil
}

// sortedKeys returns m's keys in the projection's order.
func sortedKeys(m map[benchproc.Key]bool) []benchproc.Key {
	keys := make([]benchproc.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	return keys
}

// keyFields lists k's fields and values in projection order, leaving out
// skip (the unit, which a table carries apart).
func keyFields(k benchproc.Key, skip *benchproc.Field) []Field {
	var fs []Field
	for _, f := range k.Projection().FlattenedFields() {
		if f == skip {
			continue
		}
		fs = append(fs, Field{f.Name, k.Get(f)})
	}
	return fs
}

// table builds the table of key tk, adding to pooled the files whose
// results share a cell.
func (b *Builder) table(tk benchproc.Key, pooled map[string]bool) *Table {
	acc := b.tables[tk]
	unit := tk.Get(b.unitField)
	name := "nothing"
	if assume := b.units.Get(unit, "assume"); assume != nil {
		name = assume.Value
	}
	t := &Table{
		Config:     keyFields(tk, b.unitField),
		Unit:       unit,
		Assumption: name,
		Better:     b.units.GetBetter(unit),
		cols:       sortedKeys(acc.cols),
	}
	for _, c := range t.cols {
		t.Cols = append(t.Cols, Col{c.StringValues(), keyFields(c, nil)})
	}
	b.fillRows(t, acc, assumptions[name], pooled)
	t.Geomean = geomeanRow(t)
	return t
}

// keySet is the set of m's keys, for sortedKeys.
func keySet[V any](m map[benchproc.Key]V) map[benchproc.Key]bool {
	s := make(map[benchproc.Key]bool, len(m))
	for k := range m {
		s[k] = true
	}
	return s
}

// fillRows summarises every cell of acc under assume and compares it with
// its row's cell in the first column; files whose results share a cell
// are added to pooled.
func (b *Builder) fillRows(t *Table, acc *tableAcc, assume benchmath.Assumption, pooled map[string]bool) {
	rows := sortedKeys(acc.rows)
	samples := make(map[cellKey]*benchmath.Sample, len(acc.cells))
	summaries := make(map[cellKey]benchmath.Summary, len(acc.cells))
	for ck, c := range acc.cells {
		s := benchmath.NewSample(c.values, &b.thresholds)
		samples[ck] = s
		summaries[ck] = assume.Summary(s, b.opts.Confidence)
	}
	for _, r := range rows {
		row := Row{Label: r.StringValues(), Fields: keyFields(r, nil), Cells: make([]*Cell, len(t.cols))}
		for j, c := range t.cols {
			ck := cellKey{r, c}
			ca, ok := acc.cells[ck]
			if !ok {
				continue
			}
			s, sum := samples[ck], summaries[ck]
			cell := &Cell{
				Values: s.Values, Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi,
				Confidence: sum.Confidence, Range: sum.PctRangeString(),
			}
			if vary := benchproc.NonSingularFields(sortedKeys(ca.residue)); len(vary) > 0 {
				names := make([]string, len(vary))
				for i, f := range vary {
					names[i] = f.Name
				}
				cell.Notes = append(cell.Notes, "benchmarks vary in "+strings.Join(names, ", "))
			}
			cell.Notes = append(cell.Notes, errorStrings(sum.Warnings)...)
			if assume == benchmath.AssumeNormal && len(s.Values) < 2 {
				cell.Notes = append(cell.Notes, fmt.Sprintf("need >= 2 samples for confidence interval at level %v", b.opts.Confidence))
			}
			if len(ca.files) > 1 {
				for f := range ca.files {
					pooled[f] = true
				}
			}
			baseKey := cellKey{r, t.cols[0]}
			if base, ok := samples[baseKey]; ok && j > 0 {
				cmp := assume.Compare(base, s)
				if assume == benchmath.AssumeNormal {
					// benchmath's t-test leaves Alpha zero, which
					// would print every delta as "~".
					cmp.Alpha = b.thresholds.CompareAlpha
				}
				baseCenter := summaries[baseKey].Center
				cell.Delta = &Delta{
					Base: baseCenter, Text: cmp.FormatDelta(baseCenter, sum.Center),
					P: cmp.P, Alpha: cmp.Alpha, N1: cmp.N1, N2: cmp.N2,
					Test: cmp.String(), Notes: errorStrings(cmp.Warnings),
				}
			}
			row.Cells[j] = cell
		}
		t.Rows = append(t.Rows, row)
	}
}

// errorStrings turns benchmath's warnings into notes.
func errorStrings(errs []error) []string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return s
}

// geomean is the geometric mean of xs, NaN if any is not positive. It
// averages logarithms incrementally, as benchstat's statistics package
// does, so that the last digits agree.
func geomean(xs []float64) float64 {
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

func geomeanRow(t *Table) []Geomean {
	nBase := 0
	for _, r := range t.Rows {
		if r.Cells[0] != nil {
			nBase++
		}
	}
	g := make([]Geomean, len(t.Cols))
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
		if gm := geomean(centers); math.IsNaN(gm) {
			s.Notes = append(s.Notes, "summaries must be >0 to compute geomean")
		} else {
			s.HasCenter, s.Center = true, gm
		}
		if j > 0 && !zeroBase {
			if gm := geomean(ratios); math.IsNaN(gm) {
				s.Notes = append(s.Notes, "ratios must be >0 to compute geomean")
			} else {
				s.HasRatio, s.Ratio = true, gm
			}
		}
	}
	return g
}
