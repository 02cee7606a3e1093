package charts

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/perf/benchunit"

	"membench/harness"
	"membench/strategies"
)

// compTable is a benchstat-style table for one trace (and device): a
// row per metric, a column per strategy, each column after the first
// with its delta against the first. Every membench metric is exact
// (assume=exact) and lower is better, so a delta is a plain ratio and "~"
// means equal.
type compTable struct {
	Title      string
	Strategies []string
	Rows       []compRow
}

type compRow struct {
	Unit  string
	Cells []compCell
}

type compCell struct {
	Value string
	Delta string
	Class string // "better", "worse" or ""
}

// units lists the metrics of a group: the harness's in their fixed
// order, then any others the measurements carry, sorted.
func (g *group) units() []string {
	var us []string
	have := func(u string) bool {
		for _, s := range g.strategies() {
			if _, ok := g.metric(s, u); ok {
				return true
			}
		}
		return false
	}
	for _, m := range harness.Metrics {
		if have(m.Unit) {
			us = append(us, m.Unit)
		}
	}
	var extra []string
	for _, m := range g.meas {
		for _, v := range m.Values {
			known := false
			for _, u := range us {
				known = known || u == v.Unit
			}
			for _, u := range extra {
				known = known || u == v.Unit
			}
			if !known {
				extra = append(extra, v.Unit)
			}
		}
	}
	sort.Strings(extra)
	return append(us, extra...)
}

func compTables(rep *Report) []compTable {
	many := rep.manyDevices()
	var ts []compTable
	for _, g := range rep.groups() {
		t := compTable{Title: g.title(many), Strategies: g.strategies()}
		for _, u := range g.units() {
			row := compRow{Unit: u}
			cls := benchunit.ClassOf(u)
			base, baseOK := g.metric(t.Strategies[0], u)
			for i, s := range t.Strategies {
				v, ok := g.metric(s, u)
				if !ok {
					row.Cells = append(row.Cells, compCell{Value: "–"})
					continue
				}
				c := compCell{Value: benchunit.Scale(v, cls)}
				if i > 0 && baseOK {
					c.Delta, c.Class = delta(base, v)
				}
				row.Cells = append(row.Cells, c)
			}
			t.Rows = append(t.Rows, row)
		}
		ts = append(ts, t)
	}
	return ts
}

// delta compares v with the baseline b, lower being better.
func delta(b, v float64) (string, string) {
	switch {
	case v == b:
		return "~", ""
	case b == 0:
		return "+∞", "worse"
	}
	d := 100 * (v - b) / b
	s := fmt.Sprintf("%+.2f%%", d)
	if v < b {
		return s, "better"
	}
	return s, "worse"
}

// deviceTable is one device's figures and the notes saying where each
// came from; notes that are assumptions are flagged.
type deviceTable struct {
	Name    string
	Figures [][2]string
	Notes   []note
}

type note struct {
	Text       string
	Assumption bool
}

func notesOf(ns []string) []note {
	out := make([]note, len(ns))
	for i, n := range ns {
		out[i] = note{n, strings.Contains(strings.ToLower(n), "assumption")}
	}
	return out
}

func deviceTables(rep *Report) []deviceTable {
	var ts []deviceTable
	seen := map[string]bool{}
	for _, r := range rep.Runs {
		d := r.Device
		if seen[d.Label()] {
			continue
		}
		seen[d.Label()] = true
		secs := func(s float64) string { return benchunit.Scale(s, benchunit.Decimal) + "s" }
		bw := func(b float64) string {
			if b == 0 {
				return "–"
			}
			return benchunit.Scale(b, benchunit.Decimal) + "B/s"
		}
		cc := "–"
		if d.ComputeMajor > 0 {
			cc = fmt.Sprintf("%d.x", d.ComputeMajor)
		}
		ts = append(ts, deviceTable{
			Name: d.Label(),
			Figures: [][2]string{
				{"kind", d.Kind.String()},
				{"total memory", fmtBytes(float64(d.Total))},
				{"capacity (visible to the framework)", fmtBytes(float64(d.Capacity))},
				{"free at start", fmtBytes(float64(d.Free))},
				{"compute capability", cc},
				{"granularity", fmtBytes(float64(d.Granularity))},
				{"device malloc / free", secs(d.MallocSec) + " / " + secs(d.FreeSec)},
				{"map / unmap a page", secs(d.MapSec) + " / " + secs(d.UnmapSec)},
				{"cache hit", secs(d.HitSec)},
				{"HBM / host link bandwidth", bw(d.HBMBytesPerSec) + " / " + bw(d.HostBytesPerSec)},
				{"live buffers relocatable", fmt.Sprint(d.Relocatable)},
			},
			Notes: notesOf(d.Notes),
		})
	}
	return ts
}

// runRow is one replay's configuration and outcome.
type runRow struct {
	Trace, Device, Strategy string
	Knobs                   string
	Events                  string
	Outcome                 string
	Notes                   []note
}

func runRows(rep *Report) []runRow {
	var rows []runRow
	for _, r := range rep.Runs {
		res := r.Result
		row := runRow{Trace: res.Trace, Device: res.Device, Strategy: res.Strategy, Knobs: "framework defaults"}
		if sp, err := strategies.ParseSpec(res.Strategy); err == nil && len(sp.Params) > 0 {
			var kv []string
			for _, p := range sp.Params {
				kv = append(kv, p.Key+"="+p.Value)
			}
			row.Knobs = strings.Join(kv, ", ")
		}
		row.Events = fmt.Sprintf("%d (%d allocs, %d frees)", res.Events, res.Allocs, res.Frees)
		if res.Fit() {
			row.Outcome = "fits"
		} else {
			row.Outcome = fmt.Sprintf("%d allocations failed", res.OOMCount)
			if len(res.OOMs) > 0 {
				row.Notes = append(row.Notes, note{Text: fmt.Sprintf("first OOM at event %d: %s", res.OOMs[0].Event, res.OOMs[0].Message)})
			}
		}
		if res.DefragEvents > 0 {
			row.Notes = append(row.Notes, note{Text: fmt.Sprintf("%d relocations moved %s of live buffers", res.DefragEvents, fmtBytes(float64(res.DefragMoved)))})
		}
		row.Notes = append(row.Notes, notesOf(res.Notes)...)
		rows = append(rows, row)
	}
	return rows
}

// traceRow describes one trace: its metadata as its importer gave it.
type traceRow struct {
	Name string
	Meta [][2]string
}

func traceRows(rep *Report) []traceRow {
	var rows []traceRow
	seen := map[string]bool{}
	for _, r := range rep.Runs {
		if seen[r.Result.Trace] {
			continue
		}
		seen[r.Result.Trace] = true
		row := traceRow{Name: r.Result.Trace}
		for _, kv := range r.Result.Meta {
			row.Meta = append(row.Meta, [2]string{kv.Key, kv.Value})
		}
		rows = append(rows, row)
	}
	return rows
}
