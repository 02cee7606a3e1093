// Package validate checks the TPU runtime model (package tpurt) against
// the runtime's own recordings: the MemoryAllocation and
// MemoryDeallocation events of a TensorBoard / XProf profile of a TPU host
// (package xprof), one allocator per chip, each event with the buffer's
// address, its rounded size, and the bytes in use and reserved after it.
//
// Each chip's requests are replayed through the model on a heap of the
// recorded limit (bytes_available + bytes_allocated + bytes_reserved), and
// every allocation is compared with the recorded one: its offset below the
// limit (buffers are placed top-down) and its size. After every event the
// bytes in use and the bytes reserved for loaded programs must agree.
// Program loads are not events in a profile: a change of bytes_reserved is
// applied as a program load (or unload) of the difference before the
// allocation whose stats first show it, and after a free, whose room a
// load may need. Deallocations carry only an address; the model frees the
// buffer it placed for the allocation recorded there.
//
// A window that starts warm (bytes in use before its first event, or a
// free of a buffer it never allocated) cannot be judged: the model's
// placement depends on where the earlier buffers lie, which a TPU
// deallocation, carrying no size, does not even tell. Such a chip's
// decisions are all reported undetermined, never as agreement.
//
// The package imports tpurt, strategies and xprof.
package validate

import (
	"errors"
	"fmt"
	"io"

	"membench/strategies"
	"membench/tpurt"
	"membench/xprof"
)

// Report is the outcome of one chip's validation.
type Report struct {
	Allocator      string
	Limit          int64
	Events, Allocs int
	Agree          int
	// Warm says why the window cannot be judged ("" when it starts
	// cold); then every allocation is undetermined.
	Warm string
	// InUseWrong and ReservedWrong count events after which the model's
	// bytes in use or reserved differ from the recorded ones.
	InUseWrong, ReservedWrong int
	// First describes the first divergence (placement, accounting or a
	// failure of the model), with the events before it.
	First   string
	Context []string
}

// Undetermined is how many allocations could not be judged.
func (r *Report) Undetermined() int {
	if r.Warm != "" {
		return r.Allocs
	}
	return 0
}

// Disagree is how many determined allocations the model placed elsewhere
// or sized otherwise.
func (r *Report) Disagree() int { return r.Allocs - r.Agree - r.Undetermined() }

// OK reports whether every determined decision and every count agree.
func (r *Report) OK() bool {
	return r.Disagree() == 0 && r.InUseWrong == 0 && r.ReservedWrong == 0 && r.First == ""
}

// Chip replays one TPU chip's records through the model on dev (a TPU
// device whose capacity is the recorded limit).
func Chip(a *xprof.Allocator, dev strategies.Device) (*Report, error) {
	recs := a.Records
	rep := &Report{Allocator: a.Name, Limit: a.Limit(), Events: len(recs)}
	for i := range recs {
		if recs[i].Alloc {
			rep.Allocs++
		}
	}
	if len(recs) == 0 {
		return rep, nil
	}
	first := &recs[0]
	if in0 := first.InUse - first.Chunk; first.Alloc && in0 != 0 || !first.Alloc {
		rep.Warm = fmt.Sprintf("the window starts warm (%d B in use before its first event)", max(in0, first.InUse))
		return rep, nil
	}
	mem := strategies.NewMemory(&dev)
	m := tpurt.New(tpurt.Options{Defrag: true}, mem)
	limit := m.Limit()
	live := map[uint64]strategies.Handle{}
	prog := tpurt.Program(-1)
	diverge := func(i int, format string, args ...any) {
		if rep.First != "" {
			return
		}
		rep.First = fmt.Sprintf("event %d: ", i) + fmt.Sprintf(format, args...)
		for j := max(0, i-5); j <= i; j++ {
			e := &recs[j]
			what := "free "
			if e.Alloc {
				what = "alloc"
			}
			rep.Context = append(rep.Context, fmt.Sprintf("event %d: %s requested %d B, %d B at limit-%d, in use after %d B, reserved %d B",
				j, what, e.Requested, e.Chunk, rep.Limit-int64(e.Addr), e.InUse, e.Reserved))
		}
	}
	reserve := func(i int, want int64) {
		if m.Reserved() == want {
			return
		}
		m.UnloadProgram(prog)
		prog = -1
		if want > 0 {
			var err error
			if prog, err = m.LoadProgram(want); err != nil {
				diverge(i, "loading %d B of programs (the recorded bytes_reserved) failed in the model: %v", want, err)
			}
		}
	}
	for i := range recs {
		e := &recs[i]
		if e.Has&xprof.HasAddr == 0 || e.Has&xprof.HasInUse == 0 || e.Alloc && e.Has&xprof.HasRequested == 0 {
			return nil, fmt.Errorf("allocator %s, event %d: the event lacks addr, bytes_allocated or requested_bytes", a.Name, i)
		}
		if e.Alloc {
			reserve(i, e.Reserved)
			h, ok := m.Malloc(e.Requested, 0)
			if !ok {
				diverge(i, "the model cannot place %d B: %s", e.Requested, m.LastOOM().Message)
				continue
			}
			off, size := m.Block(h)
			if limit-off == rep.Limit-int64(e.Addr) && size == e.Chunk {
				rep.Agree++
			} else {
				diverge(i, "%d B requested: the model places %d B at limit-%d, the runtime placed %d B at limit-%d",
					e.Requested, size, limit-off, e.Chunk, rep.Limit-int64(e.Addr))
			}
			live[e.Addr] = h
		} else {
			h, ok := live[e.Addr]
			if !ok {
				rep.Warm = fmt.Sprintf("event %d frees a buffer at %#x that the window never allocated (it starts warm)", i, e.Addr)
				return rep, nil
			}
			delete(live, e.Addr)
			m.Free(h)
			reserve(i, e.Reserved)
		}
		if m.Allocated() != e.InUse {
			rep.InUseWrong++
			diverge(i, "the model has %d B in use, the runtime %d B", m.Allocated(), e.InUse)
		}
		if e.Has&xprof.HasReserved != 0 && m.Reserved() != e.Reserved {
			rep.ReservedWrong++
			diverge(i, "the model has %d B reserved, the runtime %d B", m.Reserved(), e.Reserved)
		}
	}
	return rep, nil
}

// Write prints the report as `membench validate` shows it.
func (r *Report) Write(w io.Writer, file string) {
	fmt.Fprintf(w, "%s %s: TPU runtime (tpurt model; heap of the recorded limit, %d B)\n", file, r.Allocator, r.Limit)
	fmt.Fprintf(w, "  window: %d events, %d allocations\n", r.Events, r.Allocs)
	if r.Warm != "" {
		fmt.Fprintf(w, "  undetermined: all %d allocations: %s, and the model's placement depends on where the earlier buffers lie\n", r.Allocs, r.Warm)
		fmt.Fprintf(w, "  no disagreement, but nothing is determined: this window cannot confirm the model\n")
		return
	}
	fmt.Fprintf(w, "  determined: %d of %d allocations (100%%); %d agree (offset below the limit and size), %d disagree\n", r.Allocs, r.Allocs, r.Agree, r.Disagree())
	fmt.Fprintf(w, "  bytes in use and reserved after each event: %s\n", map[bool]string{true: fmt.Sprintf("agree at all %d events", r.Events), false: fmt.Sprintf("%d in use and %d reserved differ", r.InUseWrong, r.ReservedWrong)}[r.InUseWrong == 0 && r.ReservedWrong == 0])
	if r.First != "" {
		fmt.Fprintf(w, "  first divergence at %s\n", r.First)
		for _, l := range r.Context {
			fmt.Fprintf(w, "    %s\n", l)
		}
		fmt.Fprintf(w, "  DISAGREE\n")
		return
	}
	fmt.Fprintf(w, "  agree: every allocation matches the TPU runtime model\n")
}

// DeviceFor is the TPU device a chip's recording is replayed on: the
// preset whose capacity is the recorded limit, or else tpu-v6e with its
// capacity set to that limit (said in the note).
func DeviceFor(limit int64) (strategies.Device, string, error) {
	for _, name := range strategies.PresetNames() {
		d, err := strategies.ParseDevice(name)
		if err == nil && d.Kind == strategies.TPU && d.Capacity == limit {
			return d, name, nil
		}
	}
	spec := fmt.Sprintf("tpu-v6e:total=%d,capacity=%d", max(limit, 1), max(limit, 1))
	d, err := strategies.ParseDevice(spec)
	return d, spec, err
}

// Profiles is the validator of the TPU chips in TensorBoard / XProf
// profiles that `membench validate` offers.
var Profiles = strategies.Validator{
	Name:  "TensorBoard / XProf profile of a TPU host, its chips through the TPU runtime model",
	Match: xprof.Matches,
	Validate: func(name string, r io.Reader, opts strategies.ValidateOptions, w io.Writer) (int, error) {
		if err := opts.ProfileOptions(); err != nil {
			return 0, err
		}
		p, err := xprof.ReadAny(r, xprof.DefaultLimits)
		if err != nil {
			return 0, err
		}
		chips, err := p.Chosen(opts.Allocators, opts.Devices, (*xprof.Allocator).TPU)
		if errors.Is(err, xprof.ErrNoneChosen) {
			return 0, strategies.ErrNothingToValidate
		}
		if err != nil {
			return 0, err
		}
		disagree := 0
		for _, a := range chips {
			dev, _, err := DeviceFor(a.Limit())
			if err != nil {
				return disagree, fmt.Errorf("allocator %s: recorded limit %d B: %w", a.Name, a.Limit(), err)
			}
			rep, err := Chip(a, dev)
			if err != nil {
				return disagree, err
			}
			rep.Write(w, name)
			if !rep.OK() {
				disagree++
			}
		}
		return disagree, nil
	},
}
