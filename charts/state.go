package charts

import (
	"fmt"
	"strings"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"membench/harness"
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
// its order, then the part of a preallocated region placement never
// reached (unusedState), with their colours.
var stateNames = [...]string{"cached free", "allocated", "pending free", "unmapped", "preallocated, never used"}
var stateColours = [...]string{"#91cc75", "#5470c6", "#fac858", "#c8c8c8", "#ffffff"}

// unusedState is the map's own state past the BlockStates: the bytes of a
// preallocated region above its peak footprint, which no allocation ever
// reached (see cutAtFootprint).
const unusedState = 4

// unusedShare is the width of the never-used item of a row: a thin
// item, whatever its bytes (its tooltip and the row's label say them).
const unusedShare = 0.03

// minBlockPct: blocks narrower than this share of their row (about a
// pixel on a 1000-pixel row) are aggregated with their neighbours in the
// same segment, so that a layout of a million blocks still makes a page
// of a few thousand rectangles. An aggregate is drawn in the state that
// holds most of its bytes and says in its tooltip how many blocks it
// stands for.
const minBlockPct = 0.1

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
// stays visible. unused bytes (a preallocation never used, cut off the
// layout by cutAtFootprint) are one thin item, unusedShare of the row, at
// its end, or at its start when they lay below the layout (unusedBelow:
// the TPU heap). It reports whether it shortened anything.
func stateItems(row int, l []strategies.Segment, unused int64, unusedBelow bool, blocks *[len(stateNames)][]blockItem, segs *[]segItem) (shortened bool) {
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
	var unusedWidth int64
	if unused > 0 {
		// unusedShare of the row: w = share × (total + w).
		unusedWidth = max(int64(float64(total)*unusedShare/(1-unusedShare)), 1)
		total += unusedWidth
		shortened = shortened || unusedWidth < unused
	}
	if total == 0 {
		return shortened
	}
	pct := func(b int64) float64 { return round4(100 * float64(b) / float64(total)) }
	tiny := func(w int64) bool { return 100*float64(w)/float64(total) < minBlockPct }
	var pos int64 // display bytes laid out so far
	if unused > 0 && unusedBelow {
		blocks[unusedState] = append(blocks[unusedState], blockItem{0, pct(unusedWidth), float64(row), float64(unused), 0, 1, 0, 0})
		pos = unusedWidth
	}
	for _, s := range l {
		segStart := pos
		// agg accumulates neighbouring tiny blocks.
		var agg struct {
			start, end, size, req, alloc, off int64
			n                                 int
			by                                [len(stateNames)]int64
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
			agg.n, agg.size, agg.req, agg.alloc, agg.by = 0, 0, 0, 0, [len(stateNames)]int64{}
		}
		cursor := s.Addr
		for _, b := range s.Blocks {
			if b.Addr > cursor {
				flush()
				pos += b.Addr - cursor // a gap no block covers
			}
			cursor = b.Addr + b.Size
			w := width(b)
			st := min(int(b.State), unusedState-1)
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
	if unused > 0 && !unusedBelow {
		var off int64
		if n := len(l); n > 0 {
			off = l[n-1].Addr + l[n-1].Size - l[0].Addr
		}
		blocks[unusedState] = append(blocks[unusedState], blockItem{pct(pos), 100, float64(row), float64(unused), 0, 1, 0, float64(off)})
	}
	return shortened
}

// cuttable reports whether layout l of a run with a reservation policy
// can be cut at its peak footprint, one point of the layout: it is one
// segment per pool (onePerPool) and holds the run's whole peak
// reservation, as one preallocated BFC region or the TPU heap beside its
// programs do. A growing BFC's footprint is the sum of each region's
// highest use, no one point of several regions; and one region left after
// garbage collection freed the regions that made the peak footprint is
// not where that footprint was (cut there, an 8 MiB region with 1 MiB in
// use read "4 MiB of an 8 MiB region ever used"): both are drawn whole.
func cuttable(l []strategies.Segment, res *harness.Result) bool {
	m, u := layoutBytes(l)
	return onePerPool(l) && m+u == res.PeakReserved
}

// onePerPool reports whether no two segments of l share a pool.
func onePerPool(l []strategies.Segment) bool {
	for i := range l {
		for j := range i {
			if l[j].Pool == l[i].Pool {
				return false
			}
		}
	}
	return true
}

// cutAtFootprint cuts a preallocated region's layout at its peak
// footprint (harness.Result.PeakFootprint: the most of the region
// placement ever needed): what placement never reached is returned as
// unused bytes rather than drawn as a region of "cached free". A BFC
// carves from the bottom, so the cut is footprint bytes above the
// layout's start; the TPU runtime places buffers top-down (package
// tpurt), so when something is in use above that cut the layout is cut
// footprint bytes below its end instead, and below says so. l is not
// modified. A layout with something in use on the unused side of both
// cuts is returned whole.
func cutAtFootprint(l []strategies.Segment, footprint int64) (cut []strategies.Segment, unused int64, below bool) {
	if len(l) == 0 || footprint <= 0 {
		return l, 0, false
	}
	if cut, unused, ok := cutAbove(l, footprint); ok {
		return cut, unused, false
	}
	if cut, unused, ok := cutBelow(l, footprint); ok {
		return cut, unused, true
	}
	return l, 0, false
}

// cutAbove cuts l footprint bytes above its start; ok is false when
// something in use lies above the cut.
func cutAbove(l []strategies.Segment, footprint int64) (cut []strategies.Segment, unused int64, ok bool) {
	at := l[0].Addr + footprint
	for _, s := range l {
		if s.Addr+s.Size <= at {
			cut = append(cut, s)
			continue
		}
		if s.Addr >= at {
			for _, b := range s.Blocks {
				if b.State != strategies.BlockFree {
					return nil, 0, false
				}
			}
			unused += s.Size
			continue
		}
		c := s
		c.Size = at - s.Addr
		c.Blocks = nil
		for _, b := range s.Blocks {
			switch {
			case b.Addr+b.Size <= at:
				c.Blocks = append(c.Blocks, b)
			case b.State != strategies.BlockFree:
				return nil, 0, false
			case b.Addr < at:
				b.Size = at - b.Addr
				c.Blocks = append(c.Blocks, b)
			}
		}
		unused += s.Size - c.Size
		cut = append(cut, c)
	}
	return cut, unused, true
}

// cutBelow cuts l footprint bytes below its end; ok is false when
// something in use lies below the cut.
func cutBelow(l []strategies.Segment, footprint int64) (cut []strategies.Segment, unused int64, ok bool) {
	last := l[len(l)-1]
	at := last.Addr + last.Size - footprint
	for _, s := range l {
		if s.Addr >= at {
			cut = append(cut, s)
			continue
		}
		c := s
		c.Addr = max(s.Addr, at)
		c.Size = max(s.Addr+s.Size-at, 0)
		c.Blocks = nil
		for _, b := range s.Blocks {
			switch {
			case b.Addr >= at:
				c.Blocks = append(c.Blocks, b)
			case b.State != strategies.BlockFree:
				return nil, 0, false
			case b.Addr+b.Size > at:
				b.Size = b.Addr + b.Size - at
				b.Addr = at
				c.Blocks = append(c.Blocks, b)
			}
		}
		unused += s.Size - c.Size
		if c.Size > 0 {
			cut = append(cut, c)
		}
	}
	return cut, unused, true
}

// rowLabel names a row: a swatch of the strategy's colour (rich text
// style s<i> of the axis, i its position in the report), the strategy,
// whether it fit, the moment, and the bytes held (for a preallocated
// region: how much of it was ever used).
func rowLabel(colour int, strategy, failed, moment string, l []strategies.Segment, unused int64) string {
	m, u := layoutBytes(l)
	// Braces would start rich text: a strategy spec has none, but a
	// label must not restyle itself.
	strategy = strings.NewReplacer("{", "(", "}", ")").Replace(strategy)
	s := fmt.Sprintf("{s%d| }  %s", colour, strategy)
	if failed != "" {
		s += "  {failed|✕ did not fit}"
	}
	s += "\n" + moment + "\n"
	if unused > 0 {
		s += fmt.Sprintf("%s of a %s region ever used", units.Bytes(float64(m), units.Auto), units.Bytes(float64(m+unused), units.Auto))
	} else {
		s += units.Bytes(float64(m), units.Auto) + " held"
	}
	if u > 0 {
		s += " + " + units.Bytes(float64(u), units.Auto) + " unmapped"
	}
	return s
}

// stateChart draws a group's allocator states: for each run its layout at
// peak live, and at its peak footprint (Run.FootprintLayout; without it,
// for a strategy without a reservation policy, Result.PeakLayout at peak
// reserved), one row when the two are the same event. A preallocated region is cut
// at the peak footprint in both rows, with the rest one thin item,
// "preallocated, never used": 60 GiB of which placement ever used 700 MiB
// is not a bar of cached free memory.
func stateChart(id string, g *group, rep *Report) (Chart, bool, error) {
	type stateRow struct {
		label  string
		layout []strategies.Segment
		unused int64
		below  bool
	}
	var rows []stateRow
	order, place := rep.orderOf()
	for _, r := range g.runs {
		res := r.Result
		ci, ok := place[r.key().strategy]
		if !ok {
			ci = -1
		}
		failed := ""
		if o := g.outcome(r.key().strategy); o.failed() {
			failed = o.long()
		}
		add := func(moment string, l []strategies.Segment) {
			var unused int64
			var below bool
			if policy(res) && cuttable(l, res) {
				l, unused, below = cutAtFootprint(l, res.PeakFootprint)
			}
			rows = append(rows, stateRow{rowLabel(ci, res.Strategy, failed, moment, l, unused), l, unused, below})
		}
		switch {
		case r.LiveLayout != nil && res.PeakFootprintEvent == res.PeakLiveEvent:
			add(fmt.Sprintf("at peak live and peak footprint, event %d", res.PeakLiveEvent), r.LiveLayout)
			continue
		case r.LiveLayout != nil:
			add(fmt.Sprintf("at peak live, event %d", res.PeakLiveEvent), r.LiveLayout)
		}
		switch {
		case r.FootprintLayout != nil:
			add(fmt.Sprintf("at peak footprint, event %d", res.PeakFootprintEvent), r.FootprintLayout)
		case !policy(res) && res.PeakLayout != nil:
			add("at peak reserved (its peak footprint)", res.PeakLayout)
		}
		// Without FootprintLayout, a preallocated region at peak
		// reserved would be its first event, an empty region: not drawn.
	}
	if len(rows) == 0 {
		return Chart{}, false, nil
	}
	var blocks [len(stateNames)][]blockItem
	var segs []segItem
	labels := make([]string, len(rows))
	shortened := false
	for i, row := range rows {
		labels[i] = row.label
		if stateItems(i, row.layout, row.unused, row.below, &blocks, &segs) {
			shortened = true
		}
	}
	xName := "% of the bytes held at that moment, segments in address order"
	if shortened {
		xName = "share of the row, segments in address order (unmapped ranges and unused preallocations drawn shortened)"
	}
	rich := map[string]any{"failed": map[string]any{"color": failedRed, "fontWeight": "bold"}}
	for i, s := range order {
		rich[fmt.Sprintf("s%d", i)] = map[string]any{"backgroundColor": rep.colourOf(s), "width": 10, "height": 10, "borderRadius": 2}
	}
	height := 110 + 66*len(rows)
	c := gecharts.NewCustom()
	c.SetGlobalOptions(commonOpts(id, height)...)
	c.SetGlobalOptions(
		gecharts.WithTooltipOpts(opts.Tooltip{Trigger: "item", Formatter: fn("stateTip")}),
		gecharts.WithGridOpts(opts.Grid{Left: "270", Right: "40", Top: "16", Bottom: "80"}),
		gecharts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Max: 100, Name: xName, NameLocation: "middle", NameGap: 24, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
		gecharts.WithDataZoomOpts(
			opts.DataZoom{Type: "inside", XAxisIndex: []int{0}, FilterMode: "weakFilter"},
			opts.DataZoom{Type: "slider", XAxisIndex: []int{0}, FilterMode: "weakFilter", Start: 0, End: 100},
		),
	)
	var legend []legendItem
	for st := range stateNames {
		data := blocks[st]
		if data == nil {
			data = []blockItem{}
		}
		render := "blockRender"
		if st == unusedState {
			render = "unusedRender"
		}
		c.AddSeries(stateNames[st], nil, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
			s.Data = data
			s.RenderItem = fn(render)
			s.Color = stateColours[st]
			s.Encode = &opts.Encode{X: []int{0, 1}, Y: 2}
		}))
		if len(data) > 0 || st <= int(strategies.BlockAllocated) {
			mark := "bar"
			if st == unusedState {
				mark = "unused"
			}
			legend = append(legend, legendItem{Name: stateNames[st], Colour: stateColours[st], Mark: mark})
		}
	}
	c.AddSeries("segment", nil, gecharts.WithSeriesOpts(func(s *gecharts.SingleSeries) {
		s.Data = segs
		s.RenderItem = fn("segmentRender")
		s.Color = "#444444"
		s.Encode = &opts.Encode{X: []int{0, 1}, Y: 2}
	}))
	legend = append(legend, legendItem{Name: "segment", Colour: "#444444", Mark: "outline"})
	js, err := optionJSON(c, map[string]any{"yAxis": []any{map[string]any{
		"type": "category", "data": labels, "inverse": true,
		"axisLabel": map[string]any{"show": true, "interval": 0, "fontSize": 11, "lineHeight": 15, "rich": rich},
	}}})
	return Chart{ID: id, Height: height, Option: js, Legend: legend}, true, err
}
