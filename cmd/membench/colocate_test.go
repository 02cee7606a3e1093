package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestColocateNotes: a colocated replay, capacity search and report say,
// on stderr as run does, what each tenant's allocator says of its
// knobs (here one without effect) and the device's assumptions, once
// each; the results on stdout stay as they were.
func TestColocateNotes(t *testing.T) {
	const knob = "max_non_split_rounding_mb=64 has no effect without max_split_size_mb"
	for _, args := range [][]string{
		{"run", "--colocate", "gpt-train@torch:max_non_split_rounding_mb=64", "--colocate", "gpt-train@jax", "--device", "a100-40g:capacity=2GiB"},
		{"capacity", "--colocate", "gpt-train@torch:max_non_split_rounding_mb=64", "--colocate", "gpt-train@jax"},
		{"report", "--colocate", "gpt-train@torch:max_non_split_rounding_mb=64", "--colocate", "gpt-train@jax", "--out", filepath.Join(t.TempDir(), "c.html")},
	} {
		out, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Count(stderr, knob) != 1 || strings.Count(stderr, "latencies malloc 50us") != 1 || strings.Contains(out, "note:") {
			t.Errorf("%v: want the knob's note and the device's assumptions once each on stderr:\n%s\nstdout:\n%s", args, stderr, out)
		}
	}
}
