package main

import (
	"fmt"
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
	// An error found at the end (a launch never ended) is at the last
	// event's line, as in a streamed replay.
	v2 := filepath.Join(dir, "open.txt")
	if err := os.WriteFile(v2, []byte("membench-trace 2\nb x\na 1 4096 temp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "capacity"} {
		_, _, err := runCLI(t, cmd, "--trace", v2, "--strategy", "jax")
		if err == nil || !strings.Contains(err.Error(), v2+":3 (event 2): bad launch") {
			t.Errorf("%s: error %v, want it at %s:3 (event 2)", cmd, err, v2)
		}
	}
}

// TestGridRefusesAmbiguity: a sweep whose runs would be labelled with a
// knob value they did not run under, or run twice under one label, is
// refused: a key given in two --param (the later value won, under a
// label naming both), a key both fixed in --strategy and swept (the swept
// value won, under a label naming the fixed one first), a value repeated
// in one list (two identical runs that compare as two samples), and an
// empty value. So is a grid too large to hold: 3000 × 3000 values took
// 1.2 GB before the first replay.
func TestGridRefusesAmbiguity(t *testing.T) {
	many := strings.Repeat("20,", 300) + "20"
	var big []string
	for i := range 2 {
		var vs []string
		for j := range 300 {
			vs = append(vs, fmt.Sprint(20+j+i))
		}
		big = append(big, fmt.Sprintf("k%d=%s", i, strings.Join(vs, ",")))
	}
	for _, c := range []struct {
		base   string
		params []string
		want   string
	}{
		{"torch", []string{"max_split_size_mb=20,128", "max_split_size_mb=30"}, `"max_split_size_mb" given twice`},
		{"torch:max_split_size_mb=40", []string{"max_split_size_mb=30,50"}, `"max_split_size_mb" given twice`},
		{"torch", []string{"max_split_size_mb=20,128,20"}, `value "20" given twice`},
		{"torch", []string{"max_split_size_mb=20,,128"}, "empty value"},
		{"torch", []string{"max_split_size_mb=" + many}, `value "20" given twice`},
		{"torch", append(big, "k2=1,2"), "more than the limit of 65536"},
	} {
		_, err := grid(c.base, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grid(%q, %q): error %v, want %q", c.base, c.params, err, c.want)
		}
	}
	if _, err := grid("torch:expandable_segments=true", []string{"max_split_size_mb=20,128", "roundup_power2_divisions=[256:1,>:4],[256:1,>:8]"}); err != nil {
		t.Errorf("a good grid: %v", err)
	}
}

// TestRepeatedKnobRefused: a knob given twice in one strategy or device
// spec is refused by every command: the later value won, under a label
// that names both (a100-40g:capacity=1GiB,capacity=2GiB ran on 2 GiB).
func TestRepeatedKnobRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--trace", "gpt-train", "--strategy", "torch:expandable_segments=true,expandable_segments=false"},
		{"run", "--trace", "gpt-train", "--strategy", "jax:mem_fraction=0.5,preallocate=true,mem_fraction=0.9"},
		{"run", "--trace", "gpt-train", "--device", "a100-40g:capacity=1GiB,capacity=2GiB"},
		{"capacity", "--trace", "gpt-train", "--strategy", "tf:allow_growth=true,allow_growth=false"},
		{"report", "--trace", "gpt-train", "--strategy", "torch:max_split_size_mb=20,max_split_size_mb=40", "--out", filepath.Join(dir, "r.html")},
		{"export", "--trace", "gpt-train", "--strategy", "torch:max_split_size_mb=20,max_split_size_mb=40", "--out", filepath.Join(dir, "e.pickle")},
		{"run", "--colocate", "gpt-train@torch:max_split_size_mb=20,max_split_size_mb=40", "--colocate", "gpt-train@jax"},
	} {
		out, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%v: error %v, want the repeated knob refused", args, err)
		}
		if out != "" {
			t.Errorf("%v: printed\n%s", args, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report written")
	}
}
