package harness

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"membench/internal/units"
)

// Formats `run`, `sweep` and `capacity` can print.
const (
	FormatBenchfmt = "benchfmt"
	FormatTable    = "table"
	FormatCSV      = "csv"
	FormatJSON     = "json"
)

// Row is one line of output: a benchmark name's parts and its metrics, in
// order. Results and capacity searches both become Rows.
type Row struct {
	Name   string // "Replay" or "Capacity"
	Trace  string
	Device string
	Spec   string
	Units  []string
	Values []float64
}

// BenchName is the row's benchmark name: Benchmark<Name>/trace=…/device=…/strategy=….
func (r Row) BenchName() string {
	return "Benchmark" + r.Name + "/trace=" + NameValue(r.Trace) + "/device=" + NameValue(r.Device) + "/strategy=" + NameValue(r.Spec)
}

// ResultRow turns a replay result into a Row of the fixed metrics, less
// those without a value for it (Metric.Defined): benchfmt leaves them out
// of the row's line, the table shows "–", CSV an empty field and JSON null.
func ResultRow(r *Result) Row {
	row := Row{Name: "Replay", Trace: r.Trace, Device: r.Device, Spec: r.Strategy}
	for _, m := range Metrics {
		if m.Defined != nil && !m.Defined(r) {
			continue
		}
		row.Units = append(row.Units, m.Unit)
		row.Values = append(row.Values, m.Value(r))
	}
	return row
}

// CapacityUnits are the metrics of a capacity search.
var CapacityUnits = []string{"peak-live-B", "min-capacity-B", "min-card-B", "capacity-ratio"}

// CapacityRow turns a capacity search into a Row. A search of the limit
// placement alone needs (Advice.Placement) is named BenchmarkPlacement, so
// that benchstat never takes it for another sample of the same
// configuration's card (BenchmarkCapacity), and it has no min-card-B: the
// limit is no card (its framework at fraction 1 on a real card still
// needs the context beside it), so every format leaves it out as the
// table does ("–").
func CapacityRow(c *CapacityResult) Row {
	if c.Placement {
		return Row{Name: "Placement", Trace: c.Trace, Device: c.Device, Spec: c.Strategy,
			Units: []string{"peak-live-B", "min-capacity-B", "capacity-ratio"}, Values: []float64{float64(c.PeakLive), float64(c.MinCapacity), c.Ratio()}}
	}
	return Row{Name: "Capacity", Trace: c.Trace, Device: c.Device, Spec: c.Strategy,
		Units: CapacityUnits, Values: []float64{float64(c.PeakLive), float64(c.MinCapacity), float64(c.MinCard()), c.Ratio()}}
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// value is the row's value of unit, and whether the row has one.
func (r Row) value(unit string) (float64, bool) {
	for i, u := range r.Units {
		if u == unit {
			return r.Values[i], true
		}
	}
	return 0, false
}

// columns are the units of the table, CSV and JSON formats: every row's
// units, so that a row without a value for one (Metric.Defined) shows a
// gap in its column instead of shifting the rest of its values left. A
// replay's row (ResultRow) stands for every metric, its undefined ones
// included, so that the columns of a replay's output do not depend on
// its results: a run of plans that all fail to fit (or a shard of such
// runs) had no frag-% column in its CSV and no frag-% key in its JSON,
// where a run with one fitting strategy beside them had. The first
// replay row so gives every metric in Metrics' order; rows of other
// kinds (CapacityRow) give all their units, in their order.
func columns(rows []Row) []string {
	var units []string
	seen := map[string]bool{}
	see := func(u string) {
		if !seen[u] {
			seen[u] = true
			units = append(units, u)
		}
	}
	for _, r := range rows {
		if r.Name == "Replay" {
			for _, m := range Metrics {
				see(m.Unit)
			}
		}
		for _, u := range r.Units {
			see(u)
		}
	}
	return units
}

// WriteRows prints rows in one of the formats. benchfmt starts with the
// Unit lines of every unit used (assume=exact: outcomes are
// deterministic) and prints values exactly (no exponent, shortest
// round-trip digits) rather than with benchfmt.Writer's %v, so byte counts
// read as integers.
func WriteRows(w io.Writer, format string, rows []Row) error {
	switch format {
	case FormatBenchfmt, "":
		var b strings.Builder
		seen := map[string]bool{}
		for _, r := range rows {
			for _, u := range r.Units {
				if !seen[u] {
					seen[u] = true
					unitLine(&b, u)
				}
			}
		}
		for _, r := range rows {
			b.WriteString(r.BenchName())
			b.WriteString(" 1")
			for i, u := range r.Units {
				b.WriteString(" " + formatValue(r.Values[i]) + " " + u)
			}
			b.WriteByte('\n')
		}
		_, err := io.WriteString(w, b.String())
		return err
	case FormatTable:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		units := columns(rows)
		fmt.Fprint(tw, "trace\tdevice\tstrategy\t")
		for _, u := range units {
			fmt.Fprint(tw, u+"\t")
		}
		fmt.Fprintln(tw)
		for _, r := range rows {
			spec := r.Spec
			if r.Name == "Placement" {
				// Not a card: the allocator limit placement alone needs.
				spec += " (placement alone)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t", r.Trace, r.Device, spec)
			for _, u := range units {
				v, ok := r.value(u)
				if !ok || r.Name == "Placement" && u == "min-card-B" {
					fmt.Fprint(tw, "–\t")
					continue
				}
				fmt.Fprint(tw, human(v, u)+"\t")
			}
			fmt.Fprintln(tw)
		}
		return tw.Flush()
	case FormatCSV:
		cw := csv.NewWriter(w)
		units := columns(rows)
		var header []string
		if len(rows) > 0 {
			header = append([]string{"benchmark", "trace", "device", "strategy"}, units...)
		}
		cw.Write(header)
		for _, r := range rows {
			rec := []string{r.Name, r.Trace, r.Device, r.Spec}
			for _, u := range units {
				if v, ok := r.value(u); ok {
					rec = append(rec, formatValue(v))
				} else {
					rec = append(rec, "")
				}
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case FormatJSON:
		type obj struct {
			Benchmark string              `json:"benchmark"`
			Trace     string              `json:"trace"`
			Device    string              `json:"device"`
			Strategy  string              `json:"strategy"`
			Metrics   map[string]*float64 `json:"metrics"`
		}
		units := columns(rows)
		out := make([]obj, 0, len(rows))
		for _, r := range rows {
			o := obj{r.Name, r.Trace, r.Device, r.Spec, map[string]*float64{}}
			for _, u := range units {
				if v, ok := r.value(u); ok {
					o.Metrics[u] = &v
				} else if r.Name == "Replay" || r.Name == "Placement" {
					o.Metrics[u] = nil // a metric without a value: null
				}
			}
			out = append(out, o)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return fmt.Errorf("unknown format %q (want benchfmt, table, csv or json)", format)
}

// human formats a metric for the table: bytes in binary units, seconds
// in ms/µs, percentages with two decimals.
func human(v float64, unit string) string {
	switch {
	case strings.HasSuffix(unit, "-B"):
		return units.Bytes(v, 2)
	case strings.HasSuffix(unit, "-sec"):
		return units.Seconds(v)
	case strings.HasSuffix(unit, "%"):
		return fmt.Sprintf("%.2f%%", v)
	case unit == "capacity-ratio":
		return fmt.Sprintf("%.3fx", v)
	}
	return formatValue(v)
}
