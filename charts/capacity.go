package charts

import (
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"membench/internal/units"
	"membench/strategies"
)

// CapacityUnit is the metric `membench capacity` reports: the smallest
// device capacity (bytes visible to the framework's allocator) with which
// a strategy replays a trace without an OOM.
const CapacityUnit = "min-capacity-B"

// capacityRow is one line of the capacity table.
type capacityRow struct {
	Trace, Strategy string
	MinCapacity     string
	PeakLive        string
	Ratio           string // min capacity / peak live
	FitsOn          string // presets whose capacity is enough
	Smallest        string
}

// presetLine is one device size drawn across the capacity chart; presets
// of equal capacity share a line.
type presetLine struct {
	names    []string
	capacity int64
	kind     strategies.Kind
}

func presetLines(presets []strategies.Device) []presetLine {
	if presets == nil {
		for _, n := range strategies.PresetNames() {
			if d, err := strategies.ParseDevice(n); err == nil {
				presets = append(presets, d)
			}
		}
	}
	var ls []presetLine
	for _, d := range presets {
		found := false
		for i := range ls {
			if ls[i].capacity == d.Capacity && ls[i].kind == d.Kind {
				ls[i].names = append(ls[i].names, d.Label())
				found = true
			}
		}
		if !found {
			ls = append(ls, presetLine{[]string{d.Label()}, d.Capacity, d.Kind})
		}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].capacity < ls[j].capacity })
	return ls
}

// capacityChart draws the minimal capacity per strategy for every trace
// that has capacity results, peak live as the floor (no allocator can do
// with less), and the device presets' capacities as horizontal lines: a
// bar under a line fits that device.
//
// A capacity is compared only with presets of the kind of device it was
// searched on: a GPU's answer is the capacity of the BFC or the caching
// allocator with the card's context beside it, and on a TPU jax and tf
// are the TPU runtime model while torch has no model at all (PyTorch/XLA),
// so a GPU search says nothing of a TPU preset, nor the reverse. The chart
// draws the lines of the kinds its searches ran on (every preset when a
// search's device is unknown).
func capacityChart(id string, rep *Report) (Chart, []capacityRow, bool, error) {
	many := rep.manyDevices()
	var used []*group
	var cats []string
	var kinds []strategies.Kind // parallel to used; 0 when unknown
	for _, g := range rep.groups() {
		if _, ok := g.any(CapacityUnit); ok {
			used = append(used, g)
			cats = append(cats, g.title(many))
			kinds = append(kinds, g.kind())
		}
	}
	if len(used) == 0 {
		return Chart{}, nil, false, nil
	}
	var lines []presetLine
	for _, l := range presetLines(rep.Presets) {
		if slices.Contains(kinds, l.kind) || slices.Contains(kinds, 0) {
			lines = append(lines, l)
		}
	}
	y := bytesAxis("minimal capacity (log)", true)
	if len(lines) > 0 {
		// The axis must reach the largest preset for its line to show.
		y.Max = float64(lines[len(lines)-1].capacity) * 1.15
	}
	const height = 460
	bar := gecharts.NewBar()
	bar.SetGlobalOptions(commonOpts(id, height)...)
	bar.SetGlobalOptions(
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "axis", Formatter: fn("peaksTip"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		gecharts.WithGridOpts(opts.Grid{Left: "80", Right: "170", Top: "30", Bottom: "70"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", Rotate: rotation(len(cats))}}),
		gecharts.WithYAxisOpts(y),
	)
	bar.SetXAxis(cats)
	var rows []capacityRow
	var legend []legendItem
	first := true
	order, _ := rep.orderOf()
	for _, s := range order {
		data := make([]any, len(used))
		have := false
		for i, g := range used {
			v, ok := g.metric(s, CapacityUnit)
			if !ok || v <= 0 {
				continue
			}
			data[i], have = v, true
			row := capacityRow{Trace: cats[i], Strategy: s, MinCapacity: units.Bytes(v, units.Auto), PeakLive: "–", Ratio: "–", Smallest: "none"}
			if pl, ok := rep.peakLive(g); ok && pl > 0 {
				row.PeakLive = units.Bytes(pl, units.Auto)
				row.Ratio = "× " + strings.TrimRight(strings.TrimRight(fmtFixed(v/pl, 2), "0"), ".")
			}
			var fits []string
			for _, l := range lines {
				if kinds[i] != 0 && l.kind != kinds[i] {
					continue
				}
				if float64(l.capacity) >= v {
					if row.Smallest == "none" {
						row.Smallest = strings.Join(l.names, ", ") + " (" + units.Bytes(float64(l.capacity), units.Auto) + ")"
					}
					fits = append(fits, l.names...)
				}
			}
			row.FitsOn = strings.Join(fits, ", ")
			if row.FitsOn == "" {
				row.FitsOn = "no preset"
			}
			rows = append(rows, row)
		}
		if !have {
			continue
		}
		legend = append(legend, legendItem{Name: s, Colour: rep.colourOf(s), Mark: "bar"})
		so := []gecharts.SeriesOpts{gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) { ss.Data, ss.Color = data, rep.colourOf(s) })}
		if first {
			first = false
			// Each label goes to the first of four places (right of
			// the plot, then inside it at the left, middle and right)
			// where no label of a close capacity already is, so that
			// presets of similar size do not print over each other.
			places := []string{"end", "insideStartTop", "insideMiddleTop", "insideEndTop"}
			last := make([]int64, len(places))
			var ml []interface{}
			for _, l := range lines {
				pi := 0
				for i := range places {
					if last[i] == 0 || float64(l.capacity) >= 1.25*float64(last[i]) {
						pi = i
						break
					}
				}
				last[pi] = l.capacity
				ml = append(ml, map[string]any{"yAxis": l.capacity, "name": strings.Join(l.names, ", ") + " " + units.Bytes(float64(l.capacity), units.Auto), "label": map[string]any{"position": places[pi]}})
			}
			so = append(so, gecharts.WithSeriesOpts(func(ss *gecharts.SingleSeries) {
				ss.MarkLines = &opts.MarkLines{Data: ml, MarkLineStyle: opts.MarkLineStyle{
					Symbol:    []string{"none", "none"},
					Label:     &opts.Label{Show: opts.Bool(true), Position: "end", Formatter: "{b}", FontSize: 10, Color: "#444"},
					LineStyle: &opts.LineStyle{Color: "#999", Type: "dotted", Width: 1},
				}}
			}))
		}
		bar.AddSeries(s, nil, so...)
	}
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
	legend = append(legend, legendItem{Name: "peak live (floor)", Colour: "#222222", Mark: "dashed"},
		legendItem{Name: "device presets' capacities", Colour: "#999999", Mark: "dotted", Static: true})
	js, err := optionJSON(bar, nil)
	return Chart{ID: id, Height: height, Option: js, Legend: legend}, rows, true, err
}

// peakLive is the group's peak live bytes, the floor under its bars: the
// least over its strategies that fit, which differ when they replay the
// trace otherwise (a compiled trace's launches compiled or op by op: the
// largest put compiled jax's bar below the floor); with none that fit,
// the largest (a run cut short by failed allocations has less live).
//
// It is read from the results once: capacityChart asks for it for each
// strategy of the report, and a results file of 16,000 strategies of one
// trace, each asking reading every strategy of the group, took 74 s
// (2026-11-25).
func (g *group) peakLive() (float64, bool) {
	if !g.peakTaken {
		g.peak, g.peakOK = g.readPeakLive()
		g.peakTaken = true
	}
	return g.peak, g.peakOK
}

// peakReads counts readPeakLive's calls, for the test that bounds them
// (TestManyCapacityGroups).
var peakReads atomic.Int64

// readPeakLive is peakLive read from the group's results.
func (g *group) readPeakLive() (float64, bool) {
	peakReads.Add(1)
	best, ok := 0.0, false
	least, fits := 0.0, false
	for _, s := range g.strategies() {
		v, o := g.metric(s, "peak-live-B")
		if !o {
			continue
		}
		if !ok || v > best {
			best, ok = v, true
		}
		// A result without fit (a capacity search's) was verified at
		// its answer, so it fit.
		if f, known := g.metric(s, "fit"); (!known || f != 0) && (!fits || v < least) {
			least, fits = v, true
		}
	}
	if fits {
		return least, true
	}
	return best, ok
}

// tracePeaksOf is each trace's peak live bytes from the first of its
// groups that has them (Report.tracePeaks).
func (rep *Report) tracePeaksOf() map[string]float64 {
	m := map[string]float64{}
	for _, g := range rep.groups() {
		if _, done := m[g.trace]; !done {
			if v, ok := g.peakLive(); ok {
				m[g.trace] = v
			}
		}
	}
	return m
}

// peakLive is a group's peak live bytes, or when none of its results has
// it (capacity results name the device the search started from) the
// trace's peak live from another group: live bytes depend on the trace
// alone unless allocations failed.
//
// build's copy of the report holds each trace's figure (tracePeaks), so
// that the page's charts, which ask for every group's, do not collect the
// groups again for each: a results file of 25,000 capacity results without
// peak live bytes, in 6,250 groups, took 74 s to draw (2026-11-25).
func (rep *Report) peakLive(g *group) (float64, bool) {
	if v, ok := g.peakLive(); ok {
		return v, true
	}
	peaks := rep.tracePeaks
	if peaks == nil {
		peaks = rep.tracePeaksOf()
	}
	v, ok := peaks[g.trace]
	return v, ok
}
