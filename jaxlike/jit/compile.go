package jit

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"membench/jaxlike/heapsim"
	"membench/traces"
)

// Donate is how Compile pairs a step's consumed inputs with its outputs
// (donate_argnums, allocator-spec §6.1).
type Donate uint8

const (
	// DonateAuto lets an output take over a consumed input of the same
	// size (see Compile for the matching rule).
	DonateAuto Donate = iota
	// DonateNone donates nothing: every output is allocated anew and the
	// inputs stay live until the launch has ended.
	DonateNone
)

func (d Donate) String() string {
	if d == DonateNone {
		return "none"
	}
	return "auto"
}

// ParseDonate reads a Donate by its String.
func ParseDonate(s string) (Donate, error) {
	switch s {
	case "auto":
		return DonateAuto, nil
	case "none":
		return DonateNone, nil
	}
	return 0, fmt.Errorf("donate %q: want auto or none", s)
}

// DefaultAlignment is the heap simulator's alignment Compile uses unless
// told otherwise: kXlaAllocatedBufferAlignBytes, 256 B in the newest XLA
// trees (allocator-spec §6.2).
const DefaultAlignment = 256

// CompileOptions configure Compile.
type CompileOptions struct {
	// Source names the input in the result's meta (compiled_from) and in
	// errors.
	Source string
	// Donate is the donation mode.
	Donate Donate
	// Alignment is the heap simulator's alignment; 0 means
	// DefaultAlignment.
	Alignment int64
}

// ApproximationKey is the meta key of a compiled trace's statement that
// it is an approximation; every replay of such a trace repeats it.
const ApproximationKey = "approximation"

// ApproximationNote is what a compiled trace says of itself under
// ApproximationKey.
const ApproximationNote = "compiled from a per-op trace by membench traces compile, an approximation of jit: each step is one launch whose buffers born and freed inside it are packed by XLA's heap simulator in their per-op order (allocator-spec §6.2); it cannot see XLA's fusion (which removes most intermediates), rematerialization or scheduling, nor which buffers a step reads, and it pairs donated inputs with outputs by size alone"

// ErrNoSteps is what Compile returns for a trace without step marks.
var ErrNoSteps = errors.New("no step marks")

// IsStepMark reports whether a mark labelled label begins a step: the
// label "step", or one starting "step:" ("step:0", "step:eval:3"), as
// the recorder and the generators write them.
func IsStepMark(label string) bool {
	return label == "step" || strings.HasPrefix(label, "step:")
}

// ExecutableOf is the executable a step labelled label launches: the
// label less a trailing ":<number>", so that step:0, step:1 … are
// launches of one executable "step", as every step of a training loop
// calls one jitted function.
func ExecutableOf(label string) string {
	if i := strings.LastIndexByte(label, ':'); i >= 0 {
		if _, err := strconv.ParseUint(label[i+1:], 10, 64); err == nil {
			return label[:i]
		}
	}
	return label
}

// compileBuf is one allocation of the input: where it was allocated and
// freed (event indexes; free -1 when it never is) and its id in the
// output (0 until emitted).
type compileBuf struct {
	alloc, free int
	out         uint64
}

// Compile turns a per-op trace with step marks into a compiled one
// (format version 2), the approximation of what jit would have asked of
// the allocator that ApproximationNote states; the result's meta says
// so, and every replay of it repeats the note.
//
// A step runs from a step mark (IsStepMark) to the next one, the last to
// the end of the trace. A per-op recording ends by freeing everything,
// which is no step's doing: the frees of buffers from before the last
// step that follow the trace's last allocation are the program's
// teardown, kept in their order after the last launch, and are no
// step's consumed inputs (nothing allocated after them could use their
// memory anyway). Each
// step becomes one launch of the executable ExecutableOf its label,
// after the step mark itself:
//
//   - an allocation born in the step and freed in it is an internal
//     buffer: the step's internal buffers are packed by the heap
//     simulator (heapsim.Pack, order Best, opt.Alignment) over the step's
//     logical time, where each alloc and each free advances the clock
//     (§6.2), and the executable's temp is the largest such heap over
//     its launches (XLA gives an executable one buffer assignment, so one
//     temp size); it is one allocation of kind temp, last in the launch
//     (§6.1), freed right after the launch ends;
//   - an allocation born in the step that outlives it is an output, in
//     allocation order, with its recorded size and stream;
//   - a buffer live before the step and freed in it is a consumed input.
//     Its free moves to right after the launch (after the temp's):
//     XLA cannot free a parameter during an execution, the caller's
//     reference ends after it. With DonateAuto each output, in
//     allocation order, takes over the consumed input of exactly its
//     size that was freed first among those not yet taken (donor=): XLA
//     aliases buffers of one shape, and a trace has only sizes, so equal
//     size stands for equal shape. With DonateNone nothing is donated.
//
// Events before the first step mark (weights, data) are kept as
// recorded, their allocations of kind eager (made op by op, outside any
// launch). Marks inside a step are dropped: a launch is one call, with
// no phases inside. Ids are renumbered sequentially from 1 in the order
// of the compiled trace's allocations, so that an output can never meet
// an input of the same id whose free moved after it. Times: a launch
// begins at its step mark's time and ends at the time of the step's last
// timed event; the allocations inside it have no time, the frees after
// it the end's.
//
// The trace is read whole. A trace without step marks is refused
// (ErrNoSteps), and so is one that already has launches, kinds or
// donations (it is compiled), and one whose executable's internal
// buffers sit on more than one stream (a compiled executable runs on
// one stream, §6.1). Errors about a record wrap a *traces.PosError that
// names the file and the event; the others name the input.
func Compile(r traces.Reader, opt CompileOptions) (*traces.SliceReader, error) {
	name := opt.Source
	align := opt.Alignment
	if align == 0 {
		align = DefaultAlignment
	}
	// XLA's alignments are powers of two (16 B in older trees, 256 B,
	// kXlaAllocatedBufferAlignBytes, in the newest; allocator-spec §6.2);
	// more than 1 MiB is no buffer alignment but a unit mistake.
	if align < 0 || align&(align-1) != 0 || align > 1<<20 {
		return nil, fmt.Errorf("traces compile %s: alignment %d: want a power of two from 1 to 1048576 bytes (XLA uses 16 or 256)", name, align)
	}
	cr := traces.Check(r)
	var evs []traces.Event
	var bufs []compileBuf
	var bufOf []int32 // per event: the buffer of an alloc or a free, -1 otherwise
	var lines []int   // per event: its line in the input (0 without lines)
	file := name
	live := map[uint64]int32{}
	var steps []int // event index of each step mark
	lastAlloc := -1
	for {
		ev, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("traces compile: %w", err)
		}
		if f := cr.Pos().File; f != "" {
			file = f
		}
		i := len(evs)
		b := int32(-1)
		switch ev.Op {
		case traces.OpLaunch, traces.OpLaunchEnd:
			return nil, fmt.Errorf("traces compile: %w", &traces.PosError{File: cr.Pos().File, Line: cr.Pos().Line, Event: i,
				Err: fmt.Errorf("the trace has executable launches: it is compiled already")})
		case traces.OpAlloc:
			if ev.Kind != traces.KindNone || ev.Donated {
				return nil, fmt.Errorf("traces compile: %w", &traces.PosError{File: cr.Pos().File, Line: cr.Pos().Line, Event: i,
					Err: fmt.Errorf("an allocation of kind %v: the trace says what its buffers are to XLA, so it is compiled already", ev.Kind)})
			}
			b = int32(len(bufs))
			bufs = append(bufs, compileBuf{alloc: i, free: -1})
			live[ev.ID] = b
			lastAlloc = i
		case traces.OpFree:
			b = live[ev.ID] // Check saw it live
			delete(live, ev.ID)
			bufs[b].free = i
		case traces.OpMark:
			if IsStepMark(ev.Label) {
				steps = append(steps, i)
			}
		}
		evs = append(evs, ev)
		bufOf = append(bufOf, b)
		lines = append(lines, cr.Pos().Line)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("traces compile %s: %w (marks labelled step or step:N): a step is what becomes one launch of a compiled executable, and the trace does not say where its steps begin", name, ErrNoSteps)
	}
	// The last step runs to the end of the trace; the frees in it of
	// buffers from before it that follow the trace's last allocation
	// are the program's teardown (teardown reports them).
	last := len(steps) - 1
	endOf := func(k int) int {
		if k < last {
			return steps[k+1]
		}
		return len(evs)
	}
	teardown := func(k, i int) bool { return k == last && i > lastAlloc }
	// Pass 1: each step's heap, each executable's temp and stream.
	type exe struct {
		temp     int64
		stream   int64
		streamOK bool
		launches int
		heaps    []int64
	}
	exes := map[string]*exe{}
	var exeOrder []string
	heaps := make([]int64, len(steps))
	var hbufs []heapsim.Buffer
	var clock []int64
	for k, m := range steps {
		x := ExecutableOf(evs[m].Label)
		e := exes[x]
		if e == nil {
			e = &exe{}
			exes[x] = e
			exeOrder = append(exeOrder, x)
		}
		lo, hi := m+1, endOf(k)
		hbufs = hbufs[:0]
		// Logical time: each alloc and each free advances the clock
		// (§6.2); clock[i] is event i's instant within the step.
		clock = clock[:0]
		var t int64
		for i := lo; i < hi; i++ {
			clock = append(clock, t)
			if evs[i].Op == traces.OpAlloc || evs[i].Op == traces.OpFree {
				t++
			}
		}
		for i := lo; i < hi; i++ {
			ev := &evs[i]
			if ev.Op != traces.OpAlloc {
				continue
			}
			b := bufs[bufOf[i]]
			if b.free < 0 || b.free >= hi {
				continue // an output
			}
			if !e.streamOK {
				e.stream, e.streamOK = ev.Stream, true
			} else if ev.Stream != e.stream {
				return nil, fmt.Errorf("traces compile: %w", &traces.PosError{File: file, Line: lines[i], Event: i,
					Err: fmt.Errorf("executable %q has internal buffers on streams %d and %d: a compiled executable runs on one stream (allocator-spec §6.1), and packing several into one temp is not modelled", x, e.stream, ev.Stream)})
			}
			hbufs = append(hbufs, heapsim.Buffer{ID: int64(len(hbufs)), Size: ev.Size, Start: clock[i-lo], End: clock[b.free-lo]})
		}
		if len(hbufs) > 0 {
			res, err := heapsim.Pack(hbufs, heapsim.Options{Alignment: align})
			if err != nil {
				return nil, fmt.Errorf("traces compile %s: step %q at event %d: %w", name, evs[m].Label, m, err)
			}
			heaps[k] = res.HeapSize
		}
		if heaps[k] > traces.MaxSize {
			return nil, fmt.Errorf("traces compile %s: step %q at event %d: a heap of %d B is more than a trace's largest size (%d B)", name, evs[m].Label, m, heaps[k], int64(traces.MaxSize))
		}
		e.temp = max(e.temp, heaps[k])
		e.launches++
		e.heaps = append(e.heaps, heaps[k])
	}

	// Pass 2: the compiled events.
	out := make([]traces.Event, 0, len(evs))
	var next uint64
	newID := func(b int32) uint64 {
		next++
		bufs[b].out = next
		return next
	}
	dropped := 0
	copyPlain := func(i int, kind traces.Kind) {
		ev := evs[i]
		switch ev.Op {
		case traces.OpAlloc:
			ev.ID = newID(bufOf[i])
			ev.Kind = kind
		case traces.OpFree:
			ev.ID = bufs[bufOf[i]].out
		}
		out = append(out, ev)
	}
	for i := 0; i < steps[0]; i++ {
		copyPlain(i, traces.KindEager)
	}
	type pending struct {
		size  int64
		ids   []uint64
		taken int
	}
	for k, m := range steps {
		mark := evs[m]
		x := ExecutableOf(mark.Label)
		e := exes[x]
		lo, hi := m+1, endOf(k)
		out = append(out, mark, traces.Event{Op: traces.OpLaunch, Label: x, Time: mark.Time})
		endTime := mark.Time
		// Consumed inputs, in the order of their frees, by size.
		var consumed, down []int
		bySize := map[int64]*pending{}
		for i := lo; i < hi; i++ {
			ev := &evs[i]
			if ev.Time != traces.NoTime {
				endTime = ev.Time
			}
			switch ev.Op {
			case traces.OpMark:
				dropped++
			case traces.OpFree:
				if b := bufs[bufOf[i]]; b.alloc < m {
					if teardown(k, i) {
						down = append(down, i)
						continue
					}
					consumed = append(consumed, i)
					if opt.Donate == DonateAuto {
						sz := evs[b.alloc].Size
						p := bySize[sz]
						if p == nil {
							p = &pending{size: sz}
							bySize[sz] = p
						}
						p.ids = append(p.ids, b.out)
					}
				}
			}
		}
		for i := lo; i < hi; i++ {
			ev := evs[i]
			if ev.Op != traces.OpAlloc {
				continue
			}
			if b := bufs[bufOf[i]]; b.free >= 0 && b.free < hi {
				continue // internal: in the temp
			}
			ev.ID, ev.Kind, ev.Time = newID(bufOf[i]), traces.KindOutput, traces.NoTime
			if p := bySize[ev.Size]; p != nil && p.taken < len(p.ids) {
				ev.Donated, ev.Donor = true, p.ids[p.taken]
				p.taken++
			}
			out = append(out, ev)
		}
		var tempID uint64
		if e.temp > 0 {
			next++
			tempID = next
			out = append(out, traces.Event{Op: traces.OpAlloc, ID: tempID, Size: e.temp, Stream: e.stream, Kind: traces.KindTemp, Time: traces.NoTime})
		}
		out = append(out, traces.Event{Op: traces.OpLaunchEnd, Label: x, Time: endTime})
		if tempID != 0 {
			out = append(out, traces.Event{Op: traces.OpFree, ID: tempID, Time: endTime})
		}
		for _, i := range consumed {
			out = append(out, traces.Event{Op: traces.OpFree, ID: bufs[bufOf[i]].out, Time: endTime})
		}
		for _, i := range down {
			copyPlain(i, traces.KindNone)
		}
	}

	meta := append(traces.Meta(nil), r.Meta()...)
	set := func(k, v string) {
		if hasKey(meta, k) {
			meta.Set(k, v)
			return
		}
		meta = append(meta, traces.KV{Key: k, Value: v})
	}
	if hasKey(meta, "ids") {
		set("ids", "renumbered sequentially from 1 in the order of the compiled trace's allocations (membench traces compile)")
	}
	set("compiled_from", name)
	set(ApproximationKey, ApproximationNote)
	set("donate", opt.Donate.String())
	set("alignment", strconv.FormatInt(align, 10))
	var xs []string
	for _, x := range exeOrder {
		e := exes[x]
		hs := make([]string, len(e.heaps))
		for i, h := range e.heaps {
			hs[i] = strconv.FormatInt(h, 10)
		}
		xs = append(xs, fmt.Sprintf("%s: %d launches, temp %d B, the largest of its steps' heaps (%s B)", x, e.launches, e.temp, strings.Join(hs, ", ")))
	}
	set("executables", strings.Join(xs, "; "))
	if dropped > 0 {
		set("dropped-marks", fmt.Sprintf("%d marks inside steps (phases inside a launch, which is one call)", dropped))
	}
	return &traces.SliceReader{Events: out, M: meta, Version: 2}, nil
}

// hasKey reports whether m has key k.
func hasKey(m traces.Meta, k string) bool {
	for _, kv := range m {
		if kv.Key == k {
			return true
		}
	}
	return false
}
