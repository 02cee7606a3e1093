package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"membench/torchlike"
	"slices"
	"strconv"
	"strings"

	"membench/internal/units"
	"membench/traces"
)

// The snapshot's two encodings are detected by traces (from the content
// alone, as every format) and decoded here.
func init() {
	traces.RegisterFormat(traces.FormatSnapshotPickle, openSnapshot)
	traces.RegisterFormat(traces.FormatSnapshotJSON, openSnapshot)
}

// openSnapshot reads a PyTorch memory snapshot (a pickle as
// torch.cuda.memory._dump_snapshot writes it, or the JSON dump of the same
// dict) and serves the events of one device's trace.
//
// The device is opts.Device, or with -1 the lowest device that has trace
// entries (the lowest device with segments if none has). The stream starts
// with one traces.OpAlloc for every block live before the first trace entry, in
// address order, as InitialState reconstructs them from the final
// segments (traces.Meta "warm_start"); then the trace: alloc → traces.OpAlloc on the
// entry's stream; the entry that returns a block's memory to the allocator
// → traces.OpFree (free_completed; or free_requested / free in a trace without
// free_completed; see Role); oom and snapshot → traces.OpMark labelled
// "oom" / "snapshot". free_requested entries that a free_completed follows
// and segment_* entries (the allocator's own decisions) give no event.
//
// Every alloc gets a fresh id, sequential from 1 (addresses are reused).
// Times are time_us minus the first entry's, in nanoseconds; the warm-start
// allocs are at time 0 (traces.NoTime when the snapshot has no clock). Errors are
// *traces.PosError values naming the file and, for the trace, the entry index in
// device_traces[device].
func openSnapshot(name string, r io.Reader, opts traces.OpenOptions) (traces.Reader, error) {
	fail := func(event int, err error) (traces.Reader, error) {
		return nil, &traces.PosError{File: name, Event: event, Err: err}
	}
	// A bufio.Reader (what traces.Open gives) is read as it is: a
	// second buffer would copy the file once more.
	br, buffered := r.(*bufio.Reader)
	if !buffered {
		br = getReader(r)
		defer putReader(br)
	}
	encoding := "pickle"
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return fail(-1, errors.New("empty PyTorch snapshot"))
			}
			return fail(-1, err)
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n' {
			br.Discard(1)
			continue
		}
		if b[0] == '{' || b[0] == '[' {
			encoding = "json"
		}
		break
	}
	var snap *Snapshot
	var raws []rawTrace
	var err error
	// The import's buffers, which go back with the reader's others once
	// it has served its trace (release); on an error they are dropped.
	bufs := importPool.Get().(*importBufs)
	if encoding == "json" {
		snap, err = DecodeJSON(br)
	} else {
		snap, raws, err = decodePickleBufs(br, DefaultLimits, true, bufs)
	}
	if err != nil {
		return fail(-1, err)
	}
	if raws == nil {
		raws = make([]rawTrace, len(snap.DeviceTraces))
		for d, tr := range snap.DeviceTraces {
			raws[d] = rawOf(tr)
		}
		snap.DeviceTraces = nil
	}
	trace := func(d int) rawTrace {
		if d >= 0 && d < len(raws) {
			return raws[d]
		}
		return newRawTrace(nil, nil)
	}

	devs := snap.Devices()
	for d := range raws {
		if len(raws[d].ents) > 0 {
			devs = append(devs, d)
		}
	}
	slices.Sort(devs)
	devs = slices.Compact(devs)
	dev := opts.Device
	if dev < 0 {
		dev = -1
		for _, d := range devs {
			if len(trace(d).ents) > 0 {
				dev = d
				break
			}
		}
		if dev < 0 {
			if len(devs) == 0 {
				return fail(-1, errors.New("the PyTorch snapshot holds no segments and no trace entries"))
			}
			dev = devs[0]
		}
	} else if !slices.Contains(devs, dev) {
		return fail(-1, fmt.Errorf("device %d is not in the PyTorch snapshot (devices present: %s)", dev, joinDevices(devs)))
	}

	tr := trace(dev)
	layout, err := snap.reconstruct(dev, tr, LayoutOptions{}, true, bufs)
	if err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			if errors.Is(err, ErrFreeNotLive) {
				return fail(ee.Entry, fmt.Errorf("%w (%w)", err, traces.ErrUnknownID))
			}
			return fail(ee.Entry, fmt.Errorf("reconstructing the allocator state before the trace: %w", err))
		}
		return fail(-1, fmt.Errorf("reconstructing the allocator state before the trace: %w", err))
	}

	unknown := unknownActions(&tr)
	if len(tr.ents) > 0 && unknown.n == len(tr.ents) {
		return fail(unknown.first, fmt.Errorf("none of the %d trace entries of device %d has an action membench knows (%s): not a trace it can replay", len(tr.ents), dev, unknown.list))
	}

	sr := &snapshotReader{
		name:  name,
		trace: tr,
		// Every trace of raws is the reader's own (decodePickle's or
		// rawOf's); the others are dropped.
		ownsTrace: true,
		roles:     layout.Roles,
		slots:     layout.slots,
		live:      idPool.get(int(layout.index.n)),
		nextID:    1,
		t0:        traces.NoTime,
		bufs:      bufs,
	}
	clear(sr.live)
	for _, e := range sr.trace.ents {
		if e.TimeUS != 0 {
			sr.t0 = e.TimeUS
			break
		}
	}
	initTime := traces.NoTime
	if sr.t0 != traces.NoTime {
		initTime = 0
	}
	sr.init = slices.Grow(bufs.init[:0], layout.NumBlocks())
	for _, sg := range layout.Segments {
		for _, b := range sg.Blocks {
			if b.RequestedSize <= 0 || b.RequestedSize > traces.MaxSize {
				// A block allocated before the trace with no recorded
				// request: replay it with the size it occupies.
				if b.Size <= 0 || b.Size > traces.MaxSize {
					return fail(-1, fmt.Errorf("warm-start block at %#x: size %d: %w", b.Address, b.Size, traces.ErrBadSize))
				}
				b.RequestedSize = b.Size
			}
			sr.init = append(sr.init, traces.Event{Op: traces.OpAlloc, ID: sr.nextID, Size: b.RequestedSize, Stream: sg.Stream, Time: initTime})
			if sl := layout.index.lookup(b.Address); sl >= 0 {
				// (A block at an address neither the trace nor the
				// final segments name cannot be freed by an entry.)
				sr.live[sl] = sr.nextID
			}
			sr.nextID++
		}
	}
	layout.index.release()
	layout.index = nil
	sr.meta = snapshotMeta(snap, dev, devs, encoding, layout, sr)
	// What the import's buffers hold besides the warm-start events is
	// read no more: the snapshot and the layout are dropped here.
	bufs.segs = snap.Segments
	snap.Segments, layout.Segments = nil, nil
	if unknown.n > 0 {
		sr.meta = append(sr.meta, traces.KV{Key: IgnoredEntriesKey, Value: fmt.Sprintf("%d entries with actions membench does not know (%s), first at entry %d: not replayed", unknown.n, unknown.list, unknown.first)})
	}
	return sr, nil
}

// IgnoredEntriesKey is the Meta key that counts the trace entries whose
// action membench does not know. They are not replayed, and the count
// is reported rather than silently dropped (the CLI prints it as a note).
const IgnoredEntriesKey = "ignored-entries"

type unknownCount struct {
	n     int    // entries with an unknown action
	first int    // index of the first
	list  string // "name count, ..." in name order, cut after 5 names
}

func unknownActions(tr *rawTrace) unknownCount {
	var u unknownCount
	var counts map[string]int
	for i := range tr.ents {
		if tr.kindOf(i) != kindUnknown {
			continue
		}
		if u.n == 0 {
			u.first = i
			counts = map[string]int{}
		}
		u.n++
		counts[tr.action(i)]++
	}
	if u.n == 0 {
		return u
	}
	names := slices.Sorted(maps.Keys(counts))
	var parts []string
	for i, a := range names {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("... %d more", len(names)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%q %d", snapMetaValue(ShortAction(a)), counts[a]))
	}
	u.list = strings.Join(parts, ", ")
	return u
}

// ShortAction shortens a recorded action (it may be anything a damaged
// file holds) for a message.
func ShortAction(a string) string {
	if len(a) > 40 {
		return a[:40] + "..."
	}
	return a
}

func joinDevices(devs []int) string {
	if len(devs) == 0 {
		return "none"
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, ",")
}

// actionCounts lists how many entries of each action the trace has, in
// name order: the figures a snapshot's own description gives.
func actionCounts(tr *rawTrace) string {
	// Counted in an array (a map update per entry cost more than the
	// rest of the metadata).
	var n [len(knownActions) + 1]int
	for i := range tr.ents {
		n[tr.kindOf(i)]++
	}
	// In name order, without a map or fmt (fixed costs of every
	// import, which a snapshot of a hundred entries notices), in a
	// buffer on the stack for all but the longest.
	out := make([]byte, 0, 128)
	for _, k := range actionOrder {
		if n[k] == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, ", "...)
		}
		out = append(out, actionName(k)...)
		out = append(out, ' ')
		out = strconv.AppendInt(out, int64(n[k]), 10)
	}
	return string(out)
}

// actionName is the name actionCounts gives knownActions index k; the
// entries with actions it does not know are named in ignored-entries.
func actionName(k int) string {
	if k < len(knownActions) {
		return knownActions[k]
	}
	return "(unknown)"
}

// actionOrder lists the knownActions indices and len(knownActions) (the
// unknown ones) in the order of their names.
var actionOrder = func() []int {
	order := make([]int, len(knownActions)+1)
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(actionName(a), actionName(b)) })
	return order
}()

// knownActions are the actions torchlike.KnownAction knows.
var knownActions = [...]string{
	torchlike.ActionAlloc, torchlike.ActionFreeRequested, torchlike.ActionFreeCompleted, torchlike.ActionFree,
	torchlike.ActionSegmentAlloc, torchlike.ActionSegmentFree, torchlike.ActionSegmentMap, torchlike.ActionSegmentUnmap,
	torchlike.ActionSnapshot, torchlike.ActionOOM, torchlike.ActionUserDefined,
}

// actionIndex is a's index in knownActions, or len(knownActions) for an
// action it does not hold.
func actionIndex(a string) int {
	switch a {
	case torchlike.ActionAlloc:
		return 0
	case torchlike.ActionFreeRequested:
		return 1
	case torchlike.ActionFreeCompleted:
		return 2
	case torchlike.ActionFree:
		return 3
	case torchlike.ActionSegmentAlloc:
		return 4
	case torchlike.ActionSegmentFree:
		return 5
	case torchlike.ActionSegmentMap:
		return 6
	case torchlike.ActionSegmentUnmap:
		return 7
	case torchlike.ActionSnapshot:
		return 8
	case torchlike.ActionOOM:
		return 9
	case torchlike.ActionUserDefined:
		return 10
	}
	return len(knownActions)
}

// recordedPeakReserved is the peak of the bytes the recorded allocator
// held: the reserved bytes at the first entry plus every segment event.
func recordedPeakReserved(tr *rawTrace, l *Layout) int64 {
	var r int64
	for _, s := range l.Segments {
		r += s.Size
	}
	peak := r
	for i := range tr.ents {
		switch tr.kindOf(i) {
		case kindSegmentAlloc, kindSegmentMap:
			r += tr.ents[i].Size
		case kindSegmentFree, kindSegmentUnmap:
			r -= tr.ents[i].Size
		}
		peak = max(peak, r)
	}
	return peak
}

func snapshotMeta(snap *Snapshot, dev int, devs []int, encoding string, l *Layout, sr *snapshotReader) traces.Meta {
	// Room for the optional keys and ten settings, so that the slice
	// is allocated once.
	m := make(traces.Meta, 0, 24)
	m = append(m, traces.Meta{
		{Key: "format", Value: "pytorch-snapshot"},
		{Key: "encoding", Value: encoding},
		{Key: "device", Value: strconv.Itoa(dev)},
		{Key: "devices", Value: joinDevices(devs)},
		{Key: "entries", Value: strconv.Itoa(len(sr.trace.ents))},
		{Key: "entry-actions", Value: actionCounts(&sr.trace)},
		{Key: "recorded-peak-reserved-B", Value: strconv.FormatInt(recordedPeakReserved(&sr.trace, l), 10)},
		{Key: "ids", Value: "one fresh id per alloc, sequential from 1 (recorded addresses are reused); warm-start blocks first, in address order"},
	}...)
	if sr.t0 != traces.NoTime {
		var b [96]byte
		v := append(strconv.AppendInt(b[:0], sr.t0, 10), " (time_us of the first entry; event times count from it)"...)
		m = append(m, traces.KV{Key: "time-origin-us", Value: string(v)})
	}
	if n := l.NumBlocks(); n > 0 {
		m = append(m, traces.KV{Key: "warm_start", Value: fmt.Sprintf("%d blocks", n)})
	}
	if n := len(l.Segments); n > 0 {
		m = append(m, traces.KV{Key: "warm_start_segments", Value: strconv.Itoa(n)})
	}
	if n := l.UncertainSizes(); n > 0 {
		up := "1 MiB"
		if t := l.MaxTail(); t > torchlike.SmallSize {
			up = units.Bytes(float64(t), 2)
		}
		m = append(m, traces.KV{Key: "warm_start_uncertain_sizes", Value: fmt.Sprintf("%d blocks may own up to %s of unsplit remainder", n, up)})
	}
	if as := l.AssumedEntries(); len(as) > 0 {
		m = append(m, traces.KV{Key: "reconstruction_assumptions", Value: fmt.Sprintf("%d entries, first %d: %s", len(as), l.Assumptions[0].Entry, l.Assumptions[0].Note)})
	}
	if st := snap.Settings; st != nil {
		if kv, ok := recordedMeta(st); ok {
			m = append(m, kv)
		}
		var arr [16]string // PyTorch writes ten
		keys := arr[:0]
		for k := range st.Raw {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			mk := ""
			if i := knownSetting(k); i >= 0 {
				mk = metaKeys[i]
			} else {
				mk = "torch." + snapMetaKey(k)
			}
			m = append(m, traces.KV{Key: mk, Value: snapMetaValue(st.Raw[k])})
		}
	}
	return m
}

// snapMetaKey and snapMetaValue keep snapshot text writable as a native meta line.
// Most text needs no change: printable ASCII is returned as it is,
// without strings.Map's call per rune (which would return it unchanged
// too, but for invalid UTF-8, which it replaces, hence the ASCII test).
func snapMetaKey(k string) string {
	if printableASCII(k, ' '+1) {
		return k
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, k)
}

func snapMetaValue(v string) string {
	if printableASCII(v, ' ') {
		return v
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, v)
}

// printableASCII reports whether every byte of s is ASCII, at least lo
// and not DEL.
func printableASCII(s string, lo byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < lo || c >= 0x7f {
			return false
		}
	}
	return true
}

// idPool holds the trace readers' tables of live ids (see bufPool).
var idPool bufPool[uint64]

// snapshotReader serves the events of one device's trace.
type snapshotReader struct {
	name  string
	meta  traces.Meta
	init  []traces.Event // allocs of the blocks live before the first entry
	trace rawTrace
	// ownsTrace: trace.ents came from rawPool and goes back at the end.
	ownsTrace bool
	roles     []Role
	bufs      *importBufs // the import's buffers, init among them (release)
	slots     []int32     // each entry's address slot (Layout)
	next      int         // next init event, then len(init) + next entry
	live      []uint64    // the live id at each address slot, 0: none
	nextID    uint64
	t0        int64 // time_us origin, or NoTime
	err       error // sticky
	n         int   // events returned so far
}

func (r *snapshotReader) Meta() traces.Meta { return r.meta }
func (r *snapshotReader) Close() error      { return nil }

// release gives the trace's entries and tables back to their pools once
// the last event has been served: nothing reads them after the end.
// (Close does not: a reader closed early keeps serving what it has.)
func (r *snapshotReader) release() {
	if r.ownsTrace {
		rawPool.put(r.trace.ents)
		slotPool.put(r.slots)
		rolePool.put(r.roles)
		idPool.put(r.live)
	}
	if r.bufs != nil {
		r.bufs.init = r.init
		r.bufs.put()
		r.bufs, r.init = nil, nil
	}
	r.ownsTrace = false
	r.trace.ents, r.slots, r.roles, r.live = nil, nil, nil, nil
}

// Pos has the name and the index of the last event returned; a snapshot
// has no lines (its errors give the trace entry instead).
func (r *snapshotReader) Pos() traces.Pos { return traces.Pos{File: r.name, Event: r.n - 1} }

// Next counts the events that read returns, for Pos.
//
// read writes the event in place, into Next's result: returned, an
// Event (eleven fields, too many for registers) was built on read's
// stack with narrow stores and copied out with wide loads, which the
// store buffer cannot forward (a stall for every event).
func (r *snapshotReader) Next() (ev traces.Event, err error) {
	if err = r.read(&ev); err == nil {
		r.n++
	}
	return ev, err
}

func (r *snapshotReader) time(us int64) int64 {
	if r.t0 == traces.NoTime {
		return traces.NoTime
	}
	if us <= r.t0 {
		return 0
	}
	d := uint64(us) - uint64(r.t0)
	if d > math.MaxInt64/1000 {
		return math.MaxInt64 / 1000 * 1000
	}
	return int64(d) * 1000
}

// read writes the next event to the zero *ev, or returns an error and
// leaves it zero.
func (r *snapshotReader) read(ev *traces.Event) error {
	if r.err != nil {
		return r.err
	}
	if r.next < len(r.init) {
		r.next++
		*ev = r.init[r.next-1]
		return nil
	}
	for {
		i := r.next - len(r.init)
		if i >= len(r.trace.ents) {
			r.release()
			return io.EOF
		}
		r.next++
		e := &r.trace.ents[i]
		switch r.roles[i] {
		case RoleAlloc:
			if e.Size <= 0 || e.Size > traces.MaxSize {
				return r.fail(i, fmt.Errorf("alloc of %d bytes at %#x: %w", e.Size, e.Addr, traces.ErrBadSize))
			}
			sl := r.slots[i]
			if id := r.live[sl]; id != 0 {
				return r.fail(i, fmt.Errorf("alloc at %#x, where id %d is still live: %w", e.Addr, id, traces.ErrLiveID))
			}
			id := r.nextID
			r.nextID++
			r.live[sl] = id
			ev.Op, ev.ID, ev.Size, ev.Stream, ev.Time = traces.OpAlloc, id, e.Size, e.Stream, r.time(e.TimeUS)
			return nil
		case RoleFree:
			sl := r.slots[i]
			id := r.live[sl]
			if id == 0 {
				return r.fail(i, fmt.Errorf("%s of %#x, where nothing is live: %w", r.trace.action(i), e.Addr, traces.ErrUnknownID))
			}
			r.live[sl] = 0
			ev.Op, ev.ID, ev.Time = traces.OpFree, id, r.time(e.TimeUS)
			return nil
		case RoleNone:
			switch r.trace.kindOf(i) {
			case kindOOM, kindSnapshot:
				ev.Op, ev.Label, ev.Time = traces.OpMark, r.trace.action(i), r.time(e.TimeUS)
				return nil
			}
		}
	}
}

func (r *snapshotReader) fail(entry int, err error) error {
	r.err = &traces.PosError{File: r.name, Event: entry, Err: err}
	return r.err
}
