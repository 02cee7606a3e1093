package main

import (
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
