package harness

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"membench/strategies"
	"membench/torchlike"
	"membench/torchlike/snapshot"
	"membench/traces"
)

// Export is what ExportMemoryViz made: the snapshot it writes and the
// replay's result (its notes, OOMs and execution mode, which the CLI
// prints beside the file). Close it to remove its trace's temporary file.
type Export struct {
	// Snapshot is the snapshot's segments and settings; its trace,
	// device_traces[0], is Trace, not Snapshot.DeviceTraces (which is
	// empty): a long replay's entries would not fit in memory (a 3 MB
	// trace made 500,000 entries, which took 400 MB as a Snapshot).
	Snapshot *snapshot.Snapshot
	// Trace is device_traces[0], the model's decisions in the order it
	// made them, kept compactly until WriteMemoryViz reads them back.
	Trace  *snapshot.Spool
	Result *Result
	// Moves is how many block relocations the file shows as a free and
	// an alloc (the snapshot format has no move).
	Moves int64
}

// ExportOptions are how ExportMemoryViz works, not what it writes.
type ExportOptions struct {
	// SpoolDir is where the trace's entries are kept once they outgrow
	// memory (snapshot.Spool): the output's directory, which has room for
	// them since the output is bigger. "" is os.TempDir().
	SpoolDir string
}

// Close removes the temporary file that holds e's trace, if it has one.
func (e *Export) Close() error { return e.Trace.Close() }

// ErrNotExportable is wrapped by ExportMemoryViz's error for a strategy
// whose model cannot report its decisions (strategies.Placer,
// strategies.Tracer and strategies.Layouter), or that is no allocator.
var ErrNotExportable = errors.New("strategy cannot be exported")

// ExportMemoryViz replays the trace r (named name) through the strategy
// spec on device dev, as Replay does, and returns the allocator's
// decisions as a PyTorch memory snapshot (allocator-spec §1.12), the
// dict torch.cuda.memory._dump_snapshot writes, so that pytorch.org/memory_viz
// shows a replay of any model:
//
//   - device_traces[0] holds, in order, every device allocation of the
//     model as segment_alloc and segment_free (a BFC region, the TPU
//     runtime's heap, a cudaMalloc'd segment) or segment_map and
//     segment_unmap (PyTorch's expandable segments), each allocation as
//     alloc (its address and requested bytes) and each free as
//     free_requested followed by free_completed, as PyTorch records a free
//     with no outstanding stream uses; failed allocations are oom entries.
//     A block a defragmentation moves is freed at its old address and
//     allocated at its new one; a program the TPU runtime loads is an
//     alloc, its unloading a free. time_us is the trace's clock when it
//     has one (its nanoseconds / 1000), else 0. Frames are empty lists.
//   - segments are the end state: each device allocation still held, with
//     its blocks tiling it (active_allocated, active_pending_free or
//     inactive), in address order, as MemoryViz and segsum require.
//   - allocator_settings are PyTorch's for a torch strategy (what
//     `membench validate` configures its replay from, so that validating
//     the export reproduces it), and otherwise strings that say which
//     model and device made the file (MemoryViz reads no setting).
//
// The entries are kept as they are made in a snapshot.Spool (in
// opts.SpoolDir once they outgrow memory), and WriteMemoryViz reads them
// back as it writes them, so that the memory an export needs does not
// grow with the trace's length (only with what the replay holds live).
//
// Stack frames are not written: a trace has none. Marks and launches are
// not written either: PyTorch's format has no phase entries that its
// viewer shows.
func ExportMemoryViz(name string, r traces.Reader, spec string, dev strategies.Device, opts ExportOptions) (*Export, error) {
	mem := strategies.NewMemory(&dev)
	a, sp, err := NewAllocator(spec, mem)
	if err != nil {
		return nil, err
	}
	if _, ok := a.(strategies.Offline); ok {
		return nil, fmt.Errorf("%s: %w: an offline plan is a bound made with the whole trace in view, not an allocator's decisions", sp, ErrNotExportable)
	}
	placer, okP := a.(strategies.Placer)
	tracer, okT := a.(strategies.Tracer)
	layouter, okL := a.(strategies.Layouter)
	if !okP || !okT || !okL {
		return nil, fmt.Errorf("%s: %w: its model has no blocks to export: it does not place buffers at addresses it reports (CUDA's stream-ordered pool remaps virtual ranges; the platform path is one device call per buffer)", sp, ErrNotExportable)
	}
	var settings *snapshot.Settings
	var foreign [][2]string
	if f, ok := memoryVizSettings[sp.Name]; ok {
		if settings, err = f(sp, a); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", sp, ErrNotExportable, err)
		}
	} else {
		foreign = [][2]string{
			{snapshot.ForeignStrategyKey, sp.String()},
			{snapshot.ForeignDeviceKey, dev.Label()},
			{snapshot.ForeignModelKey, modelName(a)},
			{"note", "not a PyTorch recording: membench's replay of this strategy's allocator model, exported in PyTorch's snapshot format (segments are the model's device allocations, blocks its chunks)"},
		}
	}

	rec := &recorder{inner: a, placer: placer, live: map[int64]int64{}, trace: snapshot.NewSpool(opts.SpoolDir)}
	tracer.SetTracer(rec.onTrace)
	defer tracer.SetTracer(nil)
	var wrapped strategies.Allocator = rec
	if l, ok := a.(strategies.ProgramLoader); ok {
		wrapped = &loaderRecorder{rec, l}
	}
	res, err := ReplayWith(name, &clockReader{Reader: r, rec: rec}, wrapped, sp.String(), Options{})
	if err == nil && rec.err != nil {
		err = fmt.Errorf("%s: %w", name, rec.err)
	}
	if err != nil {
		rec.trace.Close()
		return nil, err
	}
	snap := &snapshot.Snapshot{
		Segments:        rec.finalSegments(layouter),
		Settings:        settings,
		ForeignSettings: foreign,
	}
	return &Export{Snapshot: snap, Trace: rec.trace, Result: res, Moves: rec.moves}, nil
}

// modelName names the model's package (bfc, tpurt, platform): which
// allocator made the file, independent of the strategy's name.
func modelName(a strategies.Allocator) string {
	n := strings.TrimPrefix(fmt.Sprintf("%T", a), "*")
	n, _, _ = strings.Cut(n, ".")
	return n
}

// clockReader passes the trace through, telling the recorder the time of
// the event the replay is about to apply: ReplayWith applies each event
// before it reads the next.
type clockReader struct {
	traces.Reader
	rec *recorder
}

func (c *clockReader) Next() (traces.Event, error) {
	ev, err := c.Reader.Next()
	if err == nil {
		c.rec.timeUS = 0
		if ev.Time != traces.NoTime && ev.Time > 0 {
			c.rec.timeUS = ev.Time / 1000
		}
	}
	return ev, err
}

// recorder is the allocator as the replay sees it: every call goes to
// the model, and the decisions it made come back as trace entries, the
// ones it reports itself (strategies.Tracer) in the order it made them
// and the placement of each request (strategies.Placer) after them.
// Wrapping the model keeps the export out of the replay loop and out of
// the models' allocation paths.
type recorder struct {
	inner  strategies.Allocator
	placer strategies.Placer
	trace  *snapshot.Spool
	// err is the first error keeping an entry (a full disk): the replay
	// goes on, since a model's calls cannot fail for it, and the export
	// fails at its end.
	err    error
	timeUS int64
	// streams[h] is the stream of live handle h, for its free.
	streams []int64
	// live maps each device allocation held (segment_alloc, not yet
	// freed) to its size: the final segments are cut at their edges.
	live   map[int64]int64
	sawOOM bool
	moves  int64
}

func (r *recorder) add(action string, addr, size, stream int64) {
	r.keep(snapshot.TraceEntry{Action: action, Addr: addr, Size: size, Stream: stream, TimeUS: r.timeUS})
}

// oom records a failed allocation of size bytes.
func (r *recorder) oom(size, stream, deviceFree int64) {
	r.keep(snapshot.TraceEntry{Action: torchlike.ActionOOM, Size: size, Stream: stream, DeviceFree: deviceFree, TimeUS: r.timeUS})
}

func (r *recorder) keep(e snapshot.TraceEntry) {
	if err := r.trace.Add(&e); err != nil && r.err == nil {
		r.err = err
	}
}

// free records a free as PyTorch records one without outstanding stream
// uses: free_requested and, at once, free_completed, each with the
// block's requested bytes (§1.12).
func (r *recorder) free(addr, requested, stream int64) {
	r.add(torchlike.ActionFreeRequested, addr, requested, stream)
	r.add(torchlike.ActionFreeCompleted, addr, requested, stream)
}

func (r *recorder) onTrace(ev strategies.TraceEvent) {
	switch ev.Action {
	case strategies.TraceSegmentAlloc:
		r.live[ev.Addr] = ev.Size
		r.add(torchlike.ActionSegmentAlloc, ev.Addr, ev.Size, ev.Stream)
	case strategies.TraceSegmentFree:
		delete(r.live, ev.Addr)
		r.add(torchlike.ActionSegmentFree, ev.Addr, ev.Size, ev.Stream)
	case strategies.TraceSegmentMap:
		r.add(torchlike.ActionSegmentMap, ev.Addr, ev.Size, ev.Stream)
	case strategies.TraceSegmentUnmap:
		r.add(torchlike.ActionSegmentUnmap, ev.Addr, ev.Size, ev.Stream)
	case strategies.TraceMove:
		r.moves++
		r.free(ev.From, ev.Requested, ev.Stream)
		r.add(torchlike.ActionAlloc, ev.Addr, ev.Requested, ev.Stream)
	case strategies.TraceHold:
		r.add(torchlike.ActionAlloc, ev.Addr, ev.Requested, ev.Stream)
	case strategies.TraceRelease:
		r.free(ev.Addr, ev.Requested, ev.Stream)
	case strategies.TraceOOM:
		r.sawOOM = true
		r.oom(ev.Size, ev.Stream, ev.DeviceFree)
	}
}

func (r *recorder) Malloc(size, stream int64) (strategies.Handle, bool) {
	r.sawOOM = false
	h, ok := r.inner.Malloc(size, stream)
	if !ok {
		if !r.sawOOM {
			o := r.inner.LastOOM()
			r.oom(o.Rounded, stream, o.DeviceFree)
		}
		return h, ok
	}
	b := r.placer.Place(h)
	r.add(torchlike.ActionAlloc, b.Addr, size, stream)
	if int(h) >= len(r.streams) {
		r.streams = append(r.streams, make([]int64, int(h)+1-len(r.streams))...)
	}
	r.streams[h] = stream
	return h, ok
}

func (r *recorder) Free(h strategies.Handle) {
	b := r.placer.Place(h)
	r.free(b.Addr, b.Requested, r.streams[h])
	r.inner.Free(h)
}

func (r *recorder) LastOOM() strategies.OOM    { return r.inner.LastOOM() }
func (r *recorder) Memory() *strategies.Memory { return r.inner.Memory() }
func (r *recorder) Allocated() int64           { return r.inner.Allocated() }
func (r *recorder) Check() error               { return r.inner.Check() }

// Notes passes the model's own (strategies.Noter) to the result.
func (r *recorder) Notes() []string {
	if n, ok := r.inner.(strategies.Noter); ok {
		return n.Notes()
	}
	return nil
}

// loaderRecorder is the recorder of a model that loads programs (the TPU
// runtime), which a compiled replay needs to see as such.
type loaderRecorder struct {
	*recorder
	l strategies.ProgramLoader
}

func (r *loaderRecorder) LoadProgram(size int64) (strategies.Program, error) {
	r.sawOOM = false
	p, err := r.l.LoadProgram(size)
	if err != nil && !r.sawOOM {
		r.oom(size, 0, r.Memory().Available())
	}
	return p, err
}

func (r *loaderRecorder) ProgramLoaded(p strategies.Program) bool { return r.l.ProgramLoaded(p) }

// finalSegments is the snapshot's segments: the model's layout at the
// end, cut into the device allocations still held. A layout segment's
// unmapped ranges (an expandable segment's) are left out, its mapped
// runs each a segment, as PyTorch's snapshot shows them (§1.12); layout
// segments that one device allocation holds (the TPU runtime's program
// reservation and buffer heap) are joined into it, so that the segments
// are exactly what the trace's segment entries leave.
func (r *recorder) finalSegments(l strategies.Layouter) []snapshot.Segment {
	var segs []snapshot.Segment
	l.Layout(func(s strategies.Segment) {
		typ := "large"
		if strings.HasPrefix(s.Pool, "small") {
			typ = "small"
		}
		exp := strings.HasSuffix(s.Pool, "-expandable")
		open := false
		for _, b := range s.Blocks {
			if b.State == strategies.BlockUnmapped {
				open = false
				continue
			}
			if !open {
				segs = append(segs, snapshot.Segment{Address: b.Addr, Stream: s.Stream, SegmentType: typ, IsExpandable: exp})
				open = true
			}
			sg := &segs[len(segs)-1]
			sg.Blocks = append(sg.Blocks, blockOf(b))
			sg.TotalSize += b.Size
		}
	})
	slices.SortStableFunc(segs, func(x, y snapshot.Segment) int { return cmp.Compare(x.Address, y.Address) })
	// Join neighbours that lie in one device allocation.
	starts := make([]int64, 0, len(r.live))
	for a := range r.live {
		starts = append(starts, a)
	}
	slices.Sort(starts)
	within := func(lo, hi int64) bool {
		i, found := slices.BinarySearch(starts, lo)
		if !found {
			i--
		}
		return i >= 0 && starts[i] <= lo && hi <= starts[i]+r.live[starts[i]]
	}
	out := segs[:0]
	for _, sg := range segs {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Address+p.TotalSize == sg.Address && !p.IsExpandable && !sg.IsExpandable && within(p.Address, sg.Address+sg.TotalSize) {
				p.Blocks = append(p.Blocks, sg.Blocks...)
				p.TotalSize += sg.TotalSize
				continue
			}
		}
		out = append(out, sg)
	}
	for i := range out {
		sg := &out[i]
		for _, b := range sg.Blocks {
			switch b.State {
			case snapshot.StateActiveAllocated:
				sg.AllocatedSize += b.Size
				fallthrough
			case snapshot.StateActivePendingFree:
				// CUDACachingAllocator's snapshot(): active blocks count
				// their size and requested size, allocated ones also
				// their size as allocated.
				sg.ActiveSize += b.Size
				sg.RequestedSize += b.RequestedSize
			}
		}
	}
	return out
}

func blockOf(b strategies.Block) snapshot.Block {
	st := snapshot.StateInactive
	switch b.State {
	case strategies.BlockAllocated:
		st = snapshot.StateActiveAllocated
	case strategies.BlockPending:
		st = snapshot.StateActivePendingFree
	}
	req := min(b.Requested, b.Size)
	if st == snapshot.StateInactive {
		req = 0 // a free block requests nothing
	}
	return snapshot.Block{Address: b.Addr, Size: b.Size, RequestedSize: req, State: st}
}

// WriteMemoryViz writes e's snapshot as the pickle _dump_snapshot
// writes (snapshot.EncodePickleSpooled: the bytes of EncodePickle, its
// trace read back from e.Trace as it is written). It may be called more
// than once, until Close.
func (e *Export) WriteMemoryViz(w io.Writer) error {
	if err := snapshot.EncodePickleSpooled(w, e.Snapshot, []*snapshot.Spool{e.Trace}); err != nil {
		return fmt.Errorf("writing the snapshot: %w", err)
	}
	return nil
}
