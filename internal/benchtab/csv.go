package benchtab

import (
	"encoding/csv"
	"fmt"
	"io"
)

// spreadsheetCol names column i (from 0) as a spreadsheet does: A … Z,
// AA, AB, ….
func spreadsheetCol(i int) string {
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
func (ts *Tables) WriteCSV(w, warnings io.Writer) error {
	cw := csv.NewWriter(w)
	line := 1
	for i, t := range ts.Tables {
		if i > 0 {
			cw.Write([]string{""})
			line++
		}
		for _, l := range ts.configLines(i) {
			cw.Write([]string{l})
			line++
		}
		line += t.writeCSV(cw, line, warnings)
	}
	cw.Flush()
	return cw.Error()
}

func (t *Table) writeCSV(cw *csv.Writer, first int, warnings io.Writer) int {
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
			fmt.Fprintf(warnings, "%s%d: %s\n", spreadsheetCol(len(rec)), first+n, m)
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
