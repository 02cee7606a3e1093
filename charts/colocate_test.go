package charts

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"membench/harness"
	"membench/strategies"
)

// TestColocationPage: a colocated replay is drawn on one shared timeline:
// a reserved line per tenant, what all of them held, the device's
// capacity, a red line at the failed tenant's first OOM; the table names
// the cause. The same inputs give the same page.
func TestColocationPage(t *testing.T) {
	dev, err := strategies.ParseDevice("a100-80g:total=3GiB,capacity=2.5GiB,free=2.5GiB")
	if err != nil {
		t.Fatal(err)
	}
	src, err := harness.ResolveTrace("gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.Cache(harness.DefaultCacheEvents)
	page := func() []byte {
		rs, err := harness.Colocate([]harness.Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "torch"}}, dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, &Report{Colocation: &Colocation{Device: dev, Rate: harness.DefaultColocateRate, Tenants: rs}}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	p := page()
	if !bytes.Equal(p, page()) {
		t.Errorf("the page differs between two runs")
	}
	html := string(p)
	for _, want := range []string{"Several processes on one device", "2 · gpt-train@torch", "✕ did not fit", "gpt-train@jax held", "its reservation or caching policy"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rs, _ := harness.Colocate([]harness.Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "torch"}}, dev, 0)
	sec, rows, err := colocationSection(&Colocation{Device: dev, Rate: 1, Tenants: rs}, func(string) string { return "#999999" })
	if err != nil {
		t.Fatal(err)
	}
	var opt struct {
		Series []struct {
			Name     string
			Data     [][2]float64
			MarkLine *struct{ Data []map[string]any } `json:"markLine"`
		}
	}
	if err := json.Unmarshal(sec.Chart.Option, &opt); err != nil {
		t.Fatal(err)
	}
	var names []string
	oomLines := 0
	for _, s := range opt.Series {
		names = append(names, s.Name)
		if s.MarkLine != nil {
			oomLines += len(s.MarkLine.Data)
		}
	}
	if strings.Join(names, "|") != "all tenants · reserved|reserved · 1 · gpt-train@jax|reserved · 2 · gpt-train@torch|capacity · "+dev.Label()+" (2.50 GiB)" || oomLines != 1 {
		t.Errorf("series %v, %d OOM lines", names, oomLines)
	}
	// What all tenants held is never less than any one of them.
	all, torch := opt.Series[0].Data, opt.Series[2].Data
	if len(all) == 0 || all[len(all)-1][1] < torch[len(torch)-1][1] {
		t.Errorf("the total ends below a tenant")
	}
	if len(rows) != 2 || rows[0].Failed || !rows[1].Failed || rows[0].Colour == rows[1].Colour {
		t.Errorf("rows %+v", rows)
	}
}
