package charts

import (
	"fmt"
	"strings"

	"membench/harness"
	"membench/internal/units"
	"membench/strategies"
)

// verdict is the page's first section for one trace on one device: which
// strategies fit, what each one's placement needed and cost, and which
// needs the least among those that fit. A run that did not fit is listed
// as such and is never the least: its figures are low because it could
// not obtain memory.
type verdict struct {
	Title   string
	Rows    []verdictRow
	Cols    verdictCols
	Summary []string // sentences, in order
}

// verdictCols says which optional columns the group has figures for.
type verdictCols struct {
	Card, Capacity bool
}

type verdictRow struct {
	Strategy string
	Colour   string
	Fit      string // "fits", "did not fit: …", or "–" when unknown
	Failed   bool
	// Bound marks an offline plan (harness.IsOffline): listed with its
	// figures, never counted among the strategies that fit or ranked.
	Bound bool
	// Least marks the strategies that fit with the least peak footprint.
	Least                         bool
	Footprint, PlacementFrag      string
	Reserved, Frag                string
	MinCard, MinCapacity          string
	footprint, card, capacityByte float64 // for the summary; 0 when unknown
	reserved                      float64
	// ran says the strategy was replayed on this device (not only
	// searched for a capacity): only then can it be said to fit here.
	ran bool
}

func verdicts(rep *Report) []verdict {
	many := rep.manyDevices()
	var vs []verdict
	for _, g := range rep.groups() {
		vs = append(vs, g.verdict(rep, many))
	}
	return vs
}

func (g *group) verdict(rep *Report, many bool) verdict {
	v := verdict{Title: g.title(many)}
	bytesOf := func(s, unit string) (string, float64) {
		if x, ok := g.metric(s, unit); ok {
			return units.Bytes(x, units.Auto), x
		}
		return "–", 0
	}
	pctOf := func(s, unit string) string {
		if x, ok := g.metric(s, unit); ok {
			return fmtFixed(x, 2) + " %"
		}
		return "–"
	}
	least := -1.0
	var fit, failed []string
	for _, s := range g.strategies() {
		o := g.outcome(s)
		r := verdictRow{Strategy: s, Colour: rep.colourOf(s), Fit: "–", Bound: harness.IsOffline(s), ran: o.known}
		switch {
		case r.Bound:
			r.Fit = "offline bound, not an allocator (not ranked)"
			if o.failed() {
				r.Fit = "offline bound: its plan does not fit (not ranked)"
			}
		case o.failed():
			r.Fit, r.Failed = "✕ "+o.long(), true
			failed = append(failed, s)
		case o.known:
			r.Fit = "✓ fits"
			fit = append(fit, s)
		}
		r.Footprint, r.footprint = bytesOf(s, "peak-footprint-B")
		r.PlacementFrag = pctOf(s, "placement-frag-%")
		r.Reserved, r.reserved = bytesOf(s, "peak-reserved-B")
		r.Frag = pctOf(s, "frag-%")
		r.MinCard, r.card = bytesOf(s, "min-card-B")
		r.MinCapacity, r.capacityByte = bytesOf(s, CapacityUnit)
		if !o.known && r.card > 0 {
			r.Fit = "– (capacity search only)"
		}
		v.Cols.Card = v.Cols.Card || r.card > 0
		v.Cols.Capacity = v.Cols.Capacity || r.capacityByte > 0
		if r.Failed {
			// Its figures are what it managed before it ran out.
			r.Footprint, r.PlacementFrag, r.Frag = "("+r.Footprint+")", "–", "–"
		}
		if r.Bound && o.failed() {
			// A plan that does not fit never ran: it reserved nothing,
			// and a frag-% of 0 over nothing would read as a plan that
			// wastes nothing beside allocators that reserved memory. Its
			// arena and placement-frag-% still describe the plan.
			r.Reserved, r.Frag = "–", "–"
		}
		if !r.Bound && o.known && o.fit && r.footprint > 0 && (least < 0 || r.footprint < least) {
			least = r.footprint
		}
		v.Rows = append(v.Rows, r)
	}
	var leastNames []string
	var leastRow verdictRow
	for i := range v.Rows {
		r := &v.Rows[i]
		if !r.Bound && !r.Failed && r.Fit != "–" && least > 0 && r.footprint == least {
			r.Least = true
			leastNames = append(leastNames, r.Strategy)
			if len(leastNames) == 1 {
				leastRow = *r
			}
		}
	}

	// Strategies known only from capacity searches (placement alone, a
	// knob) have no run: they are listed but not counted as fitting or not.
	n := len(fit) + len(failed)
	where := ""
	if g.device != "" {
		where = " on " + g.device
	}
	switch {
	case len(fit)+len(failed) == 0:
		v.Summary = append(v.Summary, "The results give no fit or OOM figures for this trace.")
	case len(failed) == 0:
		v.Summary = append(v.Summary, fmt.Sprintf("Every strategy fit%s (%d of %d).", where, len(fit), n))
	case len(fit) == 0:
		v.Summary = append(v.Summary, fmt.Sprintf("No strategy fit%s: allocations failed in every run, so none has a footprint to compare.", where))
	default:
		v.Summary = append(v.Summary, fmt.Sprintf("%d of %d strategies fit%s; %s did not.", len(fit), n, where, list(failed)))
	}
	if len(leastNames) > 0 {
		s := fmt.Sprintf("Needs the least: %s, a peak footprint of %s (placement-frag %s)", list(leastNames), leastRow.Footprint, leastRow.PlacementFrag)
		if pl, ok := rep.peakLive(g); ok && pl > 0 {
			s += fmt.Sprintf(" for %s live at the peak", units.Bytes(pl, units.Auto))
		}
		if len(fit) > 1 {
			s += fmt.Sprintf(", the least of the %d that fit", len(fit))
		}
		v.Summary = append(v.Summary, s+".")
	}
	var policies []string
	for _, r := range v.Rows {
		if !r.Bound && !r.Failed && r.Fit != "–" && r.footprint > 0 && r.reserved > r.footprint {
			// The excess is the policy's; the whole reservation beside it.
			policies = append(policies, fmt.Sprintf("%s %s (of %s reserved)", r.Strategy, units.Bytes(r.reserved-r.footprint, units.Auto), r.Reserved))
		}
	}
	switch {
	case len(policies) > 0 && g.kind() == strategies.TPU:
		// The TPU runtime takes the whole HBM less its reserve whatever
		// the framework's knobs (jax's mem_fraction and preallocate have
		// no effect on a TPU, as the model notes on every such run; the heap is
		// HBM less the runtime reserve, allocator-spec §6.4): no knob shrinks it.
		v.Summary = append(v.Summary, fmt.Sprintf("Held as the TPU runtime's heap beyond what placement needed: %s. The runtime takes the whole HBM less its reserve, whatever the framework's settings; membench capacity finds the smallest card.", list(policies)))
	case len(policies) > 0:
		// A preallocated region's rest, or what a growing BFC's regions
		// hold beyond their highest use (each is the larger of the
		// request and a size that doubles at every extension,
		// allocator-spec §2.4): the framework's reservation, not its
		// placement's waste.
		v.Summary = append(v.Summary, fmt.Sprintf("Reserved by policy (preallocation, or a growing BFC's doubling regions) beyond what placement needed: %s. The card must hold that unless the memory fraction is lowered or the framework grows on demand, whose regions are cut to the memory left; membench capacity finds the smallest card.", list(policies)))
	}
	for _, r := range v.Rows {
		if r.Bound && r.footprint > 0 {
			s := fmt.Sprintf("Offline bound %s: %s packed with every lifetime known in advance", r.Strategy, r.Footprint)
			// The plan's own peak live: an allocator that replayed a
			// compiled trace's launches compiled had other buffers live.
			pl, ok := g.metric(r.Strategy, "peak-live-B")
			if !ok || pl <= 0 {
				pl, ok = rep.peakLive(g)
			}
			if ok && pl > 0 {
				s += fmt.Sprintf(", %.3f× the %s live at the peak", r.footprint/pl, units.Bytes(pl, units.Auto))
			}
			// The plan is a heuristic packing, not a lower bound: an
			// allocator may place the same buffers in less (gpt-generate:
			// jax's BFC 148.74 MiB, the plan 152.35 MiB).
			switch lp, _ := g.metric(leastRow.Strategy, "peak-live-B"); {
			case least <= 0 || r.footprint <= least:
				s += "; no allocator deciding as requests come can be asked to beat it."
			case lp == pl:
				s += fmt.Sprintf("; here %s placed it in %s: the plan is a heuristic, and peak live is the floor.", leastRow.Strategy, leastRow.Footprint)
			default:
				s += fmt.Sprintf("; not comparable with %s's %s: the plan packs the trace's launches op by op, %s replayed other buffers (%s live at the peak).", leastRow.Strategy, leastRow.Footprint, leastRow.Strategy, units.Bytes(lp, units.Auto))
			}
			v.Summary = append(v.Summary, s)
		}
	}
	if k := g.bestKnob(v.Rows); k != "" {
		v.Summary = append(v.Summary, k)
	}
	return v
}

// bestKnob compares each strategy with knobs set against the same
// framework at its defaults, in the group, and says which knob helps
// most: one whose replay fits where the defaults' did not, or else the
// largest saving of the smallest card (min-card-B) when both have it, of
// peak footprint otherwise. "" when no knob helps or none was tried.
func (g *group) bestKnob(rows []verdictRow) string {
	byName := map[string]verdictRow{}
	for _, r := range rows {
		byName[r.Strategy] = r
	}
	best, bestGain := "", 0.0
	for _, r := range rows {
		sp, err := strategies.ParseSpec(r.Strategy)
		if err != nil || len(sp.Params) == 0 || r.Failed || r.Bound || r.Fit == "–" {
			continue
		}
		base, ok := byName[sp.Name]
		if !ok || base.Fit == "–" {
			continue
		}
		knob := strings.TrimPrefix(r.Strategy, sp.Name+":")
		if base.Failed && r.ran {
			s := fmt.Sprintf("Knob that helps most: %s makes %s fit (at its defaults it did not).", knob, sp.Name)
			if bestGain < 2 {
				best, bestGain = s, 2 // fitting beats any saving
			}
			continue
		}
		// A knob known only from its capacity search was not replayed
		// here: whether it fits on this device is unknown (a fraction
		// still caps growth on a small card), so only the smallest cards,
		// which both searches measured, compare; so too against a
		// default that did not fit, whose footprint is what it managed.
		what, a, b := "peak footprint", base.footprint, r.footprint
		if base.card > 0 && r.card > 0 {
			what, a, b = "smallest card", base.card, r.card
		} else if base.Failed {
			continue
		}
		if a <= 0 || b <= 0 || b >= a {
			continue
		}
		if gain := 1 - b/a; gain > bestGain {
			best, bestGain = fmt.Sprintf("Knob that helps most: %s on %s, %s %s against %s at its defaults (−%s %%).",
				knob, sp.Name, what, units.Bytes(b, units.Auto), units.Bytes(a, units.Auto), fmtFixed(100*gain, 1)), gain
		}
	}
	return best
}

// list joins names for a sentence: "a", "a and b", "a, b and c".
func list(ss []string) string {
	switch len(ss) {
	case 0:
		return ""
	case 1:
		return ss[0]
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " and " + ss[len(ss)-1]
}
