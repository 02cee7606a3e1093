package harness

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestColumnsOfUndefinedMetrics: the columns of a replay's table, CSV and
// JSON are every metric whatever the results, so that a run whose plans
// all fail to fit (no row has a frag-%) still has the frag-% column, "–"
// in the table, an empty field in CSV and null in JSON, as it has beside
// a fitting strategy; and a capacity search's rows keep their own units
// alone.
func TestColumnsOfUndefinedMetrics(t *testing.T) {
	plan := ResultRow(&Result{Trace: "t", Device: "d", Strategy: "planner", PeakLive: 100, PeakFootprint: 120, OOMCount: 1})
	if slices.Contains(plan.Units, "frag-%") {
		t.Fatalf("a plan that reserved nothing has a frag-%%: %v", plan.Units)
	}
	var all []string
	for _, m := range Metrics {
		all = append(all, m.Unit)
	}
	write := func(format string, rows ...Row) string {
		t.Helper()
		var b bytes.Buffer
		if err := WriteRows(&b, format, rows); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	recs, err := csv.NewReader(strings.NewReader(write(FormatCSV, plan))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0][4:], all) {
		t.Errorf("csv header %v, want the metrics %v", recs[0][4:], all)
	}
	if fc := slices.Index(recs[0], "frag-%"); fc < 0 || recs[1][fc] != "" {
		t.Errorf("csv: want an empty frag-%%: %v", recs)
	}

	var js []struct {
		Metrics map[string]*float64 `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(write(FormatJSON, plan)), &js); err != nil {
		t.Fatal(err)
	}
	if v, ok := js[0].Metrics["frag-%"]; !ok || v != nil || len(js[0].Metrics) != len(all) {
		t.Errorf("json: want every metric, frag-%% null: %v", js[0].Metrics)
	}

	// tabwriter pads cells with two spaces or more; "120 B" has one.
	cells := regexp.MustCompile(` {2,}`)
	lines := strings.Split(write(FormatTable, plan), "\n")
	if h := cells.Split(strings.TrimSpace(lines[0]), -1); !slices.Equal(h[3:], all) {
		t.Errorf("table header %v, want the metrics %v", h[3:], all)
	}
	if f := cells.Split(strings.TrimSpace(lines[1]), -1); len(f) != 3+len(all) || f[3+slices.Index(all, "frag-%")] != "–" {
		t.Errorf("table: want – under frag-%%:\n%s", strings.Join(lines, "\n"))
	}

	capRow := CapacityRow(&CapacityResult{Trace: "t", Device: "d", Strategy: "torch", PeakLive: 1, MinCapacity: 2})
	recs, err = csv.NewReader(strings.NewReader(write(FormatCSV, capRow))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0][4:], CapacityUnits) {
		t.Errorf("capacity csv header %v, want %v", recs[0][4:], CapacityUnits)
	}
}
