package charts

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"membench/harness"
	"membench/internal/benchtab"
	"membench/internal/fuzzbound"
	"membench/strategies"
	"membench/traces"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const mib = 1 << 20

// smallTrace is a fixed little training-like trace with a clock: two
// steps of forward and backward, a leak-free pattern of activations, and
// one request too large for the 64 MiB device the tests use.
func smallTrace(name string) *traces.SliceReader {
	var evs []traces.Event
	t := int64(0)
	id := uint64(0)
	add := func(e traces.Event) {
		t += 1_000_000 // 1 ms
		e.Time = t
		evs = append(evs, e)
	}
	mark := func(l string) { add(traces.Event{Op: traces.OpMark, Label: l}) }
	alloc := func(size int64) uint64 {
		id++
		add(traces.Event{Op: traces.OpAlloc, ID: id, Size: size})
		return id
	}
	free := func(i uint64) { add(traces.Event{Op: traces.OpFree, ID: i}) }
	weights := alloc(6 * mib)
	for step := 0; step < 2; step++ {
		mark("step:" + string(rune('0'+step)))
		mark("forward")
		var acts []uint64
		for i := 0; i < 5; i++ {
			acts = append(acts, alloc(int64(i+1)*mib+int64(i)*1000+512))
			small := alloc(4096 + int64(i)*64)
			free(small)
		}
		mark("backward")
		if step == 1 {
			free(alloc(200 * mib)) // fails: an OOM on the timeline
		}
		for i := len(acts) - 1; i >= 0; i-- {
			g := alloc(int64(i+1) * mib / 2)
			free(acts[i])
			free(g)
		}
	}
	free(weights)
	return &traces.SliceReader{Events: evs, M: traces.Meta{{Key: "format", Value: "test"}, {Key: "source", Value: name}}}
}

// spikyTrace is long enough that the harness's timeline and then
// Downsample merge buckets, with one-event spikes that must survive.
func spikyTrace(n int) *traces.SliceReader {
	rng := rand.New(rand.NewSource(1))
	var evs []traces.Event
	var live []uint64
	id := uint64(0)
	for len(evs) < n {
		switch {
		case len(evs)%1777 == 0:
			id++ // a one-event spike: allocated and freed at once
			evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: id, Size: int64(rng.Intn(40)+10) * mib, Time: -1},
				traces.Event{Op: traces.OpFree, ID: id, Time: -1})
		case len(live) > 0 && rng.Intn(2) == 0:
			i := rng.Intn(len(live))
			evs = append(evs, traces.Event{Op: traces.OpFree, ID: live[i], Time: -1})
			live = append(live[:i], live[i+1:]...)
		default:
			id++
			live = append(live, id)
			evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: id, Size: int64(rng.Intn(1<<20) + 1), Time: -1})
		}
	}
	for _, i := range live {
		evs = append(evs, traces.Event{Op: traces.OpFree, ID: i, Time: -1})
	}
	return &traces.SliceReader{Events: evs}
}

func replay(t *testing.T, name string, open func() traces.Reader, spec, device string) Run {
	t.Helper()
	dev, err := strategies.ParseDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	opts := harness.DefaultOptions
	opts.FindPeakReserved = true
	res, err := harness.Replay(name, open(), spec, dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := harness.LayoutAt(name, open(), spec, dev, res.PeakLiveEvent)
	if err != nil {
		t.Fatal(err)
	}
	run := Run{Result: res, Device: dev, LiveLayout: l}
	if res.PeakFootprintEvent != res.PeakLiveEvent {
		// As `membench report` does.
		if run.FootprintLayout, err = harness.LayoutAt(name, open(), spec, dev, res.PeakFootprintEvent); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

const capacityResults = `Unit min-capacity-B assume=exact better=lower
BenchmarkCapacity/trace=small/device=a100-40g:capacity=512MiB/strategy=torch 1 253755392 min-capacity-B
BenchmarkCapacity/trace=small/device=a100-40g:capacity=512MiB/strategy=jax 1 310378496 min-capacity-B
`

// smallDevice is the golden tests' device: large enough for torch and
// for jax's default 75 % region (a preallocation the state map cuts at its
// peak footprint), too small for jax:mem_fraction=0.3, which does not fit
// (its first OOM is the 200 MiB request at event 52).
const smallDevice = "a100-40g:capacity=512MiB"

// smallReport is the golden tests' fixed input.
func smallReport(t *testing.T, withCapacity bool) *Report {
	t.Helper()
	rep := &Report{Command: "membench report --trace small"}
	for _, s := range []string{"torch", "jax", "torch:expandable_segments=true", "jax:mem_fraction=0.3"} {
		rep.Runs = append(rep.Runs, replay(t, "small", func() traces.Reader { return smallTrace("small") }, s, smallDevice))
	}
	if withCapacity {
		ms, err := ReadResults(strings.NewReader(capacityResults), "capacity.txt")
		if err != nil {
			t.Fatal(err)
		}
		rep.Measurements = ms
		rep.Sources = []Source{{"capacity.txt", len(ms)}}
	}
	return rep
}

// TestGoldenOptions compares every chart's option for the fixed input
// with testdata/<chart id>.golden (go test -update rewrites them).
func TestGoldenOptions(t *testing.T) {
	cs, err := Charts(smallReport(t, true))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
		var b bytes.Buffer
		if err := json.Indent(&b, c.Option, "", "  "); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		b.WriteByte('\n')
		p := filepath.Join("testdata", c.ID+".golden")
		if *update {
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: option differs from %s (go test ./charts -update rewrites it after a deliberate change)\n%s", c.ID, p, firstDiff(b.String(), string(want)))
		}
	}
	want := []string{"chart-timeline-0", "chart-peaks", "chart-frag", "chart-frag-policy", "chart-state-0", "chart-capacity"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("charts %v, want %v", ids, want)
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return ""
}

func itoa(i int) string { return strings.TrimSpace(fmtFixed(float64(i), 0)) }

// TestGoldenContent checks what the golden files stand for, so that an
// -update cannot bless a wrong chart unnoticed.
func TestGoldenContent(t *testing.T) {
	rep := smallReport(t, true)
	cs, err := Charts(rep)
	if err != nil {
		t.Fatal(err)
	}
	opt := map[string]map[string]any{}
	for _, c := range cs {
		var v map[string]any
		if err := json.Unmarshal(c.Option, &v); err != nil {
			t.Fatal(err)
		}
		opt[c.ID] = v
	}
	tl := opt["chart-timeline-0"]
	names := seriesNames(tl)
	for _, want := range []string{"live", "live · jax:mem_fraction=0.3", "reserved · torch", "reserved · jax", "reserved · torch:expandable_segments=true", "OOM · jax:mem_fraction=0.3", "capacity · a100-40g:capacity=512MiB (512 MiB)"} {
		if !contains(names, want) {
			t.Errorf("timeline lacks series %q (has %v)", want, names)
		}
	}
	if dz := tl["dataZoom"].([]any); len(dz) != 2 {
		t.Errorf("timeline dataZoom %v, want inside and slider", dz)
	}
	live := tl["series"].([]any)[0].(map[string]any)
	if live["name"] != "live" {
		t.Errorf("first series %v, want live (the runs that fit share it)", live["name"])
	}
	if live["step"] != "end" || live["markArea"] == nil || live["markLine"] == nil {
		t.Errorf("live series: step %v, markArea %v, markLine %v", live["step"], live["markArea"] != nil, live["markLine"] != nil)
	}
	st := seriesNames(opt["chart-state-0"])
	if strings.Join(st, ",") != "cached free,allocated,pending free,unmapped,preallocated, never used,segment" {
		t.Errorf("state series %v", st)
	}
	if !strings.Contains(string(mustJSON(t, opt["chart-capacity"])), "a100-80g") {
		t.Error("capacity chart lacks the a100-80g preset line")
	}
}

func seriesNames(opt map[string]any) []string {
	var ns []string
	for _, s := range opt["series"].([]any) {
		ns = append(ns, s.(map[string]any)["name"].(string))
	}
	return ns
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDownsampleKeepsMaxima: whatever the input and the limit, the
// output is short enough, starts where the input starts, and keeps the
// maximum of live and of reserved bytes exactly; each output sample is
// the maximum of the run it stands for.
func TestDownsampleKeepsMaxima(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		n := rng.Intn(5000)
		s := make([]harness.Sample, n)
		for i := range s {
			s[i] = harness.Sample{Event: int64(i * 3), Time: -1, Live: rng.Int63n(1 << 30), Reserved: rng.Int63n(1 << 32)}
		}
		if n > 0 && trial%2 == 0 { // one spike somewhere
			s[rng.Intn(n)].Reserved = 1 << 40
			s[rng.Intn(n)].Live = 1 << 39
		}
		limit := rng.Intn(1200) + 1
		d := Downsample(s, limit)
		if len(d) > limit {
			t.Fatalf("n %d limit %d: %d samples", n, limit, len(d))
		}
		if n == 0 {
			continue
		}
		if d[0].Event != s[0].Event {
			t.Fatalf("first event %d, want %d", d[0].Event, s[0].Event)
		}
		var ml, mr, dl, dr int64
		for _, x := range s {
			ml, mr = max(ml, x.Live), max(mr, x.Reserved)
		}
		for _, x := range d {
			dl, dr = max(dl, x.Live), max(dr, x.Reserved)
		}
		if ml != dl || mr != dr {
			t.Fatalf("n %d limit %d: maxima live %d reserved %d, want %d %d", n, limit, dl, dr, ml, mr)
		}
		// Each output sample is the maximum of its run of inputs.
		j := 0
		for i, x := range d {
			end := n
			if i+1 < len(d) {
				for end = j; s[end].Event != d[i+1].Event; end++ {
				}
			}
			var l, r int64
			for _, y := range s[j:end] {
				l, r = max(l, y.Live), max(r, y.Reserved)
			}
			if x.Live != l || x.Reserved != r || x.Event != s[j].Event {
				t.Fatalf("sample %d is not the maximum of its run", i)
			}
			j = end
		}
	}
}

// TestTimelineKeepsPeaks: on the page, the live series of a long trace
// peaks at exactly the Result's peak live bytes and each reserved series
// at the maximum of its timeline, although the chart has fewer points
// than the timeline.
func TestTimelineKeepsPeaks(t *testing.T) {
	open := func() traces.Reader { return spikyTrace(60000) }
	rep := &Report{}
	for _, s := range []string{"torch", "jax:preallocate=false"} {
		rep.Runs = append(rep.Runs, replay(t, "spiky", open, s, "a100-80g"))
	}
	cs, err := Charts(rep)
	if err != nil {
		t.Fatal(err)
	}
	var opt struct {
		Series []struct {
			Name string
			Data [][]float64
		}
	}
	if err := json.Unmarshal(cs[0].Option, &opt); err != nil {
		t.Fatal(err)
	}
	for _, s := range opt.Series {
		m := 0.0
		for _, p := range s.Data {
			m = max(m, p[1])
		}
		var want float64
		switch {
		case s.Name == "live":
			want = float64(rep.Runs[0].Result.PeakLive)
		case strings.HasPrefix(s.Name, "reserved · "):
			for _, r := range rep.Runs {
				if "reserved · "+r.Result.Strategy == s.Name {
					if len(r.Result.Timeline) <= len(s.Data) {
						t.Errorf("%s: %d points for %d samples: nothing was downsampled", s.Name, len(s.Data), len(r.Result.Timeline))
					}
					for _, x := range r.Result.Timeline {
						want = max(want, float64(x.Reserved))
					}
				}
			}
		default:
			continue
		}
		if len(s.Data) > MaxPoints {
			t.Errorf("%s: %d points, over %d", s.Name, len(s.Data), MaxPoints)
		}
		if m != want {
			t.Errorf("%s: maximum %v, want %v", s.Name, m, want)
		}
	}
}

// TestWriteDeterministic: two reports of the same inputs, each replayed
// afresh, are byte-identical.
func TestWriteDeterministic(t *testing.T) {
	var pages [2]bytes.Buffer
	for i := range pages {
		if err := Write(&pages[i], smallReport(t, true)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(pages[0].Bytes(), pages[1].Bytes()) {
		t.Fatal("two pages of the same inputs differ")
	}
}

// TestPageSelfContained: ECharts is inlined, nothing is fetched, no
// capacity results make a sentence and not an empty chart, and user
// strings cannot end a script element.
func TestPageSelfContained(t *testing.T) {
	hostile := `x</script><script>alert(1)</script>`
	rep := &Report{}
	r := replay(t, hostile, func() traces.Reader {
		tr := smallTrace(hostile)
		tr.Events[1].Label = hostile // a phase mark
		return tr
	}, "torch", smallDevice)
	rep.Runs = append(rep.Runs, r)
	var b bytes.Buffer
	if err := Write(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a trace name or mark label escaped into the page's HTML")
	}
	if !strings.Contains(page, echartsJS[len(echartsJS)-200:]) {
		t.Error("ECharts is not inlined")
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(page); m != "" {
		t.Errorf("page references %q", m)
	}
	if !strings.Contains(page, "No capacity results") || strings.Contains(page, `data-chart="chart-capacity"`) {
		t.Error("a page without capacity results should say so, with no capacity chart")
	}
	// Every chart option is JSON.
	re := regexp.MustCompile(`<script type="application/json" class="chart-option" data-chart="([^"]+)">([^<]*)</script>`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		n++
		if !json.Valid([]byte(m[2])) {
			t.Errorf("%s: option is not JSON", m[1])
		}
	}
	if n != 5 {
		t.Errorf("%d charts, want 5 (timeline, state, peaks, frag, frag-policy)", n)
	}
}

func TestReadResults(t *testing.T) {
	ms, err := ReadResults(strings.NewReader(capacityResults+"BenchmarkReplay/trace=a/device=b/strategy=torch:expandable_segments=true 1 5 peak-live-B 7 modeled-alloc-sec\n"), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d results", len(ms))
	}
	m := ms[2]
	if m.Trace != "a" || m.Device != "b" || m.Strategy != "torch:expandable_segments=true" || m.Line != 4 {
		t.Errorf("parsed %+v", m)
	}
	if v, ok := m.Get("modeled-alloc-sec"); !ok || v != 7 {
		t.Errorf("modeled-alloc-sec = %v, %v (the unit must stay as written)", v, ok)
	}
	_, err = ReadResults(strings.NewReader("Unit x-B assume=exact\nUnit x-B assume=nothing\n"), "bad.txt")
	if err == nil || !strings.Contains(err.Error(), "bad.txt:2") {
		t.Errorf("error %v, want one at bad.txt:2", err)
	}
	// NaN and infinities are no measurement (a report drew them as
	// nothing, silently).
	for _, c := range []struct{ in, want string }{
		{"BenchmarkCapacity/trace=a/device=b/strategy=tf 1 5 min-card-B\nBenchmarkCapacity/trace=a/device=b/strategy=torch 1 NaN min-card-B\n", "nan.txt:2: min-card-B: NaN is not a finite number"},
		{"BenchmarkCapacity/trace=a/device=b/strategy=tf 1 5 min-card-B +Inf fit\n", "nan.txt:1: fit: +Inf is not a finite number"},
	} {
		if _, err := ReadResults(strings.NewReader(c.in), "nan.txt"); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	// A file cut short in its last line is refused at that line: cut in
	// a unit's name, the row read with a unit that is not there.
	cut := "BenchmarkReplay/trace=a/device=b/strategy=tf 1 5 peak-live-B 7 modeled-alloc-sec\nBenchmarkReplay/trace=a/device=b/strategy=torch 1 5 peak-live-B 7 modeled-al"
	if _, err := ReadResults(strings.NewReader(cut), "cut.txt"); err == nil || err.Error() != "cut.txt:2: "+benchtab.ErrCutShort.Error() {
		t.Errorf("cut short: error %v", err)
	}
	if _, err := ReadResults(strings.NewReader(cut+"\n"), "cut.txt"); err != nil {
		t.Errorf("with its newline: %v", err)
	}
	// A line too long for benchfmt's reader is named, once, with the
	// limit: the reader named the line before it, and "token too long".
	long := cut + "\n# " + strings.Repeat("x", 70000) + "\n"
	if _, err := ReadResults(strings.NewReader(long), "long.txt"); err == nil || !strings.HasPrefix(err.Error(), "long.txt:3: a line longer than 65535 bytes") {
		t.Errorf("a long line: error %v", err)
	}
}

// FuzzReadResults reads any input as `membench report --results` does,
// under fuzzbound's bound: results or an error, never a panic or a hang,
// and every result it keeps is named by its file and a line.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(capacityResults))
	f.Add([]byte("Unit x-B assume=exact\nBenchmarkReplay/trace=a/device=b/strategy=torch 1 5 peak-live-B 7 modeled-alloc-sec\n"))
	f.Add([]byte("BenchmarkPlacement/trace=a 1 NaN min-card-B\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzbound.Check(t, func() {
			ms, err := ReadResults(bytes.NewReader(b), "fuzz.txt")
			if err != nil {
				return
			}
			for _, m := range ms {
				if m.File != "fuzz.txt" || m.Line < 1 {
					t.Fatalf("result %+v is not placed in its file", m)
				}
				for _, v := range m.Values {
					if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
						t.Fatalf("result %+v keeps a value that is not finite", m)
					}
				}
			}
		})
	})
}

// TestStateAggregates: a layout of 200,000 small blocks becomes at most
// about a thousand rectangles a row, keeps every byte, and an aggregate
// says how many blocks it stands for.
func TestStateAggregates(t *testing.T) {
	var l []strategies.Segment
	addr := int64(1 << 30)
	for s := 0; s < 20; s++ {
		seg := strategies.Segment{Addr: addr, Size: 10000 * 4096, Pool: "large"}
		for b := 0; b < 10000; b++ {
			st := strategies.BlockAllocated
			if b%3 == 0 {
				st = strategies.BlockFree
			}
			seg.Blocks = append(seg.Blocks, strategies.Block{Addr: addr + int64(b)*4096, Size: 4096, Requested: 4000, State: st})
		}
		l = append(l, seg)
		addr += seg.Size + 1<<20
	}
	var blocks [len(stateNames)][]blockItem
	var segs []segItem
	stateItems(0, l, 0, false, &blocks, &segs)
	n, bytes, count := 0, 0.0, 0.0
	for _, bs := range blocks {
		n += len(bs)
		for _, b := range bs {
			bytes += b[3]
			count += b[5]
		}
	}
	if n > 1100 {
		t.Errorf("%d rectangles for one row", n)
	}
	if bytes != 20*10000*4096 || count != 200000 {
		t.Errorf("aggregates hold %v bytes in %v blocks, want %v in 200000", bytes, count, 20*10000*4096)
	}
	if len(segs) != 20 || segs[19].Value[1] != 100 {
		t.Errorf("%d segments, last ends at %v%%", len(segs), segs[len(segs)-1].Value[1])
	}
}

// Charts returns the report's charts in page order, each with its option
// JSON.
func Charts(rep *Report) ([]Chart, error) {
	p, err := build(rep)
	if err != nil {
		return nil, err
	}
	var cs []Chart
	for _, s := range p.Timelines {
		cs = append(cs, s.Chart)
	}
	for _, s := range p.Peaks {
		cs = append(cs, s.Chart)
	}
	for _, s := range p.States {
		cs = append(cs, s.Chart)
	}
	if p.Capacity != nil {
		cs = append(cs, p.Capacity.Chart)
	}
	return cs, nil
}

// TestManyTracesAndUnits: a results file of thousands of traces, or of
// thousands of units, makes a page in time linear in it. The page looked
// up every strategy's colour by rebuilding the groups for each group
// (cubic: 1,000 traces took 2.8 s, 2,000 more than 5 s) and searched
// the measurements for each strategy and unit (quadratic: 4,000 results
// of 10 units, 4.5 s). Both now take well under a second; the bound is
// generous for a shared machine, and far below the old cost.
func TestManyTracesAndUnits(t *testing.T) {
	var traces, units strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&traces, "BenchmarkReplay/trace=t%d/device=a100-80g/strategy=torch 1 1 fit %d peak-live-B\n", i, i+1)
		fmt.Fprintf(&units, "BenchmarkReplay/trace=a/device=a100-80g/strategy=torch 1")
		for j := range 10 {
			fmt.Fprintf(&units, " %d u%d-%d-B", j, i, j)
		}
		units.WriteString("\n")
	}
	for name, in := range map[string]string{"traces": traces.String(), "units": units.String()} {
		ms, err := ReadResults(strings.NewReader(in), name+".txt")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- Write(io.Discard, &Report{Measurements: ms}) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: a page of 4,000 results took more than 20 s", name)
		}
	}
}

// TestManyCapacityGroups: a page of capacity results without peak live
// bytes (a capacity file cut down to its min-capacity-B column, or an
// older membench's) collects the groups a bounded number of times, not
// once for each group's peak live bytes (peakLive looked in the other
// groups of its trace for them: 25,000 results in 6,250 groups took 74 s,
// 2026-11-25); and each group's figure is the one that search finds.
func TestManyCapacityGroups(t *testing.T) {
	var in strings.Builder
	for i := range 4000 {
		// Four devices and four strategies a trace; the first
		// trace's first group alone has peak live bytes.
		fmt.Fprintf(&in, "BenchmarkCapacity/trace=t%d/device=d%d/strategy=s%d 1 %d min-capacity-B", i/16, i%4, i/4%4, 1<<20+i)
		if i == 0 {
			fmt.Fprintf(&in, " 4096 peak-live-B")
		}
		in.WriteString("\n")
	}
	ms, err := ReadResults(strings.NewReader(in.String()), "caps.txt")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Measurements: ms}
	before := groupsMade.Load()
	if err := Write(io.Discard, rep); err != nil {
		t.Fatal(err)
	}
	groups := len(rep.groups())
	if n := groupsMade.Load() - before; n > 20 {
		t.Errorf("a page of %d groups collected them %d times", groups, n)
	}
	// build's figures against the search of the other groups.
	own := *rep
	own.tracePeaks = rep.tracePeaksOf()
	found := 0
	for _, g := range rep.groups() {
		v, ok := rep.peakLive(g)
		w, wok := own.peakLive(g)
		if v != w || ok != wok {
			t.Fatalf("group %s on %s: peak live %v %v, searched %v %v", g.trace, g.device, w, wok, v, ok)
		}
		if ok {
			found++
		}
	}
	if found != 4 {
		t.Errorf("%d groups have peak live bytes, want the first trace's 4", found)
	}

	// One group of 2,000 strategies, as capacity searches over a knob
	// grid write: its peak live bytes are read from its results once
	// a collection of the groups, not once for each strategy.
	in.Reset()
	for i := range 2000 {
		fmt.Fprintf(&in, "BenchmarkCapacity/trace=t/device=a100-80g/strategy=torch:max_split_size_mb=%d 1 %d peak-live-B %d min-capacity-B\n", 21+i, 1<<20, 2<<20+i)
	}
	if ms, err = ReadResults(strings.NewReader(in.String()), "grid.txt"); err != nil {
		t.Fatal(err)
	}
	before, reads := groupsMade.Load(), peakReads.Load()
	if err := Write(io.Discard, &Report{Measurements: ms}); err != nil {
		t.Fatal(err)
	}
	if n, made := peakReads.Load()-reads, groupsMade.Load()-before; n > made {
		t.Errorf("a page of one group of 2,000 strategies read its peak live bytes %d times in %d collections of the groups", n, made)
	}
}

// TestManyStrategiesReplayed: a page of a trace replayed under many
// strategies (a knob grid) makes the report's strategy order and names
// each run a bounded number of times: the state map made the order again
// for each run, and every metric named every run until it found its
// strategy, which made 1,000 strategies take 95 s (2026-11-25).
func TestManyStrategiesReplayed(t *testing.T) {
	open := func() traces.Reader {
		return &traces.SliceReader{Events: []traces.Event{
			{Op: traces.OpAlloc, ID: 1, Size: 4096, Time: -1}, {Op: traces.OpFree, ID: 1, Time: -1}}}
	}
	const n = 300
	rep := &Report{}
	for i := range n {
		rep.Runs = append(rep.Runs, replay(t, "tiny", open, fmt.Sprintf("torch:max_split_size_mb=%d", 21+i), "a100-80g"))
	}
	orders, keys := ordersMade.Load(), keysMade.Load()
	if err := Write(io.Discard, rep); err != nil {
		t.Fatal(err)
	}
	if o, k := ordersMade.Load()-orders, keysMade.Load()-keys; o > 20 || k > 100*n {
		t.Errorf("a page of %d strategies made their order %d times (want at most 20) and named the runs %d times (want at most %d)", n, o, k, 100*n)
	}
}
