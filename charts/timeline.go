package charts

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"membench/harness"
	"membench/internal/units"
)

// timelineAxis maps event indexes to the timeline's x values: seconds
// since the trace's start when every sample has a time in nanoseconds,
// else the event index.
type timelineAxis struct {
	time bool
	ref  []harness.Sample // the first run's full timeline, to place marks and OOMs
}

func newTimelineAxis(runs []*Run) timelineAxis {
	ax := timelineAxis{time: true, ref: runs[0].Result.Timeline}
	for _, r := range runs {
		// Lifetime tables carry logical instants, not nanoseconds.
		if len(r.Result.Timeline) == 0 || r.Result.Meta.Get("time-unit") == "logical" {
			ax.time = false
		}
		for _, s := range r.Result.Timeline {
			if s.Time < 0 {
				ax.time = false
			}
		}
	}
	return ax
}

func (ax timelineAxis) name() string {
	if ax.time {
		return "time (s)"
	}
	return "event"
}

// sampleX is a sample's x value. Times are rounded to the microsecond:
// finer digits cost bytes and no pixel shows them.
func (ax timelineAxis) sampleX(s harness.Sample) float64 {
	if ax.time {
		return math.Round(float64(s.Time)/1e3) / 1e6
	}
	return float64(s.Event)
}

// eventX places an event: its own index, or the time of the timeline
// bucket holding it (a bucket's time is its first event's).
func (ax timelineAxis) eventX(ev int64) float64 {
	if !ax.time {
		return float64(ev)
	}
	i := sort.Search(len(ax.ref), func(i int) bool { return ax.ref[i].Event > ev }) - 1
	if i < 0 {
		i = 0
	}
	return ax.sampleX(ax.ref[i])
}

func (ax timelineAxis) endX() float64 {
	if len(ax.ref) == 0 {
		return 0
	}
	return ax.sampleX(ax.ref[len(ax.ref)-1])
}

type point [2]float64

func seriesPoints(ax timelineAxis, s []harness.Sample, live bool) []point {
	pts := make([]point, len(s))
	for i, x := range s {
		y := x.Reserved
		if live {
			y = x.Live
		}
		pts[i] = point{ax.sampleX(x), float64(y)}
	}
	return pts
}

// timelineChart draws one group's memory over the trace: a reserved step
// line per strategy, live bytes (one area for the strategies that saw the
// same live bytes, which is all of them unless allocations failed, and a
// dashed line for each that saw others), the
// device's capacity as a horizontal line, phase marks as bands and lines,
// OOMs as points where they happened, and for each run that did not fit a
// vertical line at its first OOM, labelled.
//
// When the series differ in scale by more than 8× (a preallocated 60 GiB
// region against a few hundred MiB of PyTorch segments, or an 80 GiB card
// against them) the y axis is logarithmic, base 2, so that every series'
// shape shows. Its floor is 16 times below the smallest series' maximum
// (and at most 24 binary orders below the largest); values under the
// floor, such as the empty allocator before the first event, are drawn on
// it, and the tooltip says "under" it. The maximum of every series is
// above the floor and drawn exactly.
func timelineChart(id string, g *group, colourOf func(string) string) (Chart, error) {
	const height = 440
	ax := newTimelineAxis(g.runs)

	type series struct {
		name, colour string
		dashed, area bool
		pts          []point
	}
	down := make([][]harness.Sample, len(g.runs))
	for i, r := range g.runs {
		down[i] = Downsample(r.Result.Timeline, MaxPoints)
	}
	// Live bytes depend on the trace alone unless allocations failed: the
	// runs whose live bytes are the reference's (the first run that fit)
	// share one "live" area; any other gets a dashed line of its own.
	ref := 0
	for i, r := range g.runs {
		if r.Result.Fit() {
			ref = i
			break
		}
	}
	var ss []series
	var legend []legendItem
	failed := func(r *Run) string {
		if o := g.outcome(r.key().strategy); o.failed() {
			return o.long()
		}
		return ""
	}
	ss = append(ss, series{"live", "#555555", false, true, seriesPoints(ax, down[ref], true)})
	legend = append(legend, legendItem{Name: "live", Colour: "#555555", Mark: "area"})
	for i, r := range g.runs {
		if sameLiveBytes(down[i], down[ref]) {
			continue
		}
		n := "live · " + r.Result.Strategy
		ss = append(ss, series{n, colourOf(r.key().strategy), true, false, seriesPoints(ax, down[i], true)})
		legend = append(legend, legendItem{Name: n, Colour: colourOf(r.key().strategy), Mark: "dashed", Failed: failed(r)})
	}
	for i, r := range g.runs {
		n := "reserved · " + r.Result.Strategy
		ss = append(ss, series{n, colourOf(r.key().strategy), false, false, seriesPoints(ax, down[i], false)})
		legend = append(legend, legendItem{Name: n, Colour: colourOf(r.key().strategy), Mark: "line", Failed: failed(r)})
	}
	// The device's capacity, across the whole trace.
	if c := g.capacity(); c > 0 && len(ax.ref) > 0 {
		n := "capacity · " + g.runs[0].Result.Device + " (" + units.Bytes(c, units.Auto) + ")"
		ss = append(ss, series{n, capacityColour, true, false, []point{{ax.sampleX(ax.ref[0]), c}, {ax.endX(), c}}})
		legend = append(legend, legendItem{Name: n, Colour: capacityColour, Mark: "dashed"})
	}

	// The scale: log when the series' maxima are far apart.
	var top, low float64
	for _, x := range ss {
		m := 0.0
		for _, p := range x.pts {
			m = max(m, p[1])
		}
		top = max(top, m)
		if m > 0 && (low == 0 || m < low) {
			low = m
		}
	}
	y := bytesAxis("bytes", false)
	if low > 0 && top/low > 8 {
		floor := math.Exp2(math.Floor(math.Log2(low / 16)))
		floor = max(floor, math.Exp2(math.Floor(math.Log2(top)))/(1<<24), 1)
		y = bytesAxis("bytes (log scale)", true)
		y.Min = floor
		// The next power of two up, or ECharts rounds to a power of its
		// own choosing (an 80 GiB card drew to 1 TiB).
		y.Max = math.Exp2(math.Ceil(math.Log2(top * 1.05)))
		for _, x := range ss {
			for j := range x.pts {
				x.pts[j][1] = max(x.pts[j][1], floor)
			}
		}
	}

	line := gecharts.NewLine()
	line.SetGlobalOptions(commonOpts(id, height)...)
	xa := opts.XAxis{Type: "value", Name: ax.name(), NameLocation: "middle", NameGap: 28, Min: "dataMin", Max: "dataMax", AxisLabel: &opts.AxisLabel{Formatter: fn("axisNum")}}
	if ax.time {
		xa.Min = 0
	}
	line.SetGlobalOptions(
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("timelineTip"), AxisPointer: &opts.AxisPointer{Type: "line"}}),
		gecharts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "30", Bottom: "80"}),
		gecharts.WithXAxisOpts(xa),
		gecharts.WithYAxisOpts(y),
		gecharts.WithDataZoomOpts(zoom()...),
	)
	marks := markOpts(ax, g.runs[0].Result.Marks)
	for i, x := range ss {
		so := []gecharts.SeriesOpts{
			gecharts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}),
			gecharts.WithLineStyleOpts(opts.LineStyle{Width: map[bool]float32{true: 1.5, false: 2}[x.dashed || x.area], Type: map[bool]string{true: "dashed", false: "solid"}[x.dashed]}),
			gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) { s.Data, s.Color = x.pts, x.colour }),
		}
		if x.area {
			so = append(so, gecharts.WithAreaStyleOpts(opts.AreaStyle{Color: x.colour, Opacity: opts.Float(0.12)}))
		}
		if i == 0 {
			so = append(so, marks...)
		}
		line.AddSeries(x.name, nil, so...)
	}
	for _, r := range g.runs {
		if len(r.Result.OOMs) == 0 {
			continue
		}
		// x, reserved bytes at that moment, bytes requested.
		pts := make([][3]float64, len(r.Result.OOMs))
		for j, o := range r.Result.OOMs {
			pts[j] = [3]float64{ax.eventX(o.Event), max(float64(o.Reserved), 1), float64(o.Requested)}
			if y.Min != nil {
				pts[j][1] = max(pts[j][1], y.Min.(float64))
			}
		}
		col := colourOf(r.key().strategy)
		n := "OOM · " + r.Result.Strategy
		first := r.Result.OOMs[0].Event
		// The first OOM: a red line across the plot, labelled.
		ml := []interface{}{map[string]any{"xAxis": ax.eventX(first), "name": "✕ " + r.Result.Strategy + " did not fit: first OOM, event " + strconv.FormatInt(first, 10)}}
		line.AddSeries(n, nil, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
			s.Type = "scatter"
			s.Data = pts
			s.Symbol = "triangle"
			s.SymbolSize = 11
			s.Color = col
			s.ItemStyle = &opts.ItemStyle{Color: col, BorderColor: failedRed, BorderWidth: 2}
			s.MarkLines = &opts.MarkLines{Data: ml, MarkLineStyle: opts.MarkLineStyle{
				Symbol:    []string{"none", "none"},
				Label:     &opts.Label{Show: opts.Bool(true), Position: "insideEndBottom", Formatter: "{b}", FontSize: 11, Color: failedRed},
				LineStyle: &opts.LineStyle{Color: failedRed, Type: "solid", Width: 1.5},
			}}
		}))
		legend = append(legend, legendItem{Name: n, Colour: col, Mark: "triangle", Failed: failed(r)})
	}
	js, err := optionJSON(line, nil)
	return Chart{ID: id, Height: height, Option: js, Legend: legend}, err
}

// capacityColour draws the device's capacity on timelines.
const capacityColour = "#222222"

// sameLiveBytes: two downsampled timelines with the same events and live
// bytes (reserved may differ).
func sameLiveBytes(a, b []harness.Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Event != b[i].Event || a[i].Live != b[i].Live {
			return false
		}
	}
	return true
}

// bandColours tint phase bands by kind (the label before ':'), in order of
// first appearance.
var bandColours = []string{"84,112,198", "250,200,88", "145,204,117", "154,96,180", "115,192,222", "252,132,82"}

// maxLabelledMarks: beyond this many bands (or lines) their labels would
// overlap, and only the tints remain.
const maxLabelledMarks = 16

// markOpts draws a trace's phase marks: a "step:N" mark as a dashed
// vertical line, any other mark as a band from it to the next mark (the
// last to the end of the trace), tinted by kind; neighbouring bands of one
// kind alternate in strength so that their boundaries show.
func markOpts(ax timelineAxis, marks []harness.Mark) []gecharts.SeriesOpts {
	if len(marks) == 0 {
		return nil
	}
	kindOf := func(label string) string {
		k, _, _ := strings.Cut(label, ":")
		return k
	}
	var kinds []string
	var bands, lines []interface{}
	prevKind, alt := "", false
	for i, m := range marks {
		x := ax.eventX(m.Event)
		k := kindOf(m.Label)
		if k == "step" {
			lines = append(lines, map[string]any{"xAxis": x, "name": m.Label})
			continue
		}
		ki := slices.Index(kinds, k)
		if ki < 0 {
			kinds = append(kinds, k)
			ki = len(kinds) - 1
		}
		if k == prevKind {
			alt = !alt
		} else {
			alt = false
		}
		prevKind = k
		end := ax.endX()
		if i+1 < len(marks) {
			end = ax.eventX(marks[i+1].Event)
		}
		a := 0.14
		if alt {
			a = 0.07
		}
		bands = append(bands, []any{
			map[string]any{"xAxis": x, "name": m.Label, "itemStyle": map[string]any{"color": "rgba(" + bandColours[ki%len(bandColours)] + "," + fmtFloat(a) + ")"}},
			map[string]any{"xAxis": end},
		})
	}
	var so []gecharts.SeriesOpts
	if len(bands) > 0 {
		show := len(bands) <= maxLabelledMarks
		so = append(so, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
			s.MarkAreas = &opts.MarkAreas{Data: bands, MarkAreaStyle: opts.MarkAreaStyle{
				Label: &opts.Label{Show: opts.Bool(show), Position: "insideTop", FontSize: 10, Color: "#555"},
			}}
		}))
	}
	if len(lines) > 0 {
		show := len(lines) <= maxLabelledMarks
		so = append(so, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
			s.MarkLines = &opts.MarkLines{Data: lines, MarkLineStyle: opts.MarkLineStyle{
				Symbol:    []string{"none", "none"},
				Label:     &opts.Label{Show: opts.Bool(show), Position: "insideEndTop", Formatter: "{b}", FontSize: 10, Color: "#333"},
				LineStyle: &opts.LineStyle{Color: "#666", Type: "dashed", Width: 1},
			}}
		}))
	}
	return so
}
