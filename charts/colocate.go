package charts

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"membench/harness"
	"membench/internal/units"
	"membench/strategies"
)

// Colocation is a colocated replay (`membench report --colocate`): several
// processes on one device, each a trace through a strategy.
type Colocation struct {
	Device  strategies.Device
	Rate    float64 // events a second of a trace without a clock
	Tenants []harness.TenantResult
}

// colocRow is a tenant's row in the page's table.
type colocRow struct {
	N                      int
	Tenant, Colour         string
	Fit, OOM, Cause        string
	Failed                 bool
	PeakReserved, PeakLive string
}

// tenantName is how the page names a tenant: TRACE@STRATEGY, numbered
// when the same pair runs twice.
func tenantName(k int, r harness.TenantResult) string {
	return strconv.Itoa(k+1) + " · " + r.Trace + "@" + r.Strategy
}

// colocationSection draws the shared device over time: each tenant's
// reserved bytes as a step line, what all of them held together as an
// area, the device's capacity, and a red line at each tenant's first OOM,
// labelled with the tenant; and lists the tenants with their outcome and
// the cause of a failure.
func colocationSection(c *Colocation, colourOf func(string) string) (section, []colocRow, error) {
	const height = 420
	x := func(s harness.Sample) float64 { return math.Round(float64(s.Time)/1e3) / 1e6 }
	// The sum over tenants, at every time any tenant's sample has: each
	// tenant holds its last sample's bytes until its next.
	var times []float64
	down := make([][]harness.Sample, len(c.Tenants))
	for k, t := range c.Tenants {
		down[k] = Downsample(t.Timeline, MaxPoints)
		for _, s := range down[k] {
			times = append(times, x(s))
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	sum := make([]point, len(times))
	idx := make([]int, len(c.Tenants))
	for i, tx := range times {
		var total float64
		for k := range c.Tenants {
			for idx[k]+1 < len(down[k]) && x(down[k][idx[k]+1]) <= tx {
				idx[k]++
			}
			if len(down[k]) > 0 && x(down[k][idx[k]]) <= tx {
				total += float64(down[k][idx[k]].Reserved)
			}
		}
		sum[i] = point{tx, total}
	}
	line := gecharts.NewLine()
	line.SetGlobalOptions(commonOpts("chart-colocate", height)...)
	line.SetGlobalOptions(
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("timelineTip"), AxisPointer: &opts.AxisPointer{Type: "line"}}),
		gecharts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "30", Bottom: "80"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time (s)", NameLocation: "middle", NameGap: 28, Min: 0, Max: "dataMax", AxisLabel: &opts.AxisLabel{Formatter: fn("axisNum")}}),
		gecharts.WithYAxisOpts(bytesAxis("bytes", false)),
		gecharts.WithDataZoomOpts(zoom()...),
	)
	var legend []legendItem
	add := func(name, colour string, pts []point, dashed, area bool, extra ...gecharts.SeriesOpts) {
		so := []gecharts.SeriesOpts{
			gecharts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}),
			gecharts.WithLineStyleOpts(opts.LineStyle{Width: 2, Type: map[bool]string{true: "dashed", false: "solid"}[dashed]}),
			gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) { s.Data, s.Color = pts, colour }),
		}
		if area {
			so = append(so, gecharts.WithAreaStyleOpts(opts.AreaStyle{Color: colour, Opacity: opts.Float(0.12)}))
		}
		line.AddSeries(name, nil, append(so, extra...)...)
		mark := "line"
		if dashed {
			mark = "dashed"
		} else if area {
			mark = "area"
		}
		legend = append(legend, legendItem{Name: name, Colour: colour, Mark: mark})
	}
	add("all tenants · reserved", "#555555", sum, false, true)
	// A tenant takes its strategy's colour on the page when that is its
	// own; tenants of one strategy (two TensorFlow processes), or of one
	// the page has no other run of, are coloured by their number.
	cols := make([]string, len(c.Tenants))
	used := map[string]bool{}
	for k, t := range c.Tenants {
		cols[k] = colourOf(t.Strategy)
		if cols[k] == "#999999" || used[cols[k]] {
			cols[k] = colour(k)
		}
		used[cols[k]] = true
	}
	var rows []colocRow
	for k, t := range c.Tenants {
		name := tenantName(k, t)
		col := cols[k]
		pts := make([]point, len(down[k]))
		for i, s := range down[k] {
			pts[i] = point{x(s), float64(s.Reserved)}
		}
		var extra []gecharts.SeriesOpts
		row := colocRow{N: k + 1, Tenant: t.Trace + "@" + t.Strategy, Colour: col, Fit: "✓ fits", OOM: "–",
			PeakReserved: units.Bytes(float64(t.PeakReserved), units.Auto), PeakLive: units.Bytes(float64(t.PeakLive), units.Auto)}
		if !t.Fit() {
			row.Fit, row.Failed, row.OOM, row.Cause = "✕ did not fit", true, fmt.Sprintf("its event %d: %s", t.FirstOOM, t.OOM.Message), t.Cause
			if n := len(down[k]); n > 0 {
				ml := []interface{}{map[string]any{"xAxis": pts[n-1][0], "name": "✕ " + name + ": first OOM"}}
				extra = append(extra, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
					s.MarkLines = &opts.MarkLines{Data: ml, MarkLineStyle: opts.MarkLineStyle{Symbol: []string{"none", "none"},
						LineStyle: &opts.LineStyle{Color: failedRed, Width: 2, Type: "solid"}, Label: &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop", Color: failedRed}}}
				}))
			}
		}
		add("reserved · "+name, col, pts, false, false, extra...)
		legend[len(legend)-1].Failed = map[bool]string{true: "did not fit", false: ""}[!t.Fit()]
		rows = append(rows, row)
	}
	if capB := float64(c.Device.Capacity); capB > 0 && len(times) > 0 {
		add("capacity · "+c.Device.Label()+" ("+units.Bytes(capB, units.Auto)+")", capacityColour,
			[]point{{times[0], capB}, {times[len(times)-1], capB}}, true, false)
	}
	js, err := optionJSON(line, nil)
	if err != nil {
		return section{}, nil, err
	}
	ch := Chart{ID: "chart-colocate", Height: height, Option: js, Legend: legend}
	caption := fmt.Sprintf("%d tenants share %s; events interleave by the traces' times, a trace without a clock at %g events a second (assumption). A tenant stops at its first OOM, as a framework raises.", len(c.Tenants), c.Device.Label(), c.Rate)
	return section{Heading: "Several processes on one device", Caption: caption, Chart: ch}, rows, nil
}
