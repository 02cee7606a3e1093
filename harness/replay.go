package harness

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"membench/jaxlike/jit"
	"membench/strategies"
	"membench/traces"
)

// Options tune a replay.
type Options struct {
	// Samples bounds the timeline (the buffer holds up to twice as many).
	Samples int
	// Check runs the allocator's invariant checker after every event:
	// for tests, slow.
	Check bool
	// CheckEvery, if above 1, runs the checker after every CheckEvery-th
	// event instead (and after the last): the checkers walk the whole
	// state, so checking every event of a long trace costs O(n) per event,
	// and a stride keeps the test suite's campaigns cheap.
	CheckEvery int64
	// FindPeakReserved notes the event after which reserved memory
	// last rose above its peak (Result.PeakReservedEvent), for the
	// report's state map, which shows the allocator's layout then
	// (LayoutAt) when it has no other moment to show. The layout was
	// once taken at each new peak instead, and a trace that raises the
	// peak at each of n events (each allocation on a stream of its own,
	// with expandable segments a segment each) walked a layout of up to
	// n segments each time: 12,500 streams took 12 s in membench
	// report.
	FindPeakReserved bool
	// MaxMarks bounds the phase marks kept for charts.
	MaxMarks int
	// cut says the trace was cut at a chosen event (LayoutAt's prefix),
	// which may fall inside a launch: the peak of a compiled trace is
	// its step's temp. A launch still open at the cut is then no error.
	cut bool
}

// DefaultOptions are what `membench run` uses.
var DefaultOptions = Options{Samples: 1024, MaxMarks: 4096}

// Mark is a phase label at an event index.
type Mark struct {
	Event int64
	Label string
}

// OOMRecord is a failed allocation: where, and the allocator's account.
type OOMRecord struct {
	Event int64
	strategies.OOM
}

// Result is one replay's outcome.
type Result struct {
	Trace, Device, Strategy string
	Meta                    traces.Meta
	Events                  int64
	// Allocs and Frees are the allocations and frees passed to the
	// allocator (a failed allocation and its free included).
	Allocs, Frees int64
	// Launches is the number of executable launches the trace began
	// (format version 2), Elided the allocations and frees of the trace
	// a compiled replay did not pass to the allocator: parameters,
	// constants, outputs in donated memory, and their frees.
	Launches, Elided int64
	// ProgramLoads, ProgramReloads and ProgramReuses count what a
	// compiled replay on a TPU did with its launches' temps, each its
	// executable's program reservation (jit.TempIsProgram): programs
	// loaded at an executable's first launch, reloaded at a launch after
	// an eviction, and launches that found their program loaded.
	ProgramLoads, ProgramReloads, ProgramReuses int64
	// Execution says how the trace's buffers were allocated (op by op
	// or compiled, and why) for a strategy with a compiled mode (package
	// jit), and for any strategy on a trace with launches. It is a
	// statement about the replay, not an assumption of the model, so it
	// is not among Notes; the CLI and the report print it beside them.
	Execution     string
	PeakLive      int64 // max requested bytes live
	PeakLiveEvent int64
	PeakReserved  int64
	// PeakFootprint is what the allocator's own placement needed at most
	// (strategies.Footprinter), PeakReserved for a model without a
	// reservation policy of its own.
	PeakFootprint int64
	// PeakFootprintEvent is the event right after which the footprint
	// first reached PeakFootprint (for a model without a Footprinter,
	// where peak reserved was first reached): the moment the report draws
	// a preallocating allocator's state (LayoutAt), since its layout at
	// peak reserved is its first event, an empty region.
	PeakFootprintEvent int64
	// PeakAllocated is the most bytes in live blocks, as the allocator
	// rounds them, right after any allocation. After an allocation
	// whose id turned out to be live already (an input error that
	// stops the replay), an allocator that keeps this peak itself
	// (strategies.AllocatedPeaker) counts that allocation too.
	PeakAllocated int64
	DeviceMallocs int64
	DeviceFrees   int64
	ModeledSec    float64
	DefragEvents  int64 // relocations of live buffers (TPU runtime model, defrag=true)
	DefragMoved   int64 // bytes those relocations moved
	OOMs          []OOMRecord
	OOMCount      int64
	Timeline      []Sample
	Marks         []Mark
	// PeakLayout is the allocator's layout right after
	// PeakReservedEvent, which a caller fills (LayoutAt); the replay
	// leaves it nil.
	PeakLayout []strategies.Segment
	// PeakReservedEvent, with Options.FindPeakReserved and an allocator
	// that declares strategies.Layouter, is the last event after which
	// the reserved memory stood above its peak before the event; -1
	// otherwise.
	PeakReservedEvent int64
	DeviceNotes       []string
	// Notes are the allocator's own assumptions (strategies.Noter), as
	// the device's are DeviceNotes.
	Notes []string
	// TraceNotes are what the trace says of itself that every result
	// measured on it must repeat (TraceNotes: a compiled trace's
	// approximation).
	TraceNotes []string
	// Offline is set for a plan made with the whole trace in view
	// (strategies.Offline): a bound to read the allocators against, which
	// Verdicts shows beside their ranking, never in it.
	Offline bool
}

// Fit reports whether every allocation succeeded.
func (r *Result) Fit() bool { return r.OOMCount == 0 }

// FirstOOMEvent is the event index of the first allocation that failed,
// or -1 when the trace fit.
func (r *Result) FirstOOMEvent() int64 {
	if len(r.OOMs) == 0 {
		return -1
	}
	return r.OOMs[0].Event
}

// PlacementFragPct is placement-frag-%: 100 × (1 − peak live / peak
// footprint), the waste of the allocator's placement alone, apart from the
// framework's reservation policy that frag-% includes.
func (r *Result) PlacementFragPct() float64 {
	if r.PeakFootprint == 0 {
		return 0
	}
	return 100 * (1 - float64(r.PeakLive)/float64(r.PeakFootprint))
}

// FragPct is frag-%: 100 × (1 − peak live / peak reserved), GMLake's
// definition (architecture doc).
func (r *Result) FragPct() float64 {
	if r.PeakReserved == 0 {
		return 0
	}
	return 100 * (1 - float64(r.PeakLive)/float64(r.PeakReserved))
}

// liveEntry is a live allocation of the trace: its handle and requested
// size. The handle is failed for an allocation that failed (its free is
// ignored) and none for one a compiled replay did not allocate (a
// parameter, a constant, or a donor whose memory an output took over).
//
// The size is split in two words so that the entry is 12 bytes aligned to
// 4: with the tracker's flag byte a slot is then 16 bytes and four slots
// fill a cache line exactly. With an int64 the slot took 24 bytes, one in
// eight straddled two lines (of which a touch ahead brought in one), and
// at 10^6 live ids the tracker's pages spanned 160 MB instead of 107.
type liveEntry struct {
	h      strategies.Handle
	lo, hi uint32
}

// entry is the live entry of handle h for a request of size bytes
// (0..traces.MaxSize).
func entry(h strategies.Handle, size int64) liveEntry {
	return liveEntry{h: h, lo: uint32(size), hi: uint32(size >> 32)}
}

// size is the entry's requested size.
func (e liveEntry) size() int64 { return int64(e.hi)<<32 | int64(e.lo) }

// replayBatch is the number of events a replay asks a traces.BatchReader
// for at once: enough to make the call's cost vanish, few enough that the
// batch stays in the first-level cache (64 B an event).
const replayBatch = 256

const (
	failed strategies.Handle = -1
	none   strategies.Handle = -2
	// program is a launch's temp held as its executable's program
	// reservation on a TPU: live bytes of the trace, but no buffer of
	// the allocator, so its free frees nothing (the program stays
	// loaded).
	program strategies.Handle = -3
	// noProgram is a launch's temp whose program could not be loaded on
	// a TPU (an out-of-memory): like a failed allocation its free is
	// ignored, and like a program it was never an allocator call.
	noProgram strategies.Handle = -4
)

// programKey is a program of a compiled replay on a TPU: an executable
// and its temp size (jit.TempIsProgram).
type programKey struct {
	exe  string
	size int64
}

// Replay streams the events of r through the strategy spec on device dev.
// Input errors (from the reader or the checker: unknown ids, double frees,
// bad sizes) stop the replay and come back as *traces.PosError naming the
// file and line of r's Pos and the event's index in the replay;
// out-of-memory is an outcome, not an error.
func Replay(name string, r traces.Reader, spec string, dev strategies.Device, opts Options) (*Result, error) {
	mem := strategies.NewMemory(&dev)
	a, sp, err := NewAllocator(spec, mem)
	if err != nil {
		return nil, err
	}
	res, err := ReplayWith(name, r, a, sp.String(), opts)
	if rel, ok := a.(strategies.Releaser); ok {
		rel.Release()
	}
	return res, err
}

// ReplayWith replays through an allocator the caller built from the
// strategy spec label (which also says how executable launches run:
// executionOf).
//
// A trace with executable launches (format version 2) is replayed as its
// strategy runs them: compiled for jax by default and with jit=true, for
// tf with jit_compile=true, where package jit says which allocations a
// launch makes (parameters and constants none, a donated output its
// donor's memory); op by op otherwise, every allocation as recorded. The
// launches themselves, like marks, never reach the allocator.
// Result.Execution says which mode ran.
func ReplayWith(name string, r traces.Reader, a strategies.Allocator, label string, opts Options) (*Result, error) {
	if opts.Samples <= 0 {
		opts.Samples = DefaultOptions.Samples
	}
	off, offline := a.(strategies.Offline)
	var plan planPeak
	if offline {
		// An offline plan is made with the whole trace in view (foresee).
		var err error
		if r, plan, err = foresee(name, r, off); err != nil {
			return &Result{Trace: name, Device: a.Memory().Dev.Label(), Strategy: label}, err
		}
	}
	mem := a.Memory()
	res := &Result{Trace: name, Device: mem.Dev.Label(), Strategy: label, Meta: r.Meta(), DeviceNotes: mem.Dev.Notes, Offline: offline, PeakReservedEvent: -1}
	res.TraceNotes = TraceNotes(res.Meta)
	if n, ok := a.(strategies.Noter); ok {
		res.Notes = n.Notes()
	}
	if s := RecordedNote(label, res.Meta); s != "" {
		res.Notes = append(slices.Clip(res.Notes), s)
	}
	rp := replayers.Get().(*replayer)
	defer rp.release()
	*rp = replayer{name: name, r: r, a: a, mem: mem, res: res, opts: opts, ids: rp.ids, buf: rp.buf}
	rp.layouter, _ = a.(strategies.Layouter)
	rp.toucher, _ = a.(strategies.Toucher)
	rp.footprinter, _ = a.(strategies.Footprinter)
	// A model that keeps its footprint in a variable (FootprintWatcher)
	// has it read there after each allocation, without a call.
	if w, ok := a.(strategies.FootprintWatcher); ok {
		rp.footprintVar = w.PeakFootprintVar()
	}
	// A model that keeps the peak of Allocated (AllocatedPeaker) is
	// asked for it once, at the end, instead of Allocated after each
	// allocation.
	peaker, _ := a.(strategies.AllocatedPeaker)
	if peaker != nil {
		_, rp.keepsPeak = peaker.PeakAllocated()
	}
	if c, ok := r.(interface{ Remaining() int }); ok {
		rp.tl = newTimelineFor(opts.Samples, int64(c.Remaining()))
	} else {
		rp.tl = newTimeline(opts.Samples)
	}
	rp.x = executionOf(label)
	rp.compiled = rp.x.Compiled()
	rp.loader, _ = a.(strategies.ProgramLoader)
	rp.tpu = mem.Dev.Kind == strategies.TPU
	rp.onTPU = rp.compiled && rp.tpu && rp.loader != nil
	// perEvent: an event needs more than the plain path (checking, or
	// layouts on every event).
	rp.perEvent = opts.Check || (opts.FindPeakReserved && rp.layouter != nil)
	// Events come in batches (traces.BatchReader) where the reader can:
	// one call per batch, and an event is read where it lies instead of
	// copied. Other readers fill a batch of one.
	br, batched := r.(traces.BatchReader)
	buf := rp.buf
	if !batched {
		buf = buf[:1]
	}
	// stop is the error that ends the replay early; the result keeps
	// the peak reserved as it stood when the error arose.
	var stop error
	for {
		var batch []traces.Event
		var rerr error
		if batched {
			batch, rerr = br.NextBatch(buf)
		} else {
			buf[0], rerr = r.Next()
			if rerr == nil {
				batch = buf
			}
		}
		// With a large live set, the slot of a free's id is a cache
		// miss: it is touched a few events ahead (Tracker.Touch), so
		// that the miss overlaps the events in between. A small live
		// set is in the cache, and the touches would be wasted work.
		// Only a batch shows the frees ahead: a reader read event by
		// event gives batches of one, where a touch would come just
		// before the read it was to hide.
		rp.touch = batched && rp.ids.Live() >= touchLive
		if rp.touch {
			rp.touchFirst(batch)
		}
		if stop = rp.replay(batch); stop != nil {
			break
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			stop = rerr
			break
		}
	}
	i, tl := rp.i, rp.tl
	res.Allocs += rp.allocs
	res.Frees += rp.frees
	tl.close(rp.bucketLive, rp.bucketReserved)
	res.PeakReserved = rp.peakReserved
	if rp.keepsPeak {
		res.PeakAllocated, _ = peaker.PeakAllocated()
	}
	if stop != nil {
		return res, stop
	}
	res.Events = i
	if offline && !res.Fit() {
		// The plan's peak live, not the replay's 0 (planPeak).
		res.PeakLive, res.PeakLiveEvent = plan.live, plan.event
	}
	if opts.Check && opts.CheckEvery > 1 {
		if err := a.Check(); err != nil {
			return res, rp.fail(i-1, fmt.Errorf("invariant broken at the end: %w", err))
		}
	}
	if err := rp.launches.End(); err != nil && !opts.cut {
		return res, rp.fail(i, err)
	}
	res.Launches = rp.launches.Count
	if x := rp.x; x != nil {
		note, err := x.Finish(res.Launches, res.Elided)
		if err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
		if rp.onTPU && res.Launches > 0 {
			note += "; " + jit.ProgramNote(res.ProgramLoads, res.ProgramReloads, res.ProgramReuses)
		}
		res.Execution = note
	} else if res.Launches > 0 {
		res.Execution = fmt.Sprintf("replayed op by op: the trace's %d executable launches allocate every buffer as recorded (this strategy has no model of compiled executables)", res.Launches)
	}
	res.DeviceMallocs, res.DeviceFrees, res.ModeledSec = mem.Mallocs(), mem.Frees(), mem.Seconds()
	if d, ok := a.(strategies.Defragmenter); ok {
		res.DefragEvents, res.DefragMoved = d.DefragStats()
	}
	// Tracked per event above: the Footprinter's figure, else peak reserved.
	res.PeakFootprint = rp.peakFootprint
	res.Timeline = tl.samples
	return res, nil
}

// replay replays the events of batch, event rp.i on, and returns the
// error that stops the replay, if any.
//
// It is the replay's loop, apart from ReplayWith so that few values live
// across the model's calls: the batch, the event's place in it and rp,
// where everything else is (replayer says why). The plain events,
// allocations and frees of no kind in particular (every trace of format
// version 1), take the paths written here; anything else, and any error,
// goes through event, free or allocRest, out of line, so that this loop
// stays small: with the whole replay in one function, the values live
// across its calls were so many that every event reloaded dozens of them
// from the stack (a null allocator's replay cost 25 ns/event, 13 since).
func (rp *replayer) replay(batch []traces.Event) error {
	for k := range batch {
		if rp.touch {
			rp.touchAhead(batch, k)
		}
		ev := &batch[k]
		i := rp.i
		if ev.Kind == traces.KindNone && ev.Op == traces.OpFree {
			// TryFree does the common case; free the rest, errors
			// included.
			if e, ok := rp.ids.TryFree(ev.ID); ok && e.h >= 0 {
				// The live bytes before the model's call, so that the
				// entry's size is not kept across it.
				rp.liveBytes -= e.size()
				rp.frees++
				rp.a.Free(e.h)
			} else if err := rp.free(ev, e, ok, i); err != nil {
				return err
			}
			if !rp.perEvent && i < rp.tlEnd {
				// A free lowers the live bytes and never raises the
				// reserved ones, so the peaks and the open bucket's
				// maxima stand (TestFreeKeepsPeaks).
				rp.i = i + 1
				continue
			}
		} else {
			if ev.Kind == traces.KindNone && ev.Op == traces.OpAlloc && !ev.Donated && ev.Size > 0 && ev.Size <= traces.MaxSize {
				rp.allocs++
				h, ok := rp.a.Malloc(ev.Size, ev.Stream)
				if !ok {
					if err := rp.oom(ev, i); err != nil {
						return err
					}
				} else {
					// TryAlloc does the common case; allocRest
					// the rest, errors included.
					if !rp.ids.TryAlloc(ev.ID, entry(h, ev.Size)) {
						if err := rp.allocRest(ev, h, i); err != nil {
							return err
						}
					}
					rp.liveBytes += ev.Size
					if rp.liveBytes > rp.res.PeakLive {
						rp.res.PeakLive, rp.res.PeakLiveEvent = rp.liveBytes, i
					}
					if !rp.keepsPeak {
						rp.res.PeakAllocated = max(rp.res.PeakAllocated, rp.a.Allocated())
					}
				}
			} else if err := rp.event(ev, i); err != nil {
				return err
			}
			if ev.Op == traces.OpAlloc {
				// Only an allocation, fitting or not, can raise
				// the footprint (placement, or a device
				// allocation): it is read on those events only.
				fp := rp.mem.Peak()
				if rp.footprintVar != nil {
					fp = *rp.footprintVar
				} else if rp.footprinter != nil {
					fp = rp.footprinter.PeakFootprint()
				}
				if fp > rp.peakFootprint {
					rp.peakFootprint, rp.res.PeakFootprintEvent = fp, i
				}
			}
		}
		reserved := rp.mem.Reserved()
		if rp.perEvent {
			if err := rp.everyEvent(ev, i, reserved, rp.peakReserved); err != nil {
				// The check comes after this event's peak.
				rp.peakReserved = max(rp.peakReserved, rp.mem.Peak())
				return err
			}
		}
		rp.peakReserved = max(rp.peakReserved, rp.mem.Peak())
		// tl.add, inlined by hand (over the inliner's budget), with
		// the open bucket's maxima in rp that go to its sample when
		// the next bucket opens (nextBucket) or the replay ends.
		if i < rp.tlEnd {
			rp.bucketLive = max(rp.bucketLive, rp.liveBytes)
			rp.bucketReserved = max(rp.bucketReserved, reserved)
		} else {
			rp.nextBucket(ev, i, reserved)
		}
		rp.i = i + 1
	}
	return nil
}

// nextBucket closes the timeline's open bucket and opens the next at
// event i, ev, with reserved bytes reserved.
func (rp *replayer) nextBucket(ev *traces.Event, i, reserved int64) {
	rp.tl.close(rp.bucketLive, rp.bucketReserved)
	rp.bucketLive, rp.bucketReserved = rp.liveBytes, reserved
	rp.tl.open(i, ev.Time, rp.bucketLive, rp.bucketReserved)
	rp.tlEnd = rp.tl.end
}

// free is the free of event i, ev, when TryFree did not end its id's
// life (ok false: Free does, or reports the error) or its entry e is
// not the allocator's (freeSpecial).
func (rp *replayer) free(ev *traces.Event, e liveEntry, ok bool, i int64) error {
	if !ok {
		var err error
		if e, err = rp.ids.Free(ev.ID); err != nil {
			return rp.fail(i, err)
		}
	}
	if e.h >= 0 {
		rp.frees++
		rp.a.Free(e.h)
		rp.liveBytes -= e.size()
		return nil
	}
	rp.freeSpecial(e)
	return nil
}

// allocRest records the allocation of event i, ev, as h when TryAlloc
// did not: Alloc does, or reports the error, which frees h.
func (rp *replayer) allocRest(ev *traces.Event, h strategies.Handle, i int64) error {
	if err := rp.ids.Alloc(ev.ID, ev.Size, entry(h, ev.Size)); err != nil {
		rp.a.Free(h)
		return rp.fail(i, err)
	}
	return nil
}

// replayer is the state of a replay that ReplayWith's loop shares with
// the methods that handle the rare events out of line.
type replayer struct {
	name     string
	r        traces.Reader
	a        strategies.Allocator
	mem      *strategies.Memory
	res      *Result
	opts     Options
	layouter strategies.Layouter
	// ids: the trace's live allocations and their handles; an
	// allocation that failed stays live with handle -1 so that its free
	// is accepted and ignored. The Tracker also reports the trace's id
	// errors.
	ids      traces.Tracker[liveEntry]
	buf      []traces.Event // a batch of events read
	launches traces.Launches
	x        *jit.Execution
	compiled bool
	tpu      bool
	// onTPU: launches' temps are program reservations
	// (jit.TempIsProgram).
	onTPU    bool
	loader   strategies.ProgramLoader
	programs map[programKey]strategies.Program
	temps    int // temps of the launch open
	// The loop's peaks so far (peakFootprint for PeakFootprintEvent), and
	// the open bucket of the timeline: the first event past it and its
	// maxima so far (see the loop's end). They are fields, not locals of
	// ReplayWith: as locals, live across the model's calls on every path
	// of the loop, the compiler shuffled them between registers and the
	// stack at each event (cachegrind, gpt-generate under torch: the
	// loop's own instructions 105.4 → 101.1 an event; the null replay's
	// paired x-decode-cpu 0.97-1.00 → 0.90-0.95 in three interleaved runs,
	// torch's unchanged within the noise, 2026-11-24).
	peakFootprint, peakReserved, tlEnd, bucketLive, bucketReserved int64
	liveBytes                                                      int64
	// i is the index of the event being replayed; allocs and frees
	// count the replay's allocations and frees, every path's, added to
	// Result.Allocs and Frees when the loop ends (also when it stops
	// early): one increment at an offset from rp, where the plain path
	// counting in res took a load of res and one from it.
	i, allocs, frees int64
	tl               *timeline
	toucher          strategies.Toucher
	footprinter      strategies.Footprinter
	// footprintVar is a FootprintWatcher's variable, read after each
	// allocation.
	footprintVar *int64
	// perEvent: each event needs more than the plain path (checking, or
	// layouts on every event); touch: the batch's frees ahead are
	// touched (touchAhead).
	perEvent, touch bool
	// keepsPeak: the allocator keeps the peak of Allocated itself
	// (strategies.AllocatedPeaker), read at the end of the replay.
	keepsPeak bool
}

// replayers keep the memory of finished replays' replayers (their id
// trackers' pages and their batch buffers) for the next replay: a sweep
// runs thousands of short replays, and this memory was most of what each
// allocated (60 KB a replay, issue 15), garbage that made the collector
// compete with the sweep's workers.
var replayers = sync.Pool{New: func() any {
	return &replayer{buf: make([]traces.Event, replayBatch)}
}}

// release empties rp and gives it back to replayers. Nothing of rp
// outlives its replay: the result holds none of its memory.
func (rp *replayer) release() {
	rp.ids.Reset()
	clear(rp.buf)
	*rp = replayer{ids: rp.ids, buf: rp.buf}
	replayers.Put(rp)
}

// touchAhead touches what the frees a few events after event k of batch
// will read first: the slot of the free slotAhead events on
// (Tracker.Touch), and the allocator's record of the free recordAhead
// events on, whose slot an earlier touch brought in (strategies.Toucher).
func (rp *replayer) touchAhead(batch []traces.Event, k int) {
	if k+slotAhead < len(batch) && batch[k+slotAhead].Op == traces.OpFree {
		rp.ids.Touch(batch[k+slotAhead].ID)
	}
	if rp.toucher != nil && k+recordAhead < len(batch) && batch[k+recordAhead].Op == traces.OpFree {
		if e, ok := rp.ids.Peek(batch[k+recordAhead].ID); ok && e.h >= 0 {
			rp.toucher.Touch(e.h)
		}
	}
}

// touchFirst touches the slots of the frees among a batch's first
// slotAhead events, which touchAhead, seeing one batch at a time, cannot
// reach from the batch before: all at once, so that their misses overlap
// one another instead of coming one after another.
func (rp *replayer) touchFirst(batch []traces.Event) {
	for k := range min(slotAhead, len(batch)) {
		if batch[k].Op == traces.OpFree {
			rp.ids.Touch(batch[k].ID)
		}
	}
}

// How far ahead the replay touches, once the live set reaches touchLive
// ids. slotAhead is how many events before a free its id's slot is
// touched (Tracker.Touch): far enough that the miss is over when the
// replay through the null allocator, at about 40 ns an event with 10^6
// live blocks, comes to the free. Against 8 events, 32 with touchFirst
// cut that replay's cost at 10^6 by about a tenth (paired runs, sides
// swapped, 2026-11-24); the models' replays, slower per event, did not
// change. recordAhead is how many events before a free the model's record
// of it is touched (strategies.Toucher): at 10^6 live blocks, 4 cut a
// torch replay's cost per event by a fifth. The torch and TPU models
// touch in two stages (the record, then at the next touch what the
// record names: torch's address neighbours, the TPU free set's leaf),
// and the second stage needs its lead too: 8 against 4 took the TPU's
// 10^6 side from 181-198 to 168-172 cpu-ns/event (x-live1k-cpu
// 2.46-2.65 to 2.27-2.36) and left torch, tf and jax where they were;
// 12 and 16 were slower again (BenchmarkReplayLivePaired, two
// interleaved rounds, 2026-11-24).
const (
	slotAhead   = 32
	recordAhead = 8
	touchLive   = 1 << 16
)

// fail places err at event i, on the reader's file and line (the
// replay's name when the reader has none).
func (rp *replayer) fail(i int64, err error) error {
	p := rp.r.Pos()
	if p.File == "" {
		p.File = rp.name
	}
	return &traces.PosError{File: p.File, Line: p.Line, Event: int(i), Err: err}
}

// freeSpecial is the free of an allocation whose handle is not the
// allocator's (liveEntry): nothing to free, or a program to keep.
func (rp *replayer) freeSpecial(e liveEntry) {
	switch e.h {
	case none:
		rp.res.Elided++ // nothing was allocated: nothing to free
	case program:
		rp.liveBytes -= e.size() // the program stays loaded
	case failed:
		rp.frees++ // the allocation failed: its free is ignored
	}
}

// oom records the failed allocation ev at event i: the allocation stays
// live with the handle failed, so that its free is accepted and ignored.
func (rp *replayer) oom(ev *traces.Event, i int64) error {
	res := rp.res
	res.OOMCount++
	if len(res.OOMs) < 1000 {
		res.OOMs = append(res.OOMs, OOMRecord{Event: i, OOM: rp.a.LastOOM()})
	}
	if err := rp.ids.Alloc(ev.ID, ev.Size, liveEntry{h: failed}); err != nil {
		return rp.fail(i, err)
	}
	return nil
}

// everyEvent is what a replay does after each event only when asked:
// note each new peak of reserved memory (reserved now, above peakReserved
// before the event), and check the allocator's invariants.
func (rp *replayer) everyEvent(ev *traces.Event, i, reserved, peakReserved int64) error {
	if rp.opts.FindPeakReserved && rp.layouter != nil && reserved > peakReserved {
		rp.res.PeakReservedEvent = i
	}
	if rp.opts.Check && (rp.opts.CheckEvery <= 1 || i%rp.opts.CheckEvery == 0) {
		if err := rp.a.Check(); err != nil {
			return rp.fail(i, fmt.Errorf("invariant broken after %v: %w", ev.Op, err))
		}
	}
	return nil
}

// event replays event i, ev, in general: any op, any kind, with the
// checks of launches and sizes, compiled allocations and programs.
func (rp *replayer) event(ev *traces.Event, i int64) error {
	res, a := rp.res, rp.a
	// Launches checks only launches and allocations of a kind (format
	// version 2): nothing else can break its rules.
	if ev.Kind != traces.KindNone || ev.Op > traces.OpMark {
		if err := rp.launches.Event(ev, i); err != nil {
			return rp.fail(i, err)
		}
	}
	switch ev.Op {
	case traces.OpAlloc:
		if ev.Size <= 0 || ev.Size > traces.MaxSize {
			return rp.fail(i, rp.ids.Alloc(ev.ID, ev.Size, liveEntry{}))
		}
		var donor liveEntry
		if ev.Donated {
			var err error
			if donor, err = rp.ids.Donate(ev.Donor); err != nil {
				return rp.fail(i, fmt.Errorf("output %d: %w", ev.ID, err))
			}
		}
		if jit.TempIsProgram(ev, rp.onTPU) {
			if rp.temps++; rp.temps > 1 {
				exe, _ := rp.launches.Open()
				return rp.fail(i, fmt.Errorf("a second temp in one launch of %q on a TPU: an executable's temps are one program reservation (XLA combines them into one allocation, allocator-spec §3.1), and several are not modelled", exe))
			}
			if rp.programs == nil {
				rp.programs = map[programKey]strategies.Program{}
			}
			h, err := loadProgram(rp.loader, rp.programs, &rp.launches, ev, res)
			if err != nil {
				res.OOMCount++
				if len(res.OOMs) < 1000 {
					res.OOMs = append(res.OOMs, OOMRecord{Event: i, OOM: strategies.OOM{Requested: ev.Size, Rounded: ev.Size, Reserved: rp.mem.Reserved(), Allocated: a.Allocated(), Message: err.Error()}})
				}
			}
			if err := rp.ids.Alloc(ev.ID, ev.Size, entry(h, ev.Size)); err != nil {
				return rp.fail(i, err)
			}
			if h == program {
				rp.liveBytes += ev.Size
				if rp.liveBytes > res.PeakLive {
					res.PeakLive, res.PeakLiveEvent = rp.liveBytes, i
				}
			}
			return nil
		}
		if rp.compiled {
			if done, err := allocCompiled(&rp.ids, ev, donor, res); done || err != nil {
				if err != nil {
					return rp.fail(i, err)
				}
				return nil
			}
		}
		rp.allocs++
		h, ok := a.Malloc(ev.Size, ev.Stream)
		if !ok {
			return rp.oom(ev, i)
		}
		if err := rp.ids.Alloc(ev.ID, ev.Size, entry(h, ev.Size)); err != nil {
			a.Free(h)
			return rp.fail(i, err)
		}
		rp.liveBytes += ev.Size
		if rp.liveBytes > res.PeakLive {
			res.PeakLive, res.PeakLiveEvent = rp.liveBytes, i
		}
		if !rp.keepsPeak {
			res.PeakAllocated = max(res.PeakAllocated, a.Allocated())
		}
	case traces.OpFree:
		return rp.free(ev, liveEntry{}, false, i)
	case traces.OpMark:
		if len(res.Marks) < rp.opts.MaxMarks {
			res.Marks = append(res.Marks, Mark{i, ev.Label})
		}
	case traces.OpLaunch:
		rp.temps = 0
		if rp.launches.Count == 1 {
			if err := rp.x.CheckDevice(rp.tpu, rp.loader != nil, rp.mem.Dev.Label()); err != nil {
				return rp.fail(i, err)
			}
		}
	case traces.OpLaunchEnd:
	default:
		return rp.fail(i, fmt.Errorf("unknown op %v", ev.Op))
	}
	return nil
}

// allocCompiled applies XLA's rule for one alloc of a compiled replay
// (package jit): a parameter or a constant is recorded live with nothing
// allocated; a donated output takes over its donor's allocation, and the
// donor keeps nothing, so that its own free frees nothing. It reports
// done when the alloc needs no allocator call. donor is the donor's entry
// when ev is donated. Bytes move from the donor to the output, so live
// bytes do not change.
func allocCompiled(ids *traces.Tracker[liveEntry], ev *traces.Event, donor liveEntry, res *Result) (done bool, err error) {
	switch jit.RoleOf(ev) {
	case jit.External:
		res.Elided++
		return true, ids.Alloc(ev.ID, ev.Size, liveEntry{h: none})
	case jit.Reuse:
		if donor.h != none && ev.Size > donor.size() {
			// XLA aliases an output only to a parameter of its shape
			// (HloInputOutputAliasConfig); a larger output cannot live
			// in the donor's memory, and guessing what happens would be
			// an approximation in silence.
			return true, fmt.Errorf("output %d of %d bytes is aliased to donated input %d of %d bytes: XLA aliases buffers of one shape, a larger output is not modelled", ev.ID, ev.Size, ev.Donor, donor.size())
		}
		res.Elided++
		if err := ids.Alloc(ev.ID, ev.Size, donor); err != nil {
			return true, err
		}
		ids.Set(ev.Donor, liveEntry{h: none})
		return true, nil
	}
	return false, nil
}

// loadProgram places the temp ev of the launch open on a TPU as its
// executable's program (jit.TempIsProgram): the first launch of an
// executable loads a program of the temp's size, a later launch reuses
// it while the model keeps it loaded, and one after an eviction reloads
// it. It returns the temp's handle, program, or noProgram with the
// runtime's error when the program could not be loaded (an
// out-of-memory, which the replay records and goes on from).
func loadProgram(l strategies.ProgramLoader, programs map[programKey]strategies.Program, launches *traces.Launches, ev *traces.Event, res *Result) (strategies.Handle, error) {
	exe, _ := launches.Open()
	k := programKey{exe, ev.Size}
	p, seen := programs[k]
	if seen && l.ProgramLoaded(p) {
		res.ProgramReuses++
		return program, nil
	}
	p, err := l.LoadProgram(ev.Size)
	if err != nil {
		return noProgram, fmt.Errorf("loading the program of %q (%d B): %w", exe, ev.Size, err)
	}
	programs[k] = p
	if seen {
		res.ProgramReloads++
	} else {
		res.ProgramLoads++
	}
	return program, nil
}
