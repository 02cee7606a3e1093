package charts

import (
	"math"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// peaksCharts draws, over every trace (and device), peak reserved bytes
// per strategy as bars on a log axis (a preallocating strategy holds
// hundreds of times what PyTorch's cache does) with peak live bytes as a
// floor line across each group of bars: the gap between a bar and the
// floor is the waste. The second chart is that gap as frag-%.
func peaksCharts(idPeaks, idFrag string, rep *Report) (peaks, frag Chart, ok bool, err error) {
	gs := rep.groups()
	many := rep.manyDevices()
	var cats []string
	var used []*group
	for _, g := range gs {
		if _, ok := g.any("peak-reserved-B"); ok {
			cats = append(cats, g.title(many))
			used = append(used, g)
		}
	}
	if len(used) == 0 {
		return Chart{}, Chart{}, false, nil
	}
	const height = 420
	bar := gecharts.NewBar()
	bar.SetGlobalOptions(commonOpts(idPeaks, height)...)
	bar.SetGlobalOptions(
		gecharts.WithLegendOpts(opts.Legend{Type: "scroll", Top: "0"}),
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("peaksTip"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		gecharts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "70"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: rotation(len(cats))}}),
		gecharts.WithYAxisOpts(bytesAxis("peak reserved (log)", true)),
	)
	bar.SetXAxis(cats)
	fr := gecharts.NewBar()
	fr.SetGlobalOptions(commonOpts(idFrag, 340)...)
	fr.SetGlobalOptions(
		gecharts.WithLegendOpts(opts.Legend{Type: "scroll", Top: "0"}),
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", ValueFormatter: fn("pct"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		gecharts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "70"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: rotation(len(cats))}}),
		gecharts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "frag-%", Min: 0, Max: 100, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
	)
	fr.SetXAxis(cats)
	for _, s := range rep.strategyOrder() {
		peak := make([]any, len(used))
		fp := make([]any, len(used))
		have := false
		for i, g := range used {
			if v, ok := g.metric(s, "peak-reserved-B"); ok && v > 0 {
				peak[i], have = v, true // a log axis has no 0
			}
			if v, ok := g.metric(s, "frag-%"); ok {
				fp[i] = math.Round(v*10) / 10
			}
		}
		if !have {
			continue
		}
		col := rep.colourOf(s)
		bar.AddSeries(s, nil, gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) { ss.Data, ss.Color = peak, col }))
		fr.AddSeries(s, nil,
			gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) { ss.Data, ss.Color = fp, col }),
			gecharts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top", FontSize: 10, Formatter: "{c}"}),
		)
	}
	// The floor: peak live per group, the largest over its strategies
	// (they differ only when allocations failed).
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
		return Chart{}, Chart{}, false, err
	}
	fj, err := optionJSON(fr, nil)
	return Chart{ID: idPeaks, Height: height, Option: pj}, Chart{ID: idFrag, Height: 340, Option: fj}, true, err
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
