package harness

import (
	"testing"

	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// TestFitAndFootprint: every result says whether it fit and where it first
// ran out; on every corpus trace that fits, default jax and tf (which
// preallocate 75 % or nearly all of the card) show a placement cost below
// 50 % while frag-% reports their policy, and a jax run starved of memory
// does not fit (issue 12's checks).
func TestFitAndFootprint(t *testing.T) {
	dev := device(t, "a100-80g")
	for _, name := range corpus.Names() {
		evs := loadCorpus(t, name)
		for _, spec := range []string{"jax", "tf", "torch", "jax:preallocate=false", "tf:allow_growth=true"} {
			r := replayEvents(t, name, evs, spec, dev)
			if !r.Fit() || r.FirstOOMEvent() != -1 {
				t.Errorf("%s %s: fit %v, first OOM %d", name, spec, r.Fit(), r.FirstOOMEvent())
				continue
			}
			if r.PeakFootprint < r.PeakLive || r.PeakFootprint > r.PeakReserved {
				t.Errorf("%s %s: footprint %d outside [peak live %d, peak reserved %d]", name, spec, r.PeakFootprint, r.PeakLive, r.PeakReserved)
			}
			if p := r.PlacementFragPct(); p >= 50 {
				t.Errorf("%s %s: placement-frag-%% %.1f", name, spec, p)
			}
			switch spec {
			case "jax", "tf":
				if r.FragPct() < 50 || r.PeakFootprint >= r.PeakReserved {
					t.Errorf("%s %s: frag-%% %.1f, footprint %d of %d reserved: the preallocation should show in frag-%% only", name, spec, r.FragPct(), r.PeakFootprint, r.PeakReserved)
				}
			case "torch", "jax:preallocate=false", "tf:allow_growth=true":
				if r.PeakFootprint != r.PeakReserved {
					t.Errorf("%s %s: footprint %d, reserved %d: without a reservation policy they are the same", name, spec, r.PeakFootprint, r.PeakReserved)
				}
			}
		}
	}
	evs := loadCorpus(t, "gpt-train")
	r := replayEvents(t, "gpt-train", evs, "jax:mem_fraction=0.0001", dev)
	if r.Fit() || r.FirstOOMEvent() < 0 || r.FirstOOMEvent() != r.OOMs[0].Event {
		t.Errorf("jax:mem_fraction=0.0001 on gpt-train: fit %v, first OOM event %d", r.Fit(), r.FirstOOMEvent())
	}
	row := ResultRow(r)
	for i, u := range row.Units {
		if u == "fit" && row.Values[i] != 0 || u == "first-oom-event" && row.Values[i] < 0 {
			t.Errorf("row %s = %v", u, row.Values[i])
		}
	}
}

func replayEvents(t *testing.T, name string, evs []traces.Event, spec string, dev strategies.Device) *Result {
	t.Helper()
	r, err := Replay(name, &traces.SliceReader{Events: evs}, spec, dev, Options{Samples: 16})
	if err != nil {
		t.Fatalf("%s %s: %v", name, spec, err)
	}
	return r
}
