package strategies

import (
	"fmt"
	"math"
	"slices"
)

// An Adviser is what a framework's house knows of its reservation policy,
// so that `membench capacity` can answer two questions apart: the smallest
// card at the framework's defaults, and the smallest allocator limit its
// placement alone needs. Placement returns the spec with the policy
// switched off (the framework's fraction at 1), or false when the
// framework has no such policy on dev (PyTorch; any framework on a TPU,
// whose runtime model takes the whole heap). Knobs lists the settings
// worth measuring for a smaller card, given the allocator limit placement
// alone needs; the harness replays each and keeps the one that helps
// most, so a suggestion is a measurement, not folklore.
//
// Tune lists the settings `membench tune` searches on dev: the knobs a
// user of the framework sets (its defaults first), each with the line the
// user writes, so that the search compares what can be configured and its
// answer is a line to paste.
type Adviser struct {
	Placement func(sp Spec, dev Device) (Spec, bool)
	Knobs     func(sp Spec, dev Device, limit int64) []Knob
	Tune      func(dev Device) []Knob
}

// A Knob is one setting a user can make: the spec that applies it and the
// line the user writes (an environment variable where there is one).
type Knob struct {
	Spec Spec
	Line string
}

// NewKnob is the setting of strategy name with the knobs kvs (none: its
// defaults), written by a user as line.
func NewKnob(name, line string, kvs ...KV) Knob {
	return Knob{Spec: Spec{Name: name, Params: kvs}, Line: line}
}

// With returns a copy of s without the keys drop (aliases of the knob
// being set) and with kv appended.
func (s Spec) With(kv KV, drop ...string) Spec {
	out := Spec{Name: s.Name}
	for _, p := range s.Params {
		if p.Key != kv.Key && !slices.Contains(drop, p.Key) {
			out.Params = append(out.Params, p)
		}
	}
	out.Params = append(out.Params, kv)
	return out
}

// FractionForCard is the largest fraction, in hundredths, of a card of
// limit + the device family's reserve (Reserve, or Total − Capacity; rounded up to
// the granularity) that a framework can take without reaching into the
// CUDA context or runtime reserve: the value of a knob such as
// XLA_PYTHON_CLIENT_MEM_FRACTION on the smallest card placement alone
// needs. It is formatted for the knob line.
func FractionForCard(dev Device, limit int64) string {
	g := max(dev.Granularity, 1)
	overhead := dev.Overhead()
	card := (limit + overhead + g - 1) / g * g
	f := math.Floor(float64(card-overhead)/float64(card)*100) / 100
	return fmt.Sprintf("%.2f", max(f, 0.01))
}
