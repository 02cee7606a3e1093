package charts

import (
	"fmt"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"membench/internal/units"
	"membench/strategies"
)

// The state map draws, for each strategy, the segments (PyTorch) or
// regions (BFC, TPU heap) it held at a moment, in address order, each
// row one moment: every block coloured by its state, allocated blocks
// lighter where the allocator's rounding exceeds the request, segment
// outlines on top. A row spans 100 % of what that strategy held then, so
// a 60 GiB preallocated region and a few hundred MiB of PyTorch segments
// both fill the width; the row's label gives the size. As in PyTorch's
// memory_viz "allocator state" view, gaps between segments are not drawn:
// they are other processes' or nobody's memory.

// stateNames are the series of the map, one per strategies.BlockState in
// its order, with their colours.
var stateNames = [...]string{"cached free", "allocated", "pending free", "unmapped"}
var stateColours = [...]string{"#91cc75", "#5470c6", "#fac858", "#c8c8c8"}

// minBlockPct: blocks narrower than this share of their row (about a
// pixel on a 1000-pixel row) are aggregated with their neighbours in the
// same segment, so that a layout of a million blocks still makes a page
// of a few thousand rectangles. An aggregate is drawn in the state that
// holds most of its bytes and says in its tooltip how many blocks it
// stands for.
const minBlockPct = 0.1

// stateRow is one row of the map.
type stateRow struct {
	label  string
	layout []strategies.Segment
}

// block item dimensions: x0 %, x1 %, row, bytes, requested bytes (of the
// allocated blocks), blocks, allocated bytes, offset in its segment.
type blockItem [8]float64

type segItem struct {
	Value [3]float64 `json:"value"` // x0 %, x1 %, row
	Name  string     `json:"name"`
}

// layoutBytes returns the bytes a layout holds with pages behind them,
// and its unmapped address space (expandable segments).
func layoutBytes(l []strategies.Segment) (mapped, unmapped int64) {
	for _, s := range l {
		u := int64(0)
		for _, b := range s.Blocks {
			if b.State == strategies.BlockUnmapped {
				u += b.Size
			}
		}
		mapped += s.Size - u
		unmapped += u
	}
	return mapped, unmapped
}

// stateItems lays one row out. Positions are in display bytes: a block's
// own size, except that an unmapped range (address space an expandable
// segment reserved without pages, often many times the mapped bytes) is
// drawn at most a tenth of the mapped bytes wide, so that what is mapped
// stays visible. It reports whether it shortened anything.
func stateItems(row int, l []strategies.Segment, blocks *[4][]blockItem, segs *[]segItem) (shortened bool) {
	mapped, _ := layoutBytes(l)
	width := func(b strategies.Block) int64 {
		if b.State == strategies.BlockUnmapped && mapped > 0 && b.Size > mapped/10 {
			shortened = true
			return max(mapped/10, 1)
		}
		return b.Size
	}
	var total int64
	for _, s := range l {
		covered := int64(0)
		for _, b := range s.Blocks {
			total += width(b)
			covered += b.Size
		}
		total += max(s.Size-covered, 0)
	}
	if total == 0 {
		return shortened
	}
	pct := func(b int64) float64 { return round4(100 * float64(b) / float64(total)) }
	tiny := func(w int64) bool { return 100*float64(w)/float64(total) < minBlockPct }
	var pos int64 // display bytes laid out so far
	for _, s := range l {
		segStart := pos
		// agg accumulates neighbouring tiny blocks.
		var agg struct {
			start, end, size, req, alloc, off int64
			n                                 int
			by                                [4]int64
		}
		flush := func() {
			if agg.n == 0 {
				return
			}
			st := 0
			for i := range agg.by {
				if agg.by[i] > agg.by[st] {
					st = i
				}
			}
			blocks[st] = append(blocks[st], blockItem{pct(agg.start), pct(agg.end), float64(row), float64(agg.size), float64(agg.req), float64(agg.n), float64(agg.alloc), float64(agg.off)})
			agg.n, agg.size, agg.req, agg.alloc, agg.by = 0, 0, 0, 0, [4]int64{}
		}
		cursor := s.Addr
		for _, b := range s.Blocks {
			if b.Addr > cursor {
				flush()
				pos += b.Addr - cursor // a gap no block covers
			}
			cursor = b.Addr + b.Size
			w := width(b)
			st := min(int(b.State), len(stateNames)-1)
			var req, alloc int64
			if b.State == strategies.BlockAllocated {
				req, alloc = b.Requested, b.Size
			}
			if !tiny(w) {
				flush()
				blocks[st] = append(blocks[st], blockItem{pct(pos), pct(pos + w), float64(row), float64(b.Size), float64(req), 1, float64(alloc), float64(b.Addr - s.Addr)})
				pos += w
				continue
			}
			if agg.n == 0 {
				agg.start, agg.off = pos, b.Addr-s.Addr
			}
			agg.n++
			agg.size += b.Size
			agg.req += req
			agg.alloc += alloc
			agg.by[st] += b.Size
			pos += w
			agg.end = pos
			if !tiny(agg.end - agg.start) {
				flush()
			}
		}
		flush()
		pos += max(s.Addr+s.Size-cursor, 0)
		*segs = append(*segs, segItem{
			Value: [3]float64{pct(segStart), pct(pos), float64(row)},
			Name:  fmt.Sprintf("segment 0x%x · %s · pool %s · stream %d · %d blocks", s.Addr, units.Bytes(float64(s.Size), units.Auto), s.Pool, s.Stream, len(s.Blocks)),
		})
	}
	return shortened
}

// rowLabel names a row: strategy, moment, bytes held.
func rowLabel(strategy, moment string, l []strategies.Segment) string {
	m, u := layoutBytes(l)
	s := fmt.Sprintf("%s\n%s\n%s held", strategy, moment, units.Bytes(float64(m), units.Auto))
	if u > 0 {
		s += " + " + units.Bytes(float64(u), units.Auto) + " unmapped"
	}
	return s
}

// stateChart draws a group's allocator states: for each run its layout at
// peak live and at peak reserved.
func stateChart(id string, g *group) (Chart, bool, error) {
	var rows []stateRow
	for _, r := range g.runs {
		res := r.Result
		if r.LiveLayout != nil {
			rows = append(rows, stateRow{rowLabel(res.Strategy, fmt.Sprintf("at peak live, event %d", res.PeakLiveEvent), r.LiveLayout), r.LiveLayout})
		}
		if res.PeakLayout != nil {
			rows = append(rows, stateRow{rowLabel(res.Strategy, "at peak reserved", res.PeakLayout), res.PeakLayout})
		}
	}
	if len(rows) == 0 {
		return Chart{}, false, nil
	}
	var blocks [4][]blockItem
	var segs []segItem
	labels := make([]string, len(rows))
	shortened := false
	for i, row := range rows {
		labels[i] = row.label
		if stateItems(i, row.layout, &blocks, &segs) {
			shortened = true
		}
	}
	xName := "% of the bytes held at that moment, segments in address order"
	if shortened {
		xName = "share of the row, segments in address order (unmapped ranges drawn shortened)"
	}
	height := 110 + 58*len(rows)
	c := gecharts.NewCustom()
	c.SetGlobalOptions(commonOpts(id, height)...)
	c.SetGlobalOptions(
		gecharts.WithLegendOpts(opts.Legend{Top: "0"}),
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "item", Formatter: fn("stateTip")}),
		gecharts.WithGridOpts(opts.Grid{Left: "250", Right: "40", Top: "36", Bottom: "80"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Max: 100, Name: xName, NameLocation: "middle", NameGap: 24, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
		gecharts.WithYAxisOpts(opts.YAxis{Type: "category", Data: labels, Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Show: opts.Bool(true), Interval: "0", FontSize: 11, Width: 230, Overflow: "truncate"}}),
		gecharts.WithDataZoomOpts(
			opts.DataZoom{Type: "inside", XAxisIndex: []int{0}, FilterMode: "weakFilter"},
			opts.DataZoom{Type: "slider", XAxisIndex: []int{0}, FilterMode: "weakFilter", Start: 0, End: 100},
		),
	)
	for st := range stateNames {
		data := blocks[st]
		if data == nil {
			data = []blockItem{}
		}
		c.AddSeries(stateNames[st], nil, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
			s.Data = data
			s.RenderItem = fn("blockRender")
			s.Color = stateColours[st]
			s.Encode = &opts.Encode{X: []int{0, 1}, Y: 2}
		}))
	}
	c.AddSeries("segment", nil, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
		s.Data = segs
		s.RenderItem = fn("segmentRender")
		s.Color = "#444444"
		s.Encode = &opts.Encode{X: []int{0, 1}, Y: 2}
	}))
	js, err := optionJSON(c, nil)
	return Chart{ID: id, Height: height, Option: js}, true, err
}
