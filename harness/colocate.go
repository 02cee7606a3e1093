package harness

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"membench/internal/units"
	"membench/strategies"
	"membench/traces"
)

// A Tenant is one process on a shared device: a trace replayed through a
// strategy (`membench run --colocate TRACE@STRATEGY`).
type Tenant struct {
	Source *Source
	Spec   string
}

// TenantResult is what one tenant of a colocated replay did.
type TenantResult struct {
	Trace, Strategy string
	Events          int64 // events replayed (up to its first OOM)
	// FirstOOM is the tenant's event index where an allocation first
	// failed (-1 when none did: it fit), and OOM the allocator's account
	// of it.
	FirstOOM int64
	OOM      strategies.OOM
	// Cause names the tenant whose holdings left too little, with what it
	// held beyond its live data, when this tenant failed.
	Cause                  string
	PeakLive, PeakReserved int64
	// Timeline is the tenant's live and reserved bytes over the shared
	// clock (Sample.Time, ns; Sample.Event counts the events of every
	// tenant), downsampled as a replay's timeline is, for the report's
	// shared chart.
	Timeline []Sample
}

// Fit says whether every allocation of the tenant succeeded: its first
// failure is its end, so there is none.
func (r *TenantResult) Fit() bool { return r.FirstOOM < 0 }

// DefaultColocateRate is the pace, in events per second, at which a
// tenant whose trace carries no clock is interleaved with the others: an
// assumption, stated in the output and set by --rate.
const DefaultColocateRate = 10000

// Colocate replays the tenants against one device whose memory they
// share (strategies.Share): each tenant's allocator is built on its own
// view of the device, so its reserved bytes and device calls stay its
// own, but a device allocation fails when the tenants together hold the
// capacity. Events are interleaved by their times (a trace without a clock
// advances at rate events a second), ties in the order the tenants were
// given. A tenant stops at its first failed allocation, as a framework
// raises an out-of-memory error; what it holds then stays held (the
// process is reported, not restarted). The cause of a failure is the
// other tenant holding the most memory beyond its live data (its
// reservation or caching policy), or, when none holds any, the one with
// the most live data.
func Colocate(tenants []Tenant, dev strategies.Device, rate float64) ([]TenantResult, error) {
	return colocate(tenants, dev, rate, true)
}

// colocate is Colocate; explain replays each failed tenant alone to tell
// its own limit from the others' holdings (a capacity search needs only
// whether everyone fits).
func colocate(tenants []Tenant, dev strategies.Device, rate float64, explain bool) ([]TenantResult, error) {
	if len(tenants) < 2 {
		return nil, fmt.Errorf("colocate: name at least two tenants (TRACE@STRATEGY)")
	}
	if dev.Kind == strategies.TPU {
		return nil, fmt.Errorf("colocate: %s is a TPU, and a TPU chip belongs to one process: the runtime takes a lock on it at start-up and a second process fails before it allocates anything (\"The TPU is already in use by process with pid N\", TryAcquireTpuLock in tensorflow/core/tpu/tpu_initializer_helper.cc; jax-ml/jax#22070); give each tenant a chip of its own instead", dev.Label())
	}
	if !(rate > 0) {
		rate = DefaultColocateRate
	}
	share := &strategies.Share{}
	type tenant struct {
		r       traces.Reader
		a       strategies.Allocator
		mem     *strategies.Memory
		ids     traces.Tracker[liveEntry]
		res     *TenantResult
		next    traces.Event
		at      int64 // the next event's time, ns
		i       int64
		live    int64
		done    bool
		stopped bool
		tl      *timeline
		src     *Source
	}
	// fail places err at the tenant's current event, on its file and
	// line (Locate finds them for a trace replayed from memory).
	fail := func(t *tenant, err error) error {
		p := t.r.Pos()
		if p.File == "" {
			p.File = t.res.Trace
		}
		return t.src.Locate(&traces.PosError{File: p.File, Line: p.Line, Event: int(t.i), Err: err})
	}
	ts := make([]*tenant, len(tenants))
	defer func() {
		for _, t := range ts {
			if t != nil && t.r != nil {
				t.r.Close()
			}
		}
	}()
	advance := func(t *tenant) error {
		ev, err := t.r.Next()
		if err == io.EOF {
			t.done = true
			return nil
		}
		if err != nil {
			return err
		}
		if ev.Op == traces.OpLaunch || ev.Op == traces.OpLaunchEnd {
			return fmt.Errorf("%s: colocation replays traces op by op; a trace with executable launches is not modelled here", t.res.Trace)
		}
		t.next = ev
		if ev.Time != traces.NoTime {
			t.at = ev.Time
		} else {
			t.at = clockless(t.i, rate)
		}
		return nil
	}
	for k, tn := range tenants {
		d := dev
		mem := strategies.NewMemory(&d)
		mem.Share = share
		a, sp, err := NewAllocator(tn.Spec, mem)
		if err != nil {
			return nil, fmt.Errorf("tenant %d (%s): %w", k+1, tn.Spec, err)
		}
		if _, ok := a.(strategies.Offline); ok {
			return nil, fmt.Errorf("tenant %d: %s is an offline plan, not a process that can share a device", k+1, tn.Spec)
		}
		r, err := tn.Source.Open()
		if err != nil {
			return nil, fmt.Errorf("tenant %d: %w", k+1, err)
		}
		t := &tenant{r: r, a: a, mem: mem, res: &TenantResult{Trace: tn.Source.Name, Strategy: sp.String(), FirstOOM: -1}, tl: newTimeline(DefaultOptions.Samples), src: tn.Source}
		ts[k] = t
		if err := advance(t); err != nil {
			return nil, fmt.Errorf("tenant %d: %w", k+1, err)
		}
	}
	var global int64 // events of every tenant, in the order replayed
	for ; ; global++ {
		var t *tenant
		for _, c := range ts {
			if !c.done && !c.stopped && (t == nil || c.at < t.at) {
				t = c
			}
		}
		if t == nil {
			break
		}
		ev := t.next
		switch ev.Op {
		case traces.OpAlloc:
			h, ok := t.a.Malloc(ev.Size, ev.Stream)
			if !ok {
				t.res.FirstOOM, t.res.OOM = t.i, t.a.LastOOM()
				t.res.Cause = cause(ts, t, func(o *tenant) (string, int64, int64) {
					return o.res.Trace + "@" + o.res.Strategy, o.mem.Reserved(), o.live
				})
				t.stopped = true
				break
			}
			if err := t.ids.Alloc(ev.ID, ev.Size, entry(h, ev.Size)); err != nil {
				return nil, fail(t, err)
			}
			t.live += ev.Size
			t.res.PeakLive = max(t.res.PeakLive, t.live)
		case traces.OpFree:
			e, err := t.ids.Free(ev.ID)
			if err != nil {
				return nil, fail(t, err)
			}
			t.a.Free(e.h)
			t.live -= e.size()
		}
		t.res.PeakReserved = max(t.res.PeakReserved, t.mem.Reserved())
		t.tl.add(global, t.at, t.live, t.mem.Reserved())
		if t.stopped {
			continue
		}
		t.i++
		if err := advance(t); err != nil {
			return nil, err
		}
	}
	// A tenant that fails as early on the device alone hit its own limit
	// (a fraction, a memory limit): the others are not the cause.
	for k, t := range ts {
		if t.res.Fit() || !explain {
			continue
		}
		alone, err := ReplayJob(Job{Source: tenants[k].Source, Device: dev, Spec: tenants[k].Spec}, Options{})
		if err != nil {
			return nil, fmt.Errorf("tenant %d alone: %w", k+1, err)
		}
		if first := alone.FirstOOMEvent(); first >= 0 && first <= t.res.FirstOOM {
			t.res.Cause = fmt.Sprintf("its own limit: alone on this device it fails too, at its event %d", first)
		}
	}
	out := make([]TenantResult, len(ts))
	for k, t := range ts {
		t.res.Events = t.i
		t.res.Timeline = t.tl.samples
		out[k] = *t.res
	}
	return out, nil
}

// cause names the tenant other than failed that holds the most memory
// beyond its live data, or the most live data when none holds more than
// it uses.
func cause[T comparable](ts []T, failed T, info func(T) (name string, reserved, live int64)) string {
	type c struct {
		name           string
		reserved, live int64
	}
	var cs []c
	for _, t := range ts {
		if t == failed {
			continue
		}
		n, r, l := info(t)
		cs = append(cs, c{n, r, l})
	}
	if len(cs) == 0 {
		return ""
	}
	best := slices.MaxFunc(cs, func(x, y c) int {
		return cmp.Or(cmp.Compare(x.reserved-x.live, y.reserved-y.live), cmp.Compare(x.live, y.live))
	})
	if best.reserved > best.live {
		return fmt.Sprintf("%s held %s of the device for %s of live data: its reservation or caching policy took the memory", best.name, units.Bytes(float64(best.reserved), 2), units.Bytes(float64(best.live), 2))
	}
	return fmt.Sprintf("%s held %s, all of it live data: the device is too small for both", best.name, units.Bytes(float64(best.reserved), 2))
}

// clockless is the time in nanoseconds of event i of a trace without a
// clock that advances at rate events a second. A time past int64's range
// (a very slow rate, or a very long trace) is the end of time: converting
// it as it stands wrapped to the most negative time on amd64, which
// placed the event before every other tenant's.
func clockless(i int64, rate float64) int64 {
	ns := float64(i) * 1e9 / rate
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(ns)
}

// ColocateCapacity is the smallest capacity, in steps of the device's
// granularity, at which every tenant fits: the card the group needs, less
// the device's overhead, found by MinCapacity's search (searchCapacity).
func ColocateCapacity(tenants []Tenant, dev strategies.Device, rate float64) (int64, error) {
	g := max(dev.Granularity, 1)
	fits := func(c int64) (bool, error) {
		d := dev
		d.Capacity, d.Free = c, c
		d.Total = c + dev.Overhead()
		rs, err := colocate(tenants, d, rate, false)
		if err != nil {
			return false, err
		}
		for _, r := range rs {
			if !r.Fit() {
				return false, nil
			}
		}
		return true, nil
	}
	capB, _, unreachable, err := searchCapacity(0, g, g, fits)
	if err == nil && unreachable {
		err = fmt.Errorf("colocate: the tenants do not fit together on any capacity up to %d B", MaxSearchCapacity)
	}
	return capB, err
}
