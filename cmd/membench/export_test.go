package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"membench/internal/sharedtraces"
)

// TestExportValidates: `membench validate` on a torch export exits 0 (the
// model's own segment events and OOMs, replayed from the file's
// requests and settings, come back exactly): on a corpus trace, with
// expandable segments and knobs in PYTORCH_CUDA_ALLOC_CONF, on a card
// small enough to make the allocator free its cache and fail (the
// capacity then comes from the recorded oom), and on a replay of a real
// PyTorch snapshot of the shared collection; and the recorded peak
// reserved it reports is the simulated one.
func TestExportValidates(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ trace, strategy, device string }{
		{"gpt-train", "torch", "a100-80g"},
		{"gpt-train", "torch:expandable_segments=true", "a100-80g"},
		{"gpt-train", "torch:max_split_size_mb=64,roundup_power2_divisions=[256:1,>:4]", "a100-80g"},
		{"gpt-train", "torch", "a100-80g:capacity=600MiB"},
		{sharedtraces.Path(t, "pytorch-snapshots/opt125m-zo-finetune.pickle"), "torch", "a100-80g"},
	}
	for i, c := range cases {
		out := filepath.Join(dir, "snap"+string(rune('a'+i))+".pickle")
		_, stderr, err := runCLI(t, "export", "--format", "memory-viz", "--trace", c.trace, "--strategy", c.strategy, "--device", c.device, "--out", out)
		if err != nil {
			t.Fatalf("export %s %s %s: %v\n%s", c.trace, c.strategy, c.device, err, stderr)
		}
		report, stderr, err := runCLI(t, "validate", out)
		if err != nil {
			t.Errorf("validate of the export of %s through %s on %s: %v\n%s%s", c.trace, c.strategy, c.device, err, report, stderr)
		}
		if !strings.Contains(report, "agree: every segment event") {
			t.Errorf("%s %s: report\n%s", c.trace, c.strategy, report)
		}
		// The recording is the model's own: its peak reserved, read
		// from the file's segment events, is the simulation's.
		if !strings.Contains(report, "B (identical)") {
			t.Errorf("%s %s on %s: peak reserved differs\n%s", c.trace, c.strategy, c.device, report)
		}
	}
}

// TestExportOutput: the output is written whole or not at all: a failed
// export (a strategy that is no allocator) leaves no file and keeps an
// existing one; an --out that is the --trace is refused before anything
// is written; two exports are byte-identical.
func TestExportOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "snap.pickle")
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "planner", "--out", out); err == nil || !strings.Contains(err.Error(), "cannot be exported") {
		t.Fatalf("planner: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a failed export left %s (%v)", out, err)
	}
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "jax", "--out", out); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "torch", "--device", "tpu-v4", "--out", out); err == nil {
		t.Fatal("torch on a TPU exported")
	}
	if kept, _ := os.ReadFile(out); !bytes.Equal(kept, first) {
		t.Fatal("a failed export changed the existing output")
	}
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "jax", "--out", out); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
		t.Fatal("two exports of one replay differ")
	}
	// The output may not be the trace it reads.
	tr := filepath.Join(dir, "t.txt")
	if _, _, err := runCLI(t, "traces", "convert", "gpt-train", tr); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(tr)
	if _, _, err := runCLI(t, "export", "--trace", tr, "--strategy", "jax", "--out", tr); err == nil || !strings.Contains(err.Error(), "refusing to overwrite an input") {
		t.Fatalf("--out = --trace: %v", err)
	}
	if after, _ := os.ReadFile(tr); !bytes.Equal(after, before) {
		t.Fatal("the trace was overwritten")
	}
	for _, args := range [][]string{
		{"export", "--trace", "gpt-train", "--strategy", "jax"},
		{"export", "--format", "json", "--trace", "gpt-train", "--strategy", "jax", "--out", out},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestRecordedSettingsNoted: a snapshot taken under allocator settings
// other than PyTorch's defaults names the spec that replays it as recorded
// (meta recorded-strategy), and a torch replay under other settings says
// so on stderr and in the report's notes, naming that spec; a replay under
// the recorded settings, or of a snapshot taken under the defaults, says
// nothing.
func TestRecordedSettingsNoted(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "es.pickle")
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "torch:expandable_segments=true", "--out", snap); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "traces", "show", snap)
	if err != nil || !strings.Contains(out, "recorded-strategy") || !strings.Contains(out, "torch:expandable_segments:True") {
		t.Fatalf("traces show (err %v):\n%s", err, out)
	}
	const want = "recorded with other allocator settings than this replay's: --strategy 'torch:expandable_segments:True' replays it as recorded"
	_, stderr, err := runCLI(t, "run", "--trace", snap, "--strategy", "torch", "--strategy", "torch:expandable_segments=true", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "es: torch: "+want) || strings.Contains(stderr, "torch:expandable_segments=true: recorded") {
		t.Errorf("run's notes:\n%s", stderr)
	}
	page := filepath.Join(dir, "r.html")
	if _, _, err := runCLI(t, "report", "--trace", snap, "--strategy", "torch", "--out", page); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "replays it as recorded") {
		t.Errorf("report without the note (%v)", err)
	}
	shared := sharedtraces.Path(t, "pytorch-snapshots/liger-cross-entropy.pickle")
	out, stderr, err = runCLI(t, "run", "--trace", shared, "--strategy", "torch:expandable_segments=true", "--format", "csv")
	if err != nil || strings.Contains(stderr, "recorded with") {
		t.Errorf("a snapshot taken under the defaults (err %v):\n%s", err, stderr)
	}
	if out, _, _ = runCLI(t, "traces", "show", shared); strings.Contains(out, "recorded-strategy") {
		t.Errorf("traces show of a snapshot taken under the defaults:\n%s", out)
	}
}

// TestRecordedNoteOnce: the note on a snapshot's recorded settings is the
// trace's, the same for every spec that replays other settings: a sweep
// says it once for the specs that give it (as an allocator's note shared
// by several specs is said once), and a spec that replays the recorded
// settings is not among them.
func TestRecordedNoteOnce(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "es.pickle")
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "torch:expandable_segments=true", "--out", snap); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--param", "max_split_size_mb=20,200", "--param", "garbage_collection_threshold=0.5,0.6"}, "note: es: torch, all 4 specs: recorded with"},
		{[]string{"--param", "expandable_segments=true,false", "--param", "max_split_size_mb=20,200"}, "note: es: torch, all 4 specs: recorded with"},
		{[]string{"--param", "expandable_segments=true,false"}, "note: es: torch:expandable_segments=false: recorded with"},
		{[]string{"--param", "expandable_segments=true,false", "--param", "max_split_size_mb=20"}, "note: es: torch, all 2 specs, each with max_split_size_mb=20: recorded with"},
	} {
		args := append([]string{"sweep", "--trace", snap, "--strategy", "torch", "--format", "csv"}, c.args...)
		_, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(stderr, "recorded with"); n != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: %d notes on the recorded settings, want one saying %q:\n%s", c.args, n, c.want, stderr)
		}
	}
}

// TestTuneSaysRecordedSettings: tune on a snapshot taken under other
// settings than torch's defaults says that its torch "(defaults)" row is
// not the recording, naming the spec that is, once.
func TestTuneSaysRecordedSettings(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "es.pickle")
	if _, _, err := runCLI(t, "export", "--trace", "gpt-train", "--strategy", "torch:expandable_segments=true", "--out", snap); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCLI(t, "tune", "--trace", snap, "--framework", "torch")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr, "es: torch (defaults): recorded with other allocator settings than this replay's: --strategy 'torch:expandable_segments:True'"); n != 1 {
		t.Errorf("tune's notes (%d recorded-settings lines):\n%s", n, stderr)
	}
}

// TestValidateRefusesForeignExport: an export of another model than
// torch's (its allocator_settings name the membench strategy, device and
// model) is no PyTorch recording, so validate refuses it, naming the
// model, instead of replaying the BFC's decisions through the torch
// model and reporting a divergence that only says the two allocators
// differ (and printing PyTorch's default settings as the recording's).
func TestValidateRefusesForeignExport(t *testing.T) {
	dir := t.TempDir()
	for _, st := range []string{"tf", "jax:preallocate=false"} {
		out := filepath.Join(dir, strings.ReplaceAll(st, ":", "_")+".pickle")
		if _, stderr, err := runCLI(t, "export", "--format", "memory-viz", "--trace", "gpt-train", "--strategy", st, "--out", out); err != nil {
			t.Fatalf("export %s: %v\n%s", st, err, stderr)
		}
		report, stderr, err := runCLI(t, "validate", out)
		if err == nil {
			t.Fatalf("validate of the export of %s succeeded:\n%s", st, report)
		}
		msg := err.Error() + stderr
		for _, want := range []string{out, "not a PyTorch recording", st, "bfc"} {
			if !strings.Contains(msg, want) {
				t.Errorf("validate of the export of %s: error %q lacks %q", st, msg, want)
			}
		}
		if strings.Contains(report, "FIRST DIVERGENCE") {
			t.Errorf("validate of the export of %s compared it with the torch model:\n%s", st, report)
		}
	}
}

// TestExportSpoolBesideOutput: a long export keeps its entries beside
// its output (the system's temporary directory, here missing, may be a
// small RAM disk) and leaves nothing there but the output; to standard
// output, which has no directory, it uses the temporary directory, and
// writes the same bytes.
func TestExportSpoolBesideOutput(t *testing.T) {
	dir := t.TempDir()
	var tr strings.Builder
	tr.WriteString("membench-trace 1\n")
	// Some 200,000 entries, a few MB of spooled records: past what the
	// spool keeps in memory.
	for i := 1; i <= 70_000; i++ {
		fmt.Fprintf(&tr, "a %d %d\n", i, 512*(i%61+1))
		if i > 32 {
			fmt.Fprintf(&tr, "f %d\n", i-32)
		}
	}
	trace := filepath.Join(dir, "long.trace")
	if err := os.WriteFile(trace, []byte(tr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "snap.pickle")
	t.Setenv("TMPDIR", filepath.Join(dir, "no-tmp"))
	_, stderr, err := runCLI(t, "export", "--trace", trace, "--strategy", "jax", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "209937 trace entries") {
		t.Errorf("stderr: %s", stderr)
	}
	ls, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ls {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "long.trace snap.pickle" {
		t.Errorf("the output's directory holds %v", names)
	}
	file, _ := os.ReadFile(out)
	t.Setenv("TMPDIR", dir)
	stdout, _, err := runCLI(t, "export", "--trace", trace, "--strategy", "jax", "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(file) {
		t.Errorf("to standard output: %d bytes; to a file: %d", len(stdout), len(file))
	}
}
