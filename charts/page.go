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
	Timelines  []section
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
	p.Strategies = rep.strategyOrder()
	for i, g := range rep.groups() {
		if len(g.runs) == 0 {
			continue
		}
		c, err := timelineChart(fmt.Sprintf("chart-timeline-%d", i), g, rep.colourOf)
		if err != nil {
			return nil, err
		}
		p.Timelines = append(p.Timelines, section{Heading: g.title(many), Caption: timelineCaption(g), Chart: c})
		s, ok, err := stateChart(fmt.Sprintf("chart-state-%d", i), g)
		if err != nil {
			return nil, err
		}
		if ok {
			p.States = append(p.States, section{Heading: g.title(many), Chart: s})
		}
	}
	pk, fr, ok, err := peaksCharts("chart-peaks", "chart-frag", rep)
	if err != nil {
		return nil, err
	}
	if ok {
		p.Peaks = []section{
			{Heading: "Peak reserved, with peak live as the floor", Chart: pk},
			{Heading: "Fragmentation: frag-% = 100 × (1 − peak live / peak reserved)", Chart: fr},
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
		if r.Result.OOMCount > 0 {
			ooms = append(ooms, fmt.Sprintf("%s: %d OOMs", r.Result.Strategy, r.Result.OOMCount))
		}
	}
	if len(ooms) > 0 {
		b.WriteString("; " + strings.Join(ooms, ", "))
	} else {
		b.WriteString("; every allocation fit")
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
	"join":     strings.Join,
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
</style>
<script>{{echarts}}</script>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Command}}<p class="lead">Made by <code>{{.Command}}</code></p>{{end}}
<p class="lead">Traces: {{join .Traces ", "}}. Strategies: {{join .Strategies ", "}}.{{if .Devices}} Devices: {{join .Devices ", "}}.{{end}}</p>
<nav><a href="#timelines">1 Timelines</a><a href="#peaks">2 Peaks and waste</a><a href="#state">3 Allocator state</a><a href="#capacity">4 Capacity fit</a><a href="#tables">5 Tables</a></nav>

<h2 id="timelines">1. Memory over each trace</h2>
<p class="lead">Live bytes (what the program asked for) and reserved bytes (what each strategy held from the device), as step lines. Each point is the maximum of a bucket of events, so every peak is drawn. Bands and dashed lines are the trace's phase marks; triangles are allocations that failed (OOM), at the bytes reserved then. Scroll or drag the slider to zoom.</p>
{{range .Timelines}}<h3>{{.Heading}}</h3>
<p class="caption">{{.Caption}}</p>
<div class="chart" id="{{.Chart.ID}}" style="{{px .Chart.Height}}"></div>
<script type="application/json" class="chart-option" data-chart="{{.Chart.ID}}">{{option .Chart}}</script>
{{else}}<p class="empty">No replays: nothing to draw over time.</p>
{{end}}
<h2 id="peaks">2. Peaks and waste</h2>
<p class="lead">Peak reserved bytes per trace and strategy (log scale); the dashed line across each group is the trace's peak live bytes, the least any allocator could hold. Below, the share of peak reserved that was never live at the peak.</p>
{{range .Peaks}}<h3>{{.Heading}}</h3>
<div class="chart" id="{{.Chart.ID}}" style="{{px .Chart.Height}}"></div>
<script type="application/json" class="chart-option" data-chart="{{.Chart.ID}}">{{option .Chart}}</script>
{{else}}<p class="empty">No peak figures to draw.</p>
{{end}}
<h2 id="state">3. Allocator state at peak</h2>
<p class="lead">What each strategy held, segment by segment (PyTorch) or region by region (BFC, TPU heap) in address order, right after the event of peak live bytes (the same moment for every strategy) and at the moment of peak reserved bytes. Blue: allocated (lighter where the allocator rounded the request up); green: cached free; yellow: freed, awaiting its stream; grey: reserved address space without pages. Each row is 100&nbsp;% of what was held then; blocks too small to see are drawn together. Zoom to look closer; hover for sizes.</p>
{{range .States}}<h3>{{.Heading}}</h3>
<div class="chart" id="{{.Chart.ID}}" style="{{px .Chart.Height}}"></div>
<script type="application/json" class="chart-option" data-chart="{{.Chart.ID}}">{{option .Chart}}</script>
{{else}}<p class="empty">No allocator layouts were recorded.</p>
{{end}}
<h2 id="capacity">4. Capacity fit</h2>
{{with .Capacity}}<p class="lead">The smallest device capacity (bytes visible to the framework's allocator) with which each strategy replays the trace without an OOM, from <code>membench capacity</code>. The dashed line is peak live, the floor; dotted lines are the device presets' capacities: a bar below a line fits that device.</p>
<h3>{{.Heading}}</h3>
<div class="chart" id="{{.Chart.ID}}" style="{{px .Chart.Height}}"></div>
<script type="application/json" class="chart-option" data-chart="{{.Chart.ID}}">{{option .Chart}}</script>
<table>
<tr><th>trace</th><th>strategy</th><th>minimal capacity</th><th>peak live</th><th>capacity / peak live</th><th>smallest preset that fits</th><th>fits on</th></tr>
{{range $.CapRows}}<tr><td>{{.Trace}}</td><td>{{.Strategy}}</td><td class="num">{{.MinCapacity}}</td><td class="num">{{.PeakLive}}</td><td class="num">{{.Ratio}}</td><td>{{.Smallest}}</td><td>{{.FitsOn}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No capacity results in this report. Run <code>membench capacity</code> and pass its output with <code>--results FILE</code> to compare the smallest device each strategy fits in (results carrying a <code>min-capacity-B</code> metric).</p>
{{end}}
<h2 id="tables">5. Tables</h2>
<h3>Comparison</h3>
<p class="lead">As benchstat shows it: a row per metric, a column per strategy, and each strategy's change against the first. Every metric is deterministic (<code>assume=exact</code>) and lower is better, so every change shows: <code>0.00%</code> means equal, <code>?</code> a change from zero.</p>
{{range .Comparison}}{{$t := .}}<table>
<tr><th>{{.Title}}</th>{{range $i, $s := .Strategies}}<th>{{$s}}</th>{{if $i}}<th>vs {{index $t.Strategies 0}}</th>{{end}}{{end}}</tr>
{{range .Rows}}<tr><td>{{.Unit}}</td>{{range $i, $c := .Cells}}<td class="num">{{$c.Value}}</td>{{if $i}}<td class="num {{$c.Class}}">{{$c.Delta}}</td>{{end}}{{end}}</tr>
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
{{range .Runs}}<tr><td>{{.Trace}}</td><td>{{.Device}}</td><td>{{.Strategy}}</td><td>{{.Knobs}}</td><td>{{.Events}}</td><td>{{.Outcome}}</td><td>{{range .Notes}}<div{{if .Assumption}} class="assumption"><span class="tag">assumption</span>{{else}}>{{end}}{{.Text}}</div>{{end}}</td></tr>
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
`
