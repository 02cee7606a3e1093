package benchtab

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"
)

// Tables is a sequence of comparison tables, one for each distinct
// table key and unit, in benchstat's order.
type Tables struct {
	Tables []*Table
	// Warnings concern the comparison as a whole rather than one cell.
	Warnings []string
}

// Field is one field of a projected key: a projection key such
// as ".file", "/strategy" or a file configuration key, and its value.
type Field struct {
	Key, Value string
}

// Table compares the results of one table key and unit. Cells are
// compared within each row with the cell in the first (baseline) column.
type Table struct {
	// Config is the table key less its unit: every field of the -table
	// projection, in order, with its value in this table ("" if unset).
	// All tables of a Tables have the same fields.
	Config []Field
	// Unit is the tidied unit (ns/op becomes sec/op, MB/s B/s).
	Unit string
	// Assumption is the unit's distributional assumption: "exact",
	// "nothing" or "normal".
	Assumption string
	// Better is +1 if higher values are better, -1 if lower values are,
	// 0 if unknown (Unit line better=, or benchstat's built-in defaults).
	Better int
	Cols   []Col
	Rows   []Row
	// Geomean summarises each column (indexed as Cols). benchstat's
	// text format omits it for a table of one row; its CSV keeps it.
	Geomean []Geomean

	cols []benchproc.Key
}

// Col is a column of a table: a key of the -col projection.
type Col struct {
	// Label is the key's non-empty values joined by spaces.
	Label  string
	Fields []Field
}

// Row is a row of a table: a key of the -row projection.
type Row struct {
	Label  string
	Fields []Field
	// Cells is indexed as the table's Cols; nil where the row has no
	// results in that column.
	Cells []*Cell
}

// Cell summarises the results of one row and column.
type Cell struct {
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
	Delta *Delta
}

// RangePct is the interval's half-width as a percentage of the centre,
// unrounded (the larger side), and whether it is finite and meaningful.
func (c *Cell) RangePct() (float64, bool) {
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

// Delta is a cell's comparison with its row's baseline cell.
type Delta struct {
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
func (d *Delta) Significant() bool { return !(d.P > d.Alpha) }

// Pct is the change from the baseline centre in percent, unrounded, and
// false if the baseline centre is zero and the centres differ.
func (d *Delta) Pct(center float64) (float64, bool) {
	if center == d.Base {
		return 0, true
	}
	if d.Base == 0 {
		return 0, false
	}
	return (center/d.Base - 1) * 100, true
}

// Geomean is the summary row's entry for one column.
type Geomean struct {
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
func (g *Geomean) DeltaText(col int) string {
	if col == 0 {
		return ""
	}
	if !g.HasRatio {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", (g.Ratio-1)*100)
}

// Centers formats a row's centres as the text format prints them, ""
// where the row has no cell: scaled to one prefix for the whole row
// (benchunit's SI prefixes, or IEC ones for a unit that counts bytes),
// chosen by the smallest non-zero centre so that every centre keeps
// three significant digits, as benchstat does. The unit itself is not
// appended.
func (t *Table) Centers(r *Row) []string {
	var vals []float64
	for _, c := range r.Cells {
		if c != nil {
			vals = append(vals, c.Center)
		}
	}
	sc := benchunit.CommonScale(vals, benchunit.ClassOf(t.Unit))
	out := make([]string, len(r.Cells))
	for j, c := range r.Cells {
		if c != nil {
			out[j] = sc.Format(c.Center)
		}
	}
	return out
}

// Change is the direction of a cell's difference from its row's
// baseline: +1 for a significant improvement, -1 for a significant
// regression, 0 when there is no delta, no difference, no significant
// one, or the unit does not say which direction is better.
func (t *Table) Change(c *Cell) int {
	d := c.Delta
	if d == nil || !d.Significant() {
		return 0
	}
	switch {
	case c.Center > d.Base:
		return t.Better
	case c.Center < d.Base:
		return -t.Better
	}
	return 0
}

// configLines returns the "key: value" lines printed above table i: the
// fields of its key that differ from the previous table's (all of them
// for the first table), as benchstat prints them.
func (ts *Tables) configLines(i int) []string {
	var lines []string
	for k, f := range ts.Tables[i].Config {
		if i == 0 || ts.Tables[i-1].Config[k].Value != f.Value {
			lines = append(lines, f.Key+": "+f.Value)
		}
	}
	return lines
}
