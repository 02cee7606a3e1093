// Package asyncpool models CUDA's stream-ordered allocator
// (cudaMallocAsync and its memory pools), the backend PyTorch
// (backend:cudaMallocAsync), TensorFlow (TF_GPU_ALLOCATOR=cuda_malloc_async)
// and JAX (XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async) can each use instead of
// their own caching allocator. It is the driver's knowledge, shared by the
// three houses as the BFC is by two (package bfc).
//
// What is documented (allocator-spec §6.3): the pool keeps the physical
// memory its allocations free, and gives back what exceeds its release
// threshold when the program synchronizes (CUDA's default threshold is 0;
// each framework sets its own); a pool can be given memory up front
// (reserve); virtual address ranges are remapped, so free memory inside the
// pool is not fragmented by placement as a caching allocator's segments
// are. What is not documented is how the pool grows: it is modelled as
// mapping whole granules of physical memory (2 MiB, the GPU's page size
// for cuMemMap: an assumption, the knob pool_granularity), so the pool's
// physical footprint is the live bytes, each allocation rounded to the
// pool's alignment, rounded up to the granule, and never less than what
// the release threshold keeps. Traces hold no synchronization points: the
// pool trims at every free (the most a pool can return), an assumption
// stated in the notes.
//
// The package imports strategies and internal/slab only.
package asyncpool

import (
	"fmt"
	"math"

	"membench/internal/slab"
	"membench/strategies"
)

// Alignment is the granularity of one allocation inside the pool: 256 B,
// cudaMalloc's and the pool's documented minimum alignment.
const Alignment int64 = 256

// DefaultGranularity is the assumed unit in which a pool maps physical
// memory: 2 MiB, the GPU page size cuMemCreate uses.
const DefaultGranularity int64 = 2 << 20

// Keep is a release threshold that keeps everything: the pool never gives
// memory back (JAX's cuda_async, PyTorch's backend, which trim only on
// an explicit request).
const Keep int64 = math.MaxInt64

// Options configure a pool as a framework sets it.
type Options struct {
	// Reserve is memory mapped into the pool up front (preallocation);
	// 0 for none. A reserve the device cannot give fails the first
	// allocation, as the framework's start-up would.
	Reserve int64
	// ReleaseThreshold is the bytes the pool keeps when it trims; Keep
	// for all of them.
	ReleaseThreshold int64
	// RequestedCap, when > 0, makes an allocation fail when the bytes
	// requested by live allocations would exceed it (PyTorch's
	// per_process_memory_fraction on this backend caps requested bytes).
	RequestedCap int64
	// Granularity is the unit of the pool's physical growth; 0 means
	// DefaultGranularity.
	Granularity int64
	// Name and Framework appear in messages and notes.
	Name, Framework string
	// Notes are the framework's own notes on its configuration.
	Notes []string
}

// Pool is one device's stream-ordered pool.
type Pool struct {
	opts     Options
	mem      *strategies.Memory
	g        int64
	allocs   slab.Slab[alloc] // by handle; a freed one is zero
	used     int64            // rounded bytes of live allocations
	req      int64            // requested bytes of live allocations
	reserved int64            // physical bytes the pool holds
	started  bool
	peak     int64 // most the pool held
	need     int64 // most its live allocations needed, in whole granules
	lastOOM  strategies.OOM
}

// alloc is one live allocation: its size rounded to Alignment and the
// bytes requested.
type alloc struct{ size, req int64 }

// New builds a pool on device memory mem.
func New(opts Options, mem *strategies.Memory) *Pool {
	g := opts.Granularity
	if g <= 0 {
		g = DefaultGranularity
	}
	if opts.ReleaseThreshold < 0 {
		opts.ReleaseThreshold = 0
	}
	return &Pool{opts: opts, mem: mem, g: g}
}

func roundUp(n, g int64) int64 {
	if n > math.MaxInt64-g {
		return math.MaxInt64 / g * g
	}
	return (n + g - 1) / g * g
}

// Malloc is one cudaMallocAsync of n bytes.
func (p *Pool) Malloc(n, _ int64) (strategies.Handle, bool) {
	if n <= 0 {
		return -1, false
	}
	if !p.started {
		p.started = true
		if r := roundUp(p.opts.Reserve, p.g); r > 0 {
			if !p.grow(r) {
				p.fail(n, fmt.Sprintf("the pool's reserve of %d B could not be mapped (%d B free on the device)", r, p.mem.Available()))
				return -1, false
			}
		}
	}
	r := roundUp(n, Alignment)
	if p.opts.RequestedCap > 0 && p.req+n > p.opts.RequestedCap {
		p.fail(n, fmt.Sprintf("the requested bytes would exceed the cap of %d B (%d B requested by live allocations)", p.opts.RequestedCap, p.req))
		return -1, false
	}
	if need := roundUp(p.used+r, p.g); need > p.reserved && !p.grow(need-p.reserved) {
		p.fail(n, fmt.Sprintf("the pool holds %d B and the device has %d B free", p.reserved, p.mem.Available()))
		return -1, false
	}
	p.mem.Hit()
	p.used += r
	p.need = max(p.need, roundUp(p.used, p.g))
	p.req += n
	return strategies.Handle(p.allocs.Put(alloc{r, n})), true
}

// grow maps size more bytes into the pool.
func (p *Pool) grow(size int64) bool {
	if !p.mem.Map(size, size/p.g) {
		return false
	}
	p.reserved += size
	p.peak = max(p.peak, p.reserved)
	return true
}

func (p *Pool) fail(n int64, why string) {
	p.lastOOM = strategies.OOM{Requested: n, Rounded: roundUp(n, Alignment), Reserved: p.reserved, Allocated: p.used, DeviceFree: p.mem.Available(),
		Message: fmt.Sprintf("out of memory allocating %d B from the %s stream-ordered pool (cudaMallocAsync): %s", n, p.opts.Name, why)}
}

// Free is one cudaFreeAsync; the pool then trims to its release
// threshold (see the package comment).
func (p *Pool) Free(hh strategies.Handle) {
	a := p.allocs.At(int32(hh))
	p.used -= a.size
	p.req -= a.req
	*a = alloc{}
	p.allocs.Release(int32(hh))
	keep := max(roundUp(p.used, p.g), min(p.opts.ReleaseThreshold, p.reserved))
	if p.opts.ReleaseThreshold == Keep {
		keep = p.reserved
	}
	keep = max(keep, roundUp(p.opts.Reserve, p.g)) // a reserve stays mapped
	if keep < p.reserved {
		give := p.reserved - keep
		p.mem.Unmap(give, give/p.g)
		p.reserved = keep
	}
}

// Allocated is the rounded bytes of live allocations.
func (p *Pool) Allocated() int64 { return p.used }

// Memory is the device memory the pool draws from.
func (p *Pool) Memory() *strategies.Memory { return p.mem }

// LastOOM describes the last failed allocation.
func (p *Pool) LastOOM() strategies.OOM { return p.lastOOM }

// Check verifies the pool's accounting: what it holds covers its live
// allocations, in whole granules.
func (p *Pool) Check() error {
	var used, req int64
	for _, a := range p.allocs.All() {
		used += a.size
		req += a.req
	}
	switch {
	case used != p.used || req != p.req:
		return fmt.Errorf("asyncpool: %d B live by handle, %d B counted (requested %d, %d)", used, p.used, req, p.req)
	case p.reserved < roundUp(p.used, p.g) && p.used > 0:
		return fmt.Errorf("asyncpool: %d B held for %d B live", p.reserved, p.used)
	case p.reserved%p.g != 0:
		return fmt.Errorf("asyncpool: %d B held, not whole granules of %d B", p.reserved, p.g)
	}
	return nil
}

// PeakFootprint is the most the pool's live allocations needed, in whole
// granules: its placement, which remapped virtual ranges keep free of
// fragmentation. A reserve mapped up front is the framework's policy and
// shows in peak reserved, not here.
func (p *Pool) PeakFootprint() int64 { return p.need }

// Notes are the model's assumptions, then the framework's notes.
func (p *Pool) Notes() []string {
	out := []string{fmt.Sprintf("%s: the stream-ordered pool (cudaMallocAsync) is modelled as mapping physical memory in %d B granules (assumption, pool_granularity) around allocations aligned to %d B, with no placement fragmentation (virtual ranges are remapped), trimming to its release threshold at every free (traces hold no synchronization points: assumption)",
		p.opts.Framework, p.g, Alignment)}
	return append(out, p.opts.Notes...)
}
