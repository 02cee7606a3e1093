package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestColocateRateRefused: --rate is the pace of a trace without a clock,
// a number of events a second; one that is no such pace (zero, negative,
// NaN, infinite) is refused by every command that colocates, rather than
// replaced by the default while the output states the value given.
func TestColocateRateRefused(t *testing.T) {
	for _, rate := range []string{"0", "-5", "NaN", "Inf", "+Inf", "-Inf"} {
		for _, args := range [][]string{
			{"run", "--colocate", "gpt-train@jax", "--colocate", "gpt-train@torch"},
			{"capacity", "--colocate", "gpt-train@jax", "--colocate", "gpt-train@torch"},
			{"report", "--colocate", "gpt-train@jax", "--colocate", "gpt-train@torch", "--out", filepath.Join(t.TempDir(), "r.html")},
		} {
			out, _, err := runCLI(t, append(args, "--rate", rate)...)
			if err == nil || !strings.Contains(err.Error(), "--rate") {
				t.Errorf("%s --rate %s: error %v, want --rate refused", args[0], rate, err)
			}
			if out != "" {
				t.Errorf("%s --rate %s: printed:\n%s", args[0], rate, out)
			}
		}
	}
	if _, _, err := runCLI(t, "run", "--colocate", "gpt-train@jax", "--colocate", "gpt-train@torch", "--rate", "1e-300"); err != nil {
		t.Errorf("--rate 1e-300: %v", err)
	}
}

// TestCachedReplayErrorPlaced: a trace read into memory for many replays
// (capacity's search, tune, colocation) reports a bad event at its file
// and line as a streamed replay does; it named only the trace and the
// event.
func TestCachedReplayErrorPlaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "dup.txt")
	if err := os.WriteFile(p, []byte("membench-trace 1\n# a comment\na 1 4096\na 1 8192\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := p + ":4 (event 1): alloc of an id that is still live"
	for _, args := range [][]string{
		{"run", "--trace", p},
		{"capacity", "--trace", p},
		{"capacity", "--trace", p, "--strategy", "torch", "--no-advice"},
		{"tune", "--trace", p, "--framework", "torch"},
		{"run", "--colocate", p + "@torch", "--colocate", "gpt-train@jax"},
		{"report", "--trace", p, "--out", filepath.Join(dir, "r.html")},
	} {
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", args, err, want)
		}
	}
}
