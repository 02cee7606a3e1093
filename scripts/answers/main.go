package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"membench/harness"
	"membench/internal/sharedtraces"
	"membench/internal/units"
	"membench/strategies"
	"membench/traces/corpus"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "answers:", err)
		os.Exit(1)
	}
}

// span is the range of a figure over the corpus.
type span struct {
	lo, hi float64
	n      int
}

func (s *span) add(v float64) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.n++
}

func (s span) pct() string {
	if s.lo == s.hi {
		return fmt.Sprintf("%.1f %%", s.lo)
	}
	return fmt.Sprintf("%.1f–%.1f %%", s.lo, s.hi)
}

func (s span) ratio() string {
	if s.lo == s.hi {
		return fmt.Sprintf("%.3f×", s.lo)
	}
	return fmt.Sprintf("%.3f–%.3f×", s.lo, s.hi)
}

func bytes(n int64) string { return units.Bytes(float64(n), 2) }

func run(w io.Writer) error {
	gpu, err := strategies.ParseDevice("a100-80g")
	if err != nil {
		return err
	}
	var srcs []*harness.Source
	for _, name := range corpus.Names() {
		s, err := harness.ResolveTrace(name)
		if err != nil {
			return err
		}
		s.Cache(harness.DefaultCacheEvents)
		srcs = append(srcs, s)
	}
	defaults := []string{"jax", "tf", "torch"}

	// Fragmentation: every corpus trace on the A100 80GB model.
	jobs := harness.Jobs(srcs, []strategies.Device{gpu}, append(defaults, "jax:preallocate=false", "tf:allow_growth=true", "torch:expandable_segments=true"))
	results, err := harness.RunJobs(jobs, harness.Workers(), func(j harness.Job) (*harness.Result, error) {
		return harness.ReplayJob(j, harness.Options{Samples: 1})
	}, nil)
	if err != nil {
		return err
	}
	frag, placement := map[string]*span{}, map[string]*span{}
	fits := map[string]int{}
	for _, r := range results {
		if frag[r.Strategy] == nil {
			frag[r.Strategy], placement[r.Strategy] = &span{}, &span{}
		}
		if r.Fit() {
			fits[r.Strategy]++
			frag[r.Strategy].add(r.FragPct())
			placement[r.Strategy].add(r.PlacementFragPct())
		}
	}
	fmt.Fprintf(w, "## Answers\n\n")
	fmt.Fprintf(w, "Measured on the %d traces of the embedded corpus (the team's recordings and\n", len(srcs))
	fmt.Fprintf(w, "generated workloads) with the A100 80GB model; `frag-%%` counts everything\n")
	fmt.Fprintf(w, "reserved, `placement-frag-%%` only what the allocator's placement needed\n")
	failed := 0
	for _, r := range results {
		if !r.Fit() {
			failed++
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "(README, Metrics). All %d runs fit.\n\n", len(results))
	} else {
		fmt.Fprintf(w, "(README, Metrics). %d of %d runs did not fit and are left out of the ranges.\n\n", failed, len(results))
	}
	fmt.Fprintf(w, "**Fragmentation is a policy first.** JAX reserves 75 %% of the card and\n")
	fmt.Fprintf(w, "TensorFlow all of it less a system reserve, so their frag-%% is %s and\n", frag["jax"].pct())
	fmt.Fprintf(w, "%s: that is the preallocation, not waste. What their BFC placement\n", frag["tf"].pct())
	fmt.Fprintf(w, "actually needed leaves %s (JAX) and %s (TensorFlow) of the footprint\n", placement["jax"].pct(), placement["tf"].pct())
	fmt.Fprintf(w, "unused at the peak, against %s for PyTorch's caching allocator (which\n", placement["torch"].pct())
	fmt.Fprintf(w, "reserves what it places, so its two figures are the same) and %s with\n", placement["torch:expandable_segments=true"].pct())
	fmt.Fprintf(w, "expandable segments. Growing on demand (`jax:preallocate=false`,\n")
	fmt.Fprintf(w, "`tf:allow_growth=true`) the BFC's regions double, and frag-%% becomes %s and %s,\n",
		frag["jax:preallocate=false"].pct(), frag["tf:allow_growth=true"].pct())
	fmt.Fprintf(w, "while their placement leaves %s and %s of its footprint unused at the\n",
		placement["jax:preallocate=false"].pct(), placement["tf:allow_growth=true"].pct())
	fmt.Fprintf(w, "peak: the rest is the doubling, regions reserved ahead of need.\n\n")

	// OOM risk: the smallest card each default needs, its placement alone,
	// and the knob that helps most, on every corpus trace.
	cjobs := harness.Jobs(srcs, []strategies.Device{gpu}, defaults)
	advice, err := harness.RunJobs(cjobs, harness.Workers(), func(j harness.Job) (*harness.Advice, error) {
		return harness.Advise(j.Source, j.Spec, j.Device)
	}, nil)
	if err != nil {
		return err
	}
	card, limit := map[string]*span{}, map[string]*span{}
	knobs := map[string]map[string]int{}
	for _, a := range advice {
		d := a.Default
		if card[d.Strategy] == nil {
			card[d.Strategy], limit[d.Strategy], knobs[d.Strategy] = &span{}, &span{}, map[string]int{}
		}
		card[d.Strategy].add(float64(d.MinCard()) / float64(d.PeakLive))
		if a.Placement != nil {
			limit[d.Strategy].add(a.Placement.Ratio())
		}
		if a.Knob != nil {
			knobs[d.Strategy][a.KnobLine]++
		}
	}
	fmt.Fprintf(w, "**Running out of memory.** The smallest A100-family card (the 512 MiB CUDA\n")
	fmt.Fprintf(w, "context included) each framework fits on, over peak live: JAX %s,\n", card["jax"].ratio())
	fmt.Fprintf(w, "TensorFlow %s, PyTorch %s. With the reservation policy switched off\n", card["tf"].ratio(), card["torch"].ratio())
	fmt.Fprintf(w, "(the fraction at 1), the allocator limit JAX's placement needs is %s of\n", limit["jax"].ratio())
	fmt.Fprintf(w, "peak live and TensorFlow's %s: on small cards the gap is the policy and the\n", limit["tf"].ratio())
	fmt.Fprintf(w, "context, not the BFC. The settings that brought the card down most, each\n")
	fmt.Fprintf(w, "measured by its own capacity search (`membench capacity`):\n\n")
	for _, s := range defaults {
		// A fraction knob's value depends on the trace (the largest the
		// smallest card allows): group those by variable, with the range.
		counts, values := map[string]int{}, map[string]*span{}
		for line, n := range knobs[s] {
			name, val, _ := strings.Cut(line, "=")
			val, _, _ = strings.Cut(val, " ")
			var f float64
			if _, err := fmt.Sscanf(val, "%g", &f); err == nil && strings.Contains(val, ".") {
				if values[name] == nil {
					values[name] = &span{}
				}
				values[name].add(f)
				counts[name] += n
				continue
			}
			counts[line] += n
		}
		var ks []string
		for _, k := range sortedKeys(counts) {
			if v := values[k]; v != nil {
				ks = append(ks, fmt.Sprintf("`%s` at the largest fraction the smallest card allows (%.2f–%.2f; %d of %d traces)", k, v.lo, v.hi, counts[k], card[s].n))
				continue
			}
			ks = append(ks, fmt.Sprintf("`%s` (%d of %d traces)", k, counts[k], card[s].n))
		}
		if len(ks) == 0 {
			ks = []string{"none of the settings tried made the card smaller"}
		}
		fmt.Fprintf(w, "- %s: %s\n", s, strings.Join(ks, ", "))
	}
	fmt.Fprintln(w)

	// Defragmentation: the CS336 probe on a tight device, GPU against TPU.
	probe := ""
	if d := sharedtraces.Dir(); d != "" {
		probe = filepath.Join(d, "pytorch-snapshots", "cs336-lm-peak-probe.pickle")
		if _, err := os.Stat(probe); err != nil {
			probe = ""
		}
	}
	if probe == "" {
		fmt.Fprintf(w, "**Defragmentation** (needs ../shared/traces beside the repository): not measured here.\n")
		return nil
	}
	src, err := harness.ResolveTrace(probe)
	if err != nil {
		return err
	}
	src.Cache(harness.DefaultCacheEvents)
	tight, err := strategies.ParseDevice("gpu:capacity=3300MiB")
	if err != nil {
		return err
	}
	tpu, err := strategies.ParseDevice("tpu-v5e:capacity=3300MiB")
	if err != nil {
		return err
	}
	var lines []string
	for _, c := range []struct {
		spec string
		dev  strategies.Device
	}{{"jax:mem_fraction=1", tight}, {"tf:per_process_gpu_memory_fraction=1", tight}, {"torch", tight}, {"torch:expandable_segments=true", tight},
		{"jax", tpu}, {"jax:defrag=false", tpu}} {
		r, err := harness.ReplayJob(harness.Job{Source: src, Device: c.dev, Spec: c.spec}, harness.Options{Samples: 1})
		if err != nil {
			return err
		}
		verdict := "fits"
		if !r.Fit() {
			verdict = fmt.Sprintf("does not fit (first OOM at event %d)", r.FirstOOMEvent())
		} else if r.DefragEvents > 0 {
			verdict = fmt.Sprintf("fits by %d relocation(s) moving %s", r.DefragEvents, bytes(r.DefragMoved))
		}
		lines = append(lines, fmt.Sprintf("`%s` on %s: %s", c.spec, c.dev.Label(), verdict))
	}
	fmt.Fprintf(w, "**Defragmentation.** A GPU allocator cannot move a live buffer; the TPU\n")
	fmt.Fprintf(w, "runtime can (modelled, as an assumption: its allocator is closed source).\n")
	fmt.Fprintf(w, "The CS336 Transformer probe (a real PyTorch recording, peak live 3.03 GiB)\n")
	fmt.Fprintf(w, "on a device of 3300 MiB: %s.\n\n", strings.Join(lines, "; "))
	return nil
}

func sortedKeys(m map[string]int) []string {
	// Most traces first, then by name.
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}
