package platform

import (
	"fmt"

	"membench/internal/slab"
	"membench/strategies"
)

type buf struct {
	addr, size, req, stream int64
	live                    bool
}

// Allocator hands every request to the device.
type Allocator struct {
	mem     *strategies.Memory
	bufs    slab.Slab[buf]
	inUse   int64
	lastOOM strategies.OOM
	// Name prefixes OOM messages ("XLA platform allocator", "cuda_malloc").
	Name string
	// Round is the device allocation's alignment: cudaMalloc returns
	// 256-byte aligned memory (allocator-spec §4.1), so a request costs
	// its size rounded up to it.
	Round int64
	// KnobNotes are the framework's notes on its configuration (knobs
	// that have no effect with this allocator), reported by Notes.
	KnobNotes []string
	// tracer receives the device calls (strategies.Tracer).
	tracer func(strategies.TraceEvent)
}

// Notes implements strategies.Noter.
func (a *Allocator) Notes() []string { return a.KnobNotes }

// New builds a platform allocator on mem.
func New(mem *strategies.Memory, name string) *Allocator {
	return &Allocator{mem: mem, Name: name, Round: 256}
}

func (a *Allocator) Memory() *strategies.Memory { return a.mem }
func (a *Allocator) LastOOM() strategies.OOM    { return a.lastOOM }
func (a *Allocator) Allocated() int64           { return a.inUse }

// Malloc is one device allocation of the request rounded to the alignment.
func (a *Allocator) Malloc(n, stream int64) (strategies.Handle, bool) {
	size := (n + a.Round - 1) / a.Round * a.Round
	addr, ok := a.mem.Malloc(size)
	if !ok {
		a.lastOOM = strategies.OOM{Requested: n, Rounded: size, Reserved: a.mem.Reserved(), Allocated: a.inUse, DeviceFree: a.mem.Available()}
		a.lastOOM.Message = fmt.Sprintf("RESOURCE_EXHAUSTED: %s: out of memory allocating %d bytes (%d bytes free on the device)", a.Name, n, a.mem.Available())
		return -1, false
	}
	a.trace(strategies.TraceSegmentAlloc, addr, size, stream)
	b := buf{addr: addr, size: size, req: n, stream: stream, live: true}
	h := a.bufs.Put(b)
	a.inUse += size
	return strategies.Handle(h), true
}

// Free is one device free.
func (a *Allocator) Free(h strategies.Handle) {
	b := a.bufs.At(int32(h))
	a.trace(strategies.TraceSegmentFree, b.addr, b.size, b.stream)
	a.mem.Free(b.size)
	a.inUse -= b.size
	b.live = false
	a.bufs.Release(int32(h))
}

// Layout reports each live buffer as its own segment.
func (a *Allocator) Layout(fn func(strategies.Segment)) {
	for _, b := range a.bufs.All() {
		if b.live {
			fn(strategies.Segment{Addr: b.addr, Size: b.size, Pool: "device",
				Stream: b.stream,
				Blocks: []strategies.Block{{Addr: b.addr, Size: b.size, Requested: b.req, State: strategies.BlockAllocated}}})
		}
	}
}

// Check verifies that the live buffers add up to what the device holds.
func (a *Allocator) Check() error {
	var n int64
	for _, b := range a.bufs.All() {
		if b.live {
			n += b.size
		}
	}
	if n != a.inUse || n != a.mem.Reserved() {
		return fmt.Errorf("live buffers %d B, counted %d B, device holds %d B", n, a.inUse, a.mem.Reserved())
	}
	return nil
}
