package charts

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// echartsJS is Apache ECharts 5.4.3's dist/echarts.min.js (npm package
// echarts), vendored with its LICENSE and NOTICE in echarts/.
//
//go:embed echarts/echarts.min.js
var echartsJS string

//go:embed report.js
var reportJS string

// ECharts is the version of the vendored ECharts.
const ECharts = "5.4.3"

// section is a chart with its heading and an optional caption.
type section struct {
	Heading string
	Caption string
	Chart   Chart
}

// page is what the template draws.
type page struct {
	Title      string
	Command    string
	Traces     []string
	Strategies []string
	Devices    []string
	Verdicts   []verdict
	Timelines  []section
	Colocation *section
	ColocRows  []colocRow
	Peaks      []section
	States     []section
	Capacity   *section
	CapRows    []capacityRow
	Comparison []compTable
	DeviceTabs []deviceTable
	Runs       []runRow
	TraceRows  []traceRow
	Sources    []Source
	ECharts    string
}

// build lays the report out: every chart with its fixed id.
func build(rep *Report) (*page, error) {
	// A copy carries the strategy order and each trace's peak live
	// bytes, made once; the caller's report is left as it is.
	own := *rep
	own.order, own.place = rep.orderOf()
	own.tracePeaks = rep.tracePeaksOf()
	rep = &own
	p := &page{Title: rep.Title, Command: rep.Command, Sources: rep.Sources, ECharts: ECharts}
	if p.Title == "" {
		p.Title = "membench report"
	}
	many := rep.manyDevices()
	for _, g := range rep.groups() {
		if !contains(p.Traces, g.trace) {
			p.Traces = append(p.Traces, g.trace)
		}
		if g.device != "" && !contains(p.Devices, g.device) {
			p.Devices = append(p.Devices, g.device)
		}
	}
	p.Strategies = rep.order
	p.Verdicts = verdicts(rep)
	for i, g := range rep.groups() {
		if len(g.runs) == 0 {
			continue
		}
		c, err := timelineChart(fmt.Sprintf("chart-timeline-%d", i), g, rep.colourOf)
		if err != nil {
			return nil, err
		}
		p.Timelines = append(p.Timelines, section{Heading: g.title(many), Caption: timelineCaption(g), Chart: c})
		s, ok, err := stateChart(fmt.Sprintf("chart-state-%d", i), g, rep)
		if err != nil {
			return nil, err
		}
		if ok {
			p.States = append(p.States, section{Heading: g.title(many), Chart: s})
		}
	}
	if c := rep.Colocation; c != nil {
		sec, rows, err := colocationSection(c, rep.colourOf)
		if err != nil {
			return nil, err
		}
		p.Colocation, p.ColocRows = &sec, rows
		for _, t := range c.Tenants {
			if !contains(p.Traces, t.Trace) {
				p.Traces = append(p.Traces, t.Trace)
			}
			if !contains(p.Strategies, t.Strategy) {
				p.Strategies = append(p.Strategies, t.Strategy)
			}
		}
		if !contains(p.Devices, c.Device.Label()) {
			p.Devices = append(p.Devices, c.Device.Label())
		}
	}
	pk, fr, po, ok, err := peaksCharts("chart-peaks", "chart-frag", "chart-frag-policy", rep)
	if err != nil {
		return nil, err
	}
	if ok {
		p.Peaks = []section{
			{Heading: "Peak footprint, with peak live as the floor", Caption: "What the allocator's own placement needed: for a preallocated region (JAX's default 75 %, TensorFlow without allow_growth, the TPU heap) the highest point ever carved out of it, not the region; for a growing BFC the sum of each region's highest point, not its doubling regions; for PyTorch, what was reserved.", Chart: pk},
			{Heading: "Placement cost: placement-frag-% = 100 × (1 − peak live / peak footprint)", Caption: "The share of the peak footprint that was not live at the peak: the waste of the allocator's placement alone.", Chart: fr},
			{Heading: "frag-% = 100 × (1 − peak live / peak reserved), including the reservation policy", Caption: "GMLake's definition, kept for comparison. It counts a framework's preallocation as waste (JAX's 75 % of the card reads as about 99 %): it measures the reservation policy, not fragmentation. Compare strategies by placement-frag-% above.", Chart: po},
		}
	}
	cc, rows, ok, err := capacityChart("chart-capacity", rep)
	if err != nil {
		return nil, err
	}
	if ok {
		p.Capacity = &section{Heading: "Minimal capacity per strategy", Chart: cc}
		p.CapRows = rows
	}
	if p.Comparison, err = compTables(rep); err != nil {
		return nil, err
	}
	p.DeviceTabs = deviceTables(rep)
	p.Runs = runRows(rep)
	p.TraceRows = traceRows(rep)
	return p, nil
}

func timelineCaption(g *group) string {
	r := g.runs[0].Result
	var b strings.Builder
	fmt.Fprintf(&b, "%d events", r.Events)
	if n := len(r.Marks); n > 0 {
		fmt.Fprintf(&b, ", %d phase marks", n)
	}
	var ooms []string
	for _, r := range g.runs {
		if !r.Result.Fit() {
			o := outcome{known: true, firstOOM: r.Result.FirstOOMEvent(), ooms: r.Result.OOMCount}
			ooms = append(ooms, r.Result.Strategy+" "+o.long())
		}
	}
	if len(ooms) > 0 {
		b.WriteString("; " + strings.Join(ooms, "; "))
	} else {
		b.WriteString("; every strategy fit")
	}
	return b.String()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Write writes the report as one self-contained HTML page: ECharts and
// every chart's data are inlined, so the page needs no network. The same
// Report gives the same bytes.
func Write(w io.Writer, rep *Report) error {
	p, err := build(rep)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := pageTemplate.Execute(bw, p); err != nil {
		return err
	}
	return bw.Flush()
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"echarts":  func() template.JS { return template.JS(echartsJS) },
	"reportJS": func() template.JS { return template.JS(reportJS) },
	"option":   func(c Chart) template.JS { return template.JS(c.Option) },
	"px":       func(n int) template.CSS { return template.CSS(fmt.Sprintf("height:%dpx", n)) },
	// colour is a palette entry as a CSS custom property: the page's own
	// constants, never user input.
	"colour": func(c string) template.CSS { return template.CSS("--c:" + c) },
	"join":   strings.Join,
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 0; background: #fafafa; }
main { max-width: 1240px; margin: 0 auto; padding: 12px 24px 48px; }
h1 { font-size: 24px; margin: 16px 0 4px; }
h2 { font-size: 19px; margin: 36px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 4px; }
p.caption, p.lead { color: #555; margin: 2px 0 8px; }
nav a { margin-right: 14px; }
code { background: #eee; padding: 1px 4px; border-radius: 3px; }
.chart { width: 100%; background: #fff; border: 1px solid #e4e4e4; border-radius: 4px; }
table { border-collapse: collapse; margin: 6px 0 14px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.better { color: #1a7f37; } td.worse { color: #b42318; }
.assumption { background: #fff3c4; }
.tag { font-size: 11px; font-weight: 600; color: #8a5a00; background: #ffe08a; border-radius: 3px; padding: 0 4px; margin-right: 4px; }
.empty { padding: 14px; background: #fff; border: 1px dashed #bbb; border-radius: 4px; color: #555; }
details { margin: 4px 0; }
footer { color: #777; font-size: 12px; margin-top: 40px; }
.legend { display: flex; flex-wrap: wrap; gap: 2px 14px; padding: 6px 8px; font-size: 12px; background: #fff; border: 1px solid #e4e4e4; border-bottom: none; border-radius: 4px 4px 0 0; }
.legend + .chart { border-radius: 0 0 4px 4px; }
.li { cursor: pointer; user-select: none; white-space: normal; overflow-wrap: anywhere; }
.li.static { cursor: default; }
.li.off { opacity: 0.35; }
.lm { display: inline-block; width: 18px; height: 10px; margin-right: 5px; vertical-align: -1px; box-sizing: border-box; }
.lm.bar, .lm.area { background: var(--c); border-radius: 2px; }
.lm.area { opacity: 0.5; border-top: 2px solid var(--c); }
.lm.line { height: 0; border-top: 2.5px solid var(--c); vertical-align: 3px; }
.lm.dashed { height: 0; border-top: 2px dashed var(--c); vertical-align: 3px; }
.lm.dotted { height: 0; border-top: 2px dotted var(--c); vertical-align: 3px; }
.lm.outline { border: 1.5px solid var(--c); }
.lm.unused { background: repeating-linear-gradient(135deg, #fff 0 3px, #ddd 3px 5px); border: 1px dashed #888; }
.lm.triangle { width: 0; height: 0; border-left: 6px solid transparent; border-right: 6px solid transparent; border-bottom: 11px solid var(--c); margin: 0 8px 0 3px; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; background: var(--c); margin-right: 6px; vertical-align: -1px; }
.failtag { font-size: 11px; font-weight: 600; color: #fff; background: #c23531; border-radius: 3px; padding: 0 4px; white-space: nowrap; }
.leasttag { font-size: 11px; font-weight: 600; color: #1a7f37; white-space: nowrap; }
tr.failed td, th.failed, td.failed { background: #fdecea; }
td.failed { color: #888; }
.failtext { color: #b42318; font-weight: 600; }
tr.least td { background: #eaf6ec; }
p.verdict { margin: 2px 0 4px; }
</style>
<script>{{echarts}}</script>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Command}}<p class="lead">Made by <code>{{.Command}}</code></p>{{end}}
<p class="lead">Traces: {{join .Traces ", "}}. Strategies: {{join .Strategies ", "}}.{{if .Devices}} Devices: {{join .Devices ", "}}.{{end}}</p>
<nav><a href="#verdict">1 Verdict</a><a href="#timelines">2 Timelines</a><a href="#peaks">3 Footprint and waste</a><a href="#state">4 Allocator state</a><a href="#capacity">5 Capacity fit</a><a href="#tables">6 Tables</a></nav>

<h2 id="verdict">1. Verdict</h2>
<p class="lead">Per trace and device: which strategies fit (every allocation succeeded), what each one's placement needed at most (<b>peak footprint</b>: for a preallocated region the highest point ever carved out of it, not the region) and what that placement cost (<b>placement-frag-%</b> = 100 × (1 − peak live / peak footprint)), and which needs the least among those that fit. A run that did not fit is marked <span class="failtag">✕ did not fit</span> everywhere in this page and is never ranked: its figures are what it managed before memory ran out. frag-% counts the framework's reservation policy as waste; it is shown for comparison only.</p>
{{range .Verdicts}}{{$v := .}}<h3>{{.Title}}</h3>
{{range .Summary}}<p class="verdict">{{.}}</p>
{{end}}<table class="verdict">
<tr><th>strategy</th><th>fit</th><th>peak footprint</th><th>placement-frag-%</th>{{if .Cols.Card}}<th>smallest card</th>{{end}}{{if .Cols.Capacity}}<th>minimal capacity</th>{{end}}<th>peak reserved</th><th>frag-% (with the policy)</th></tr>
{{range .Rows}}<tr data-strategy="{{.Strategy}}"{{if .Failed}} class="failed"{{else if .Least}} class="least"{{end}}><td><span class="sw" style="{{colour .Colour}}"></span>{{.Strategy}}{{if .Least}} <span class="leasttag">★ needs the least</span>{{end}}</td><td{{if .Failed}} class="failtext"{{end}}>{{.Fit}}</td><td class="num">{{.Footprint}}</td><td class="num">{{.PlacementFrag}}</td>{{if $v.Cols.Card}}<td class="num">{{.MinCard}}</td>{{end}}{{if $v.Cols.Capacity}}<td class="num">{{.MinCapacity}}</td>{{end}}<td class="num">{{.Reserved}}</td><td class="num">{{.Frag}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No results.</p>
{{end}}
<h2 id="timelines">2. Memory over each trace</h2>
<p class="lead">Live bytes (what the program asked for) and reserved bytes (what each strategy held from the device), as step lines, under the device's capacity (dashed, dark). Each point is the maximum of a bucket of events, so every peak is drawn. Bands and dashed lines are the trace's phase marks; triangles are allocations that failed (OOM), at the bytes reserved then, and a red line marks each failed run's first OOM. Scroll or drag the slider to zoom; click a legend item to hide or show its series.</p>
{{range .Timelines}}<h3>{{.Heading}}</h3>
<p class="caption">{{.Caption}}</p>
{{template "chart" .Chart}}
{{else}}{{if not .Colocation}}<p class="empty">No replays: nothing to draw over time.</p>
{{end}}{{end}}{{with .Colocation}}<h3 id="colocate">{{.Heading}}</h3>
<p class="caption">{{.Caption}}</p>
{{template "chart" .Chart}}
{{end}}{{if .ColocRows}}<table class="verdict">
<tr><th>tenant</th><th>fit</th><th>first OOM</th><th>cause</th><th>peak reserved</th><th>peak live</th></tr>
{{range .ColocRows}}<tr{{if .Failed}} class="failed"{{end}}><td><span class="sw" style="{{colour .Colour}}"></span>{{.N}} · {{.Tenant}}</td><td{{if .Failed}} class="failtext"{{end}}>{{.Fit}}</td><td>{{.OOM}}</td><td>{{.Cause}}</td><td class="num">{{.PeakReserved}}</td><td class="num">{{.PeakLive}}</td></tr>
{{end}}</table>
{{end}}
<h2 id="peaks">3. Footprint and waste</h2>
<p class="lead">Peak footprint per trace and strategy (log scale); the dashed line across each group is the trace's peak live bytes, the least any allocator could hold. Below, the share of the footprint that was never live at the peak (placement-frag-%), then frag-%, which also counts the reservation policy. A hatched bar with a red dashed outline, labelled <span class="failtag">✕ did not fit</span>, is a run in which allocations failed: it is drawn at the device's capacity (100&nbsp;% in the percentage charts) because it has no footprint to compare, never as the lowest bar.</p>
{{range .Peaks}}<h3>{{.Heading}}</h3>
{{if .Caption}}<p class="caption">{{.Caption}}</p>
{{end}}{{template "chart" .Chart}}
{{else}}<p class="empty">No peak figures to draw.</p>
{{end}}
<h2 id="state">4. Allocator state at peak</h2>
<p class="lead">What each strategy held, segment by segment (PyTorch) or region by region (BFC, TPU heap) in address order, right after the event of peak live bytes (the same moment for every strategy) and at its peak footprint (for PyTorch, peak reserved; a growing BFC's regions are drawn whole). A preallocated region is cut where placement stopped: above its peak footprint no allocation ever reached, and that rest is one thin white item, “preallocated, never used” (its size is in the row's label and tooltip), not cached free memory. Blue: allocated (lighter where the allocator rounded the request up); green: cached free; yellow: freed, awaiting its stream; grey: reserved address space without pages. Each row is 100&nbsp;% of what was held then; blocks too small to see are drawn together. Zoom to look closer; hover for sizes.</p>
{{range .States}}<h3>{{.Heading}}</h3>
{{template "chart" .Chart}}
{{else}}<p class="empty">No allocator layouts were recorded.</p>
{{end}}
<h2 id="capacity">5. Capacity fit</h2>
{{with .Capacity}}<p class="lead">The smallest device capacity (bytes visible to the framework's allocator) with which each strategy replays the trace without an OOM, from <code>membench capacity</code>. The dashed line is peak live, the floor; dotted lines are the capacities of the device presets of the kind searched (a GPU's answer says nothing of a TPU, nor the reverse): a bar below a line fits that device.</p>
<h3>{{.Heading}}</h3>
{{template "chart" .Chart}}
<table>
<tr><th>trace</th><th>strategy</th><th>minimal capacity</th><th>peak live</th><th>capacity / peak live</th><th>smallest preset that fits</th><th>fits on</th></tr>
{{range $.CapRows}}<tr><td>{{.Trace}}</td><td>{{.Strategy}}</td><td class="num">{{.MinCapacity}}</td><td class="num">{{.PeakLive}}</td><td class="num">{{.Ratio}}</td><td>{{.Smallest}}</td><td>{{.FitsOn}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No capacity results in this report. Run <code>membench capacity</code> and pass its output with <code>--results FILE</code> to compare the smallest device each strategy fits in (results carrying a <code>min-capacity-B</code> metric).</p>
{{end}}
<h2 id="tables">6. Tables</h2>
<h3>Comparison</h3>
<p class="lead">As benchstat shows it: a row per metric, a column per strategy, and each strategy's change against the first. Every metric is deterministic (<code>assume=exact</code>), so every change shows: <code>0.00%</code> means equal, <code>?</code> a change from zero. Lower is better except for <code>fit</code> (1 fit, 0 did not); <code>first-oom-event</code> (−1 when it fit) is neither. Green and red mark improvements and regressions, never in the column of a run that did not fit (greyed, marked <span class="failtag">✕ did not fit</span>), nor against a baseline that did not fit.</p>
{{range .Comparison}}{{$t := .}}{{if .Note}}<p class="caption failtext">{{.Note}}</p>
{{end}}<table class="comparison">
<tr><th>{{.Title}}</th>{{range $i, $c := .Cols}}<th{{if $c.Failed}} class="failed" title="{{$c.Failed}}"{{end}} data-strategy="{{$c.Strategy}}"><span class="sw" style="{{colour $c.Colour}}"></span>{{$c.Strategy}}{{if $c.Failed}}<br><span class="failtag">✕ did not fit</span>{{end}}</th>{{if $i}}<th>vs {{index $t.Strategies 0}}</th>{{end}}{{end}}</tr>
{{range .Rows}}<tr><td>{{.Unit}}</td>{{range $i, $c := .Cells}}<td class="num{{if eq $c.Class "failed"}} failed{{end}}">{{$c.Value}}</td>{{if $i}}<td class="num {{$c.Class}}">{{$c.Delta}}</td>{{end}}{{end}}</tr>
{{end}}</table>
{{end}}
<h3>Devices</h3>
<p class="lead">Every figure behind the results, and where it came from. <span class="tag">assumption</span> marks figures nobody has published; they are parameters (<code>--device NAME:key=value</code>).</p>
{{range .DeviceTabs}}<table>
<tr><th colspan="2">{{.Name}}</th></tr>
{{range .Figures}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}<tr><td>sources</td><td>{{range .Notes}}<div{{if .Assumption}} class="assumption"><span class="tag">assumption</span>{{else}}>{{end}}{{.Text}}</div>{{end}}</td></tr>
</table>
{{end}}
<h3>Runs</h3>
<table>
<tr><th>trace</th><th>device</th><th>strategy</th><th>knobs</th><th>events</th><th>outcome</th><th>notes</th></tr>
{{range .Runs}}<tr{{if .Failed}} class="failed"{{end}}><td>{{.Trace}}</td><td>{{.Device}}</td><td>{{.Strategy}}</td><td>{{.Knobs}}</td><td>{{.Events}}</td><td{{if .Failed}} class="failtext"{{end}}>{{.Outcome}}</td><td>{{range .Notes}}<div{{if .Assumption}} class="assumption"><span class="tag">assumption</span>{{else}}>{{end}}{{.Text}}</div>{{end}}</td></tr>
{{end}}</table>
<h3>Traces</h3>
{{range .TraceRows}}<details><summary>{{.Name}}</summary><table>
{{range .Meta}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table></details>
{{end}}
{{if .Sources}}<h3>Results files</h3>
<ul>{{range .Sources}}<li><code>{{.Name}}</code>: {{.Results}} results</li>{{end}}</ul>
{{end}}
<footer>Charts drawn by Apache ECharts {{.ECharts}} (Apache License 2.0; Copyright 2017-2023 The Apache Software Foundation), embedded in this page. Made by membench.</footer>
</main>
<script>{{reportJS}}</script>
</body>
</html>
{{define "chart"}}<div class="legend" id="{{.ID}}-legend">{{range .Legend}}<span class="li{{if .Static}} static{{end}}" data-name="{{.Name}}"{{if .Failed}} title="{{.Failed}}"{{end}}><span class="lm {{.Mark}}" style="{{colour .Colour}}"></span>{{.Name}}{{if .Failed}} <span class="failtag">✕ did not fit</span>{{end}}</span>{{end}}</div>
<div class="chart" id="{{.ID}}" style="{{px .Height}}"></div>
<script type="application/json" class="chart-option" data-chart="{{.ID}}">{{option .}}</script>
{{end}}`
