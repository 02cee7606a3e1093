package harness

import (
	"fmt"
	"strings"
)

// Metric is one outcome a Result reports in benchfmt. The names are fixed
// by the architecture doc: users' scripts depend on them.
type Metric struct {
	Unit  string
	Value func(*Result) float64
}

// Metrics in output order.
var Metrics = []Metric{
	{"peak-live-B", func(r *Result) float64 { return float64(r.PeakLive) }},
	{"peak-reserved-B", func(r *Result) float64 { return float64(r.PeakReserved) }},
	{"frag-%", func(r *Result) float64 { return r.FragPct() }},
	{"oom-events", func(r *Result) float64 { return float64(r.OOMCount) }},
	{"device-mallocs", func(r *Result) float64 { return float64(r.DeviceMallocs) }},
	{"device-frees", func(r *Result) float64 { return float64(r.DeviceFrees) }},
	{"modeled-alloc-sec", func(r *Result) float64 { return r.ModeledSec }},
	{"defrag-events", func(r *Result) float64 { return float64(r.DefragEvents) }},
	{"defrag-moved-B", func(r *Result) float64 { return float64(r.DefragMoved) }},
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
// assume=exact lets benchstat compare single runs.
func unitLine(b *strings.Builder, unit string) {
	fmt.Fprintf(b, "Unit %s assume=exact better=lower\n", unit)
}
