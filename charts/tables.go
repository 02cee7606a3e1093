package charts

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"

	"membench/harness"
	"membench/internal/benchtab"
	"membench/internal/units"
	"membench/strategies"
)

// compTable is a benchstat-style table for one trace (and device): a
// row per metric, a column per strategy, each column after the first
// with its delta against the first. The figures are internal/benchtab's,
// the tables `membench compare -col /strategy` prints: every membench
// metric is exact (assume=exact) with the direction the harness gives it
// (better=lower, fit better=higher, first-oom-event neither), so every
// change shows as a delta ("0.00%" when equal, "?" from a zero baseline),
// and a row's values share one prefix. The page only turns benchstat's
// table per unit into one table per trace, and never colours a run that
// did not fit as an improvement: its column has no colours, and when the
// baseline did not fit no column has any.
type compTable struct {
	Title      string
	Strategies []string
	Cols       []compCol
	Rows       []compRow
	// Note explains an uncoloured table (the baseline did not fit).
	Note string
}

// compCol heads a strategy's columns.
type compCol struct {
	Strategy string
	Colour   string
	Failed   string // how it did not fit, or ""
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
	known := make(map[string]bool, len(us))
	for _, u := range us {
		known[u] = true
	}
	for _, m := range g.meas {
		for _, v := range m.Values {
			if !known[v.Unit] {
				known[v.Unit] = true
				extra = append(extra, v.Unit)
			}
		}
	}
	sort.Strings(extra)
	return append(us, extra...)
}

func compTables(rep *Report) ([]compTable, error) {
	many := rep.manyDevices()
	var ts []compTable
	for _, g := range rep.groups() {
		t := compTable{Title: g.title(many), Strategies: g.strategies()}
		failed := make([]bool, len(t.Strategies))
		for i, s := range t.Strategies {
			c := compCol{Strategy: s, Colour: rep.colourOf(s)}
			if o := g.outcome(s); o.failed() {
				c.Failed, failed[i] = o.long(), true
			}
			t.Cols = append(t.Cols, c)
		}
		if failed[0] {
			t.Note = t.Strategies[0] + ", the baseline, did not fit: changes against it are shown but not coloured."
		}
		byUnit, err := g.comparison()
		if err != nil {
			return nil, fmt.Errorf("comparison table of %s: %w", t.Title, err)
		}
		for _, u := range g.units() {
			row := compRowOf(u, t.Strategies, byUnit[u])
			for i := range row.Cells {
				if failed[i] || failed[0] {
					row.Cells[i].Class = ""
				}
				if failed[i] {
					row.Cells[i].Class = "failed"
				}
			}
			t.Rows = append(t.Rows, row)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// comparison compares the group's strategies with benchtab: one table per
// unit (as benchstat splits them), one row, a column per strategy that
// has the metric, in the group's order.
func (g *group) comparison() (map[string]*benchtab.Table, error) {
	opts := benchtab.DefaultOptions
	opts.Table, opts.Row, opts.Col = "", ".name", "strategy"
	b, err := benchtab.NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	us := g.units()
	for _, u := range us {
		kvs := [][2]string{{"assume", "exact"}}
		switch betterOf(u) {
		case -1:
			kvs = append(kvs, [2]string{"better", "lower"})
		case +1:
			kvs = append(kvs, [2]string{"better", "higher"})
		}
		for _, kv := range kvs {
			m := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u, Key: kv[0]}, OrigUnit: u, Value: kv[1]}
			if err := b.AddUnit(m); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range g.strategies() {
		res := &benchfmt.Result{Name: benchfmt.Name("Replay"), Iters: 1}
		res.SetConfig("strategy", s)
		for _, u := range us {
			if v, ok := g.metric(s, u); ok {
				res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: u})
			}
		}
		b.Add(res)
	}
	tabs, err := b.Build()
	if err != nil {
		return nil, err
	}
	byUnit := make(map[string]*benchtab.Table, len(tabs.Tables))
	for _, t := range tabs.Tables {
		byUnit[t.Unit] = t
	}
	return byUnit, nil
}

// betterOf is the direction of a unit as the harness writes it in its
// Unit lines (harness.Metric.Better); lower for any other unit, such as
// the capacity search's.
func betterOf(unit string) int {
	for _, m := range harness.Metrics {
		if m.Unit == unit {
			return m.Better
		}
	}
	return -1
}

// compRowOf lays out the unit's table t (nil if no strategy has the
// metric) as a row of the page: a cell per strategy, "–" where it lacks
// the metric, and deltas only against the group's first strategy.
func compRowOf(unit string, strategies []string, t *benchtab.Table) compRow {
	row := compRow{Unit: unit}
	col := map[string]int{}
	var cells []*benchtab.Cell
	var centers []string
	if t != nil {
		for j, c := range t.Cols {
			col[c.Label] = j
		}
		cells, centers = t.Rows[0].Cells, t.Centers(&t.Rows[0])
	}
	withBase := t != nil && t.Cols[0].Label == strategies[0]
	for _, s := range strategies {
		j, ok := col[s]
		if !ok {
			row.Cells = append(row.Cells, compCell{Value: "–"})
			continue
		}
		c := compCell{Value: centers[j]}
		if d := cells[j].Delta; d != nil && withBase {
			c.Delta = d.Text
			switch t.Change(cells[j]) {
			case 1:
				c.Class = "better"
			case -1:
				c.Class = "worse"
			}
		}
		row.Cells = append(row.Cells, c)
	}
	return row
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
			return units.Bytes(b, units.Auto) + "/s"
		}
		cc := "–"
		if d.ComputeMajor > 0 {
			cc = fmt.Sprintf("%d.x", d.ComputeMajor)
		}
		ts = append(ts, deviceTable{
			Name: d.Label(),
			Figures: [][2]string{
				{"kind", d.Kind.String()},
				{"total memory", units.Bytes(float64(d.Total), units.Auto)},
				{"capacity (visible to the framework)", units.Bytes(float64(d.Capacity), units.Auto)},
				{"free at start", units.Bytes(float64(d.Free), units.Auto)},
				{"compute capability", cc},
				{"granularity", units.Bytes(float64(d.Granularity), units.Auto)},
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
	Failed                  bool
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
			row.Outcome = "✓ fits"
		} else {
			row.Failed = true
			row.Outcome = "✕ " + outcome{known: true, firstOOM: res.FirstOOMEvent(), ooms: res.OOMCount}.long()
			if len(res.OOMs) > 0 {
				row.Notes = append(row.Notes, note{Text: fmt.Sprintf("first OOM at event %d: %s", res.OOMs[0].Event, res.OOMs[0].Message)})
			}
		}
		if res.DefragEvents > 0 {
			row.Notes = append(row.Notes, note{Text: fmt.Sprintf("%d relocations moved %s of live buffers", res.DefragEvents, units.Bytes(float64(res.DefragMoved), units.Auto))})
		}
		if res.Launches > 0 && res.Execution != "" {
			// Only a trace with launches has a choice of mode; the
			// others replay as recorded whatever the strategy.
			row.Notes = append(row.Notes, note{Text: res.Execution})
		}
		for _, n := range res.TraceNotes {
			// What the trace says of itself (a compiled trace is an
			// approximation), shown as an assumption of the run.
			row.Notes = append(row.Notes, note{Text: n, Assumption: true})
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
