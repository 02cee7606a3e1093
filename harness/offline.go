package harness

import (
	"fmt"
	"io"

	"membench/strategies"
	"membench/traces"
)

// foresee gives an offline model (strategies.Offline) the whole trace
// before its replay: it reads r to the end, checking every event as the
// replay loop does (sizes and ids, with the Tracker, so that an input
// error is reported at the same event and position), hands the model
// every allocation's lifetime, and returns a reader that serves the
// events again, from memory, for the replay. Planning needs the whole
// trace, so this costs memory in proportion to the trace's length, not
// to its live set as a streamed replay does; a plan is only made for the
// offline strategies that ask for it.
//
// It also returns the trace's peak live bytes and the event where they
// are first reached: the plan's peak live, which the plan's row reports
// whether or not its arena fits on the device (planPeak).
func foresee(name string, r traces.Reader, off strategies.Offline) (traces.Reader, planPeak, error) {
	var (
		evs   []traces.Event
		lives []strategies.Lifetime
		ids   traces.Tracker[int32] // index into lives of each live id
		i     int64
		live  int64
		peak  planPeak
	)
	fail := func(err error) error {
		p := r.Pos()
		if p.File == "" {
			p.File = name
		}
		return &traces.PosError{File: p.File, Line: p.Line, Event: int(i), Err: err}
	}
	for ; ; i++ {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, peak, err
		}
		switch ev.Op {
		case traces.OpAlloc:
			if err := ids.Alloc(ev.ID, ev.Size, int32(len(lives))); err != nil {
				return nil, peak, fail(err)
			}
			if len(lives) == 1<<31-1 {
				return nil, peak, fail(fmt.Errorf("more than %d allocations: too many to plan", 1<<31-1))
			}
			lives = append(lives, strategies.Lifetime{Size: ev.Size, Start: i, End: -1})
			if live += ev.Size; live > peak.live {
				peak = planPeak{live, i}
			}
		case traces.OpFree:
			k, err := ids.Free(ev.ID)
			if err != nil {
				return nil, peak, fail(err)
			}
			lives[k].End = i
			live -= lives[k].Size
		case traces.OpMark, traces.OpLaunch, traces.OpLaunchEnd:
			// A plan sees every buffer as the trace records it: an
			// executable's launches are phases to it, like marks.
		default:
			return nil, peak, fail(fmt.Errorf("unknown op %v", ev.Op))
		}
		evs = append(evs, ev)
	}
	for k := range lives {
		if lives[k].End < 0 {
			lives[k].End = i - 1 // never freed: live to the last event
		}
	}
	if err := off.Plan(lives); err != nil {
		return nil, peak, fmt.Errorf("trace %s: planning: %w", name, err)
	}
	return &traces.SliceReader{Events: evs, M: r.Meta()}, peak, nil
}

// planPeak is a trace's peak live bytes and the first event that reaches
// them.
//
// An offline plan's row reports them as its peak-live-B whether or not
// its arena fits on the device: its peak-footprint-B is the arena either
// way, and its placement-frag-% the plan's waste over them. A plan that
// does not fit cannot run, so every allocation of its replay fails and
// the replay's own peak live is 0, which made the row read as a plan
// wasting 100 % of its arena on nothing. When the arena fits, the replay
// serves every allocation and reaches the same peak at the same event.
type planPeak struct {
	live  int64
	event int64
}
