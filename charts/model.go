package charts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"membench/harness"
	"membench/internal/benchtab"
	"membench/strategies"
)

// Report is everything one page draws.
type Report struct {
	// Title heads the page; "membench report" if empty.
	Title string
	// Command is the command line that made the report, shown in the
	// page's header so that a reader can make it again. Optional.
	Command string
	// Runs are the replays, in the order their series, rows and columns
	// appear: the first strategy of a trace is the baseline of its
	// comparison table.
	Runs []Run
	// Measurements are results read from benchfmt files (ReadResults):
	// `membench run` output for traces not replayed here, and
	// `membench capacity` output (min-capacity-B) for the capacity chart.
	Measurements []Measurement
	// Sources names the files Measurements came from, for the page.
	Sources []Source
	// Presets are the devices whose capacities the capacity chart draws
	// as lines; nil means every preset (strategies.PresetNames).
	Presets []strategies.Device
	// Colocation, when set, is a replay of several processes on one
	// device, drawn on a shared timeline.
	Colocation *Colocation

	// order is the report's strategy order and place each strategy's
	// index in it, set on build's own copy of the report (orderOf):
	// the colours (colourOf), the charts' series and the state map's
	// rows all follow it.
	order []string
	place map[string]int
	// tracePeaks is each trace's peak live bytes from the first of its
	// groups that has them, also set on build's copy (peakLive).
	tracePeaks map[string]float64
}

// Run is one replay.
type Run struct {
	Result *harness.Result
	// Device is the device the replay ran on: its figures and notes go to
	// the configuration table. Result.Device is its label.
	Device strategies.Device
	// LiveLayout is the allocator's layout right after the event of peak
	// live bytes (Result.PeakLiveEvent): the moment of highest demand,
	// the same event for every strategy that did not run out of memory.
	// Result.PeakLayout is the layout at peak reserved
	// (Result.PeakReservedEvent, Options.FindPeakReserved), which the
	// report fills only when the map would draw it: when neither this nor
	// FootprintLayout is there. Any may be nil; the map draws what is
	// there.
	LiveLayout []strategies.Segment
	// FootprintLayout is the layout right after Result.PeakFootprintEvent
	// (harness.LayoutAt): the state map draws it rather than PeakLayout,
	// which for a preallocated region is its first event, an empty
	// region. Nil when the event is PeakLiveEvent (LiveLayout is that
	// layout); without it the map falls back on PeakLayout, except for a
	// strategy with a reservation policy (Result.PeakFootprint <
	// Result.PeakReserved), whose row it leaves out.
	FootprintLayout []strategies.Segment
}

// Source is one results file the report read.
type Source struct {
	Name    string
	Results int // results read from it
}

// Measurement is one benchmark result read from a benchfmt file.
type Measurement struct {
	// Trace, Device and Strategy are the name's /trace=, /device= and
	// /strategy= values ("" when absent).
	Trace, Device, Strategy string
	Name                    string // the full benchmark name
	File                    string
	Line                    int
	Values                  []Value // in the order of the line
}

// Value is one metric of a Measurement.
type Value struct {
	Unit  string
	Value float64
}

// Get returns the value of unit.
func (m *Measurement) Get(unit string) (float64, bool) {
	for _, v := range m.Values {
		if v.Unit == unit {
			return v.Value, true
		}
	}
	return 0, false
}

// runKey identifies a replay or measurement across sources: the values as
// they appear in a benchmark name.
type runKey struct{ trace, device, strategy string }

func (r *Run) key() runKey {
	keysMade.Add(1)
	return runKey{harness.NameValue(r.Result.Trace), harness.NameValue(r.Result.Device), harness.NameValue(r.Result.Strategy)}
}

// group is a trace on a device: one timeline, one state map, one
// comparison table.
type group struct {
	trace, device string // as in benchmark names
	runs          []*Run // in Report order
	meas          []*Measurement
	measIndex     map[[2]string]float64 // metric's, made on first use
	// runIndex is each strategy's first run, made on first use
	// (metric): a report may replay hundreds of strategies, and each
	// metric searched the runs, naming each from its result.
	runIndex map[string]*Run
	// peak is peakLive's answer, taken on first use (peakTaken): the
	// charts ask for it once for each strategy of the report, and it
	// reads every strategy of the group.
	peak              float64
	peakOK, peakTaken bool
}

// groupsMade counts the calls of groups, each a pass over every result,
// ordersMade those of strategyOrder, another, and keysMade those of
// Run.key, each naming a run from its result, for the tests that bound
// them (TestManyCapacityGroups, TestManyStrategiesReplayed).
var groupsMade, ordersMade, keysMade atomic.Int64

// groups collects runs and measurements by trace and device in order of
// first appearance, runs first.
func (rep *Report) groups() []*group {
	groupsMade.Add(1)
	var gs []*group
	// By a map: a results file may name thousands of traces, and a
	// search of the groups for each result made the page quadratic
	// in them (and cubic with colourOf, which called groups per group).
	index := map[[2]string]*group{}
	find := func(trace, device string) *group {
		k := [2]string{trace, device}
		if g := index[k]; g != nil {
			return g
		}
		g := &group{trace: trace, device: device}
		gs = append(gs, g)
		index[k] = g
		return g
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		k := r.key()
		g := find(k.trace, k.device)
		g.runs = append(g.runs, r)
	}
	for i := range rep.Measurements {
		m := &rep.Measurements[i]
		g := find(m.Trace, m.Device)
		g.meas = append(g.meas, m)
	}
	return gs
}

// strategies lists the group's strategies in order: runs first, then
// measurements of strategies not replayed.
func (g *group) strategies() []string {
	var ss []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			ss = append(ss, s)
		}
	}
	for _, r := range g.runs {
		add(r.key().strategy)
	}
	for _, m := range g.meas {
		add(m.Strategy)
	}
	// An offline bound (the planner) comes after the allocators, so that
	// it is never the comparison's baseline: the allocators are compared
	// with each other, the bound is read beside them.
	slices.SortStableFunc(ss, func(x, y string) int { return cmp.Compare(b2i(harness.IsOffline(x)), b2i(harness.IsOffline(y))) })
	return ss
}

// title names a group for headings: the trace, and the device when the
// report has more than one.
func (g *group) title(manyDevices bool) string {
	if manyDevices && g.device != "" {
		return g.trace + " on " + g.device
	}
	return g.trace
}

func (rep *Report) manyDevices() bool {
	var first string
	for i, g := range rep.groups() {
		if i == 0 {
			first = g.device
		} else if g.device != first {
			return true
		}
	}
	return false
}

// strategyOrder lists every strategy of the report in order of first
// appearance: it fixes each strategy's colour across the page.
func (rep *Report) strategyOrder() []string {
	ordersMade.Add(1)
	var ss []string
	seen := map[string]bool{}
	for _, g := range rep.groups() {
		for _, s := range g.strategies() {
			if !seen[s] {
				seen[s] = true
				ss = append(ss, s)
			}
		}
	}
	return ss
}

// orderOf is the report's strategy order and each strategy's place in
// it: build's copy keeps them, made once (finding a strategy's place in
// the order for each of thousands of groups, or of runs, made pages take
// minutes); any other report makes them.
func (rep *Report) orderOf() ([]string, map[string]int) {
	if rep.place != nil {
		return rep.order, rep.place
	}
	order := rep.strategyOrder()
	place := make(map[string]int, len(order))
	for i, s := range order {
		place[s] = i
	}
	return order, place
}

// colourOf returns a strategy's colour (strategies as in benchmark names),
// by its place in the report's order.
func (rep *Report) colourOf(strategy string) string {
	if _, place := rep.orderOf(); place != nil {
		if i, ok := place[strategy]; ok {
			return colour(i)
		}
	}
	return "#999999"
}

// metric returns a strategy's value of unit in the group: from the run
// when it was replayed here, else from the first measurement that has it.
func (g *group) metric(strategy, unit string) (float64, bool) {
	if g.runIndex == nil && len(g.runs) > 0 {
		g.runIndex = make(map[string]*Run, len(g.runs))
		for _, r := range g.runs {
			if s := r.key().strategy; g.runIndex[s] == nil {
				g.runIndex[s] = r
			}
		}
	}
	if r := g.runIndex[strategy]; r != nil {
		for _, m := range harness.Metrics {
			if m.Unit == unit {
				if m.Defined != nil && !m.Defined(r.Result) {
					return 0, false // no value: "–", as in the tables of run
				}
				return m.Value(r.Result), true
			}
		}
	}
	if g.measIndex == nil {
		// The first measurement of the strategy with the unit, by a
		// map made once: a results file may carry thousands of units,
		// and searching the measurements for each strategy and unit
		// made the comparison table quadratic in them.
		g.measIndex = map[[2]string]float64{}
		for _, m := range g.meas {
			for _, v := range m.Values {
				k := [2]string{m.Strategy, v.Unit}
				if _, ok := g.measIndex[k]; !ok {
					g.measIndex[k] = v.Value
				}
			}
		}
	}
	v, ok := g.measIndex[[2]string{strategy, unit}]
	return v, ok
}

// outcome is whether a strategy's run fit: from the replay, or from a
// results file's fit metric (oom-events for files written before it).
type outcome struct {
	known    bool
	fit      bool
	firstOOM int64 // -1 when it fit or is unknown
	ooms     int64 // allocations that failed, 0 when unknown
}

func (g *group) outcome(strategy string) outcome {
	o := outcome{firstOOM: -1}
	if v, ok := g.metric(strategy, benchtab.FitUnit); ok {
		o.known, o.fit = true, v != 0
	} else if v, ok := g.metric(strategy, "oom-events"); ok {
		o.known, o.fit = true, v == 0
	}
	if v, ok := g.metric(strategy, "oom-events"); ok {
		o.ooms = int64(v)
	}
	if v, ok := g.metric(strategy, "first-oom-event"); ok && !o.fit {
		o.firstOOM = int64(v)
	}
	return o
}

// failed reports a run known not to have fit.
func (o outcome) failed() bool { return o.known && !o.fit }

// short is how a chart labels a run that did not fit.
func (o outcome) short() string {
	if o.firstOOM >= 0 {
		return fmt.Sprintf("did not fit (first OOM at event %d)", o.firstOOM)
	}
	return "did not fit"
}

// long is how a table or tooltip says it.
func (o outcome) long() string {
	var b strings.Builder
	b.WriteString("did not fit")
	switch {
	case o.ooms == 1:
		b.WriteString(": 1 allocation failed")
	case o.ooms > 1:
		fmt.Fprintf(&b, ": %d allocations failed", o.ooms)
	}
	if o.firstOOM >= 0 {
		if o.ooms > 1 {
			fmt.Fprintf(&b, ", the first at event %d", o.firstOOM)
		} else {
			fmt.Fprintf(&b, " (first OOM at event %d)", o.firstOOM)
		}
	}
	return b.String()
}

// capacity is the group's device capacity (bytes visible to the
// framework's allocator): the replays' device, or the preset or override
// a results file names; 0 when unknown.
func (g *group) capacity() float64 {
	if len(g.runs) > 0 {
		return float64(g.runs[0].Device.Capacity)
	}
	if d, err := strategies.ParseDevice(g.device); err == nil {
		return float64(d.Capacity)
	}
	return 0
}

// kind is the kind of the group's device (GPU or TPU), from the replays'
// device or the preset or override a results file names; 0 when unknown.
func (g *group) kind() strategies.Kind {
	if len(g.runs) > 0 {
		return g.runs[0].Device.Kind
	}
	if d, err := strategies.ParseDevice(g.device); err == nil {
		return d.Kind
	}
	return 0
}

// policy reports whether a run's reservation is a policy rather than a
// need (a preallocated region): its footprint is below what it reserved.
func policy(res *harness.Result) bool {
	return res.PeakFootprint > 0 && res.PeakFootprint < res.PeakReserved
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
