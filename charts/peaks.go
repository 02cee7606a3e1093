package charts

import (
	"fmt"
	"math"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// peaksCharts draws, over every trace (and device), three bar charts with
// a group of bars per trace and a bar per strategy, each strategy in its
// colour:
//
//   - peak footprint (peak-footprint-B) on a log axis (traces differ by
//     orders of magnitude), with peak live bytes as a floor line across
//     each group: the gap between a bar and the floor is what placement
//     cost;
//   - placement-frag-%, that gap as a share;
//   - frag-%, which also counts the framework's reservation policy (a
//     preallocated region is all "reserved"), kept for comparison with
//     GMLake's definition and labelled as such.
//
// A run that did not fit answers nothing about waste, and its figures are
// low because it could not obtain memory: it is never drawn as the lowest
// bar. Its bar reaches the device's capacity (100 % in the percentage
// charts), hatched in red and labelled "did not fit" with its first OOM's
// event, and its tooltip says how many allocations failed.
func peaksCharts(idPeaks, idFrag, idPolicy string, rep *Report) (peaks, frag, pol Chart, ok bool, err error) {
	gs := rep.groups()
	many := rep.manyDevices()
	var cats []string
	var used []*group
	for _, g := range gs {
		if _, ok := g.any("peak-footprint-B"); ok {
			cats = append(cats, g.title(many))
			used = append(used, g)
		}
	}
	if len(used) == 0 {
		return Chart{}, Chart{}, Chart{}, false, nil
	}
	// The height of a failed bar on the bytes axis: the group's device
	// capacity, or when it is unknown twice the chart's largest figure.
	top := 0.0
	for _, g := range used {
		for _, s := range g.strategies() {
			if v, ok := g.metric(s, "peak-footprint-B"); ok {
				top = max(top, v)
			}
		}
	}
	failedHeight := func(g *group) float64 {
		if c := g.capacity(); c > 0 {
			return c
		}
		return 2 * top
	}

	const height, fragHeight = 420, 340
	grid := opts.Grid{Left: "80", Right: "30", Top: "30", Bottom: "70"}
	if rotation(len(cats)) != 0 {
		grid.Bottom, grid.Left = "110", "110" // room for tilted names
	}
	xa := opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: rotation(len(cats))}}
	bar := gecharts.NewBar()
	bar.SetGlobalOptions(commonOpts(idPeaks, height)...)
	bar.SetGlobalOptions(
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("peaksTip"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		gecharts.WithGridOpts(grid),
		gecharts.WithXAxisOpts(xa),
		gecharts.WithYAxisOpts(bytesAxis("peak footprint (log)", true)),
	)
	bar.SetXAxis(cats)
	pctChart := func(id, name string) *gecharts.Bar {
		c := gecharts.NewBar()
		c.SetGlobalOptions(commonOpts(id, fragHeight)...)
		c.SetGlobalOptions(
			gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("pctTip"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
			gecharts.WithGridOpts(grid),
			gecharts.WithXAxisOpts(xa),
			gecharts.WithYAxisOpts(opts.YAxis{Type: "value", Name: name, Min: 0, Max: 100, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
		)
		c.SetXAxis(cats)
		return c
	}
	fr := pctChart(idFrag, "placement-frag-%")
	po := pctChart(idPolicy, "frag-% (with the policy)")
	var legend []legendItem
	order, _ := rep.orderOf()
	for _, s := range order {
		peak := make([]any, len(used))
		fp := make([]any, len(used))
		pp := make([]any, len(used))
		have, nFailed, nRuns := false, 0, 0
		col := rep.colourOf(s)
		item := legendItem{Name: s, Colour: col, Mark: "bar"}
		for i, g := range used {
			v, ok := g.metric(s, "peak-footprint-B")
			if !ok {
				continue
			}
			have = true
			nRuns++
			if o := g.outcome(s); o.failed() {
				item.Failed = o.long()
				nFailed++
				peak[i] = failedItem(failedHeight(g), col, o)
				fp[i] = failedItem(100, col, o)
				pp[i] = failedItem(100, col, o)
				continue
			}
			if v > 0 {
				peak[i] = v // a log axis has no 0
			}
			if v, ok := g.metric(s, "placement-frag-%"); ok {
				fp[i] = math.Round(v*10) / 10
			}
			if v, ok := g.metric(s, "frag-%"); ok {
				pp[i] = math.Round(v*10) / 10
			}
		}
		if !have {
			continue
		}
		if nFailed > 0 && nRuns > 1 {
			item.Failed = fmt.Sprintf("did not fit in %d of its %d runs", nFailed, nRuns)
		}
		legend = append(legend, item)
		bar.AddSeries(s, nil, gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) { ss.Data, ss.Color = peak, col }))
		for _, c := range []struct {
			ch   *gecharts.Bar
			data []any
		}{{fr, fp}, {po, pp}} {
			c.ch.AddSeries(s, nil,
				gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) { ss.Data, ss.Color = c.data, col }),
				gecharts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top", FontSize: 10, Formatter: "{c}"}),
			)
		}
	}
	// The floor: peak live per group (group.peakLive).
	var floor [][2]float64
	for i, g := range used {
		if pl, ok := rep.peakLive(g); ok && pl > 0 {
			floor = append(floor, [2]float64{float64(i), pl})
		}
	}
	bar.AddSeries("peak live (floor)", nil, gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) {
		ss.Type = "custom"
		ss.Data = floor
		ss.RenderItem = fn("floorRender")
		ss.Color = "#222222"
		ss.Encode = &opts.Encode{X: 0, Y: 1}
	}))
	pj, err := optionJSON(bar, nil)
	if err != nil {
		return Chart{}, Chart{}, Chart{}, false, err
	}
	fj, err := optionJSON(fr, nil)
	if err != nil {
		return Chart{}, Chart{}, Chart{}, false, err
	}
	oj, err := optionJSON(po, nil)
	peakLegend := append(append([]legendItem(nil), legend...), legendItem{Name: "peak live (floor)", Colour: "#222222", Mark: "dashed"})
	return Chart{ID: idPeaks, Height: height, Option: pj, Legend: peakLegend},
		Chart{ID: idFrag, Height: fragHeight, Option: fj, Legend: legend},
		Chart{ID: idPolicy, Height: fragHeight, Option: oj, Legend: legend},
		true, err
}

// rotation tilts category labels when there are many.
func rotation(n int) float64 {
	if n > 6 {
		return 30
	}
	return 0
}

// any reports whether some strategy of the group has unit.
func (g *group) any(unit string) (float64, bool) {
	for _, s := range g.strategies() {
		if v, ok := g.metric(s, unit); ok {
			return v, true
		}
	}
	return 0, false
}
