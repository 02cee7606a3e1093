package harness

import (
	"io"

	"membench/strategies"
	"membench/traces"
)

// LayoutAt replays the events 0..event of r (inclusive) through spec on
// dev and returns the allocator's layout right after event: the report's
// allocator state at a chosen moment, such as a Result's PeakLiveEvent,
// which is the same moment for every strategy, or its PeakFootprintEvent.
// (Options.FindPeakReserved gives the moment of peak reserved, which for
// a preallocating allocator is its first event.) It costs a replay of
// that prefix. A model that does not
// declare strategies.Layouter has no layout to give: nil. An offline
// plan (strategies.Offline) is made on the whole of r, as Replay makes it,
// and shown at event: a plan whose arena does not fit never ran and has
// no layout.
func LayoutAt(name string, r traces.Reader, spec string, dev strategies.Device, event int64) ([]strategies.Segment, error) {
	mem := strategies.NewMemory(&dev)
	a, sp, err := NewAllocator(spec, mem)
	if err != nil {
		return nil, err
	}
	layouter, ok := a.(strategies.Layouter)
	if !ok {
		return nil, nil
	}
	var replayed strategies.Allocator = a
	if off, ok := a.(strategies.Offline); ok {
		// A plan is made with the whole trace in view: planned on the
		// prefix alone it would be another plan (of a one-event trace
		// at event 0, an arena of that one buffer, which fits where the
		// whole plan does not). So it is made on the whole trace here,
		// and the prefix replayed through the plan without making it
		// again (unplanned hides Offline from ReplayWith).
		if r, _, err = foresee(name, r, off); err != nil {
			return nil, err
		}
		replayed = unplanned{a}
	}
	pr := &prefixReader{Reader: r, left: event + 1}
	if _, err := ReplayWith(name, pr, replayed, sp.String(), Options{Samples: 1, cut: true}); err != nil {
		return nil, err
	}
	var l []strategies.Segment
	layouter.Layout(func(s strategies.Segment) {
		s.Blocks = append([]strategies.Block(nil), s.Blocks...)
		l = append(l, s)
	})
	return l, nil
}

// LayoutAtJob is LayoutAt on a job's trace, device and strategy: what the
// report asks of each job after ReplayJob, for the layout at the replay's
// PeakLiveEvent.
func LayoutAtJob(j Job, event int64) ([]strategies.Segment, error) {
	r, err := j.Source.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return LayoutAt(j.Source.Name, r, j.Spec, j.Device, event)
}

// unplanned is an offline model whose plan LayoutAt has made already: it
// shows ReplayWith only the strategies.Allocator, so that the replay does
// not plan again on the prefix it is given.
type unplanned struct{ strategies.Allocator }

// prefixReader ends a trace after its first left events.
type prefixReader struct {
	traces.Reader
	left int64
}

func (p *prefixReader) Next() (traces.Event, error) {
	if p.left <= 0 {
		return traces.Event{}, io.EOF
	}
	p.left--
	return p.Reader.Next()
}
