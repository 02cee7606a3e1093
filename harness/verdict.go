package harness

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"membench/internal/units"
)

// Verdict is the answer for one trace on one device: which strategies fit,
// ranked by the memory their placement needed (peak footprint), and which
// did not, with where they first ran out. A strategy that did not fit is
// never ranked: it answers nothing about waste.
type Verdict struct {
	Trace, Device string
	Fit           []*Result // fitting runs, least peak footprint first
	Failed        []*Result // in the order given
	// Bounds are the offline plans (Result.Offline), in the order given:
	// what a layout planned with the whole trace in view needs, shown
	// beside the ranking and never in it, since no allocator can plan so.
	Bounds []*Result
	// Advice, when the caller measured it, answers the card questions
	// for each strategy (keyed by Result.Strategy).
	Advice map[string]*Advice
}

// Verdicts groups results by trace and device, in the order they first
// appear, ranking the runs that fit by peak footprint (ties by peak
// reserved, then by the order given). advice, if not nil, is parallel to
// results (nil where not measured).
func Verdicts(results []*Result, advice ...*Advice) []Verdict {
	var out []Verdict
	index := map[string]int{}
	for ri, r := range results {
		key := r.Trace + "\x00" + r.Device
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Verdict{Trace: r.Trace, Device: r.Device})
		}
		if len(advice) == len(results) && advice[ri] != nil {
			if out[i].Advice == nil {
				out[i].Advice = map[string]*Advice{}
			}
			out[i].Advice[r.Strategy] = advice[ri]
		}
		if r.Offline {
			out[i].Bounds = append(out[i].Bounds, r)
		} else if r.Fit() {
			out[i].Fit = append(out[i].Fit, r)
		} else {
			out[i].Failed = append(out[i].Failed, r)
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i].Fit, func(a, b *Result) int {
			if a.PeakFootprint != b.PeakFootprint {
				return cmp.Compare(a.PeakFootprint, b.PeakFootprint)
			}
			return cmp.Compare(a.PeakReserved, b.PeakReserved)
		})
	}
	return out
}

// WriteVerdicts prints the verdicts in prose, one paragraph per trace and
// device: what fits, least footprint first with its placement cost and
// reservation, and what did not fit.
func WriteVerdicts(w io.Writer, vs []Verdict) error {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\nverdict: %s on %s: ", v.Trace, v.Device)
		switch n := len(v.Fit) + len(v.Failed); {
		case n == 0:
			b.WriteString("no allocator was replayed.")
		case len(v.Fit) == 0:
			b.WriteString("no strategy fits.")
		case n == 1 && len(v.Failed) == 0:
			b.WriteString("it fits:")
		case len(v.Failed) == 0:
			fmt.Fprintf(&b, "all %d fit; ranked by the memory their placement needed:", n)
		default:
			fmt.Fprintf(&b, "%d of %d fit, ranked by the memory their placement needed; the others are not ranked:", len(v.Fit), n)
		}
		for _, r := range v.Fit {
			fmt.Fprintf(&b, "\n  %s: fits; placement needs %s (placement-frag %.1f%%), reserves %s",
				r.Strategy, units.Bytes(float64(r.PeakFootprint), 2), r.PlacementFragPct(), units.Bytes(float64(r.PeakReserved), 2))
			writeAdvice(&b, v.Advice[r.Strategy])
		}
		for _, r := range v.Failed {
			fmt.Fprintf(&b, "\n  %s: does not fit: %d allocations failed, the first at event %d", r.Strategy, r.OOMCount, r.FirstOOMEvent())
			writeAdvice(&b, v.Advice[r.Strategy])
		}
		for _, r := range v.Bounds {
			fmt.Fprintf(&b, "\n  %s: offline bound, not an allocator (not ranked): ", r.Strategy)
			if r.Fit() {
				fmt.Fprintf(&b, "a layout planned with every lifetime known needs %s (%.1f%% over peak live %s)",
					units.Bytes(float64(r.PeakFootprint), 2), 100*(float64(r.PeakFootprint)/float64(max(r.PeakLive, 1))-1), units.Bytes(float64(r.PeakLive), 2))
				// The plan is a heuristic packing, not a lower bound: an
				// allocator can place the same trace in less (gpt-generate:
				// the BFC in 148.74 MiB, the plan 152.35 MiB). Said, so the
				// plan does not read as the least any layout needs.
				// An allocator that replayed the trace otherwise (a
				// compiled trace's launches, which the plan takes op by
				// op) placed other buffers: its placement is then no
				// measure of the plan, and the peak lives say why.
				if f := v.Fit; len(f) > 0 && f[0].PeakFootprint < r.PeakFootprint {
					if f[0].PeakLive == r.PeakLive {
						fmt.Fprintf(&b, "; not a floor here: %s placed it in %s (the plan is a heuristic; peak live %s is the floor)",
							f[0].Strategy, units.Bytes(float64(f[0].PeakFootprint), 2), units.Bytes(float64(r.PeakLive), 2))
					} else {
						fmt.Fprintf(&b, "; not comparable with %s's %s: the plan packs the trace's launches op by op (peak live %s), %s replayed other buffers (peak live %s)",
							f[0].Strategy, units.Bytes(float64(f[0].PeakFootprint), 2), units.Bytes(float64(r.PeakLive), 2), f[0].Strategy, units.Bytes(float64(f[0].PeakLive), 2))
					}
				}
			} else if len(v.Fit) > 0 {
				// "Even" would say no allocator fits: one did.
				fmt.Fprintf(&b, "its planned layout (%s) does not fit, though %s does (the plan is a heuristic)", units.Bytes(float64(r.PeakFootprint), 2), v.Fit[0].Strategy)
			} else {
				fmt.Fprintf(&b, "even a planned layout (%s) does not fit", units.Bytes(float64(r.PeakFootprint), 2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAdvice adds the card answers of one strategy: the smallest card at
// its settings and the knob that brings it down most, each measured.
func writeAdvice(b *strings.Builder, a *Advice) {
	if a == nil || a.Default == nil || a.Default.Unreachable {
		return
	}
	fmt.Fprintf(b, "; smallest card %s", units.Bytes(float64(a.Default.MinCard()), 2))
	if a.Knob != nil {
		fmt.Fprintf(b, ", %s with %s", units.Bytes(float64(a.Knob.MinCard()), 2), a.KnobLine)
	}
}
