package harness

import (
	"testing"

	"membench/strategies"
)

// TestRankTune: within a framework the smallest card wins, then fitting
// on the device, then the least reserved, then the house's order; a
// setting that fits on no card is never best; frameworks keep the order
// they were asked in.
func TestRankTune(t *testing.T) {
	row := func(fw string, fi, order int, card int64, unreachable, fits bool, reserved int64) TuneRow {
		return TuneRow{Framework: fw, fw: fi, Order: order, Knob: strategies.Knob{Line: fw + string(rune('a'+order))},
			Capacity: &CapacityResult{MinCapacity: card, Unreachable: unreachable}, Fits: fits, Reserved: reserved}
	}
	rows := []TuneRow{
		row("torch", 0, 0, 100, false, true, 90),
		row("torch", 0, 1, 100, false, true, 80),
		row("torch", 0, 2, 90, false, false, 95),
		row("jax", 1, 0, 200, false, true, 10),
		row("jax", 1, 1, 1, true, false, 0),
		row("jax", 1, 2, 200, false, true, 10),
	}
	RankTune(rows)
	var got []string
	for _, r := range rows {
		s := r.Knob.Line
		if r.Best {
			s += "*"
		}
		got = append(got, s)
	}
	want := []string{"torchc*", "torchb", "torcha", "jaxa*", "jaxc", "jaxb"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ranked %v, want %v", got, want)
		}
	}
}
