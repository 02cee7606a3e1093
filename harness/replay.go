package harness

import (
	"fmt"
	"io"

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
	// KeepLayout records the allocator's layout at peak reserved memory
	// (for the report's state map). It costs a layout walk at each new
	// peak.
	KeepLayout bool
	// MaxMarks bounds the phase marks kept for charts.
	MaxMarks int
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
	PeakAllocated      int64 // max bytes in live blocks as the allocator rounds them
	DeviceMallocs      int64
	DeviceFrees        int64
	ModeledSec         float64
	DefragEvents       int64 // relocations of live buffers (TPU runtime model, defrag=true)
	DefragMoved        int64 // bytes those relocations moved
	OOMs               []OOMRecord
	OOMCount           int64
	Timeline           []Sample
	Marks              []Mark
	PeakLayout         []strategies.Segment
	DeviceNotes        []string
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
type liveEntry struct {
	h    strategies.Handle
	size int64
}

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
	return ReplayWith(name, r, a, sp.String(), opts)
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
	if offline {
		// An offline plan is made with the whole trace in view (foresee).
		var err error
		if r, err = foresee(name, r, off); err != nil {
			return &Result{Trace: name, Device: a.Memory().Dev.Label(), Strategy: label}, err
		}
	}
	mem := a.Memory()
	res := &Result{Trace: name, Device: mem.Dev.Label(), Strategy: label, Meta: r.Meta(), DeviceNotes: mem.Dev.Notes, Offline: offline}
	res.TraceNotes = TraceNotes(res.Meta)
	if n, ok := a.(strategies.Noter); ok {
		res.Notes = n.Notes()
	}
	layouter, _ := a.(strategies.Layouter)
	footprinter, _ := a.(strategies.Footprinter)
	var peakFootprint int64 // so far, for PeakFootprintEvent
	tl := newTimeline(opts.Samples)
	// ids: the trace's live allocations and their handles; an allocation
	// that failed stays live with handle -1 so that its free is accepted
	// and ignored. The Tracker also reports the trace's id errors.
	var ids traces.Tracker[liveEntry]
	// fail places err at event i, on the reader's file and line (name when
	// the reader has none).
	fail := func(i int64, err error) error {
		p := r.Pos()
		if p.File == "" {
			p.File = name
		}
		return &traces.PosError{File: p.File, Line: p.Line, Event: int(i), Err: err}
	}
	x := executionOf(label)
	compiled := x.Compiled()
	loader, _ := a.(strategies.ProgramLoader)
	tpu := mem.Dev.Kind == strategies.TPU
	// onTPU: launches' temps are program reservations (jit.TempIsProgram).
	onTPU := compiled && tpu && loader != nil
	var programs map[programKey]strategies.Program
	var temps int // temps of the launch open
	var launches traces.Launches
	var liveBytes int64
	var i int64
	// Events come in batches (traces.BatchReader) where the reader can:
	// one call per batch, and an event is read where it lies instead of
	// copied. Other readers fill a batch of one.
	br, batched := r.(traces.BatchReader)
	var buf []traces.Event
	if batched {
		buf = make([]traces.Event, replayBatch)
	} else {
		buf = make([]traces.Event, 1)
	}
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
		for k := range batch {
			ev := &batch[k]
			// Launches checks only launches and allocations of a kind
			// (format version 2): nothing else can break its rules.
			if ev.Kind != traces.KindNone || ev.Op > traces.OpMark {
				if err := launches.Event(ev, i); err != nil {
					return res, fail(i, err)
				}
			}
			switch ev.Op {
			case traces.OpAlloc:
				if ev.Size <= 0 || ev.Size > traces.MaxSize {
					return res, fail(i, ids.Alloc(ev.ID, ev.Size, liveEntry{}))
				}
				var donor liveEntry
				if ev.Donated {
					var err error
					if donor, err = ids.Donate(ev.Donor); err != nil {
						return res, fail(i, fmt.Errorf("output %d: %w", ev.ID, err))
					}
				}
				if jit.TempIsProgram(ev, onTPU) {
					if temps++; temps > 1 {
						exe, _ := launches.Open()
						return res, fail(i, fmt.Errorf("a second temp in one launch of %q on a TPU: an executable's temps are one program reservation (XLA combines them into one allocation, allocator-spec §3.1), and several are not modelled", exe))
					}
					if programs == nil {
						programs = map[programKey]strategies.Program{}
					}
					h, err := loadProgram(loader, programs, &launches, ev, res)
					if err != nil {
						res.OOMCount++
						if len(res.OOMs) < 1000 {
							res.OOMs = append(res.OOMs, OOMRecord{Event: i, OOM: strategies.OOM{Requested: ev.Size, Rounded: ev.Size, Reserved: mem.Reserved(), Allocated: a.Allocated(), Message: err.Error()}})
						}
					}
					if err := ids.Alloc(ev.ID, ev.Size, liveEntry{h, ev.Size}); err != nil {
						return res, fail(i, err)
					}
					if h == program {
						liveBytes += ev.Size
						if liveBytes > res.PeakLive {
							res.PeakLive, res.PeakLiveEvent = liveBytes, i
						}
					}
					break
				}
				if compiled {
					if done, err := allocCompiled(&ids, ev, donor, res); done || err != nil {
						if err != nil {
							return res, fail(i, err)
						}
						break
					}
				}
				res.Allocs++
				h, ok := a.Malloc(ev.Size, ev.Stream)
				if !ok {
					res.OOMCount++
					if len(res.OOMs) < 1000 {
						res.OOMs = append(res.OOMs, OOMRecord{Event: i, OOM: a.LastOOM()})
					}
					if err := ids.Alloc(ev.ID, ev.Size, liveEntry{h: failed}); err != nil {
						return res, fail(i, err)
					}
					break
				}
				if err := ids.Alloc(ev.ID, ev.Size, liveEntry{h, ev.Size}); err != nil {
					a.Free(h)
					return res, fail(i, err)
				}
				liveBytes += ev.Size
				if liveBytes > res.PeakLive {
					res.PeakLive, res.PeakLiveEvent = liveBytes, i
				}
				res.PeakAllocated = max(res.PeakAllocated, a.Allocated())
			case traces.OpFree:
				e, err := ids.Free(ev.ID)
				if err != nil {
					return res, fail(i, err)
				}
				if e.h == none {
					res.Elided++ // nothing was allocated: nothing to free
					break
				}
				if e.h == program {
					liveBytes -= e.size // the program stays loaded
					break
				}
				if e.h == noProgram {
					break
				}
				res.Frees++
				if e.h == failed {
					break // the allocation failed: its free is ignored
				}
				a.Free(e.h)
				liveBytes -= e.size
			case traces.OpMark:
				if len(res.Marks) < opts.MaxMarks {
					res.Marks = append(res.Marks, Mark{i, ev.Label})
				}
			case traces.OpLaunch:
				temps = 0
				if launches.Count == 1 {
					if err := x.CheckDevice(tpu, loader != nil, mem.Dev.Label()); err != nil {
						return res, fail(i, err)
					}
				}
			case traces.OpLaunchEnd:
			default:
				return res, fail(i, fmt.Errorf("unknown op %v", ev.Op))
			}
			if ev.Op == traces.OpAlloc {
				// Only an allocation, fitting or not, can raise the
				// footprint (placement, or a device allocation): it is
				// read on those events only.
				fp := mem.Peak()
				if footprinter != nil {
					fp = footprinter.PeakFootprint()
				}
				if fp > peakFootprint {
					peakFootprint, res.PeakFootprintEvent = fp, i
				}
			}
			reserved := mem.Reserved()
			if opts.KeepLayout && layouter != nil && reserved > res.PeakReserved {
				res.PeakLayout = res.PeakLayout[:0]
				layouter.Layout(func(s strategies.Segment) { res.PeakLayout = append(res.PeakLayout, s) })
			}
			res.PeakReserved = max(res.PeakReserved, mem.Peak())
			if i < tl.end { // tl.add, inlined by hand (over the inliner's budget)
				s := &tl.samples[len(tl.samples)-1]
				s.Live = max(s.Live, liveBytes)
				s.Reserved = max(s.Reserved, reserved)
			} else {
				tl.open(i, ev.Time, liveBytes, reserved)
			}
			if opts.Check && (opts.CheckEvery <= 1 || i%opts.CheckEvery == 0) {
				if err := a.Check(); err != nil {
					return res, fail(i, fmt.Errorf("invariant broken after %v: %w", ev.Op, err))
				}
			}
			i++
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return res, rerr
		}
	}
	res.Events = i
	if opts.Check && opts.CheckEvery > 1 {
		if err := a.Check(); err != nil {
			return res, fail(i-1, fmt.Errorf("invariant broken at the end: %w", err))
		}
	}
	if err := launches.End(); err != nil {
		return res, fail(i, err)
	}
	res.Launches = launches.Count
	if x != nil {
		note, err := x.Finish(res.Launches, res.Elided)
		if err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
		if onTPU && res.Launches > 0 {
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
	res.PeakFootprint = peakFootprint
	res.Timeline = tl.samples
	return res, nil
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
		if donor.h != none && ev.Size > donor.size {
			// XLA aliases an output only to a parameter of its shape
			// (HloInputOutputAliasConfig); a larger output cannot live
			// in the donor's memory, and guessing what happens would be
			// an approximation in silence.
			return true, fmt.Errorf("output %d of %d bytes is aliased to donated input %d of %d bytes: XLA aliases buffers of one shape, a larger output is not modelled", ev.ID, ev.Size, ev.Donor, donor.size)
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
