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
}

// palette colours strategies in report order, so that a strategy keeps
// its colour across every chart of the page. ECharts' default palette
// less its red, which marks OOMs.
var palette = []string{"#5470c6", "#91cc75", "#fac858", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"}

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
// fixed id (the page must be deterministic), no animation, a white
// background, and the page's own sizing.
func commonOpts(id string, height int) []gecharts.GlobalOpts {
	return []gecharts.GlobalOpts{
		gecharts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: fmt.Sprintf("%dpx", height)}),
		gecharts.WithAnimation(false),
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
