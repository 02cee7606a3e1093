package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNotes: the notes on stderr are the devices' and the allocators'
// own (their assumptions, and knobs without effect), once each whatever
// the number of traces, device first, then its strategies in the order
// given; a model with nothing to say adds none. torch, which has no model
// of a TPU, is left out on tpu-v4 with a note and runs on the GPU.
func TestRunNotes(t *testing.T) {
	stdout, stderr, err := runCLI(t, "run", "--format", "benchfmt", "--trace", "gpt-train", "--trace", "gpt-generate",
		"--device", "tpu-v4", "--device", "a100-40g",
		"--strategy", "jax", "--strategy", "tf: allow_growth=true", "--strategy", "torch")
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "note: ") {
			notes = append(notes, l)
		}
	}
	var model []string
	for _, n := range notes {
		if strings.HasPrefix(n, "note: device ") || strings.HasPrefix(n, "note: left out: ") || strings.HasPrefix(n, "note: execution: ") {
			continue
		}
		head, rest, _ := strings.Cut(n, " on ")
		dev, _, _ := strings.Cut(rest, ":")
		model = append(model, head+" on "+dev)
	}
	// tf's second note: allow_growth configures the GPU allocator only.
	want := []string{"note: jax on tpu-v4", "note: tf: allow_growth=true on tpu-v4", "note: tf: allow_growth=true on tpu-v4"}
	if strings.Join(model, "|") != strings.Join(want, "|") {
		t.Errorf("model notes %q, want %q\n%s", model, want, stderr)
	}
	first := func(prefix string) int {
		for i, n := range notes {
			if strings.HasPrefix(n, prefix) {
				return i
			}
		}
		return -1
	}
	if d, j, g := first("note: device tpu-v4:"), first("note: jax on"), first("note: device a100-40g:"); !(d >= 0 && d < j && j < g) {
		t.Errorf("notes out of order (device tpu-v4 %d, jax %d, device a100-40g %d):\n%s", d, j, g, stderr)
	}
	// How jax and tf ran the traces' executables (these have none: op by
	// op); torch has no compiled mode and says nothing of it.
	for _, spec := range []string{"jax", "tf:allow_growth=true"} {
		if !strings.Contains(stderr, "note: execution: "+spec+" on a100-40g: gpt-train, gpt-generate: replayed op by op") {
			t.Errorf("no execution note for %s:\n%s", spec, stderr)
		}
	}
	if strings.Contains(stderr, "note: execution: torch") {
		t.Errorf("an execution note for torch on traces without launches:\n%s", stderr)
	}
	if !strings.Contains(stderr, "note: left out: torch on tpu-v4 is not modelled: PyTorch on a TPU goes through PyTorch/XLA") {
		t.Errorf("no note that torch was left out on tpu-v4:\n%s", stderr)
	}
	if !strings.Contains(stdout, "device=a100-40g/strategy=torch ") || strings.Contains(stdout, "device=tpu-v4/strategy=torch") {
		t.Errorf("torch should run on a100-40g only:\n%s", stdout)
	}
	seen := map[string]bool{}
	for _, n := range notes {
		if seen[n] {
			t.Errorf("note repeated: %s", n)
		}
		seen[n] = true
	}
}

// TestReportJobs: the report runs through the job runner; the number of
// replays at once does not change the page.
func TestReportJobs(t *testing.T) {
	var pages [][]byte
	for _, jobs := range []string{"1", "3"} {
		out := filepath.Join(t.TempDir(), "report.html")
		if _, _, err := runCLI(t, "report", "--trace", "gpt-train", "--device", "tpu-v4", "--jobs", jobs, "--out", out); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, b)
	}
	if !bytes.Equal(pages[0], pages[1]) {
		t.Error("report --jobs 1 and --jobs 3 differ")
	}
	if !bytes.Contains(pages[0], []byte("TPU runtime model (allocator-spec §6.4, fitted to the TPU v6e recording)")) {
		t.Error("report on tpu-v4 lacks the TPU runtime model's note")
	}
}
