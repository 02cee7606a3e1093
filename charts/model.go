package charts

import (
	"membench/harness"
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
	// Result.PeakLayout (Options.KeepLayout) is the layout at peak
	// reserved. Either may be nil; the state map draws what is there.
	LiveLayout []strategies.Segment
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
	return runKey{harness.NameValue(r.Result.Trace), harness.NameValue(r.Result.Device), harness.NameValue(r.Result.Strategy)}
}

// group is a trace on a device: one timeline, one state map, one
// comparison table.
type group struct {
	trace, device string // as in benchmark names
	runs          []*Run // in Report order
	meas          []*Measurement
}

// groups collects runs and measurements by trace and device in order of
// first appearance, runs first.
func (rep *Report) groups() []*group {
	var gs []*group
	find := func(trace, device string) *group {
		for _, g := range gs {
			if g.trace == trace && g.device == device {
				return g
			}
		}
		g := &group{trace: trace, device: device}
		gs = append(gs, g)
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

// colourOf returns a strategy's colour (strategies as in benchmark names).
func (rep *Report) colourOf(strategy string) string {
	for i, s := range rep.strategyOrder() {
		if s == strategy {
			return colour(i)
		}
	}
	return "#999999"
}

// metric returns a strategy's value of unit in the group: from the run
// when it was replayed here, else from the first measurement that has it.
func (g *group) metric(strategy, unit string) (float64, bool) {
	for _, r := range g.runs {
		if r.key().strategy != strategy {
			continue
		}
		for _, m := range harness.Metrics {
			if m.Unit == unit {
				return m.Value(r.Result), true
			}
		}
	}
	for _, m := range g.meas {
		if m.Strategy == strategy {
			if v, ok := m.Get(unit); ok {
				return v, true
			}
		}
	}
	return 0, false
}
