package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"membench/jaxlike/jit"
	"membench/strategies"
	"membench/traces"
)

// compiledTrace is one launch of an executable step with every kind of
// buffer: the weights (1, eager) donated to the new weights (6), a batch
// (2), the launch's views of its parameters (3, 4), a loss (5), a temp (7)
// and a constant (8).
const compiledTrace = `membench-trace 2
a 1 1000 eager
a 2 100 device_put
b step
a 3 100 parameter
a 4 1000 parameter
a 5 8 output
a 6 1000 output donor=1
a 7 5000 temp
a 8 16 constant
e step
f 7
f 8
f 3
f 4
f 2
f 1
f 5
f 6
`

func readText(t *testing.T, text string) *traces.SliceReader {
	t.Helper()
	r, err := traces.NewNativeReader("t.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := traces.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return &traces.SliceReader{Events: evs, Version: traces.FormatVersion(r)}
}

// TestCompiledReplay: before (a trace), ops (a strategy's mode), after
// (the allocator calls, the bytes live at peak, what was elided, and the
// note that says which mode ran).
func TestCompiledReplay(t *testing.T) {
	// One eager JAX program of the same buffers: a version-1 trace.
	eager := "membench-trace 1\na 1 1000\na 2 100\na 5 8\na 7 5000\nf 7\nf 2\nf 1\nf 5\n"
	cases := []struct {
		name, trace, spec, dev string
		allocs, frees, elided  int64
		peakLive               int64
		execution              string // a substring of Result.Execution
	}{
		// Parameters and constants allocate nothing, the new weights
		// take the old ones' memory: 1, 2, 5, 7 allocate.
		{"jax default", compiledTrace, "jax", "a100-80g", 4, 4, 8, 1000 + 100 + 8 + 5000, "replayed compiled (default, as the trace has executable launches): 1 launches"},
		{"jax jit=true", compiledTrace, "jax:jit=true", "a100-80g", 4, 4, 8, 6108, "replayed compiled (jit=true)"},
		{"jax platform", compiledTrace, "jax:allocator=platform", "a100-80g", 4, 4, 8, 6108, "replayed compiled"},
		{"tf jit_compile", compiledTrace, "tf:jit_compile=true", "a100-80g", 4, 4, 8, 6108, "replayed compiled (jit_compile=true)"},
		// Op by op, every buffer is allocated as recorded.
		{"jax jit=false", compiledTrace, "jax:jit=false", "a100-80g", 8, 8, 0, 8224, "replayed op by op (jit=false)"},
		{"JAX_DISABLE_JIT", compiledTrace, "jax:JAX_DISABLE_JIT=1", "a100-80g", 8, 8, 0, 8224, "replayed op by op (jit=false)"},
		{"tf default", compiledTrace, "tf", "a100-80g", 8, 8, 0, 8224, "(jit_compile=false, TensorFlow's default"},
		{"torch", compiledTrace, "torch", "a100-80g", 8, 8, 0, 8224, "this strategy has no model of compiled executables"},
		{"jax per op on a TPU", compiledTrace, "jax:jit=false", "tpu-v4", 8, 8, 0, 8224, "replayed op by op"},
		// A trace without launches replays as before, and says so.
		{"jax eager trace", eager, "jax", "a100-80g", 4, 4, 0, 6108, "the trace has no executable launches"},
		{"torch eager trace", eager, "torch", "a100-80g", 4, 4, 0, 6108, ""},
	}
	for _, c := range cases {
		res, err := Replay("t", readText(t, c.trace), c.spec, device(t, c.dev), Options{Check: true})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if res.Allocs != c.allocs || res.Frees != c.frees || res.Elided != c.elided || res.PeakLive != c.peakLive {
			t.Errorf("%s: allocs %d frees %d elided %d peak live %d; want %d %d %d %d", c.name, res.Allocs, res.Frees, res.Elided, res.PeakLive, c.allocs, c.frees, c.elided, c.peakLive)
		}
		if !strings.Contains(res.Execution, c.execution) || (c.execution == "") != (res.Execution == "") {
			t.Errorf("%s: execution %q, want %q", c.name, res.Execution, c.execution)
		}
		if res.Events != int64(strings.Count(c.trace, "\n")-1) {
			t.Errorf("%s: %d events", c.name, res.Events)
		}
	}
	// On the platform allocator every allocator call is a device call.
	res, err := Replay("t", readText(t, compiledTrace), "jax:allocator=platform", device(t, "a100-80g"), DefaultOptions)
	if err != nil || res.DeviceMallocs != 4 || res.DeviceFrees != 4 {
		t.Errorf("platform: %v, %d device mallocs, %d frees; want 4 and 4", err, res.DeviceMallocs, res.DeviceFrees)
	}
}

// TestCompiledRefusals: what a compiled replay cannot model is an error
// naming the file and the event, not an approximation.
func TestCompiledRefusals(t *testing.T) {
	cases := []struct{ name, trace, spec, dev, want string }{
		{"jit=true without launches", "membench-trace 1\na 1 8\n", "jax:jit=true", "a100-80g",
			"t: jax:jit=true: the trace has no executable launches"},
		{"jit_compile without launches", "membench-trace 1\na 1 8\n", "tf:jit_compile=true", "a100-80g",
			"tf:jit_compile=true: the trace has no executable launches"},
		{"two temps in a launch on a TPU", "membench-trace 2\nb f\na 1 8 temp\na 2 8 temp\ne f\n", "jax", "tpu-v4",
			`t.txt:4 (event 2): a second temp in one launch of "f" on a TPU`},
		{"larger output", "membench-trace 2\na 1 8 device_put\nb f\na 2 16 output donor=1\ne f\n", "jax", "a100-80g",
			"t.txt:4 (event 2): output 2 of 16 bytes is aliased to donated input 1 of 8 bytes"},
		{"donor twice", "membench-trace 2\na 1 8 device_put\nb f\na 2 8 output donor=1\na 3 8 output donor=1\ne f\n", "jax:jit=false", "a100-80g",
			"t.txt:5 (event 3): output 3: bad donor: id 1 was donated already"},
		{"launch never ends", "membench-trace 2\nb f\n", "torch", "a100-80g",
			`the launch of "f" begun at event 0 never ends`},
		{"temp outside", "membench-trace 2\na 1 8 temp\n", "jax", "a100-80g",
			"t.txt:2 (event 0): bad launch: a temp allocation outside any launch"},
	}
	for _, c := range cases {
		r, err := traces.NewNativeReader("t.txt", strings.NewReader(c.trace))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Replay("t", r, c.spec, device(t, c.dev), DefaultOptions)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestDonatedChain: a donated buffer passes from step to step; only the
// first allocation of the weights is ever made, and frees of donors free
// nothing. A donor that is a parameter (memory outside the replay) gives
// an output outside it too.
func TestDonatedChain(t *testing.T) {
	var b strings.Builder
	b.WriteString("membench-trace 2\na 1 1000 eager\n")
	for s := 0; s < 3; s++ {
		id := 2 + s
		b.WriteString("b step\n")
		b.WriteString("a " + strconv.Itoa(id) + " 1000 output donor=" + strconv.Itoa(id-1) + "\n")
		b.WriteString("a 100 64 temp\ne step\nf 100\nf " + strconv.Itoa(id-1) + "\n")
	}
	b.WriteString("b g\na 200 8 parameter\na 201 8 output donor=200\ne g\nf 200\nf 201\nf 4\n")
	res, err := Replay("chain", readText(t, b.String()), "jax", device(t, "a100-80g"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	// Allocations: the weights once, a temp per step.
	if res.Allocs != 4 || res.Frees != 4 || res.PeakLive != 1064 || res.Launches != 4 {
		t.Errorf("allocs %d frees %d peak live %d launches %d; want 4 4 1064 4", res.Allocs, res.Frees, res.PeakLive, res.Launches)
	}
}

// TestCompiledOnTPU: on a TPU a launch's temp is its executable's program
// reservation (allocator-spec §6.4): loaded at the executable's first
// launch, reused while loaded, reloaded after an eviction; outputs stay
// buffers. Each case is a trace (launches of step with a temp of 5000 B
// unless said), a device, and what the replay did.
func TestCompiledOnTPU(t *testing.T) {
	launch := func(exe string, id, temp int) string {
		return "b " + exe + "\na " + strconv.Itoa(id) + " " + strconv.Itoa(temp) + " temp\ne " + exe + "\nf " + strconv.Itoa(id) + "\n"
	}
	cases := []struct {
		name, trace, spec, dev       string
		allocs, frees                int64
		loads, reloads, reuses, ooms int64
		reserved, peakLive           int64 // reserved: the program bytes loaded at the end
	}{
		{"the compiled trace: the temp is a program, the rest as on a GPU", compiledTrace, "jax", "tpu-v4",
			3, 3, 1, 0, 0, 0, 5000, 6108},
		{"tf with jit_compile", compiledTrace, "tf:jit_compile=true", "tpu-v4",
			3, 3, 1, 0, 0, 0, 5000, 6108},
		{"three launches of one executable load it once", "membench-trace 2\n" + launch("step", 1, 5000) + launch("step", 2, 5000) + launch("step", 3, 5000), "jax", "tpu-v4",
			0, 0, 1, 0, 2, 0, 5000, 5000},
		{"two executables, two programs, both kept", "membench-trace 2\n" + launch("f", 1, 5000) + launch("g", 2, 3000) + launch("f", 3, 5000) + launch("g", 4, 3000), "jax", "tpu-v4",
			0, 0, 2, 0, 2, 0, 5000 + 3000, 5000},
		{"a temp of another size is another program (a retraced executable)", "membench-trace 2\n" + launch("step", 1, 5000) + launch("step", 2, 6000) + launch("step", 3, 5000), "jax", "tpu-v4",
			0, 0, 2, 0, 1, 0, 5000 + 6000, 6000},
		// A heap of 9,984 B: a 6,000 B buffer between launches needs the
		// program's room, evicts it, and the next launch reloads it.
		{"a buffer evicts the program; the next launch reloads it", "membench-trace 2\n" + launch("step", 1, 5000) + "a 10 6000 eager\nf 10\n" + launch("step", 2, 5000) + launch("step", 3, 5000), "jax", "tpu-v4:capacity=10000B",
			1, 1, 1, 1, 1, 0, 5000, 6000},
		{"a program larger than the heap is an OOM, and the replay goes on", "membench-trace 2\n" + launch("step", 1, 20000) + "a 10 64 eager\nf 10\n", "jax", "tpu-v4:capacity=10000B",
			1, 1, 0, 0, 0, 1, 0, 64},
		{"op by op the temp is a buffer", "membench-trace 2\n" + launch("step", 1, 5000) + launch("step", 2, 5000), "jax:jit=false", "tpu-v4",
			2, 2, 0, 0, 0, 0, 0, 5000},
	}
	for _, c := range cases {
		mem := strategies.NewMemory(ptr(device(t, c.dev)))
		a, sp, err := NewAllocator(c.spec, mem)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ReplayWith("t", readText(t, c.trace), a, sp.String(), Options{Check: true})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := []int64{res.Allocs, res.Frees, res.ProgramLoads, res.ProgramReloads, res.ProgramReuses, res.OOMCount, a.(interface{ Reserved() int64 }).Reserved(), res.PeakLive}
		want := []int64{c.allocs, c.frees, c.loads, c.reloads, c.reuses, c.ooms, c.reserved, c.peakLive}
		if !slices.Equal(got, want) {
			t.Errorf("%s: allocs, frees, loads, reloads, reuses, ooms, reserved, peak live = %v, want %v", c.name, got, want)
		}
		if c.loads > 0 && !strings.Contains(res.Execution, fmt.Sprintf("program loads %d, reloads after an eviction %d, launches that reused a loaded program %d", c.loads, c.reloads, c.reuses)) {
			t.Errorf("%s: execution %q", c.name, res.Execution)
		}
		if c.ooms > 0 && !strings.Contains(res.OOMs[0].Message, "Error loading program") {
			t.Errorf("%s: OOM %q", c.name, res.OOMs[0].Message)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestJitFalseIsToday: on a per-op trace (no executable launches) jax and
// jax:jit=false give the same results, figure for figure, as the replay
// before compiled execution existed gave jax.
func TestJitFalseIsToday(t *testing.T) {
	src, err := ResolveTrace("gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dev, _ := strategies.ParseDevice("a100-80g")
	var rows []string
	for _, spec := range []string{"jax", "jax:jit=false"} {
		res, err := ReplayJob(Job{Source: src, Device: dev, Spec: spec}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := ResultRow(res)
		var b strings.Builder
		for k, u := range row.Units {
			fmt.Fprintf(&b, "%s=%v ", u, row.Values[k])
		}
		fmt.Fprintf(&b, "allocs=%d frees=%d mallocs=%d", res.Allocs, res.Frees, res.DeviceMallocs)
		rows = append(rows, b.String())
	}
	if rows[0] != rows[1] {
		t.Errorf("jax and jax:jit=false differ on a per-op trace:\n%s\n%s", rows[0], rows[1])
	}
}

// TestPlannerOnCompiledTrace: the offline plan reads an executable's
// launches as phases and packs every buffer the trace records.
func TestPlannerOnCompiledTrace(t *testing.T) {
	r, err := traces.OpenReader("compiled", strings.NewReader(compiledTrace), traces.DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := strategies.ParseDevice("a100-80g")
	res, err := Replay("compiled", r, "planner", dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.OOMCount != 0 || res.PeakFootprint < res.PeakLive || res.Launches == 0 {
		t.Errorf("planner on a compiled trace: %d OOMs, footprint %d, peak live %d, %d launches", res.OOMCount, res.PeakFootprint, res.PeakLive, res.Launches)
	}
}

// TestPlannerThatDoesNotFit: a plan whose arena does not fit on the
// device cannot run, and its row says so (fit 0, every allocation failed,
// nothing reserved) while still describing the plan as a plan that fits
// does: the same arena, the trace's peak live at the same event, and the
// same placement-frag-%, not a replayed peak live of 0 that read as a
// plan wasting its whole arena.
func TestPlannerThatDoesNotFit(t *testing.T) {
	evs := loadCorpus(t, "gpt-train")
	run := func(dev string) *Result {
		t.Helper()
		d, err := strategies.ParseDevice(dev)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Replay("gpt-train", &traces.SliceReader{Events: evs}, "planner", d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	fits, not := run("a100-80g"), run("a100-40g:capacity=600MiB")
	if !fits.Fit() || not.Fit() || not.FirstOOMEvent() != 0 || not.PeakReserved != 0 {
		t.Fatalf("fit %v and %v, first OOM %d, reserved %d: want a plan that fits on a100-80g and none on 600 MiB",
			fits.Fit(), not.Fit(), not.FirstOOMEvent(), not.PeakReserved)
	}
	if not.PeakLive != fits.PeakLive || not.PeakLiveEvent != fits.PeakLiveEvent || not.PeakFootprint != fits.PeakFootprint ||
		not.PlacementFragPct() != fits.PlacementFragPct() || not.PeakLive == 0 {
		t.Errorf("plan that does not fit: peak live %d at %d, arena %d, placement-frag %.3f%%; "+
			"the plan that fits: %d at %d, %d, %.3f%%", not.PeakLive, not.PeakLiveEvent, not.PeakFootprint, not.PlacementFragPct(),
			fits.PeakLive, fits.PeakLiveEvent, fits.PeakFootprint, fits.PlacementFragPct())
	}
}

// TestJaxCallsPerCompiledStep counts the allocator calls jax makes in
// each step of gpt-train compiled by traces compile: the launch's
// non-donated outputs and its one temp, about 2 + outputs (allocator-spec
// §6.1), against thousands a step op by op.
func TestJaxCallsPerCompiledStep(t *testing.T) {
	src, err := ResolveTrace("gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sr, err := CompileTrace(src, CompileOptions{Donate: jit.DonateAuto})
	if err != nil {
		t.Fatal(err)
	}
	// What each launch asks of the allocator, read from the trace.
	var want []int
	for _, e := range sr.Events {
		switch {
		case e.Op == traces.OpLaunch:
			want = append(want, 0)
		case e.Op == traces.OpAlloc && len(want) > 0 && (e.Kind == traces.KindTemp || e.Kind == traces.KindOutput && !e.Donated):
			want[len(want)-1]++
		}
	}
	dev, _ := strategies.ParseDevice("a100-80g")
	a, _, err := NewAllocator("jax", strategies.NewMemory(&dev))
	if err != nil {
		t.Fatal(err)
	}
	calls := &callCounter{Allocator: a}
	if _, err := ReplayWith("gpt-train-compiled", &launchReader{r: sr, c: calls}, calls, "jax", Options{}); err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || len(calls.perLaunch) != 3 {
		t.Fatalf("launches: %d in the trace, %d replayed", len(want), len(calls.perLaunch))
	}
	// Step 0 creates the optimizer's state (outputs that live on); the
	// steady steps donate every updated buffer and ask for the temp alone
	// (one Allocate, and its free: the "2").
	for k := range want {
		if calls.perLaunch[k] != want[k] || k > 0 && want[k] > 10 {
			t.Errorf("step %d: jax made %d allocator calls; the launch has %d non-donated outputs and temps", k, calls.perLaunch[k], want[k])
		}
	}
	t.Logf("jax's allocator calls per compiled step: %v", calls.perLaunch)
}

// callCounter counts the Malloc calls an allocator receives inside each
// launch (launchReader says when one begins and ends).
type callCounter struct {
	strategies.Allocator
	perLaunch []int
	in        bool
}

func (c *callCounter) Malloc(n, stream int64) (strategies.Handle, bool) {
	if c.in {
		c.perLaunch[len(c.perLaunch)-1]++
	}
	return c.Allocator.Malloc(n, stream)
}

// launchReader tells a callCounter where launches begin and end. It
// serves events one at a time (it is no traces.BatchReader), so that
// every event passes through Next.
type launchReader struct {
	r *traces.SliceReader
	c *callCounter
}

func (l *launchReader) Meta() traces.Meta { return l.r.Meta() }
func (l *launchReader) Pos() traces.Pos   { return l.r.Pos() }
func (l *launchReader) Close() error      { return l.r.Close() }

func (l *launchReader) Next() (traces.Event, error) {
	e, err := l.r.Next()
	switch {
	case err != nil:
	case e.Op == traces.OpLaunch:
		l.c.perLaunch, l.c.in = append(l.c.perLaunch, 0), true
	case e.Op == traces.OpLaunchEnd:
		l.c.in = false
	}
	return e, err
}

// TestPlannerLayoutIsThePlan: the report's layouts of a plan (LayoutAt)
// are the plan of the whole trace at the chosen event, the arena its
// replay reports, holding the live bytes of that moment; and a plan whose
// arena does not fit, which never ran, has no layout. Planned on the
// prefix up to the event instead, a layout at event 0 was a one-buffer
// arena that fit, shown for a plan that did not.
func TestPlannerLayoutIsThePlan(t *testing.T) {
	evs := loadCorpus(t, "gpt-train")
	dev := device(t, "a100-80g")
	res, err := Replay("gpt-train", &traces.SliceReader{Events: evs}, "planner", dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Fit() || res.PeakLiveEvent <= 0 {
		t.Fatalf("fit %v, peak live at %d: want a plan that fits, its peak after event 0", res.Fit(), res.PeakLiveEvent)
	}
	for _, ev := range []int64{0, res.PeakLiveEvent} {
		l, err := LayoutAt("gpt-train", &traces.SliceReader{Events: evs}, "planner", dev, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 1 || l[0].Size != res.PeakFootprint {
			t.Errorf("event %d: %d segments, the first of %d bytes; want the plan's arena of %d", ev, len(l), segSize(l), res.PeakFootprint)
			continue
		}
		var held int64
		for _, b := range l[0].Blocks {
			if b.State == strategies.BlockAllocated {
				held += b.Size
			}
		}
		if ev == res.PeakLiveEvent && held != res.PeakLive {
			t.Errorf("at peak live (event %d) the plan holds %d bytes, want %d", ev, held, res.PeakLive)
		}
	}
	small := device(t, "a100-40g:capacity=600MiB")
	l, err := LayoutAt("gpt-train", &traces.SliceReader{Events: evs}, "planner", small, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 0 {
		t.Errorf("a plan that does not fit on %s, at event 0: %d segments, the first of %d bytes; want none", small.Label(), len(l), segSize(l))
	}
}

func segSize(l []strategies.Segment) int64 {
	if len(l) == 0 {
		return 0
	}
	return l[0].Size
}
