package harness

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
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
func (r *Result) BenchName() string {
	return "BenchmarkReplay/trace=" + NameValue(r.Trace) + "/device=" + NameValue(r.Device) + "/strategy=" + NameValue(r.Strategy)
}

// WriteUnits writes the unit metadata lines: every outcome is
// deterministic, so assume=exact lets benchstat compare single runs.
func WriteUnits(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, m := range Metrics {
		fmt.Fprintf(bw, "Unit %s assume=exact better=lower\n", m.Unit)
	}
	return bw.Flush()
}

// WriteResult writes one result line. Values are printed exactly (no
// exponent, shortest round-trip digits) rather than with benchfmt.Writer's
// %v, so byte counts read as integers.
func WriteResult(w io.Writer, r *Result) error {
	var b strings.Builder
	b.WriteString(r.BenchName())
	b.WriteString(" 1")
	for _, m := range Metrics {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(m.Value(r), 'f', -1, 64))
		b.WriteByte(' ')
		b.WriteString(m.Unit)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}
