package benchtab

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"
)

// WriteText writes the tables in benchstat's text layout: the table key
// lines, a header of column labels and units, a row per benchmark with
// the centre, "± range", the delta and "(p=… n=…)", the geomean row, and
// the footnotes the superscript marks refer to.
func (ts *Tables) WriteText(w io.Writer) error {
	var sb strings.Builder
	for i, t := range ts.Tables {
		if i > 0 {
			sb.WriteByte('\n')
		}
		for _, l := range ts.configLines(i) {
			sb.WriteString(l)
			sb.WriteByte('\n')
		}
		t.writeText(&sb)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func width(s string) int { return utf8.RuneCountInString(s) }

func padRight(s string, w int) string { return s + strings.Repeat(" ", max(0, w-width(s))) }
func padLeft(s string, w int) string  { return strings.Repeat(" ", max(0, w-width(s))) + s }
func padCenter(s string, w int) string {
	l := max(0, (w-width(s))/2)
	return padRight(strings.Repeat(" ", l)+s, w)
}

// textCell is one logical column's text in one row.
type textCell struct {
	center, rng, notes  string
	delta, test, dnotes string
	plusMinus           bool
}

// textCol is one logical column's layout: sub-column widths and the
// padding that makes room for headers wider than the values.
type textCol struct {
	lp, wc, wr, wn, wd, wt, wdn, rp int
}

func (k *textCol) centerPart() int {
	w := k.lp + k.wc + 3 + k.wr
	if k.wn > 0 {
		w += 1 + k.wn
	}
	return w
}

func (k *textCol) deltaPart(j int) int {
	if j == 0 {
		return 0
	}
	w := 2 + k.wd + 1 + k.wt
	if k.wdn > 0 {
		w += 1 + k.wdn
	}
	return w
}

func (k *textCol) width(j int) int { return k.centerPart() + k.deltaPart(j) + k.rp }

func (t *Table) writeText(sb *strings.Builder) {
	var fn footnotes
	cls := benchunit.ClassOf(t.Unit)
	body := make([][]*textCell, len(t.Rows))
	for i := range t.Rows {
		r := &t.Rows[i]
		centers := t.Centers(r)
		body[i] = make([]*textCell, len(t.Cols))
		for j, c := range r.Cells {
			if c == nil {
				continue
			}
			tc := &textCell{center: centers[j], rng: c.Range, plusMinus: true, notes: fn.marks(c.Notes)}
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
		gm := make([]*textCell, len(t.Cols))
		for j := range t.Cols {
			g := &t.Geomean[j]
			tc := &textCell{}
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
	cols := make([]textCol, len(t.Cols))
	for j := range cols {
		k := &cols[j]
		for _, row := range body {
			tc := row[j]
			if tc == nil {
				continue
			}
			k.wc = max(k.wc, width(tc.center))
			k.wr = max(k.wr, width(tc.rng))
			k.wn = max(k.wn, width(tc.notes))
			k.wd = max(k.wd, width(tc.delta))
			k.wt = max(k.wt, width(tc.test))
			k.wdn = max(k.wdn, width(tc.dnotes))
		}
		// The unit is centred over the values, "vs base" left-aligned
		// over the deltas.
		if extra := width(t.Unit) - k.centerPart(); extra > 0 {
			k.lp += extra
		}
		if j > 0 {
			if extra := width("vs base") - (k.deltaPart(j) - 2); extra > 0 {
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
			extra := width(n.Value) - span(n)
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
		lw = max(lw, width(l))
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
			b.WriteString(padCenter(n.Value, span(n)))
		}
		b.WriteString(" │")
		line(b.String())
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", lw))
	for j := range cols {
		k := &cols[j]
		b.WriteString(" │ ")
		b.WriteString(padCenter(t.Unit, k.centerPart()))
		if j > 0 {
			b.WriteString("  ")
			b.WriteString(padRight("vs base", k.deltaPart(j)-2))
		}
		b.WriteString(strings.Repeat(" ", k.rp))
	}
	b.WriteString(" │")
	line(b.String())

	for i, row := range body {
		var b strings.Builder
		b.WriteString(padRight(labels[i], lw))
		for j, tc := range row {
			k := &cols[j]
			b.WriteString("   ")
			if tc == nil {
				b.WriteString(strings.Repeat(" ", k.width(j)))
				continue
			}
			b.WriteString(strings.Repeat(" ", k.lp))
			b.WriteString(padLeft(tc.center, k.wc))
			if tc.plusMinus {
				b.WriteString(" ± ")
				b.WriteString(padLeft(tc.rng, k.wr))
			} else {
				b.WriteString(strings.Repeat(" ", 3+k.wr))
			}
			if k.wn > 0 {
				b.WriteString(" " + padRight(tc.notes, k.wn))
			}
			if j > 0 {
				b.WriteString("  " + padLeft(tc.delta, k.wd))
				b.WriteString(" " + padRight(tc.test, k.wt))
				if k.wdn > 0 {
					b.WriteString(" " + padRight(tc.dnotes, k.wdn))
				}
			}
			b.WriteString(strings.Repeat(" ", k.rp))
		}
		line(b.String())
	}
	for i, n := range fn.list {
		fmt.Fprintf(sb, "%s %s\n", superscript(i+1), n)
	}
}

// superscript writes n with superscript digits, as footnote marks.
func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	ds := []rune(digits)
	s := []rune(fmt.Sprint(n))
	for i, r := range s {
		s[i] = ds[r-'0']
	}
	return string(s)
}

// footnotes numbers distinct notes in order of first appearance.
type footnotes struct {
	list []string
	num  map[string]int
}

// marks returns the marks for notes, separated by spaces.
func (f *footnotes) marks(notes ...[]string) string {
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
			ms = append(ms, superscript(i))
		}
	}
	return strings.Join(ms, " ")
}
