package charts

import (
	"bytes"
	"encoding/json"
	"fmt"

	gecharts "github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"
)

// Chart is one chart of the page: its element id, heading, size, and the
// ECharts option as JSON.
type Chart struct {
	ID      string
	Heading string
	Height  int    // pixels
	Option  []byte // JSON; JavaScript helpers appear as "__f__name__f__"
	// Legend is drawn by the page above the chart, in HTML: it wraps
	// onto as many lines as it needs, never pages or truncates, and a
	// click on an item shows or hides its series (report.js). The
	// ECharts legend stays hidden.
	Legend []legendItem
}

// legendItem is one entry of a chart's legend: a series name, its colour
// and how it is drawn.
type legendItem struct {
	Name   string // the series' name
	Colour string
	// Mark: "line", "dashed", "area", "bar", "triangle", "outline" (a
	// segment's frame), "unused" (a preallocation never used).
	Mark string
	// Failed, when set, says that the strategy's run did not fit.
	Failed string
	// Static items explain a mark and toggle nothing.
	Static bool
}

// palette colours strategies in report order, so that a strategy keeps
// its colour across every chart and table of the page: ECharts' default
// palette less its red, which marks OOMs and runs that did not fit, then
// four more so that a dozen strategies do not share colours.
var palette = []string{"#5470c6", "#91cc75", "#fac858", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc", "#8d6e63", "#2f4554", "#b6a2de", "#6e7074"}

func colour(i int) string { return palette[i%len(palette)] }

// fn refers to a helper of report.js (MB.fn): the loader replaces the
// marker string with the function.
func fn(name string) types.FuncStr { return opts.FuncOpts(name) }

// extras adds what go-echarts has no typed field for: top-level option
// keys, and the log base of log y axes (2, so that ticks fall on binary
// sizes: 256 MiB, 512 MiB, 1 GiB).
type extras struct {
	gecharts.BaseConfigurationVisitor
	set map[string]any
}

func (e extras) Visit(obj map[string]interface{}) {
	for k, v := range e.set {
		obj[k] = v
	}
}

type yAxisLog struct {
	opts.YAxis
	LogBase float64 `json:"logBase,omitempty"`
}

func (e extras) VisitYAxis(ys []opts.YAxis) interface{} {
	out := make([]yAxisLog, len(ys))
	for i, y := range ys {
		out[i].YAxis = y
		if y.Type == "log" {
			out[i].LogBase = 2
		}
	}
	return out
}

// optionJSON renders a go-echarts chart's option. encoding/json sorts map
// keys, so the bytes depend only on the chart; HTML escaping keeps '<'
// out of the page's script elements.
func optionJSON(c interface {
	Validate()
	Accept(gecharts.ConfigurationVisitor)
	JSON() map[string]interface{}
}, set map[string]any) ([]byte, error) {
	c.Accept(extras{set: set})
	c.Validate()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(c.JSON()); err != nil {
		return nil, fmt.Errorf("chart option: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// commonOpts are the global options every chart of the page shares: a
// fixed id (the page must be deterministic), no animation, the page's own
// sizing, and ECharts' legend hidden (the page draws the legend: see
// Chart.Legend; the hidden legend still keeps which series are shown).
func commonOpts(id string, height int) []gecharts.GlobalOpts {
	return []gecharts.GlobalOpts{
		gecharts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: fmt.Sprintf("%dpx", height)}),
		gecharts.WithAnimation(false),
		gecharts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
	}
}

// failedRed marks runs that did not fit and OOMs.
const failedRed = "#c23531"

// failedItem is a bar for a run that did not fit: drawn at value (the
// device's capacity, or 100 %) so that it is never the lowest bar,
// hatched in red over the strategy's colour, labelled, and with the
// outcome for the tooltip (peaksTip reads "failed").
func failedItem(value float64, colour string, o outcome) map[string]any {
	return map[string]any{
		"value":  value,
		"failed": o.long(),
		"itemStyle": map[string]any{
			"color":       colour,
			"opacity":     0.45,
			"borderColor": failedRed,
			"borderWidth": 1.5,
			"borderType":  "dashed",
			"decal": map[string]any{
				"symbol":     "rect",
				"symbolSize": 1,
				"dashArrayX": []int{1, 0},
				"dashArrayY": []int{3, 5},
				"rotation":   0.785,
				"color":      "rgba(194,53,49,0.75)",
			},
		},
		"label": map[string]any{
			"show":          true,
			"position":      "insideTop",
			"rotate":        90,
			"align":         "right",
			"verticalAlign": "middle",
			"offset":        []int{0, 4},
			"formatter":     "✕ " + o.short(),
			"fontSize":      10,
			"fontWeight":    "bold",
			"color":         failedRed,
		},
	}
}

// bytesAxis is a value axis of bytes with binary-prefixed labels.
func bytesAxis(name string, log bool) opts.YAxis {
	y := opts.YAxis{
		Name:      name,
		Type:      "value",
		AxisLabel: &opts.AxisLabel{Formatter: fn("bytes")},
		SplitLine: &opts.SplitLine{Show: opts.Bool(true)},
	}
	if log {
		y.Type = "log"
		y.SplitNumber = 10
	}
	return y
}

// zoom is the x-axis zoom every timeline has: wheel and drag inside the
// plot, and a slider under it. filterMode none keeps step lines whole at
// the window's edges.
func zoom() []opts.DataZoom {
	return []opts.DataZoom{
		{Type: "inside", XAxisIndex: []int{0}, FilterMode: "none"},
		{Type: "slider", XAxisIndex: []int{0}, FilterMode: "none", Start: 0, End: 100},
	}
}
