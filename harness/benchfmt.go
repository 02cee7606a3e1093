package harness

import (
	"fmt"
	"strings"

	"membench/internal/benchtab"
)

// Metric is one outcome a Result reports in benchfmt. The names are fixed
// by the architecture doc: users' scripts depend on them.
type Metric struct {
	Unit  string
	Value func(*Result) float64
	// Better is benchstat's better= for the unit: -1 lower, +1 higher, 0
	// neither (first-oom-event: -1 means it fit, so neither direction of
	// the number ranks runs).
	Better int
	// Defined, when set, says whether the metric has a value for a
	// result: a ratio whose denominator the run never had is left out of
	// every format (ResultRow), not printed as a 0 that reads as no
	// waste at all.
	Defined func(*Result) bool
}

// Metrics in output order: whether the run fit and what the allocator's
// placement needed lead, since a run that did not fit answers nothing
// about waste, and a reservation policy is not waste.
var Metrics = []Metric{
	{benchtab.FitUnit, func(r *Result) float64 {
		if r.Fit() {
			return 1
		}
		return 0
	}, +1, nil},
	{"first-oom-event", func(r *Result) float64 { return float64(r.FirstOOMEvent()) }, 0, nil},
	{"peak-footprint-B", func(r *Result) float64 { return float64(r.PeakFootprint) }, -1, nil},
	{"placement-frag-%", func(r *Result) float64 { return r.PlacementFragPct() }, -1, func(r *Result) bool { return r.PeakFootprint > 0 || r.PeakLive == 0 }},
	{"peak-live-B", func(r *Result) float64 { return float64(r.PeakLive) }, -1, nil},
	{"peak-reserved-B", func(r *Result) float64 { return float64(r.PeakReserved) }, -1, nil},
	// An offline plan whose arena does not fit reserved nothing, while its
	// row still reports the plan's peak live (planPeak): 1 − live / 0 has
	// no value, and the 0 FragPct gives there read as a plan that wastes
	// nothing, beside fitting allocators' real figures.
	{"frag-%", func(r *Result) float64 { return r.FragPct() }, -1, func(r *Result) bool { return r.PeakReserved > 0 || r.PeakLive == 0 }},
	{"oom-events", func(r *Result) float64 { return float64(r.OOMCount) }, -1, nil},
	{"device-mallocs", func(r *Result) float64 { return float64(r.DeviceMallocs) }, -1, nil},
	{"device-frees", func(r *Result) float64 { return float64(r.DeviceFrees) }, -1, nil},
	{"modeled-alloc-sec", func(r *Result) float64 { return r.ModeledSec }, -1, nil},
	{"defrag-events", func(r *Result) float64 { return float64(r.DefragEvents) }, -1, nil},
	{"defrag-moved-B", func(r *Result) float64 { return float64(r.DefragMoved) }, -1, nil},
}

// NameValue makes s safe as a benchmark-name value: '/' would start a new
// name part and white space would end the name.
func NameValue(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '/', ' ', '\t', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

// BenchName is the result's benchmark name per the CLI contract.
func (r *Result) BenchName() string { return ResultRow(r).BenchName() }

// unitLine writes one unit's metadata: every outcome is deterministic, so
// assume=exact lets benchstat compare single runs; better= follows the
// metric's Better (lower for the capacity search's units).
func unitLine(b *strings.Builder, unit string) {
	better := " better=lower"
	for _, m := range Metrics {
		if m.Unit == unit {
			switch m.Better {
			case +1:
				better = " better=higher"
			case 0:
				better = ""
			}
		}
	}
	fmt.Fprintf(b, "Unit %s assume=exact%s\n", unit, better)
}
