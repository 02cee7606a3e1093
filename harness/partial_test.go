package harness

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"membench/traces"
)

// eventReader hides SliceReader's batches: a reader read event by event,
// as the text formats are.
type eventReader struct{ *traces.SliceReader }

func (r eventReader) Next() (traces.Event, error) { return r.SliceReader.Next() }
func (r eventReader) Pos() traces.Pos             { return traces.Pos{} }

// brokenReader serves its events, then fails.
type brokenReader struct{ *traces.SliceReader }

var errBroken = errors.New("the reader broke")

func (r *brokenReader) NextBatch(buf []traces.Event) ([]traces.Event, error) {
	evs, err := r.SliceReader.NextBatch(buf[:min(len(buf), 100)])
	if err == io.EOF {
		return nil, errBroken
	}
	return evs, err
}

// TestPartialResult: a replay that stops at an error (a free of an id
// never allocated or freed already, an allocation of no bytes, a reader
// that fails) returns, with the error, a result whose counts and peaks
// are those of the events before it: what a replay of those events
// alone reports. The plain path counts its allocations and frees apart
// and adds them after the loop, which an error leaves too.
func TestPartialResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 24))
	var evs []traces.Event
	var live []uint64
	for id := uint64(1); len(evs) < 4000; {
		if len(live) < 50 || rng.IntN(2) == 0 {
			evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: id, Size: 1 + rng.Int64N(8<<20), Time: int64(len(evs))})
			live = append(live, id)
			id++
		} else {
			k := rng.IntN(len(live))
			evs = append(evs, traces.Event{Op: traces.OpFree, ID: live[k], Time: int64(len(evs))})
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		}
	}
	type fields struct {
		Allocs, Frees, Elided, OOMCount                      int64
		PeakLive, PeakLiveEvent, PeakReserved, PeakAllocated int64
		PeakFootprintEvent                                   int64
	}
	of := func(r *Result) fields {
		return fields{r.Allocs, r.Frees, r.Elided, r.OOMCount, r.PeakLive, r.PeakLiveEvent, r.PeakReserved, r.PeakAllocated, r.PeakFootprintEvent}
	}
	at := 3001
	for _, c := range []struct {
		name string
		bad  traces.Event // the event at at; none: the reader fails there
		want error
	}{
		{"unknown-id", traces.Event{Op: traces.OpFree, ID: 1 << 40}, traces.ErrUnknownID},
		{"double-free", traces.Event{Op: traces.OpFree, ID: 0}, traces.ErrDoubleFree},
		{"zero-size", traces.Event{Op: traces.OpAlloc, ID: 1 << 41}, traces.ErrBadSize},
		{"reader", traces.Event{}, errBroken},
	} {
		bad := append([]traces.Event(nil), evs[:at]...)
		if c.bad.Op != 0 {
			if c.name == "double-free" {
				for _, ev := range evs[:at] {
					if ev.Op == traces.OpFree {
						c.bad.ID = ev.ID
					}
				}
			}
			bad = append(bad, c.bad)
			bad = append(bad, evs[at:]...)
		}
		for _, spec := range []string{"torch", "torch:expandable_segments=true", "tf", "jax"} {
			for _, dev := range []string{"a100-80g", "gpu:capacity=192MiB"} {
				prefix, err := Replay("prefix", &traces.SliceReader{Events: evs[:at]}, spec, device(t, dev), DefaultOptions)
				if err != nil {
					t.Fatal(err)
				}
				for _, how := range []string{"batches", "events"} {
					name := fmt.Sprintf("%s/%s/%s/%s", c.name, spec, dev, how)
					var r traces.Reader = &traces.SliceReader{Events: bad}
					switch {
					case c.bad.Op == 0 && how == "events":
						continue
					case c.bad.Op == 0:
						r = &brokenReader{&traces.SliceReader{Events: bad}}
					case how == "events":
						r = eventReader{&traces.SliceReader{Events: bad}}
					}
					got, err := Replay("bad", r, spec, device(t, dev), DefaultOptions)
					if !errors.Is(err, c.want) {
						t.Errorf("%s: error %v, want %v", name, err, c.want)
						continue
					}
					if g, w := of(got), of(prefix); g != w {
						t.Errorf("%s: the stopped replay's result\n%+v\nwant its events' alone\n%+v", name, g, w)
					}
				}
			}
		}
	}
}
