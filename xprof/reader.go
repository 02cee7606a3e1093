package xprof

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"membench/traces"
)

// The profile is detected by traces (from the content alone, as every
// format) and decoded here.
func init() {
	traces.RegisterFormat(traces.FormatXSpace, openProfile)
	traces.RegisterFormat(traces.FormatMemoryProfileJSON, openProfile)
}

// Select picks the allocator a replay or a validation reads: the one
// named allocator, else device n (a TPU chip, or the GPU allocator
// GPU_n_bfc), else the profile's only allocator. Any other choice is
// ambiguous, and the error lists the allocators.
func (p *Profile) Select(allocator string, device int) (*Allocator, error) {
	list := func() string {
		var s []string
		for _, a := range p.Allocators {
			s = append(s, fmt.Sprintf("%s (%d events)", a.Name, len(a.Records)))
		}
		return strings.Join(s, ", ")
	}
	switch {
	case len(p.Allocators) == 0:
		return nil, errors.New("the profile holds no allocator events (MemoryAllocation / MemoryDeallocation); profile with memory tracing on (TensorFlow: tf.profiler; JAX: jax.profiler with the device's memory profiling)")
	case allocator != "":
		if a := p.Find(allocator); a != nil {
			return a, nil
		}
		return nil, fmt.Errorf("no allocator %q in the profile; it holds %s", allocator, list())
	case device >= 0:
		if a := p.Device(device); a != nil {
			return a, nil
		}
		return nil, fmt.Errorf("no allocator of device %d in the profile; it holds %s", device, list())
	case len(p.Allocators) == 1:
		return p.Allocators[0], nil
	}
	return nil, fmt.Errorf("the profile holds %d allocators, so say which to read (FILE#allocator=NAME, or FILE#device=N for a TPU chip or GPU_N_bfc): %s", len(p.Allocators), list())
}

// openProfile reads an XSpace and serves the requests of one allocator
// as trace events.
func openProfile(name string, r io.Reader, opts traces.OpenOptions) (traces.Reader, error) {
	fail := func(err error) (traces.Reader, error) {
		return nil, &traces.PosError{File: name, Event: -1, Err: err}
	}
	p, err := ReadAny(r, DefaultLimits)
	if err != nil {
		return fail(err)
	}
	a, err := p.Select(opts.Allocator, opts.Device)
	if err != nil {
		return fail(err)
	}
	events, meta, err := Events(a)
	if err != nil {
		return fail(err)
	}
	meta = append(traces.Meta{{Key: "format", Value: "TensorBoard / XProf profile"}}, meta...)
	meta = append(meta, traces.KV{Key: "allocators", Value: strings.Join(p.Names(), " ")})
	return &sliceReader{name: name, SliceReader: traces.SliceReader{Events: events, M: meta}}, nil
}

// sliceReader names its file in positions.
type sliceReader struct {
	name string
	traces.SliceReader
}

func (s *sliceReader) Pos() traces.Pos {
	p := s.SliceReader.Pos()
	p.File = s.name
	return p
}

// Events turns an allocator's records into trace events: the requests a
// replay feeds to a simulated allocator. Recordings start warm, so the
// stream opens, at time 0, with what was live before the first record:
// first every chunk that a deallocation in the window reveals (it frees
// an address no allocation in the window took), with its requested bytes,
// in address order; then, as one allocation, the rest of the bytes in use
// before the first record, whose buffers the window never shows (Meta
// "warm_start" says how many bytes each part holds). Then every record in
// time order: an allocation of its requested bytes, or the free of the
// allocation at its address, with a mark "step:N" before the first
// allocation of each step the records name (id; TensorFlow records it,
// JAX records 0). Times are nanoseconds since the first record.
func Events(a *Allocator) ([]traces.Event, traces.Meta, error) {
	recs := a.Records
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("allocator %s has no events", a.Name)
	}
	// Pre-window chunks: freed at an address nothing in the window
	// allocated before.
	type pre struct {
		addr       uint64
		size, held int64
		rec        int
	}
	var pres []pre
	live := map[uint64]bool{}
	unsized := 0
	for i := range recs {
		r := &recs[i]
		if r.Has&HasAddr == 0 {
			return nil, nil, fmt.Errorf("allocator %s, event %d: no addr", a.Name, i)
		}
		if r.Alloc {
			if live[r.Addr] {
				return nil, nil, fmt.Errorf("allocator %s, event %d: allocation at %#x, which is already allocated", a.Name, i, r.Addr)
			}
			live[r.Addr] = true
			continue
		}
		if live[r.Addr] {
			delete(live, r.Addr)
			continue
		}
		size := r.Requested
		if size <= 0 {
			size = r.Chunk
		}
		if size <= 0 {
			unsized++
			continue
		}
		pres = append(pres, pre{r.Addr, size, max(r.Chunk, size), i})
	}
	slices.SortFunc(pres, func(x, y pre) int { return cmp.Compare(x.addr, y.addr) })

	first := &recs[0]
	inUse0 := first.InUse
	if first.Alloc {
		inUse0 -= first.Chunk
	} else {
		inUse0 += first.Chunk
	}
	t0 := first.Time
	var evs []traces.Event
	ids := map[uint64]uint64{}
	next := uint64(1)
	var known int64
	for _, p := range pres {
		evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: next, Size: p.size, Time: 0})
		ids[p.addr] = next
		next++
		known += p.held
	}
	rest := int64(0)
	if first.Has&HasInUse != 0 && inUse0 > known {
		rest = inUse0 - known
		evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: next, Size: rest, Time: 0})
		next++
	}
	step := int64(0)
	for i := range recs {
		r := &recs[i]
		t := (r.Time - t0) / 1000
		if r.Alloc && r.Step != 0 && r.Step != step {
			// The step id the allocation was made in (TF's step; JAX
			// records 0): a phase mark, so that charts and `traces show`
			// divide the window by step as they do the recorder's traces.
			step = r.Step
			evs = append(evs, traces.Event{Op: traces.OpMark, Label: "step:" + strconv.FormatInt(step, 10), Time: t})
		}
		if r.Alloc {
			size := r.Requested
			if size <= 0 {
				size = r.Chunk
			}
			if size <= 0 || size > traces.MaxSize {
				return nil, nil, fmt.Errorf("allocator %s, event %d: allocation of %d bytes: %w", a.Name, i, size, traces.ErrBadSize)
			}
			evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: next, Size: size, Time: t})
			ids[r.Addr] = next
			next++
			continue
		}
		id, ok := ids[r.Addr]
		if !ok {
			continue // a pre-window chunk of unknown size, counted in warm_start
		}
		delete(ids, r.Addr)
		evs = append(evs, traces.Event{Op: traces.OpFree, ID: id, Time: t})
	}
	warm := fmt.Sprintf("%d bytes in use before the first event: %d in %d chunks the window frees (replayed with their requested bytes), %d replayed as one allocation (the window does not show their buffers)",
		max(inUse0, 0), known, len(pres), rest)
	if unsized > 0 {
		warm += fmt.Sprintf("; %d frees of chunks allocated before the window carry no size and are not replayed", unsized)
	}
	meta := traces.Meta{
		{Key: "allocator", Value: a.Name},
		{Key: "limit", Value: strconv.FormatInt(a.Limit(), 10)},
		{Key: "warm_start", Value: warm},
	}
	if a.Device >= 0 {
		meta = append(meta, traces.KV{Key: "device", Value: strconv.Itoa(a.Device)})
	}
	if a.TPU() {
		var progs int64
		for i := range recs {
			if recs[i].Has&HasReserved != 0 {
				progs = max(progs, recs[i].Reserved)
			}
		}
		if progs > 0 {
			meta = append(meta, traces.KV{Key: ProgramsKey, Value: fmt.Sprintf(
				"the chip's loaded programs reserved bytes_reserved up to %d B, which this trace does not replay (program loads are no events in a profile): its figures are the buffers' alone; program_bytes=%d (jax or tf on a TPU) loads one of that size before the first event", progs, progs)})
		}
	}
	return evs, meta, nil
}

// ProgramsKey is the meta key of a TPU chip's trace whose recording shows
// loaded programs (bytes_reserved above 0): the replay places buffers
// alone, and every run of it says so (harness.TraceNotes), since a
// smallest card measured without the programs is not the recorded chip's.
const ProgramsKey = "recorded-programs"

// Matches reports whether content, the start of a file (after gzip
// decompression), is a profile this package reads: an XSpace or a
// memory_profile.json, as traces detects them. Validators of profiles
// share it.
func Matches(content []byte) bool {
	f, _, err := traces.Detect(bytes.NewReader(content))
	return err == nil && (f == traces.FormatXSpace || f == traces.FormatMemoryProfileJSON)
}

// ErrNoneChosen is returned by Chosen when no allocator of the profile is
// of the kind asked for: a validator then has nothing to check in it.
var ErrNoneChosen = errors.New("no allocator of this kind in the profile")

// Chosen picks the allocators of p that mine accepts and that names or
// devices name (all of them when both are empty). A name or device that p
// does not hold is an error listing what it holds; none of mine at all is
// ErrNoneChosen.
func (p *Profile) Chosen(names []string, devices []int, mine func(*Allocator) bool) ([]*Allocator, error) {
	for _, n := range names {
		if p.Find(n) == nil {
			return nil, fmt.Errorf("no allocator %q in the profile (it holds %s)", n, strings.Join(p.Names(), ", "))
		}
	}
	for _, d := range devices {
		if p.Device(d) == nil {
			return nil, fmt.Errorf("no allocator of device %d in the profile (it holds %s)", d, strings.Join(p.Names(), ", "))
		}
	}
	var out []*Allocator
	for _, a := range p.Allocators {
		named := len(names) == 0 && len(devices) == 0 ||
			slices.Contains(names, a.Name) || a.Device >= 0 && slices.Contains(devices, a.Device)
		if named && mine(a) && len(a.Records) > 0 {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoneChosen
	}
	return out, nil
}
