package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"membench/internal/sharedtraces"
)

func TestTracesShowJSON(t *testing.T) {
	out, _, err := runCLI(t, "traces", "show", "--format", "json", "gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Events        int64 `json:"events"`
		Allocs        int64 `json:"allocs"`
		Frees         int64 `json:"frees"`
		PeakLiveBytes int64 `json:"peak_live_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	// The figures of the recording's README.
	if s.Allocs != 5524 || s.Frees != 5524 || s.PeakLiveBytes != 686272540 || s.Events != 11060 {
		t.Errorf("%+v", s)
	}
	text, _, err := runCLI(t, "traces", "show", sharedtraces.Path(t, "lifetimes/alexnet-train.log"))
	if err != nil || !strings.Contains(text, "peak live bytes") || !strings.Contains(text, "1443669632") {
		t.Errorf("text: %v\n%s", err, text)
	}
}

// TestTracesConvertRoundTrip: text → binary → text is byte-identical.
func TestTracesConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	steps := [][]string{
		{"traces", "convert", sharedtraces.Path(t, "pytorch-snapshots/opt125m-zo-finetune.pickle"), p("a.txt")},
		{"traces", "convert", "--format", "binary", p("a.txt"), p("a.bin")},
		{"traces", "convert", p("a.bin"), p("b.txt")},
		{"traces", "convert", "--format", "binary", "--gzip", p("b.txt"), p("b.bin.gz")},
		{"traces", "convert", p("b.bin.gz"), p("c.txt")},
	}
	for _, s := range steps {
		if _, _, err := runCLI(t, s...); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
	}
	a, _ := os.ReadFile(p("a.txt"))
	c, _ := os.ReadFile(p("c.txt"))
	if len(a) == 0 || !bytes.Equal(a, c) {
		t.Errorf("round trip differs (%d vs %d bytes)", len(a), len(c))
	}
	if _, _, err := runCLI(t, "traces", "convert", "--format", "xml", p("a.txt"), p("x")); err == nil {
		t.Error("--format xml accepted")
	}
}

// TestTracesGen: the same seed gives the same bytes, with flags after the
// kind as the issue writes them.
func TestTracesGen(t *testing.T) {
	args := []string{"traces", "gen", "llm-serve", "--seed", "7", "--param", "requests=3", "--param", "model=gpt2-small"}
	a, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := runCLI(t, args...)
	if a != b || !strings.HasPrefix(a, "membench-trace 1\n") {
		t.Error("gen not deterministic or not native text")
	}
	c, _, _ := runCLI(t, "traces", "gen", "llm-serve", "--seed", "8", "--param", "requests=3", "--param", "model=gpt2-small")
	if c == a {
		t.Error("another seed gives the same trace")
	}
	if _, _, err := runCLI(t, "traces", "gen", "mlp-train"); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, _, err := runCLI(t, "traces", "gen", "cnn-train", "--param", "depth=resnet9"); err == nil {
		t.Error("bad parameter accepted")
	}
	list, _, err := runCLI(t, "traces", "list")
	if err != nil || !strings.Contains(list, "gen-resnet50-train") || !strings.Contains(list, "recorded by the membench team") {
		t.Errorf("list: %v\n%s", err, list)
	}
}

// TestFlagsAfterArguments: the documented forms put flags after the
// positional arguments, which urfave/cli alone would not parse.
func TestFlagsAfterArguments(t *testing.T) {
	out, _, err := runCLI(t, "validate", sharedtraces.Path(t, "pytorch-snapshots/cs336-lm-peak-probe.pickle"), "--device-index", "0", "--capacity", "8GiB")
	if err != nil || !strings.Contains(out, "8589934592 B (--capacity)") || !strings.Contains(out, "agree") {
		t.Errorf("validate FILE --device-index 0 --capacity 8GiB: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "traces", "show", "gpt-train", "--format", "json")
	if err != nil || !strings.HasPrefix(out, "{") {
		t.Errorf("traces show NAME --format json: %v", err)
	}
	if got := flagsFirst(nil, []string{"membench"}); len(got) != 1 {
		t.Errorf("flagsFirst on no command: %v", got)
	}
}

// TestValidateBadSize: a snapshot whose alloc has an absurd size is an
// input error naming the entry, not a divergence.
func TestValidateBadSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(path, []byte(`{"segments": [], "device_traces": [[
		{"action": "segment_alloc", "addr": 4096, "size": 2097152, "stream": 0},
		{"action": "alloc", "addr": 4096, "size": 0, "stream": 0},
		{"action": "free_requested", "addr": 4096, "size": 0, "stream": 0},
		{"action": "free_completed", "addr": 4096, "size": 0, "stream": 0},
		{"action": "segment_free", "addr": 4096, "size": 2097152, "stream": 0}]]}`), 0o644)
	_, _, err := runCLI(t, "validate", path)
	if err == nil || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "bad size") {
		t.Errorf("error %v", err)
	}
}

// TestValidateInputs: validate reads gzipped recordings as run does, and
// refuses a capacity that is not a positive size instead of taking it as
// unlimited (issue 11, defects 10 and 11).
func TestValidateInputs(t *testing.T) {
	src := sharedtraces.Path(t, "pytorch-snapshots/cs336-lm-peak-probe.pickle")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	gzPath := filepath.Join(t.TempDir(), "snap.pickle.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(gzPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, _, err := runCLI(t, "validate", src)
	if err != nil {
		t.Fatal(err)
	}
	gz, _, err := runCLI(t, "validate", gzPath)
	if err != nil || strings.ReplaceAll(gz, gzPath, src) != plain {
		t.Errorf("gzipped recording: %v\n%s", err, gz)
	}
	for _, c := range []string{"NaN", "0", "-1GiB", "InfGiB", "24"} {
		if _, _, err := runCLI(t, "validate", src, "--capacity", c); err == nil || !strings.Contains(err.Error(), "--capacity") {
			t.Errorf("--capacity %s: %v", c, err)
		}
		if _, _, err := runCLI(t, "validate", src, "--total", c); err == nil || !strings.Contains(err.Error(), "--total") {
			t.Errorf("--total %s: %v", c, err)
		}
	}
	// --capacity and --total are a PyTorch snapshot's: a profile refuses
	// them, rather than ignore them.
	prof := sharedtraces.Path(t, "profiler/jax-mi300x-conv-minimal-08.xplane.pb")
	for _, flag := range []string{"--total", "--capacity"} {
		if _, _, err := runCLI(t, "validate", prof, flag, "80GiB"); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s with a profile: %v", flag, err)
		}
	}
	other := filepath.Join(t.TempDir(), "x.csv")
	os.WriteFile(other, []byte("t_ns,op,addr,size,name\n"), 0o644)
	if _, _, err := runCLI(t, "validate", other); err == nil || !strings.Contains(err.Error(), "not a recording membench can validate") {
		t.Errorf("a memtrace CSV: %v", err)
	}
}

// TestStdinEverywhere: validate and report --results read "-" as standard
// input, as every --trace does.
func TestStdinEverywhere(t *testing.T) {
	src := sharedtraces.Path(t, "pytorch-snapshots/liger-cross-entropy.pickle")
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	out, _, err := runCLI(t, "validate", "-")
	if err != nil || !strings.Contains(out, "agree") {
		t.Errorf("validate -: %v\n%s", err, out)
	}
}

// TestTracesCompile: `traces compile` writes a version-2 trace whose meta
// says it is an approximation, in text or gzipped binary; every command
// that replays it prints the approximation on stderr; a trace without
// step marks is refused, and so is an output that is the input.
func TestTracesCompile(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if _, _, err := runCLI(t, "traces", "compile", "gpt-train", p("c.txt")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "traces", "compile", "--format", "binary", "--gzip", "--donate", "none", "gpt-train", p("c.mbt.gz")); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(p("c.txt"))
	if !strings.HasPrefix(string(text), "membench-trace 2\n") || !strings.Contains(string(text), "\nmeta approximation compiled from a per-op trace") ||
		!strings.Contains(string(text), "\nmeta compiled_from gpt-train\n") || !strings.Contains(string(text), "\nb step") {
		t.Errorf("compiled text:\n%.2000s", text)
	}
	if bin, _ := os.ReadFile(p("c.mbt.gz")); len(bin) < 2 || bin[0] != 0x1f || bin[1] != 0x8b {
		t.Errorf("--gzip output is not gzip")
	}
	show, _, err := runCLI(t, "traces", "show", p("c.mbt.gz"))
	if err != nil || !strings.Contains(show, "launches                  3") || !strings.Contains(show, "meta donate") {
		t.Errorf("show: %v\n%s", err, show)
	}
	// The events line's parts add up to its total: a compiled trace's
	// launch records (b and e) are events too; they went unnamed, and
	// "11038 (…)" did not sum.
	if !strings.Contains(show, "marks, 6 launch begins and ends)") {
		t.Errorf("show's events line does not count the launch records:\n%s", show)
	}
	for _, args := range [][]string{
		{"run", "--trace", p("c.txt"), "--strategy", "jax"},
		{"run", "--trace", p("c.mbt.gz"), "--strategy", "jax", "--device", "tpu-v4"},
		{"sweep", "--trace", p("c.txt"), "--strategy", "jax", "--param", "preallocate=true,false"},
		{"capacity", "--trace", p("c.txt"), "--strategy", "jax", "--device", "a100-80g", "--no-advice"},
	} {
		_, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if !strings.Contains(stderr, "note: c: approximation: compiled from a per-op trace") {
			t.Errorf("%v: no approximation note on stderr:\n%s", args, stderr)
		}
	}
	// On the TPU the launches' temps are programs, loaded once.
	_, stderr, _ := runCLI(t, "run", "--trace", p("c.txt"), "--strategy", "jax", "--device", "tpu-v4")
	if !strings.Contains(stderr, "program loads 1, reloads after an eviction 0, launches that reused a loaded program 2") {
		t.Errorf("TPU execution note:\n%s", stderr)
	}
	// Refusals.
	if _, _, err := runCLI(t, "traces", "compile", "gpt-generate", p("g.txt")); err == nil || !strings.Contains(err.Error(), "no step marks") {
		t.Errorf("no step marks: %v", err)
	}
	if _, err := os.Stat(p("g.txt")); err == nil {
		t.Errorf("a refused compile left an output")
	}
	if _, _, err := runCLI(t, "traces", "compile", p("c.txt"), p("d.txt")); err == nil || !strings.Contains(err.Error(), "compiled already") {
		t.Errorf("compiled twice: %v", err)
	}
	for _, args := range [][]string{
		{"--donate", "maybe"}, {"--alignment", "0"}, {"--format", "xml"},
	} {
		if _, _, err := runCLI(t, append(append([]string{"traces", "compile"}, args...), "gpt-train", p("x.txt"))...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	// No overwrite of the input: the file is left as it was.
	before, _ := os.ReadFile(p("c.txt"))
	if _, _, err := runCLI(t, "traces", "compile", p("c.txt"), p("c.txt")); err == nil || !strings.Contains(err.Error(), "refusing to overwrite an input") {
		t.Errorf("output == input: %v", err)
	}
	if after, _ := os.ReadFile(p("c.txt")); !bytes.Equal(before, after) {
		t.Errorf("the input changed")
	}
}

// TestTracesShowPeakTimeUnit: the human summary gives the peak's time with
// its unit, the trace clock's nanoseconds; "time 61227902476" left the
// reader to guess between ns, µs (a snapshot's time_us) and events.
func TestTracesShowPeakTimeUnit(t *testing.T) {
	out, stderr, err := runCLI(t, "traces", "show", "gpt-train")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "(event 4241, time 61227902476 ns)") {
		t.Errorf("peak line without the time's unit:\n%s", out)
	}
}
