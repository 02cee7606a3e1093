package charts

import (
	"reflect"
	"strings"
	"testing"

	"membench/harness"
	"membench/strategies"
	"membench/traces"
)

// TestCutAtFootprint: a region is cut at the footprint from its start,
// splitting the free block across the cut; what is above is returned as
// unused bytes; the input is not modified; a layout with a block in use
// above the cut is returned whole.
func TestCutAtFootprint(t *testing.T) {
	seg := strategies.Segment{Addr: 1 << 20, Size: 1000, Pool: "bfc", Blocks: []strategies.Block{
		{Addr: 1 << 20, Size: 100, Requested: 90, State: strategies.BlockAllocated},
		{Addr: 1<<20 + 100, Size: 50, State: strategies.BlockFree},
		{Addr: 1<<20 + 150, Size: 100, Requested: 100, State: strategies.BlockAllocated},
		{Addr: 1<<20 + 250, Size: 750, State: strategies.BlockFree},
	}}
	l := []strategies.Segment{seg}
	orig := []strategies.Segment{seg}
	orig[0].Blocks = append([]strategies.Block(nil), seg.Blocks...)
	cut, unused, _ := cutAtFootprint(l, 300)
	if unused != 700 || len(cut) != 1 || cut[0].Size != 300 || len(cut[0].Blocks) != 4 || cut[0].Blocks[3].Size != 50 {
		t.Errorf("cut %+v, unused %d", cut, unused)
	}
	if !reflect.DeepEqual(l, orig) {
		t.Error("the input layout was modified")
	}
	if cut, unused, _ := cutAtFootprint(l, 200); unused != 0 || !reflect.DeepEqual(cut, l) {
		t.Errorf("a block in use above the cut: cut %+v, unused %d; want the layout whole", cut, unused)
	}
	// A later region wholly above the cut, free, is unused too.
	two := []strategies.Segment{seg, {Addr: 1<<20 + 4096, Size: 512, Blocks: []strategies.Block{{Addr: 1<<20 + 4096, Size: 512}}}}
	if _, unused, _ := cutAtFootprint(two, 250); unused != 750+512 {
		t.Errorf("unused %d, want %d", unused, 750+512)
	}
}

// TestCutBelowFootprint: a top-down heap (the TPU runtime's) whose
// buffers sit at its top is cut footprint bytes below its end; the
// never-used bytes lie below, and the layout's blocks above are kept.
func TestCutBelowFootprint(t *testing.T) {
	seg := strategies.Segment{Addr: 1 << 20, Size: 1000, Pool: "tpu_hbm", Blocks: []strategies.Block{
		{Addr: 1 << 20, Size: 700, State: strategies.BlockFree},
		{Addr: 1<<20 + 700, Size: 100, Requested: 100, State: strategies.BlockAllocated},
		{Addr: 1<<20 + 800, Size: 50, State: strategies.BlockFree},
		{Addr: 1<<20 + 850, Size: 150, Requested: 140, State: strategies.BlockAllocated},
	}}
	cut, unused, below := cutAtFootprint([]strategies.Segment{seg}, 400)
	if !below || unused != 600 || len(cut) != 1 || cut[0].Addr != 1<<20+600 || cut[0].Size != 400 ||
		len(cut[0].Blocks) != 4 || cut[0].Blocks[0].Addr != 1<<20+600 || cut[0].Blocks[0].Size != 100 {
		t.Errorf("cut %+v, unused %d, below %v", cut, unused, below)
	}
	if _, unused, _ := cutAtFootprint([]strategies.Segment{seg}, 200); unused != 0 {
		t.Errorf("a block in use on both sides of the cuts: unused %d, want the layout whole", unused)
	}
}

// TestStateMapAtFootprint: jax preallocates 384 MiB of the test device
// and its placement needs 221 MiB: its state row is cut there, the rest
// one thin "preallocated, never used" item of unusedShare of the row
// holding the 163 MiB, and the row's label says how much of the region
// was ever used. PyTorch's rows are whole. The failed run's rows say it
// did not fit, and each row has its strategy's colour.
func TestStateMapAtFootprint(t *testing.T) {
	rep := smallReport(t, false)
	jax := rep.Runs[1].Result
	if jax.Strategy != "jax" || jax.PeakFootprint >= jax.PeakReserved {
		t.Fatalf("fixture: %s footprint %d reserved %d", jax.Strategy, jax.PeakFootprint, jax.PeakReserved)
	}
	cs, err := Charts(rep)
	if err != nil {
		t.Fatal(err)
	}
	opt := option(t, chartByID(t, cs, "chart-state-0"))
	labels := opt["yAxis"].([]any)[0].(map[string]any)["data"].([]any)
	unused := seriesData(t, opt, "preallocated, never used")
	var jaxRows []int
	for i, l := range labels {
		l := l.(string)
		if strings.Contains(l, "  jax\n") {
			jaxRows = append(jaxRows, i)
			if !strings.Contains(l, "221 MiB of a 384 MiB region ever used") || !strings.HasPrefix(l, "{s1| }") {
				t.Errorf("jax row label %q", l)
			}
		}
		if strings.Contains(l, "jax:mem_fraction=0.3") && (!strings.Contains(l, "{failed|✕ did not fit}") || !strings.HasPrefix(l, "{s3| }")) {
			t.Errorf("failed run's row label %q", l)
		}
		if strings.Contains(l, "  torch\n") && !strings.HasPrefix(l, "{s0| }") {
			t.Errorf("torch row label %q", l)
		}
	}
	n := 0
	for _, u := range unused {
		v := u.([]any)
		x0, x1, row, b := v[0].(float64), v[1].(float64), int(v[2].(float64)), int64(v[3].(float64))
		if x1 != 100 || x1-x0 > 100*unusedShare+0.01 || x1-x0 < 100*unusedShare-0.5 {
			t.Errorf("unused item %v: not a thin item at the row's end", v)
		}
		if !containsInt(jaxRows, row) {
			continue // jax:mem_fraction=0.3 preallocates too
		}
		n++
		if b != jax.PeakReserved-jax.PeakFootprint {
			t.Errorf("unused item %v: %d bytes, want %d", v, b, jax.PeakReserved-jax.PeakFootprint)
		}
	}
	if len(jaxRows) == 0 || n != len(jaxRows) {
		t.Fatalf("jax rows %v, unused items %v", jaxRows, unused)
	}
	// Only jax is cut.
	for _, st := range stateNames[:unusedState] {
		for _, d := range seriesData(t, opt, st) {
			if v := d.([]any); v[1].(float64) > 100-100*unusedShare+0.01 && containsInt(jaxRows, int(v[2].(float64))) {
				t.Errorf("jax row %v: a %s block past the cut", v[2], st)
			}
		}
	}
	if i := legendIndex(chartByID(t, cs, "chart-state-0").Legend, "preallocated, never used"); i < 0 {
		t.Error("state legend lacks the never-used item")
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestTimelineCapacity: the device's capacity is a line across the whole
// timeline, and the y axis reaches it.
func TestTimelineCapacity(t *testing.T) {
	rep := smallReport(t, false)
	cs, err := Charts(rep)
	if err != nil {
		t.Fatal(err)
	}
	opt := option(t, chartByID(t, cs, "chart-timeline-0"))
	c := float64(rep.Runs[0].Device.Capacity)
	d := seriesData(t, opt, "capacity · a100-40g:capacity=512MiB (512 MiB)")
	live := seriesData(t, opt, "live")
	first, last := live[0].([]any)[0].(float64), live[len(live)-1].([]any)[0].(float64)
	if len(d) != 2 || d[0].([]any)[1].(float64) != c || d[1].([]any)[1].(float64) != c || d[0].([]any)[0].(float64) != first || d[1].([]any)[0].(float64) != last {
		t.Errorf("capacity series %v, want %v from %v to %v", d, c, first, last)
	}
	y := opt["yAxis"].([]any)[0].(map[string]any)
	if m, ok := y["max"].(float64); ok && m < c {
		t.Errorf("y axis max %v under the capacity %v", m, c)
	}
}

// TestLegendsAndColours: every chart hides ECharts' legend (which pages
// or truncates) for the page's own, which names every series that has
// data; and a strategy has one colour in every chart, legend and table.
func TestLegendsAndColours(t *testing.T) {
	rep := smallReport(t, true)
	cs, err := Charts(rep)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[string]map[string]bool{}
	see := func(strategy, colour string) {
		if colours[strategy] == nil {
			colours[strategy] = map[string]bool{}
		}
		colours[strategy][colour] = true
	}
	strats := rep.strategyOrder()
	for _, c := range cs {
		opt := option(t, c)
		if lg := opt["legend"].(map[string]any); lg["show"] != false {
			t.Errorf("%s: ECharts legend %v, want hidden", c.ID, lg)
		}
		for _, s := range opt["series"].([]any) {
			m := s.(map[string]any)
			name := m["name"].(string)
			if d, _ := m["data"].([]any); len(d) > 0 && legendIndex(c.Legend, name) < 0 {
				t.Errorf("%s: series %q not in the legend", c.ID, name)
			}
			for _, st := range strats {
				if name == st || strings.HasSuffix(name, " · "+st) {
					c, _ := m["color"].(string)
					if c == "" {
						t.Errorf("%s: series %q has no colour", name, c)
					}
					see(st, c)
				}
			}
		}
		for _, it := range c.Legend {
			for _, st := range strats {
				if it.Name == st || strings.HasSuffix(it.Name, " · "+st) {
					see(st, it.Colour)
				}
			}
		}
	}
	p, err := build(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Verdicts[0].Rows {
		see(r.Strategy, r.Colour)
	}
	for _, c := range p.Comparison[0].Cols {
		see(c.Strategy, c.Colour)
	}
	seen := map[string]string{}
	for i, s := range strats {
		if len(colours[s]) != 1 || !colours[s][colour(i)] {
			t.Errorf("%s: colours %v, want only %s", s, colours[s], colour(i))
		}
		for c := range colours[s] {
			if o, dup := seen[c]; dup {
				t.Errorf("%s and %s share %s", s, o, c)
			}
			seen[c] = s
		}
	}
}

// TestStateMapGrowingRegionsWhole: a growing BFC (jax with preallocate
// off) holds several regions, and its footprint is the sum of each one's
// highest use, no one point of its layout: its rows are drawn whole, with
// no "preallocated, never used" item, and their labels give what was
// held, though its footprint is below what it reserved. Cut at the sum
// from the first region's start, the layout below (the second region's 3
// MiB mark, its buffers since freed, a region garbage collection freed
// between them) read "2 MiB of a 6 MiB region ever used" where placement
// needed 4 MiB.
func TestStateMapGrowingRegionsWhole(t *testing.T) {
	const mib = 1 << 20
	run := replay(t, "small", func() traces.Reader { return smallTrace("small") }, "jax:preallocate=false", smallDevice)
	res := run.Result
	if !policy(res) || onePerPool(run.LiveLayout) {
		t.Fatalf("fixture: footprint %d of %d reserved, %d regions at peak live", res.PeakFootprint, res.PeakReserved, len(run.LiveLayout))
	}
	r1, r2 := int64(64*mib), int64(128*mib)
	made := Run{Device: run.Device, Result: &harness.Result{Trace: "made", Device: res.Device, Strategy: "jax:preallocate=false",
		PeakLive: mib, PeakReserved: 6 * mib, PeakFootprint: 4 * mib, PeakLiveEvent: 1, PeakFootprintEvent: 1},
		LiveLayout: []strategies.Segment{
			{Addr: r1, Size: 2 * mib, Pool: "bfc", Blocks: []strategies.Block{
				{Addr: r1, Size: mib, Requested: mib, State: strategies.BlockAllocated},
				{Addr: r1 + mib, Size: mib, State: strategies.BlockFree}}},
			{Addr: r2, Size: 4 * mib, Pool: "bfc", Blocks: []strategies.Block{{Addr: r2, Size: 4 * mib, State: strategies.BlockFree}}},
		}}
	// After garbage collection freed the regions that made the peak
	// footprint (4 MiB), one 8 MiB region is left, 1 MiB of it used: cut
	// at the peak footprint, it read "4 MiB of an 8 MiB region ever
	// used", more than it ever held in use.
	r3 := int64(256 * mib)
	afterGC := Run{Device: run.Device, Result: &harness.Result{Trace: "after-gc", Device: res.Device, Strategy: "tf:allow_growth=true",
		PeakLive: mib, PeakReserved: 14 * mib, PeakFootprint: 4 * mib, PeakLiveEvent: 1, PeakFootprintEvent: 1},
		LiveLayout: []strategies.Segment{
			{Addr: r3, Size: 8 * mib, Pool: "bfc", Blocks: []strategies.Block{
				{Addr: r3, Size: mib, Requested: mib, State: strategies.BlockAllocated},
				{Addr: r3 + mib, Size: 7 * mib, State: strategies.BlockFree}}},
		}}
	for _, run := range []Run{run, made, afterGC} {
		rep := &Report{Command: "membench report --trace " + run.Result.Trace, Runs: []Run{run}}
		cs, err := Charts(rep)
		if err != nil {
			t.Fatal(err)
		}
		opt := option(t, chartByID(t, cs, "chart-state-0"))
		if u := seriesData(t, opt, "preallocated, never used"); len(u) != 0 {
			t.Errorf("%s: a growing BFC's rows are cut: %v", run.Result.Trace, u)
		}
		for _, l := range opt["yAxis"].([]any)[0].(map[string]any)["data"].([]any) {
			if l := l.(string); strings.Contains(l, "ever used") || !strings.Contains(l, " held") {
				t.Errorf("%s: row label %q: want what was held", run.Result.Trace, l)
			}
		}
	}
}
