package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"membench/harness"
	"membench/internal/gotool"
	"membench/internal/sharedtraces"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(&out, &errb, append([]string{"membench"}, args...))
	return out.String(), errb.String(), err
}

// TestRunDefault is the README's first command: the embedded corpus with
// the default strategies and device, read back with benchfmt.
func TestRunDefault(t *testing.T) {
	out, _, err := runCLI(t, "run")
	if err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(strings.NewReader(out), "run")
	n := 0
	units := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			n++
			for _, m := range []string{"fit", "first-oom-event", "peak-footprint-B", "placement-frag-%", "peak-live-B", "peak-reserved-B", "frag-%", "oom-events", "device-mallocs", "device-frees", "modeled-alloc-sec"} {
				if _, ok := rec.Value(m); !ok {
					t.Errorf("%s lacks %s", rec.Name.Full(), m)
				}
			}
		case *benchfmt.UnitMetadata:
			units++
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	want := 0
	for _, m := range harness.Metrics {
		want += 1 // assume=
		if m.Better != 0 {
			want++ // better=
		}
	}
	if n == 0 || units != want {
		t.Errorf("%d results, %d unit lines", n, units)
	}
	// Deterministic: a second run prints the same bytes.
	again, _, err := runCLI(t, "run")
	if err != nil || again != out {
		t.Errorf("second run differs (err %v)", err)
	}
}

// benchstat is the binary `go tool benchstat` runs (the version go.mod
// pins), found once: `go tool -n benchstat` builds it into the build cache
// if need be and prints its path, so the tests start the go command once.
// benchstatCommand is benchstat with args, as `go tool benchstat` runs it.
func benchstatCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	p, err := gotool.Path("benchstat")
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(p, args...)
}

// TestBenchstatReadsOutput feeds our output to the real benchstat pinned
// in go.mod and requires it to read it without a warning.
func TestBenchstatReadsOutput(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--strategy", "torch:expandable_segments=true,max_split_size_mb=128", "--device", "a100-40g:capacity=24GiB")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "r.txt")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := benchstatCommand(t, "-col", "/strategy", f)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchstat: %v\n%s", err, se.String())
	}
	if se.Len() > 0 {
		t.Errorf("benchstat wrote to stderr:\n%s", se.String())
	}
	for _, want := range []string{"peak-reserved-B", "frag-%", "expandable_segments=true"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("benchstat output lacks %q:\n%s", want, so.String())
		}
	}
	t.Logf("\n%s", so.String())
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--strategy", "torch:expandable=true"}, "valid keys"},
		{[]string{"run", "--strategy", "mxnet"}, "unknown strategy"},
		{[]string{"run", "--device", "v100"}, "unknown device"},
		{[]string{"run", "--device", "a100-40g:capacity=lots"}, "bad size"},
		{[]string{"run", "--trace", "no-such-trace"}, "no such file"},
		{[]string{"run", "gpt-train"}, "unexpected argument"},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestRunVerdict: the terminal table ends with the verdict: what fits,
// least footprint first, with the smallest card and the knob that helps
// most, measured; a run that did not fit is never ranked (issue 12).
func TestRunVerdict(t *testing.T) {
	out, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "jax:mem_fraction=0.0001", "--strategy", "jax", "--strategy", "torch", "--format", "table")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(out, "verdict: gpt-train on a100-80g")
	if i < 0 {
		t.Fatalf("no verdict:\n%s", out)
	}
	v := out[i:]
	torch, jax, failed := strings.Index(v, "torch: fits"), strings.Index(v, "jax: fits"), strings.Index(v, "jax:mem_fraction=0.0001: does not fit")
	if torch < 0 || jax < 0 || failed < 0 || !(torch < jax && jax < failed) {
		t.Errorf("verdict order:\n%s", v)
	}
	if !strings.Contains(v, "smallest card") || !strings.Contains(v, "with XLA_PYTHON_CLIENT_") {
		t.Errorf("verdict lacks the card answers:\n%s", v)
	}
}

// TestUndefinedFragInEveryFormat: a plan whose arena does not fit
// reserved nothing, so its frag-% (1 − live / reserved) has no value. No
// format may print it as 0 %, which read as a plan wasting nothing beside
// a fitting allocator's real figure: benchfmt leaves the unit out of the
// row (and the real benchstat reads the file without a warning), the
// table shows "–" in the frag-% column with the other columns in place,
// CSV an empty field, JSON null. The torch row beside it keeps its value.
func TestUndefinedFragInEveryFormat(t *testing.T) {
	args := []string{"run", "--trace", "gen-resnet50-train", "--strategy", "planner", "--strategy", "torch", "--device", "a100-80g:capacity=2GiB"}
	out := func(format string) string {
		t.Helper()
		o, _, err := runCLI(t, append(args, "--format", format)...)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	var plan, torch string
	for _, l := range strings.Split(out("benchfmt"), "\n") {
		switch {
		case strings.Contains(l, "strategy=planner "):
			plan = l
		case strings.Contains(l, "strategy=torch "):
			torch = l
		}
	}
	if plan == "" || torch == "" || strings.Contains(plan, " frag-%") || !strings.Contains(plan, " placement-frag-%") || !strings.Contains(torch, " frag-%") {
		t.Errorf("benchfmt: the plan's row must lack frag-%% and torch's have it:\n%s\n%s", plan, torch)
	}
	if _, err := exec.LookPath("go"); err == nil {
		f := filepath.Join(t.TempDir(), "r.txt")
		if err := os.WriteFile(f, []byte(out("benchfmt")), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := benchstatCommand(t, "-col", "/strategy", f)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil || se.Len() > 0 {
			t.Errorf("benchstat: %v\n%s", err, se.String())
		}
	}

	lines := strings.Split(out("table"), "\n")
	if len(lines) < 3 {
		t.Fatalf("table: %q", lines)
	}
	if got := fieldAt(lines[1], lines[0], "frag-%"); got != "–" {
		t.Errorf("table: the plan's frag-%% is %q, want –\n%s", got, strings.Join(lines[:3], "\n"))
	}
	if got := fieldAt(lines[2], lines[0], "frag-%"); got != "1.52%" {
		t.Errorf("table: torch's frag-%% is %q, want 1.52%%", got)
	}
	if got := fieldAt(lines[1], lines[0], "oom-events"); got != "1595" {
		t.Errorf("table: the plan's oom-events is %q, want 1595 (columns shifted?)", got)
	}

	recs, err := csv.NewReader(strings.NewReader(out("csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	fc := slices.Index(recs[0], "frag-%")
	if fc < 0 || fc+1 >= len(recs[0]) || len(recs) != 3 || recs[1][3] != "planner" || recs[1][fc] != "" || recs[2][fc] == "" || recs[1][fc+1] != "1595" {
		t.Errorf("csv: want an empty frag-%% for the plan, a value for torch, oom-events after it:\n%v", recs)
	}

	var js []struct {
		Strategy string              `json:"strategy"`
		Metrics  map[string]*float64 `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out("json")), &js); err != nil {
		t.Fatal(err)
	}
	v, ok := js[0].Metrics["frag-%"]
	if len(js) != 2 || js[0].Strategy != "planner" || !ok || v != nil || js[1].Metrics["frag-%"] == nil {
		t.Errorf("json: want \"frag-%%\": null for the plan and a number for torch: %+v", js)
	}
}

// fieldAt is the cell of row under the header's column name: tabwriter
// aligns the columns to the right, so a cell ends where its header ends.
// The header is ASCII; a row may hold "–" or "µ", so positions count
// runes, as tabwriter does.
func fieldAt(row, header, name string) string {
	i := strings.Index(header+" ", " "+name+" ")
	if i < 0 {
		return ""
	}
	end := i + 1 + len(name)
	r := []rune(row)
	if end > len(r) {
		return ""
	}
	start := end
	for start > 0 && r[start-1] != ' ' {
		start--
	}
	return strings.TrimSpace(string(r[start:end]))
}

// TestPlannerNotAFloorSaid: the planner's plan is a heuristic packing, not
// a lower bound; where an allocator placed the trace in less (gpt-generate:
// the BFC in 148.74 MiB, the plan 152.35 MiB), the verdict says so and
// names peak live as the floor, instead of reading as the least any
// layout needs.
func TestPlannerNotAFloorSaid(t *testing.T) {
	out, stderr, err := runCLI(t, "run", "--trace", "gpt-generate", "--strategy", "planner", "--strategy", "jax", "--strategy", "torch", "--format", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	all := out + stderr
	for _, want := range []string{"not a floor here: jax placed it in 148.74 MiB", "peak live 132.82 MiB is the floor"} {
		if !strings.Contains(all, want) {
			t.Errorf("verdict lacks %q:\n%s", want, all)
		}
	}
	// Where the plan is below every allocator's placement, nothing is added.
	out, stderr, err = runCLI(t, "run", "--trace", "gpt-train", "--strategy", "planner", "--strategy", "jax", "--format", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if strings.Contains(out+stderr, "not a floor") {
		t.Errorf("gpt-train's plan is below jax's placement, yet:\n%s", out+stderr)
	}
	// A plan that does not fit where an allocator does is no "even": on
	// a 151 MiB card jax:mem_fraction=1 fits gpt-generate, the plan
	// (152.35 MiB) does not.
	out, stderr, err = runCLI(t, "run", "--trace", "gpt-generate", "--device", "a100-80g:capacity=151MiB", "--strategy", "planner", "--strategy", "jax:mem_fraction=1", "--format", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if all = out + stderr; strings.Contains(all, "even a planned layout") || !strings.Contains(all, "its planned layout (152.35 MiB) does not fit, though jax:mem_fraction=1 does (the plan is a heuristic)") {
		t.Errorf("151 MiB card:\n%s", all)
	}
	// On a compiled trace jax replays the launches compiled (donated
	// outputs in their donors' memory) and the plan packs them op by op:
	// jax's smaller placement is of other buffers, and peak live is then
	// no floor under it either.
	compiled := filepath.Join(t.TempDir(), "r.txt")
	if _, stderr, err := runCLI(t, "traces", "compile", "resnet50-train", compiled); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, stderr, err = runCLI(t, "run", "--trace", compiled, "--strategy", "planner", "--strategy", "jax", "--format", "table")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	all = out + stderr
	if strings.Contains(all, "not a floor") || !strings.Contains(all, "not comparable with jax's 913.08 MiB: the plan packs the trace's launches op by op (peak live 917.63 MiB), jax replayed other buffers (peak live 913.04 MiB)") {
		t.Errorf("compiled resnet50-train:\n%s", all)
	}
}

// TestRecordedProgramsNoted: a TPU chip's profile records the bytes its
// loaded programs reserve (bytes_reserved: up to 21,491,712,000 B on the
// v6e inference chips), but program loads are no events, so a replay
// places the buffers alone. A run on it says so, with the recorded figure
// and the knob that loads a program, instead of answering (peak footprint,
// a smallest card of 15.75 GiB) as if the chip had held buffers only.
func TestRecordedProgramsNoted(t *testing.T) {
	trace := sharedtraces.Path(t, "profiler/xprof-tpu-v6e-inference.xplane.pb") + "#device=0"
	_, stderr, err := runCLI(t, "run", "--trace", trace, "--device", "tpu-v6e", "--strategy", "jax")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"recorded-programs: ", "bytes_reserved up to 21491712000 B", "this trace does not replay", "program_bytes=21491712000"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("run's notes lack %q:\n%s", want, stderr)
		}
	}
	// A GPU allocator's profile has no programs to say anything of.
	gpu := sharedtraces.Path(t, "profiler/tf-v100x8-bert-multiworker.xplane.pb") + "#allocator=GPU_4_bfc"
	if _, stderr, err = runCLI(t, "run", "--trace", gpu, "--strategy", "tf"); err != nil || strings.Contains(stderr, "recorded-programs") {
		t.Errorf("GPU profile: %v\n%s", err, stderr)
	}
}
