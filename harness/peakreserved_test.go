package harness

import (
	"testing"

	"membench/strategies"
	"membench/traces"
)

// countingLayouter is an allocator whose Layout calls are counted.
type countingLayouter struct {
	strategies.Allocator
	calls int
}

func (c *countingLayouter) Layout(fn func(strategies.Segment)) {
	c.calls++
	c.Allocator.(strategies.Layouter).Layout(fn)
}

// TestPeakReservedEvent: with Options.FindPeakReserved the replay notes
// the last event that raised reserved memory above its peak, without
// walking the allocator's layout (which at each new peak made a replay
// quadratic in the segments: membench report on 12,500 streams took 12
// s), and LayoutAt gives the layout then. Each allocation of the trace
// is on a stream of its own, so that torch makes a segment for each and
// every allocation is a new peak; the frees after them raise nothing.
func TestPeakReservedEvent(t *testing.T) {
	const n = 300
	var evs []traces.Event
	for i := range int64(n) {
		evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: uint64(i + 1), Size: 4096, Stream: i, Time: -1})
	}
	for i := range int64(n) {
		evs = append(evs, traces.Event{Op: traces.OpFree, ID: uint64(i + 1), Time: -1})
	}
	dev := device(t, "a100-80g")
	for _, spec := range []string{"torch", "torch:expandable_segments=true"} {
		a, sp, err := NewAllocator(spec, strategies.NewMemory(&dev))
		if err != nil {
			t.Fatal(err)
		}
		c := &countingLayouter{Allocator: a}
		res, err := ReplayWith("streams", &traces.SliceReader{Events: evs}, c, sp.String(), Options{Samples: 1, FindPeakReserved: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.PeakReservedEvent != n-1 || c.calls != 0 {
			t.Errorf("%s: peak reserved noted at event %d after %d layout walks, want event %d and none", spec, res.PeakReservedEvent, c.calls, n-1)
		}
		l, err := LayoutAt("streams", &traces.SliceReader{Events: evs}, spec, dev, res.PeakReservedEvent)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != n {
			t.Errorf("%s: %d segments at peak reserved, want %d", spec, len(l), n)
		}
		res, err = Replay("streams", &traces.SliceReader{Events: evs}, spec, dev, Options{Samples: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.PeakReservedEvent != -1 || res.PeakLayout != nil {
			t.Errorf("%s: without FindPeakReserved, event %d and a layout of %d segments, want -1 and none", spec, res.PeakReservedEvent, len(res.PeakLayout))
		}
	}
}
