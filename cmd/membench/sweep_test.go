package main

import (
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"membench/internal/sharedtraces"
)

// TestSweep is the check: a sweep over torch's max_split_size_mb ×
// expandable_segments on a shared trace shows the knobs' effect on
// peak-reserved-B and prints the same bytes on every run.
func TestSweep(t *testing.T) {
	args := []string{"sweep", "--strategy", "torch", "--param", "max_split_size_mb=20,128,512", "--param", "expandable_segments=false,true", "--trace", sharedtraces.Path(t, "pytorch-snapshots/opt125m-zo-finetune.pickle")}
	out, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	peaks := map[string]float64{}
	r := benchfmt.NewReader(strings.NewReader(out), "sweep")
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok {
			v, _ := res.Value("peak-reserved-B")
			_, strat := res.Name.Parts()
			peaks[string(strat[len(strat)-1])] = v
		}
	}
	if len(peaks) != 6 {
		t.Fatalf("%d grid points:\n%s", len(peaks), out)
	}
	distinct := map[float64]bool{}
	for _, v := range peaks {
		distinct[v] = true
	}
	if len(distinct) < 3 {
		t.Errorf("knobs barely change peak-reserved-B: %v", peaks)
	}
	for i := 0; i < 2; i++ {
		again, _, err := runCLI(t, append(args, "--jobs", strconv.Itoa(i+1))...)
		if err != nil || again != out {
			t.Errorf("sweep output differs between runs (jobs=%d, err %v)", i+1, err)
		}
	}
	// Shards concatenate to the whole (less the repeated Unit lines).
	var parts []string
	for _, sh := range []string{"1/2", "2/2"} {
		o, _, err := runCLI(t, append(args, "--shard", sh)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				parts = append(parts, l)
			}
		}
	}
	var whole []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "Benchmark") {
			whole = append(whole, l)
		}
	}
	if len(parts) != len(whole) {
		t.Errorf("shards hold %d results, the whole %d", len(parts), len(whole))
	}
	// --shard auto takes the part from the engine's environment: a
	// Kubernetes Indexed Job's index, with the count set in the manifest.
	var auto []string
	for _, idx := range []string{"0", "1"} {
		t.Setenv("JOB_COMPLETION_INDEX", idx)
		t.Setenv("MEMBENCH_SHARDS", "2")
		o, e, err := runCLI(t, append(args, "--shard", "auto")...)
		if err != nil {
			t.Fatal(err)
		}
		if want := "shard " + idx + "/2"; idx == "0" && !strings.Contains(e, "shard 1/2 (from JOB_COMPLETION_INDEX=0, MEMBENCH_SHARDS=2)") {
			t.Errorf("stderr %q does not say which shard ran (%s)", e, want)
		}
		for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				auto = append(auto, l)
			}
		}
	}
	if strings.Join(auto, "\n") != strings.Join(parts, "\n") {
		t.Errorf("--shard auto gives other parts than --shard K/N")
	}
	for _, bad := range [][]string{
		{"sweep", "--strategy", "torch", "--param", "max_split_size_mb"},
		{"sweep", "--strategy", "torch", "--param", "max_split_size_mb=10"},
		{"sweep", "--strategy", "torch", "--param", "nope=1"},
	} {
		if _, _, err := runCLI(t, bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestGrid(t *testing.T) {
	got, err := grid("torch", []string{"max_split_size_mb=20,128", "roundup_power2_divisions=[256:1,>:4],2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"torch:max_split_size_mb=20,roundup_power2_divisions=[256:1,>:4]",
		"torch:max_split_size_mb=20,roundup_power2_divisions=2",
		"torch:max_split_size_mb=128,roundup_power2_divisions=[256:1,>:4]",
		"torch:max_split_size_mb=128,roundup_power2_divisions=2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("grid %v", got)
	}
}

func TestCapacityCommand(t *testing.T) {
	// The default device families are a100-80g and tpu-v4: torch, which
	// has no model of a TPU, searches the GPU only, and says so.
	out, stderr, err := runCLI(t, "capacity", "--no-advice", "--trace", "gpt-train", "--strategy", "torch", "--strategy", "jax", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 4 || recs[0][5] != "min-capacity-B" {
		t.Fatalf("csv: %v %v", recs, err)
	}
	if !strings.Contains(stderr, "note: left out: torch on tpu-v4 is not modelled") {
		t.Errorf("stderr lacks the note on torch and tpu-v4:\n%s", stderr)
	}
	for _, r := range recs[1:] {
		live, _ := strconv.ParseFloat(r[4], 64)
		capacity, _ := strconv.ParseFloat(r[5], 64)
		if capacity < live || r[0] != "Capacity" {
			t.Errorf("row %v", r)
		}
	}
}

func TestRunFormats(t *testing.T) {
	out, _, err := runCLI(t, "run", "--trace", "gpt-train", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Strategy string
		Metrics  map[string]float64
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 || rows[2].Strategy != "torch" || rows[2].Metrics["peak-live-B"] != 686272540 {
		t.Errorf("json: %v %+v", err, rows)
	}
	out, _, err = runCLI(t, "run", "--trace", "gpt-train", "--format", "table")
	if err != nil || !strings.Contains(out, "654.48 MiB") || !strings.Contains(out, "peak-reserved-B") {
		t.Errorf("table: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "run", "--format", "xml"); err == nil {
		t.Error("--format xml accepted")
	}
}

// TestCapacityAdvice is issue 12's check: `capacity --strategy jax
// --strategy jax:mem_fraction=1` prints both numbers (the card at the
// framework's settings, the context included, and the limit placement
// alone needs, which has no card in any format) and a knob line
// measured by its own search; a configuration reached twice is printed
// once.
func TestCapacityAdvice(t *testing.T) {
	out, stderr, err := runCLI(t, "capacity", "--trace", "gpt-train", "--device", "a100-80g", "--strategy", "jax", "--strategy", "jax:mem_fraction=1", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 4 {
		t.Fatalf("csv: %v %v", recs, err)
	}
	seen := map[string]bool{}
	placement := false
	for _, r := range recs[1:] {
		key := r[0] + "/" + r[3]
		if seen[key] {
			t.Errorf("row %s printed twice", key)
		}
		seen[key] = true
		capacity, _ := strconv.ParseFloat(r[5], 64)
		card, _ := strconv.ParseFloat(r[6], 64)
		switch r[0] {
		case "Capacity":
			if card != capacity+512<<20 {
				t.Errorf("%v: the card must hold the 512 MiB CUDA context beside the capacity", r)
			}
		case "Placement":
			// The limit placement alone needs is no card: like the
			// table's "–", CSV leaves the field empty.
			placement = true
			if r[3] != "jax:mem_fraction=1" || capacity <= 0 || r[6] != "" {
				t.Errorf("placement row %v", r)
			}
		}
	}
	if !placement {
		t.Error("no placement-alone row")
	}
	out, _, err = runCLI(t, "capacity", "--trace", "gpt-train", "--device", "a100-80g", "--strategy", "jax", "--format", "json")
	if err != nil || !strings.Contains(out, `"min-card-B": null`) {
		t.Errorf("json: the placement row's min-card-B is not null: %v\n%s", err, out)
	}
	for _, want := range []string{
		"capacity: gpt-train on a100-80g: jax needs a ",
		"its placement alone needs an allocator limit of ",
		"knob: XLA_PYTHON_CLIENT_",
		"(measured: a ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestSweepNotesOncePerGroup: a knob without effect in part of a sweep is
// said once for the specs that give the note, with the setting they
// share, not once per combination; a note of a single spec keeps its spec.
func TestSweepNotesOncePerGroup(t *testing.T) {
	_, stderr, err := runCLI(t, "sweep", "--strategy", "tf", "--trace", "gpt-generate",
		"--param", "allow_growth=true,false", "--param", "defrag_via_host=true,false", "--param", "garbage_collection=true,false")
	if err != nil {
		t.Fatal(err)
	}
	var model []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "note: tf") {
			model = append(model, l)
		}
	}
	want := []string{
		"note: tf on a100-80g, 4 of 8 specs, each with defrag_via_host=true: defrag_via_host=true has no effect on a GPU",
		"note: tf on a100-80g, 4 of 8 specs, each with defrag_via_host=false: defrag_via_host=false has no effect on a GPU",
	}
	if len(model) != len(want) {
		t.Fatalf("%d tf notes, want %d:\n%s", len(model), len(want), stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(model[i], w) {
			t.Errorf("note %d:\n%s\nwant prefix\n%s", i, model[i], w)
		}
	}

	_, stderr, err = runCLI(t, "sweep", "--strategy", "tf:defrag_via_host=true", "--trace", "gpt-generate", "--param", "allow_growth=true,false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "note: tf on a100-80g, all 2 specs, each with defrag_via_host=true: defrag_via_host=true has no effect") {
		t.Errorf("a note of every spec:\n%s", stderr)
	}
	_, stderr, err = runCLI(t, "run", "--strategy", "tf:defrag_via_host=true", "--strategy", "tf", "--trace", "gpt-generate")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "note: tf:defrag_via_host=true on a100-80g: defrag_via_host=true has no effect") {
		t.Errorf("a note of one spec names it:\n%s", stderr)
	}
}
