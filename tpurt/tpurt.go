package tpurt

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"membench/internal/prefetch"
	"membench/internal/radix"
	"membench/internal/slab"
	"membench/internal/spanset"
	"membench/internal/units"
	"membench/strategies"
)

// ErrResourceExhausted is what every failure of the runtime's memory
// wraps: XLA reports both E0100 and E0101 as RESOURCE_EXHAUSTED.
var ErrResourceExhausted = errors.New("RESOURCE_EXHAUSTED")

// Options configure one TPU runtime heap.
type Options struct {
	// Granule is the unit every buffer's size is rounded up to; 0 means
	// the device's Granularity (128 B on the TPU presets, as recorded).
	Granule int64
	// Defrag slides live buffers together when a request fails although
	// the free bytes would hold it (E0100's automatic defragmentation).
	Defrag bool
	// DefragViaHost costs relocation over the host link instead of HBM.
	DefragViaHost bool
	// ProgramBytes, when positive, loads one program of that size at the
	// bottom before the first request (the knob program_bytes).
	ProgramBytes int64
	// Name is the memory space that messages name; "0x0x0_HBM0" (XLA's
	// spelling of core 0's HBM in its messages) when empty.
	Name string
	// Notes are the framework's notes on its configuration, reported
	// after the model's own (strategies.Noter).
	Notes []string
}

// Stats are the runtime's counters as memory_stats() names them
// (allocator-spec §6.4), plus the model's relocation and eviction counts.
type Stats struct {
	NumAllocs      int64
	BytesInUse     int64 // bytes_in_use: whole chunks
	PeakBytesInUse int64
	BytesLimit     int64 // bytes_limit: the heap
	BytesReserved  int64 // bytes_reserved: loaded programs
	// LargestFreeBlock is largest_free_block_bytes.
	LargestFreeBlock int64
	DefragEvents     int64
	DefragMoved      int64
	Evictions        int64 // programs evicted to make room for a buffer or a program
	// ProgramLoads is the programs loaded (program_bytes's included).
	ProgramLoads int64
	NumOOMs      int64
}

// Program names one program a caller loaded (strategies.Program, so
// that the model is a strategies.ProgramLoader).
type Program = strategies.Program

// buffer is a buffer's record: 16 bytes, so that the records of 10^6
// live buffers (read at random by the frees) take 16 MB instead of the
// 32 of a record that also held the size and a live flag. The size is
// the request rounded to the granule (Round), which is what every buffer
// occupies; req is negated once the buffer is freed.
type buffer struct {
	addr, req int64
}

// live reports whether the buffer is not yet freed.
func (b *buffer) live() bool { return b.req > 0 }

type program struct {
	size   int64
	loaded bool
}

// Allocator is the TPU runtime's heap on one chip.
//
// Offsets run from the bottom of the heap (0) to its limit: programs
// occupy [0, reserved), free ranges and buffers tile [reserved, limit).
type Allocator struct {
	opts    Options
	mem     *strategies.Memory
	granule int64
	// gmask is granule-1 when the granule is a power of two (every
	// device preset's), for sizeOf to round without a division; -1
	// otherwise.
	gmask   int64
	limit   int64 // heap bytes, a multiple of the granule
	base    int64 // the heap's device address, once taken
	started bool

	bufs slab.Slab[buffer]
	free *spanset.Set
	// freeBytes is the bytes in free ranges; inUse the bytes in live
	// buffers; reserved the bytes of loaded programs.
	freeBytes, inUse, reserved int64
	programs                   []program
	loaded                     []Program // in load order
	stats                      Stats
	highWater                  int64
	lastOOM                    strategies.OOM
	notes                      []string
	scratch                    []int32
	// keyed and keyed2 are byAddrDown's scratch: the buffers with their
	// sort keys, and the radix sort's second array.
	keyed, keyed2 []radix.Keyed
	// tracer receives the heap, program and relocation events
	// (strategies.Tracer).
	tracer func(strategies.TraceEvent)
	// touched is the buffer of the last Touch, whose record Touch asked
	// for; the next Touch reads it and asks for the free set's leaf its
	// free will join.
	touched strategies.Handle
	// orderRead counts the entries of the load order read to unload a
	// program other than the last loaded, for the test that bounds it
	// (TestEvictManyPrograms).
	orderRead int
}

// released holds the buffer records (*slab.Slab[buffer]) of allocators
// released (Release), cleared, for the next ones built: the slab is nearly
// all a short replay allocates.
var released sync.Pool

// Release implements strategies.Releaser: the buffer slab goes, cleared,
// to the next allocator built. The allocator must not be used after
// Release (strategies.Releaser); nothing checks that it is not.
func (a *Allocator) Release() {
	if cap(a.bufs.All()) == 0 {
		return
	}
	s := a.bufs
	s.Clear()
	released.Put(&s)
	a.bufs = slab.Slab[buffer]{}
}

// New builds the heap on mem: the device's capacity (or the memory's
// limit, in a capacity search), rounded down to the granule. The heap is
// taken from the device at the first request, as one device allocation.
func New(opts Options, mem *strategies.Memory) *Allocator {
	a := &Allocator{opts: opts, mem: mem, free: spanset.New(), touched: -1}
	if s, ok := released.Get().(*slab.Slab[buffer]); ok {
		a.bufs = *s
	}
	a.granule = opts.Granule
	if a.granule <= 0 {
		a.granule = mem.Dev.Granularity
	}
	if a.granule <= 0 {
		a.granule = defaultGranule
	}
	a.gmask = -1
	if a.granule&(a.granule-1) == 0 {
		a.gmask = a.granule - 1
	}
	a.limit = mem.Available() / a.granule * a.granule
	if a.opts.Name == "" {
		a.opts.Name = "0x0x0_HBM0"
	}
	a.stats.BytesLimit = a.limit
	a.notes = append(a.notes, modelNote)
	if p := opts.ProgramBytes; p > 0 {
		if p > a.limit {
			a.notes = append(a.notes, fmt.Sprintf("program_bytes=%d is more than the heap of %d B: no program is loaded", p, a.limit))
		} else {
			a.notes = append(a.notes, fmt.Sprintf("program_bytes=%d: one program of %s loaded at the bottom of the heap before the first event, evicted only when a buffer needs its room (assumption: nothing in the trace launches it, so once evicted it is not reloaded); it is in peak-footprint-B but in no trace's peak-live-B, so placement-frag-%% counts it as unused: read placement against a run without program_bytes", p, units.Bytes(float64(p), 2)))
		}
	}
	a.notes = append(a.notes, opts.Notes...)
	return a
}

// defaultGranule is the granule recorded on TPU v6e (allocator-spec §6.4:
// 32 → 128, 1,472 → 1,536), for a device that gives none.
const defaultGranule = 128

// modelNote is the model's assumption as results state it.
const modelNote = "TPU runtime model (allocator-spec §6.4, fitted to the TPU v6e recording): buffers top-down in the highest free range that fits, split exactly, sizes rounded to the device granularity (128 B recorded for small buffers; the granule of larger ones is an assumption); programs reserved contiguously at the bottom; defragmentation slides live buffers to the top and eviction takes the last loaded program first (assumptions; knobs defrag, defrag_via_host, program_bytes)"

// start takes the heap from the device and loads the program_bytes
// program, once.
func (a *Allocator) start() {
	if a.started {
		return
	}
	a.started = true
	if a.limit <= 0 {
		return
	}
	addr, ok := a.mem.Malloc(a.limit)
	if !ok {
		a.limit, a.stats.BytesLimit = 0, 0
		return
	}
	a.base = addr
	a.trace(strategies.TraceEvent{Action: strategies.TraceSegmentAlloc, Addr: addr, Size: a.limit})
	a.free.Insert(spanset.Span{Start: 0, Size: a.limit})
	a.freeBytes = a.limit
	if p := a.opts.ProgramBytes; p > 0 && p <= a.limit {
		a.reserve(p)
	}
}

// Round is the size a request of n bytes occupies: n rounded up to the
// granule, or the largest int64 when that overflows (no heap holds it).
func (a *Allocator) Round(n int64) int64 {
	if n > math.MaxInt64-a.granule {
		return math.MaxInt64
	}
	return a.roundUp(n)
}

// roundUp is n rounded up to the granule, for an n that does not
// overflow: by the granule's mask when it is a power of two (a division
// on every allocation was a tenth of the model's cost on gpt-generate,
// in cachegrind and pprof), else by a division, which rounds a negative
// n towards zero.
func (a *Allocator) roundUp(n int64) int64 {
	if a.gmask >= 0 && n >= 0 {
		return (n + a.gmask) &^ a.gmask
	}
	return (n + a.granule - 1) / a.granule * a.granule
}

// sizeOf is the bytes a buffer occupies: its request rounded to the
// granule (which never overflows: the buffer is in the heap).
func (a *Allocator) sizeOf(b *buffer) int64 { return a.roundUp(max(b.req, -b.req)) }

// Malloc implements strategies.Allocator: place the rounded request in
// the highest free range that holds it; failing that, defragment when the
// free bytes would hold it, and evict loaded programs, most recent first,
// until it fits (E0100's retries, allocator-spec §6.4). Queued
// deallocations, E0100's first retry, do not arise: a replay's frees take
// effect at once.
func (a *Allocator) Malloc(n, _ int64) (strategies.Handle, bool) {
	if n <= 0 {
		return -1, false
	}
	r := a.Round(n)
	a.start()
	if h, ok := a.place(r, n); ok {
		a.mem.Hit()
		return h, true
	}
	for {
		if a.opts.Defrag && a.freeBytes >= r {
			a.defragment()
			if h, ok := a.place(r, n); ok {
				return h, true
			}
		}
		if !a.evictOne() {
			break
		}
		if h, ok := a.place(r, n); ok {
			return h, true
		}
	}
	a.stats.NumOOMs++
	a.lastOOM = strategies.OOM{Requested: n, Rounded: r, Reserved: a.mem.Reserved(), Allocated: a.inUse,
		DeviceFree: a.mem.Available(), LargestFree: a.free.Largest()}
	a.lastOOM.Message = fmt.Sprintf("%v: Error allocating device buffer: Attempting to allocate %s. That was not possible. There are %s free.; (%s) [model: %d B requested, %d B free, largest free range %d B, %d B reserved by programs]",
		ErrResourceExhausted, HumanBytes(r), HumanBytes(a.freeBytes), a.opts.Name, n, a.freeBytes, a.free.Largest(), a.reserved)
	return -1, false
}

// place carves r bytes from the top of the highest free range that holds
// them: the rule that reproduces every placement of the v6e recording
// (package comment).
func (a *Allocator) place(r, n int64) (strategies.Handle, bool) {
	sp, ok := a.free.Carve(r)
	if !ok {
		return -1, false
	}
	if a.bufs.Full() {
		a.bufs.GrowHuge()
	}
	h := a.bufs.Put(buffer{addr: sp.End() - r, req: n})
	a.freeBytes -= r
	a.inUse += r
	a.stats.NumAllocs++
	a.stats.PeakBytesInUse = max(a.stats.PeakBytesInUse, a.inUse)
	if sp.Start == a.reserved {
		// The carve shrank the reservable memory (to nothing when it
		// took the whole range): the footprint may rise. Carving any
		// other range leaves the reservable memory as it was, and
		// nothing but a carve or a program load ever shrinks it, so
		// the footprint needs no look at the free ranges then
		// (noteFootprint's search on every allocation was a fifth of
		// a replay's work).
		a.highWater = max(a.highWater, a.limit-(sp.Size-r))
	}
	return strategies.Handle(h), true
}

// Touch implements strategies.Toucher: it prefetches the buffer of h, a
// few events before its free. With a large free set it also reads the
// record of the buffer touched before, which the touch before asked for
// and which will be freed sooner, and asks for the leaf of the free set
// that its free will join (spanset.Prefetch).
func (a *Allocator) Touch(h strategies.Handle) {
	if h >= 0 && int(h) < a.bufs.Len() {
		prefetch.Line(unsafe.Pointer(a.bufs.At(int32(h))))
	}
	if p := a.touched; p >= 0 && int(p) < a.bufs.Len() && a.free.Len() >= touchSpans {
		if b := a.bufs.At(int32(p)); b.live() {
			a.free.Prefetch(b.addr)
		}
	}
	a.touched = h
}

// touchSpans is the free ranges from which Touch asks for the leaf of a
// buffer's free: a smaller free set is in the cache.
const touchSpans = 1 << 12

// Free implements strategies.Allocator: the buffer's range joins the free
// ranges next to it.
func (a *Allocator) Free(hh strategies.Handle) {
	b := a.bufs.At(int32(hh))
	size := a.sizeOf(b)
	b.req = -b.req
	a.inUse -= size
	a.release(b.addr, size)
	a.bufs.Release(int32(hh))
}

// release returns [start, start+size) to the free ranges, coalescing
// with the ranges that end at start and begin at its end.
func (a *Allocator) release(start, size int64) {
	a.freeBytes += size
	a.free.Join(start, size)
}

// reservable is the contiguous free memory directly above the programs:
// what a program load can take (E0101's "reservable").
func (a *Allocator) reservable() int64 {
	if sp, ok := a.free.Get(a.reserved); ok {
		return sp.Size
	}
	return 0
}

// noteFootprint raises the footprint to what is in use now: everything
// but the reservable memory.
func (a *Allocator) noteFootprint() {
	a.highWater = max(a.highWater, a.limit-a.reservable())
}

// defragment slides every live buffer to the top of the heap, keeping
// their order, so that the free bytes become one range directly above
// the programs. Assumption: the runtime's algorithm is not public (E0100
// says only that it defragments and retries); costed as each moved
// buffer copied once.
//
// The buffers above the highest free range tile the heap from its end
// down to that range, so they stay where they are: only the buffers below
// it are sorted and slid, from that range's end down. Why: at a capacity
// where each of thousands of allocations defragments, each sorted every
// live buffer to move a few (a capacity search of tf on a TPU trace of
// executables, 7,118 defragmentations of 40,000 live buffers that moved 4
// KiB each: 3.3 s in one replay).
func (a *Allocator) defragment() {
	at := a.limit
	if sp, ok := a.free.Floor(math.MaxInt64); ok && !defragAll {
		at = sp.End()
	}
	a.scratch = a.scratch[:0]
	for i, b := range a.bufs.All() {
		if b.live() && b.addr < at {
			a.scratch = append(a.scratch, int32(i))
		}
	}
	a.scratch = a.byAddrDown(a.scratch)
	var moved int64
	for _, h := range a.scratch {
		b := a.bufs.At(h)
		size := a.sizeOf(b)
		at -= size
		if b.addr != at {
			moved += size
			a.trace(strategies.TraceEvent{Action: strategies.TraceMove, Addr: a.base + at, From: a.base + b.addr, Size: size, Requested: b.req})
			b.addr = at
		}
	}
	a.free.Reset()
	if at > a.reserved {
		a.free.Insert(spanset.Span{Start: a.reserved, Size: at - a.reserved})
	}
	a.stats.DefragEvents++
	a.stats.DefragMoved += moved
	a.mem.Move(moved, a.opts.DefragViaHost)
}

// defragAll makes defragment sort and slide every live buffer, as it once
// did: the reference the tests compare with.
var defragAll = false

// byAddrDown sorts the buffers hs, all live, from the highest address
// down, as defragment packs them, by a radix sort of the addresses
// (package radix): linear where a comparison sort was most of each
// defragmentation's time (a run of failed allocations each of which
// defragments a full heap: 100,000 events, 14,285 defragmentations, 28
// s, nine tenths in the sort). Live buffers never share an address, so
// the order is the comparison sort's.
func (a *Allocator) byAddrDown(hs []int32) []int32 {
	if len(hs) < 64 {
		slices.SortFunc(hs, func(x, y int32) int { return cmp.Compare(a.bufs.At(y).addr, a.bufs.At(x).addr) })
		return hs
	}
	ks := a.keyed[:0]
	for _, h := range hs {
		// The highest address first.
		ks = append(ks, radix.Keyed{Key: uint64(a.limit - a.bufs.At(h).addr), I: h})
	}
	ks, a.keyed2 = radix.Sort(ks, a.keyed2)
	a.keyed = ks
	for i, k := range ks {
		hs[i] = k.I
	}
	return hs
}

// LoadProgram reserves size bytes at the bottom of the heap, directly
// above the programs already loaded (E0101). Buffers are not moved for it
// (pytorch/xla#3470 shows free memory that was not reservable); idle
// programs are evicted, the most recent first, until it fits (assumption:
// every published E0101 message reports "0B reserved", so the runtime had
// no program left to evict). The error wraps ErrResourceExhausted.
func (a *Allocator) LoadProgram(size int64) (Program, error) {
	if size <= 0 {
		return -1, fmt.Errorf("tpurt: loading a program of %d bytes", size)
	}
	a.start()
	for a.reservable() < size {
		if !a.evictOne() {
			return -1, fmt.Errorf("%w: Error loading program: Attempting to reserve %s at the bottom of memory. That was not possible. There are %s free, %s reserved, and %s reservable.",
				ErrResourceExhausted, HumanBytes(size), HumanBytes(a.freeBytes), HumanBytes(a.reserved), HumanBytes(a.reservable()))
		}
	}
	a.reserve(size)
	return Program(len(a.programs) - 1), nil
}

// reserve loads a program of size bytes, which the reservable memory
// holds.
func (a *Allocator) reserve(size int64) {
	sp, _ := a.free.Get(a.reserved)
	a.free.Remove(sp.Start)
	if sp.Size > size {
		a.free.Insert(spanset.Span{Start: sp.Start + size, Size: sp.Size - size})
	}
	a.trace(strategies.TraceEvent{Action: strategies.TraceHold, Addr: a.base + a.reserved, Size: size, Requested: size})
	a.freeBytes -= size
	a.reserved += size
	a.programs = append(a.programs, program{size: size, loaded: true})
	a.loaded = append(a.loaded, Program(len(a.programs)-1))
	a.stats.ProgramLoads++
	a.noteFootprint()
}

// ProgramLoaded reports whether p is loaded still: a program stays loaded
// across launches until it is unloaded or evicted (for a buffer that
// needs its room, or for another program), and a caller that launches it
// again must reload it if it was (allocator-spec §6.4). A Program never
// returned by LoadProgram is not loaded.
func (a *Allocator) ProgramLoaded(p Program) bool {
	return p >= 0 && int(p) < len(a.programs) && a.programs[p].loaded
}

// UnloadProgram releases a loaded program's reservation. The programs
// above it close the gap: the reservation is modelled as the sum of the
// loaded programs' sizes, which is all a recording shows (bytes_reserved;
// assumption).
func (a *Allocator) UnloadProgram(p Program) {
	if p < 0 || int(p) >= len(a.programs) || !a.programs[p].loaded {
		return
	}
	if a.tracer != nil {
		a.traceUnload(p)
	}
	a.programs[p].loaded = false
	if n := len(a.loaded) - 1; a.loaded[n] == p {
		// The last loaded, an eviction's: a pass over the load order
		// for each of many programs evicted at once (one allocation
		// evicting 40,000) was quadratic in them.
		a.loaded = a.loaded[:n]
	} else {
		a.orderRead += len(a.loaded)
		a.loaded = slices.DeleteFunc(a.loaded, func(q Program) bool { return q == p })
	}
	size := a.programs[p].size
	a.reserved -= size
	a.release(a.reserved, size)
}

// evictOne unloads the most recently loaded program, if any.
func (a *Allocator) evictOne() bool {
	if len(a.loaded) == 0 {
		return false
	}
	a.UnloadProgram(a.loaded[len(a.loaded)-1])
	a.stats.Evictions++
	return true
}

// Options returns the heap's options, the granule resolved.
func (a *Allocator) Options() Options {
	o := a.opts
	o.Granule = a.granule
	return o
}

// Reserved is bytes_reserved: the loaded programs' bytes.
func (a *Allocator) Reserved() int64 { return a.reserved }

// Limit is bytes_limit: the heap's size.
func (a *Allocator) Limit() int64 { return a.limit }

// Block returns a live allocation's offset from the bottom of the heap
// and the bytes it occupies. On the recorded v6e the heap starts at 0, so
// the offset is the runtime's recorded addr.
func (a *Allocator) Block(h strategies.Handle) (offset, size int64) {
	b := a.bufs.At(int32(h))
	return b.addr, a.sizeOf(b)
}

// Stats returns the runtime's counters.
func (a *Allocator) Stats() Stats {
	s := a.stats
	s.BytesInUse, s.BytesReserved, s.LargestFreeBlock = a.inUse, a.reserved, a.free.Largest()
	return s
}

// Memory implements strategies.Allocator.
func (a *Allocator) Memory() *strategies.Memory { return a.mem }

// LastOOM implements strategies.Allocator.
func (a *Allocator) LastOOM() strategies.OOM { return a.lastOOM }

// Allocated implements strategies.Allocator: bytes_in_use, whole chunks.
func (a *Allocator) Allocated() int64 { return a.inUse }

// PeakFootprint implements strategies.Footprinter: the heap is the
// runtime's whole HBM whatever the workload, so what placement needed is
// the most it ever kept from being reservable: programs at the bottom
// plus everything from the lowest buffer to the top.
func (a *Allocator) PeakFootprint() int64 { return a.highWater }

// PeakFootprintVar implements strategies.FootprintWatcher: the replay
// reads the footprint after every allocation, and highWater, which
// PeakFootprint returns, saves it a call there (issue 15).
func (a *Allocator) PeakFootprintVar() *int64 { return &a.highWater }

// PeakAllocated implements strategies.AllocatedPeaker: peak_bytes_in_use,
// which only place raises, right after it raised bytes_in_use for a
// Malloc, so that the replay need not ask for Allocated after each one.
func (a *Allocator) PeakAllocated() (int64, bool) { return a.stats.PeakBytesInUse, true }

// DefragStats implements strategies.Defragmenter.
func (a *Allocator) DefragStats() (events, moved int64) {
	return a.stats.DefragEvents, a.stats.DefragMoved
}

// Notes implements strategies.Noter: the model's assumptions, then the
// framework's notes on its knobs.
func (a *Allocator) Notes() []string { return a.notes }

// Layout implements strategies.Layouter: the loaded programs as one
// segment (pool "tpu_program") when there are any, then the buffer heap
// above them (pool "tpu_hbm") with its buffers and free ranges in address
// order.
func (a *Allocator) Layout(fn func(strategies.Segment)) {
	if !a.started || a.limit == 0 {
		return
	}
	if a.reserved > 0 {
		s := strategies.Segment{Addr: a.base, Size: a.reserved, Pool: "tpu_program"}
		at := a.base
		for _, p := range a.loaded {
			sz := a.programs[p].size
			s.Blocks = append(s.Blocks, strategies.Block{Addr: at, Size: sz, Requested: sz, State: strategies.BlockAllocated})
			at += sz
		}
		fn(s)
	}
	s := strategies.Segment{Addr: a.base + a.reserved, Size: a.limit - a.reserved, Pool: "tpu_hbm"}
	a.free.Ascend(func(sp spanset.Span) bool {
		s.Blocks = append(s.Blocks, strategies.Block{Addr: a.base + sp.Start, Size: sp.Size, State: strategies.BlockFree})
		return true
	})
	for i := range a.bufs.All() {
		if b := a.bufs.At(int32(i)); b.live() {
			s.Blocks = append(s.Blocks, strategies.Block{Addr: a.base + b.addr, Size: a.sizeOf(b), Requested: b.req, State: strategies.BlockAllocated})
		}
	}
	slices.SortFunc(s.Blocks, func(x, y strategies.Block) int { return cmp.Compare(x.Addr, y.Addr) })
	fn(s)
}

// Check implements strategies.Allocator: programs, then buffers and free
// ranges, tile the heap; no two free ranges touch; buffers sit on the
// granule and hold their requests; the counters balance; the device
// holds exactly the heap.
func (a *Allocator) Check() error {
	if err := a.free.Check(); err != nil {
		return err
	}
	var progs int64
	for _, p := range a.loaded {
		if !a.programs[p].loaded {
			return fmt.Errorf("program %d is in the load order but not loaded", p)
		}
		progs += a.programs[p].size
	}
	if progs != a.reserved {
		return fmt.Errorf("loaded programs add up to %d B, bytes_reserved is %d B", progs, a.reserved)
	}
	var blocks []strategies.Block
	a.Layout(func(s strategies.Segment) {
		if s.Pool == "tpu_hbm" {
			blocks = s.Blocks
		}
	})
	at := a.reserved
	var inUse, free int64
	prevFree := false
	for _, b := range blocks {
		off := b.Addr - a.base
		if off != at {
			return fmt.Errorf("block at offset %d (%+v): the tiling is at %d", off, b, at)
		}
		if b.State == strategies.BlockFree {
			if prevFree {
				return fmt.Errorf("adjacent free ranges at offset %d", off)
			}
			free += b.Size
		} else {
			inUse += b.Size
			if b.Size < b.Requested || b.Size%a.granule != 0 || off%a.granule != 0 {
				return fmt.Errorf("buffer at offset %d of %d B (request %d B) is off the %d B granule or short", off, b.Size, b.Requested, a.granule)
			}
		}
		prevFree = b.State == strategies.BlockFree
		at += b.Size
	}
	if a.started && a.limit > 0 && at != a.limit {
		return fmt.Errorf("blocks end at offset %d, the heap at %d", at, a.limit)
	}
	if inUse != a.inUse || free != a.freeBytes {
		return fmt.Errorf("bytes in use %d / free %d, blocks add up to %d / %d", a.inUse, a.freeBytes, inUse, free)
	}
	want := int64(0)
	if a.started {
		want = a.limit
	}
	if a.mem.Reserved() != want {
		return fmt.Errorf("the device holds %d B for a heap of %d B", a.mem.Reserved(), want)
	}
	return nil
}

// HumanBytes formats n the way the TPU runtime's messages do: "0B",
// "147.64M", "29.49G" (E0100, E0101): binary units, two decimals. The
// spelling of sizes below 1 KiB is an assumption ("512B").
func HumanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f%c", v, units[i])
}

var (
	_ strategies.Allocator        = (*Allocator)(nil)
	_ strategies.Layouter         = (*Allocator)(nil)
	_ strategies.Defragmenter     = (*Allocator)(nil)
	_ strategies.Footprinter      = (*Allocator)(nil)
	_ strategies.Noter            = (*Allocator)(nil)
	_ strategies.ProgramLoader    = (*Allocator)(nil)
	_ strategies.Toucher          = (*Allocator)(nil)
	_ strategies.AllocatedPeaker  = (*Allocator)(nil)
	_ strategies.FootprintWatcher = (*Allocator)(nil)
)
