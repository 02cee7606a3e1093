package bfc

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"membench/internal/freeset"
	"membench/internal/prefetch"
	"membench/strategies"
)

// Constants of §2.1.
const (
	MinAllocationSize int64 = 256
	initialGrowth     int64 = 2 << 20
	// DefaultMaxInternalFragmentation is max_internal_fragmentation_bytes
	// when no fraction sets it (§2.2).
	DefaultMaxInternalFragmentation int64 = 128 << 20
	// backpedalFactor is kBackpedalFactor, declared float in Extend.
	backpedalFactor float32 = 0.9
)

// RoundedBytes is RoundedBytes: a multiple of 256.
func RoundedBytes(n int64) int64 {
	return (n + MinAllocationSize - 1) / MinAllocationSize * MinAllocationSize
}

// Options are BFCAllocator::Options plus the memory limit.
type Options struct {
	// Limit is memory_limit: total bytes the allocator may obtain.
	Limit int64
	// AllowGrowth grows regions on demand; without it the first
	// allocation takes the whole limit in one region.
	AllowGrowth bool
	// GarbageCollection frees entirely free regions when a request fails.
	GarbageCollection bool
	// FragmentationFraction, if > 0, sets max_internal_fragmentation_bytes
	// to this fraction of Limit; otherwise it is 128 MiB.
	FragmentationFraction float64
	// Defrag relocates live chunks when a request fails but free memory
	// would suffice (see the package comment: a modelling assumption).
	Defrag bool
	// DefragViaHost costs relocation over the host link instead of HBM.
	DefragViaHost bool
	// Name appears in OOM messages, as GPU_0_bfc does.
	Name string
	// Notes are what this configuration has to say beside its results
	// (the framework's knobs without effect), reported by the
	// allocator's Notes (strategies.Noter).
	Notes []string
}

// Stats are AllocatorStats as BFC fills them (§2.7), plus the
// defragmentation counters.
type Stats struct {
	NumAllocs        int64
	BytesInUse       int64
	PeakBytesInUse   int64
	LargestAllocSize int64
	BytesLimit       int64
	PoolBytes        int64
	PeakPoolBytes    int64
	DefragEvents     int64
	DefragMovedBytes int64
	NumOOMs          int64
}

// chunk is a chunk's record in the arena (Allocator.chunks), by handle.
// It is 32 bytes, so that with 10^6 chunks, whose records are read at
// random, a record is one cache line and never two (at 40 bytes, with the
// flags and the region beside these fields, half the records spanned two
// lines, and a prefetch brought in only the first). The rest of a chunk's
// state is kept where the events that need it find it without a read of
// the record: whether the chunk is in use is a bit of Allocator.used, its
// region follows from its address (regionAt), and a slot that holds no
// chunk has size 0.
type chunk struct {
	ptr, size, req int64
	prev, next     int32
}

type region struct {
	ptr, size int64
	// high is the highest chunk end in use in the region, from ptr,
	// since the region was made: its share of the footprint.
	high int64
	// inUse is the bytes of the region's chunks in use, for defragment
	// (its size less inUse is its free bytes), its one reader, and kept
	// only with Options.Defrag on: an allocation adds to it (took), a
	// free takes from it (freedIn).
	inUse int64
	first int32 // lowest chunk
	// hole is a chunk at or below the region's lowest free chunk: every
	// chunk below it is in use, so a compaction starts there (compact).
	// Kept, like inUse, only with Options.Defrag on.
	hole  int32
	alive bool
}

const none int32 = -1

// Allocator is one BFC allocator on one device.
type Allocator struct {
	opts   Options
	mem    *strategies.Memory
	chunks []chunk
	// used has a bit per slot of chunks, set while its chunk is in
	// use: the bits a Free reads to learn whether the freed chunk's
	// neighbours are free (at 10^6 chunks a few cache lines of an array
	// that stays in the cache, where their records are two misses).
	used    []uint64
	unused  []int32
	regions []region
	// order is the alive regions by address, for regionAt.
	order   []int32
	free    *freeBins // free chunks by (size, address)
	curr    int64     // curr_region_allocation_bytes_
	maxFrag int64
	stats   Stats
	lastOOM strategies.OOM
	// footprint is the sum of the alive regions' high marks, and
	// peakFootprint its largest value (PeakFootprint).
	footprint, peakFootprint int64
	// tracer receives region and relocation events (strategies.Tracer).
	tracer func(strategies.TraceEvent)
	// walked counts the chunks defragment has read to learn the
	// regions' free bytes (only defragWalkAlways does), and compacted
	// those compact has read, for the tests that bound them.
	walked, compacted int64
}

// buffers are the chunk records, their in-use bits and the list of free
// slots, which an allocator released (Release) leaves to the next one
// built, empty: they are nearly all a short replay allocates.
type buffers struct {
	chunks []chunk
	used   []uint64
	unused []int32
}

var released sync.Pool // of *buffers

// Release implements strategies.Releaser: the chunk records go to the
// next allocator built. A slot is zero when it is taken (slot appends a
// zero record and a zero word of in-use bits; deleteChunk clears a
// record), so nothing of this allocator's chunks reaches the next. The
// allocator must not be used after Release (strategies.Releaser).
func (a *Allocator) Release() {
	if a.chunks == nil {
		return
	}
	released.Put(&buffers{a.chunks[:0], a.used[:0], a.unused[:0]})
	a.chunks, a.used, a.unused = nil, nil, nil
}

// New builds a BFC allocator drawing from mem.
func New(opts Options, mem *strategies.Memory) *Allocator {
	a := &Allocator{opts: opts, mem: mem, free: newFreeBins()}
	if b, ok := released.Get().(*buffers); ok {
		a.chunks, a.used, a.unused = b.chunks, b.used, b.unused
	}
	if opts.AllowGrowth {
		a.curr = RoundedBytes(min(opts.Limit, initialGrowth))
	} else {
		a.curr = RoundedBytes(opts.Limit)
	}
	a.maxFrag = DefaultMaxInternalFragmentation
	if opts.FragmentationFraction > 0 {
		a.maxFrag = int64(opts.FragmentationFraction * float64(opts.Limit))
	}
	a.stats.BytesLimit = opts.Limit
	if a.opts.Name == "" {
		a.opts.Name = "bfc"
	}
	return a
}

// Options returns the allocator's options.
func (a *Allocator) Options() Options { return a.opts }

// Memory implements strategies.Allocator.
func (a *Allocator) Memory() *strategies.Memory { return a.mem }

// LastOOM implements strategies.Allocator.
func (a *Allocator) LastOOM() strategies.OOM { return a.lastOOM }

// Allocated implements strategies.Allocator: bytes_in_use, which counts
// whole chunks.
func (a *Allocator) Allocated() int64 { return a.stats.BytesInUse }

// slot returns a free chunk slot, a recycled one or a new one, zeroed.
func (a *Allocator) slot() int32 {
	if n := len(a.unused); n > 0 {
		h := a.unused[n-1]
		a.unused = a.unused[:n-1]
		return h
	}
	a.chunks = append(a.chunks, chunk{})
	if len(a.chunks) > 64*len(a.used) {
		a.used = append(a.used, 0)
	}
	return int32(len(a.chunks) - 1)
}

func (a *Allocator) newChunk(c chunk) int32 {
	h := a.slot()
	a.chunks[h] = c
	return h
}

// deleteChunk recycles the slot of a free chunk (whose bit in used is
// clear already).
func (a *Allocator) deleteChunk(h int32) {
	a.chunks[h] = chunk{}
	a.unused = append(a.unused, h)
}

// inUse reports whether chunk h is in use.
func (a *Allocator) inUse(h int32) bool { return a.used[h>>6]&(1<<(h&63)) != 0 }

// setUse marks chunk h in use or free.
func (a *Allocator) setUse(h int32, on bool) {
	if on {
		a.used[h>>6] |= 1 << (h & 63)
	} else {
		a.used[h>>6] &^= 1 << (h & 63)
	}
}

// key is chunk h's key in the free set.
func (a *Allocator) key(h int32) freeset.Key {
	c := &a.chunks[h]
	return freeset.Key{Size: c.size, Addr: c.ptr, B: h}
}

// regionAt is the region that holds address p: regions are disjoint, so
// it is the alive region with the highest address not above p.
func (a *Allocator) regionAt(p int64) *region {
	o := a.order
	if len(o) == 1 {
		return &a.regions[o[0]]
	}
	lo, hi := 0, len(o)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a.regions[o[m]].ptr <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return &a.regions[o[lo-1]]
}

// Malloc is AllocateRaw (§2.2): find, else Extend and find, else free
// whole regions (garbage collection), extend and find, else (if enabled)
// defragment and find.
func (a *Allocator) Malloc(n, stream int64) (strategies.Handle, bool) {
	if n <= 0 {
		return -1, false
	}
	r := RoundedBytes(n)
	if r < n {
		// Rounding overflowed int64: no chunk or region can hold such a
		// request, which must fail as TSL's does, not wrap to a negative
		// size that every free chunk "fits".
		r = math.MaxInt64
	}
	if h, ok := a.find(r, n); ok {
		a.mem.Hit()
		return h, true
	}
	if a.extend(r) {
		if h, ok := a.find(r, n); ok {
			return h, true
		}
	}
	if a.deallocateFreeRegions(r) && a.extend(r) {
		if h, ok := a.find(r, n); ok {
			return h, true
		}
	}
	if a.opts.Defrag && a.defragment(r) {
		if h, ok := a.find(r, n); ok {
			return h, true
		}
	}
	a.stats.NumOOMs++
	largest := a.largestFree()
	free := a.stats.PoolBytes - a.stats.BytesInUse
	a.lastOOM = strategies.OOM{Requested: n, Rounded: r, Reserved: a.mem.Reserved(), Allocated: a.stats.BytesInUse,
		DeviceFree: a.mem.Available(), LargestFree: largest}
	a.lastOOM.Message = fmt.Sprintf("RESOURCE_EXHAUSTED: Out of memory while trying to allocate %d bytes (%s: %d bytes free in its regions, largest free chunk %d bytes, limit %d bytes, %d bytes held from the device)",
		n, a.opts.Name, free, largest, a.opts.Limit, a.stats.PoolBytes)
	return -1, false
}

// find is FindChunkPtr: the best-fit free chunk, split if worth it.
//
// What it needs of the chunk, its size and address, comes from its key,
// and of its record only the upper neighbour (split): with 10^6 chunks
// the record is a cache miss that nothing could prefetch (the search
// decides which chunk it is). (With the neighbour in the key as well, in
// the padding of freeset.Key, the record was only written; but that made
// the replay with 10^3 live chunks a quarter slower, most likely because
// unpadded keys are compared whole, in loads wider than the stores that
// had just written them, which the processor cannot forward.)
//
// While the free chunks are few, the free set's one set is called here
// directly (freeBins, whose methods cannot inline).
func (a *Allocator) find(r, n int64) (strategies.Handle, bool) {
	if a.free.inFew {
		// The few free chunks of a real trace's replay (smallSet):
		// the same best fit, split or whole, in the sorted array.
		s := &a.free.few
		i := s.fit(r)
		if i < 0 {
			return -1, false
		}
		e := s.at(i)
		h, size, addr := e.h, e.size, e.addr
		if Splits(size, r, a.maxFrag) {
			nh := a.slot()
			s.replaceAt(i, smallKey{size - r, addr + r, nh})
			a.split(h, nh, freeset.Key{Size: size, Addr: addr, B: h}, r)
			size = r
		} else {
			s.removeAt(i)
		}
		a.took(h, addr, size, n)
		return strategies.Handle(h), true
	}
	one := a.free.one
	var k freeset.Key
	var ok bool
	if one != nil {
		k, ok = one.LowerBound(freeset.Key{Size: r})
	} else {
		k, ok = a.free.lowerBound(freeset.Key{Size: r})
	}
	if !ok {
		return -1, false
	}
	h := k.B
	size := k.Size
	if Splits(size, r, a.maxFrag) {
		// The remainder takes the chunk's place in the free set: one
		// step (freeset.Set.Replace) for RemoveFreeChunkFromBin and
		// the remainder's InsertFreeChunkIntoBin.
		nh := a.slot()
		if rem := (freeset.Key{Size: size - r, Addr: k.Addr + r, B: nh}); one != nil {
			one.Replace(k, rem)
		} else {
			a.free.replace(k, rem)
		}
		a.split(h, nh, k, r)
		size = r
	} else if one != nil {
		one.Remove(k)
		if one.Len() <= a.free.backAt {
			a.free.backToFew()
		}
	} else {
		a.free.remove(k)
	}
	a.took(h, k.Addr, size, n)
	return strategies.Handle(h), true
}

// took is the end of find: chunk h, of size bytes at addr, is in use for
// a request of n bytes.
func (a *Allocator) took(h int32, addr, size, n int64) {
	a.setUse(h, true)
	a.chunks[h].req = n
	g := a.regionAt(addr)
	if a.opts.Defrag {
		// Not kept otherwise: the store alone cost the replay with
		// 10^6 live chunks 5-10 % (bfc BenchmarkLive, 2026-11-25).
		g.inUse += size
	}
	if addr+size-g.ptr > g.high {
		a.footprint += addr + size - g.ptr - g.high
		g.high = addr + size - g.ptr
		a.peakFootprint = max(a.peakFootprint, a.footprint)
	}
	a.stats.NumAllocs++
	a.stats.BytesInUse += size
	a.stats.PeakBytesInUse = max(a.stats.PeakBytesInUse, a.stats.BytesInUse)
	a.stats.LargestAllocSize = max(a.stats.LargestAllocSize, size)
}

// Chunk is where the allocation h lies: its chunk's address and size (a
// handle is the chunk's). Validation (bfc/validate) records the model's
// own decisions with it, to check that the rules it judges recordings by
// are the ones this allocator applies.
func (a *Allocator) Chunk(h strategies.Handle) (addr, size int64) {
	c := &a.chunks[h]
	return c.ptr, c.size
}

// Splits is FindChunkPtr's rule (§2.2): a free chunk of size bytes chosen
// for a request rounded to r is split, the allocation keeping its low r
// bytes, when it is at least twice the request or would otherwise waste at
// least maxFrag bytes; else the whole chunk is handed out. Validation
// (bfc/validate) judges recorded decisions by this same function.
func Splits(size, r, maxFrag int64) bool { return size >= 2*r || size-r >= maxFrag }

// split is SplitChunk: the low r bytes stay with h, whose free-set key
// is k, and the rest becomes the free chunk nh (whose right neighbour
// cannot be free, §2.2), a slot the caller took and put in the free set.
//
// The new chunk's fields are set one by one in its slot: built as a struct
// and copied (newChunk), its freshly written fields would be read back in
// 16-byte pieces that span two of their stores, which the processor cannot
// forward (a stall that was a third of this function's time).
func (a *Allocator) split(h, nh int32, k freeset.Key, r int64) {
	c := &a.chunks[h]
	next := c.next
	n := &a.chunks[nh]
	n.ptr, n.size, n.prev, n.next = k.Addr+r, k.Size-r, h, next
	if next != none {
		a.chunks[next].prev = nh
	}
	c.next = nh
	c.size = r
}

// Touch implements strategies.Toucher: it prefetches the chunk of h.
func (a *Allocator) Touch(h strategies.Handle) {
	if int(h) < len(a.chunks) {
		prefetch.Line(unsafe.Pointer(&a.chunks[h]))
	}
}

// Free is DeallocateRaw with coalescing (§2.3): merge the next chunk in,
// then merge into the previous one.
func (a *Allocator) Free(hh strategies.Handle) {
	h := int32(hh)
	c := &a.chunks[h]
	a.setUse(h, false)
	a.stats.BytesInUse -= c.size
	if a.opts.Defrag {
		a.freedIn(h, c)
	}
	if a.free.inFew {
		a.freeSmall(h, c)
		return
	}
	// The merged chunk takes the place of a free neighbour it absorbed
	// in the free set (freeset.Set.Replace): one step where removing the
	// neighbour and inserting the merged chunk take two.
	var gone freeset.Key
	merged := false
	if nx := c.next; nx != none && !a.inUse(nx) {
		gone, merged = a.key(nx), true
		a.merge(h, nx)
	}
	if pv := a.chunks[h].prev; pv != none && !a.inUse(pv) {
		if merged {
			a.free.Remove(gone)
		}
		gone, merged = a.key(pv), true
		a.merge(pv, h)
		h = pv
	}
	// As in find, the one set of few free chunks directly.
	switch one := a.free.one; {
	case merged && one != nil:
		one.Replace(gone, a.key(h))
		// A merge of both neighbours removed one chunk (the
		// lower count is in one's Len).
		if one.Len() <= a.free.backAt {
			a.free.backToFew()
		}
	case merged:
		a.free.replace(gone, a.key(h))
	case one != nil && one.Len() < a.free.at:
		one.Insert(a.key(h))
	default:
		a.free.Insert(a.key(h))
	}
}

// freeSmall is the rest of Free while the free chunks are in the small
// set (smallSet): the same merges, the merged chunk taking the place of a
// neighbour it absorbed in the set, as in Free.
func (a *Allocator) freeSmall(h int32, c *chunk) {
	s := &a.free.few
	i := -1 // where the absorbed neighbour was in the set
	if nx := c.next; nx != none && !a.inUse(nx) {
		n := &a.chunks[nx]
		i = s.find(smallKey{n.size, n.ptr, nx})
		a.merge(h, nx)
	}
	if pv := c.prev; pv != none && !a.inUse(pv) {
		if i >= 0 {
			s.removeAt(i)
		}
		p := &a.chunks[pv]
		i = s.find(smallKey{p.size, p.ptr, pv})
		a.merge(pv, h)
		h, c = pv, p
	}
	k := smallKey{c.size, c.ptr, h}
	switch {
	case i >= 0:
		s.replaceAt(i, k)
	case s.n < smallMax:
		s.insert(k)
	default:
		a.free.Insert(k.key())
	}
}

// merge absorbs chunk b into its lower neighbour a1.
func (a *Allocator) merge(h1, h2 int32) {
	c1, c2 := &a.chunks[h1], a.chunks[h2]
	c1.size += c2.size
	c1.next = c2.next
	if c2.next != none {
		a.chunks[c2.next].prev = h1
	}
	a.deleteChunk(h2)
}

// extend is Extend (§2.4).
func (a *Allocator) extend(r int64) bool {
	avail := (a.opts.Limit - a.stats.PoolBytes) / MinAllocationSize * MinAllocationSize
	if r > avail {
		return false
	}
	grew := false
	for r > a.curr {
		a.curr = doubled(a.curr)
		grew = true
	}
	bytes := min(a.curr, avail)
	addr, ok := a.mem.Malloc(bytes)
	for !ok {
		// TSL's kBackpedalFactor is a float: bytes*0.9f is computed in
		// single precision, which at GiB sizes lands hundreds to
		// thousands of bytes away from bytes*0.9 even after rounding.
		back := RoundedBytes(int64(float32(float32(bytes) * backpedalFactor)))
		if back >= bytes {
			back = bytes - MinAllocationSize
		}
		bytes = back
		if bytes < r {
			return false
		}
		addr, ok = a.mem.Malloc(bytes)
	}
	if !grew {
		a.curr = doubled(a.curr)
	}
	a.stats.PoolBytes += bytes
	a.stats.PeakPoolBytes = max(a.stats.PeakPoolBytes, a.stats.PoolBytes)
	ri := int32(len(a.regions))
	h := a.newChunk(chunk{ptr: addr, size: bytes, prev: none, next: none})
	a.regions = append(a.regions, region{ptr: addr, size: bytes, first: h, hole: h, alive: true})
	at := 0
	for at < len(a.order) && a.regions[a.order[at]].ptr < addr {
		at++
	}
	a.order = slices.Insert(a.order, at, ri)
	a.free.Insert(a.key(h))
	a.trace(strategies.TraceEvent{Action: strategies.TraceSegmentAlloc, Addr: addr, Size: bytes})
	return true
}

// doubled is curr_region_allocation_bytes_ *= 2, saturating: TSL's size_t
// would wrap to 0 after 64 doublings and its loop `while (rounded_bytes >
// curr_region_allocation_bytes_)` would never end. Preallocated with
// garbage collection, every extend after freeing the regions doubles it
// (found by a capacity search that hung); nothing requests more than
// 2^62 bytes, so the cap changes no decision.
func doubled(curr int64) int64 {
	if curr <= 0 {
		return MinAllocationSize
	}
	if curr >= 1<<62 {
		return 1 << 62
	}
	return curr * 2
}

// deallocateFreeRegions is DeallocateFreeRegions (§2.5).
func (a *Allocator) deallocateFreeRegions(r int64) bool {
	if !a.opts.GarbageCollection {
		return false
	}
	var total int64
	var freeRegions []int32
	for i := range a.regions {
		g := &a.regions[i]
		if g.alive && !a.inUse(g.first) && a.chunks[g.first].next == none {
			freeRegions = append(freeRegions, int32(i))
			total += g.size
		}
	}
	if total == 0 || r > a.opts.Limit-a.stats.PoolBytes+total {
		return false
	}
	for _, i := range freeRegions {
		g := &a.regions[i]
		a.trace(strategies.TraceEvent{Action: strategies.TraceSegmentFree, Addr: g.ptr, Size: g.size})
		a.free.Remove(a.key(g.first))
		a.deleteChunk(g.first)
		a.mem.Free(g.size)
		a.stats.PoolBytes -= g.size
		a.footprint -= g.high
		g.alive = false
	}
	a.order = slices.DeleteFunc(a.order, func(i int32) bool { return !a.regions[i].alive })
	return true
}

func (a *Allocator) largestFree() int64 {
	if k, ok := a.free.Max(); ok {
		return k.Size
	}
	return 0
}

// freedIn takes chunk c, being freed, from its region's bytes in use
// (region.inUse). It is a call of its own so that Free, which every BFC
// replay runs, holds a test and a call where the search for the region
// would sit: a free makes that search only with defragmentation on.
//
// It also lowers the region's hole (region.hole) to h when h lies below
// it. A chunk the merges delete is never left as the hole: h merges into
// its lower neighbour only when that is free, so at or above the hole,
// which h then lies above; its upper neighbour merges into h only when
// free, so at or above the hole, and were it the hole, h, below it,
// becomes the hole.
//
//go:noinline
func (a *Allocator) freedIn(h int32, c *chunk) {
	g := a.regionAt(c.ptr)
	g.inUse -= c.size
	if x := g.hole; x == none || c.ptr < a.chunks[x].ptr {
		g.hole = h
	}
}

// defragment slides the live chunks of every region that has free bytes
// to the region's low end, in address order, leaving one free chunk at the
// top; it reports whether that made a chunk of r bytes. It does nothing
// (and reports false) unless the free bytes in some region reach r: moving
// buffers cannot help otherwise. Assumption: see the package comment.
//
// A region's free bytes are its size less the bytes in use the
// allocations and frees keep in it (region.inUse) with defragmentation
// on. Why: they were learnt by reading every chunk, at every failed
// allocation (100,000 live chunks, then as many failures: 26.6 s), and
// then by reading them again only when something had changed since, which
// a small allocation and free between every two failures still made every
// time (12,000 chunks in several regions and 40,000 such failures: 1.1 s).
// Keeping the bytes costs a free a search of the regions by address (the
// allocation has its region already), with defragmentation on only.
func (a *Allocator) defragment(r int64) bool {
	if a.stats.PoolBytes-a.stats.BytesInUse < r && !defragWalkAlways {
		return false
	}
	best := int64(0)
	for _, ri := range a.order {
		best = max(best, a.regionFree(ri))
	}
	if best < r {
		return false
	}
	var moved int64
	for i := range a.regions {
		g := &a.regions[i]
		if !g.alive || a.regionFree(int32(i)) == 0 {
			continue
		}
		moved += a.compact(int32(i))
	}
	a.stats.DefragEvents++
	a.stats.DefragMovedBytes += moved
	a.mem.Move(moved, a.opts.DefragViaHost)
	return true
}

// defragWalkAlways makes defragment learn the regions' free bytes by
// reading every chunk each time (regionFree): the reference the tests
// compare with.
var defragWalkAlways = false

// regionFree is region ri's free bytes: its size less its bytes in use,
// or with defragWalkAlways the free chunks' bytes, read chunk by chunk.
func (a *Allocator) regionFree(ri int32) int64 {
	g := &a.regions[ri]
	if !defragWalkAlways {
		return g.size - g.inUse
	}
	var f int64
	for h := g.first; h != none; h = a.chunks[h].next {
		a.walked++
		if !a.inUse(h) {
			f += a.chunks[h].size
		}
	}
	return f
}

// compact rewrites a region as its live chunks packed from the bottom,
// then one free chunk; it returns the bytes that moved.
//
// It starts at the region's hole (region.hole): the chunks below it are in
// use and already packed from the region's start, and stay as they are.
// Why: a run of defragmentations that each moved a chunk near the top of
// a full region read every chunk of the region each time (200,000 events
// of 8-event cycles: 2.2 s).
func (a *Allocator) compact(ri int32) int64 {
	g := &a.regions[ri]
	at := g.ptr
	var moved int64
	var prevLive int32 = none
	first := none
	start := g.first
	if x := g.hole; x != none && x != g.first && !defragWalkAlways {
		start, at, prevLive, first = x, a.chunks[x].ptr, a.chunks[x].prev, g.first
	}
	for h := start; h != none; {
		a.compacted++
		c := &a.chunks[h]
		next := c.next
		if a.inUse(h) {
			if c.ptr != at {
				moved += c.size
				a.trace(strategies.TraceEvent{Action: strategies.TraceMove, Addr: at, From: c.ptr, Size: c.size, Requested: c.req})
				c.ptr = at
			}
			at += c.size
			c.prev = prevLive
			if prevLive != none {
				a.chunks[prevLive].next = h
			} else {
				first = h
			}
			prevLive = h
		} else {
			a.free.Remove(a.key(h))
			a.deleteChunk(h)
		}
		h = next
	}
	g.hole = none // the region full: every chunk in use
	if end := g.ptr + g.size; at < end {
		fh := a.newChunk(chunk{ptr: at, size: end - at, prev: prevLive, next: none})
		if prevLive != none {
			a.chunks[prevLive].next = fh
		} else {
			first = fh
		}
		a.free.Insert(a.key(fh))
		g.hole = fh
	} else if prevLive != none {
		a.chunks[prevLive].next = none
	}
	g.first = first
	return moved
}

// checkHole verifies region g's hole: a chunk of the region, every chunk
// below it in use; none only when every chunk of the region is.
func (a *Allocator) checkHole(g *region) error {
	for h := g.first; h != none; h = a.chunks[h].next {
		if h == g.hole {
			return nil
		}
		if !a.inUse(h) {
			return fmt.Errorf("region at %#x: free chunk at %#x below its hole", g.ptr, a.chunks[h].ptr)
		}
	}
	if g.hole != none {
		return fmt.Errorf("region at %#x: its hole, chunk %d, is not one of its chunks", g.ptr, g.hole)
	}
	return nil
}

// Layout implements strategies.Allocator: one Segment per region.
func (a *Allocator) Layout(fn func(strategies.Segment)) {
	for i := range a.regions {
		g := &a.regions[i]
		if !g.alive {
			continue
		}
		s := strategies.Segment{Addr: g.ptr, Size: g.size, Pool: "bfc"}
		for h := g.first; h != none; h = a.chunks[h].next {
			c := &a.chunks[h]
			st := strategies.BlockFree
			if a.inUse(h) {
				st = strategies.BlockAllocated
			}
			s.Blocks = append(s.Blocks, strategies.Block{Addr: c.ptr, Size: c.size, Requested: c.req, State: st})
		}
		fn(s)
	}
}

// Check implements strategies.Allocator: chunks tile their regions with
// consistent links, no two free chunks are adjacent, the free set holds
// exactly the free chunks, and bytes_in_use and pool_bytes balance.
func (a *Allocator) Check() error {
	var inUse, pool, footprint int64
	nFree := 0
	var lastEnd int64
	for i := range a.regions {
		g := &a.regions[i]
		if !g.alive {
			continue
		}
		if g.ptr < lastEnd {
			return fmt.Errorf("region at %#x overlaps the previous one", g.ptr)
		}
		lastEnd = g.ptr + g.size
		pool += g.size
		if g.high < 0 || g.high > g.size {
			return fmt.Errorf("region at %#x: mark %d B outside its %d B", g.ptr, g.high, g.size)
		}
		footprint += g.high
		inUse0 := inUse
		at := g.ptr
		prevFree := false
		var prev int32 = none
		for h := g.first; h != none; h = a.chunks[h].next {
			c := &a.chunks[h]
			if c.ptr != at || c.size <= 0 || c.prev != prev {
				return fmt.Errorf("region at %#x: chunk %d (%+v) breaks the tiling at %#x", g.ptr, h, *c, at)
			}
			if !a.inUse(h) {
				if prevFree {
					return fmt.Errorf("region at %#x: adjacent free chunks at %#x", g.ptr, c.ptr)
				}
				if !a.free.Contains(a.key(h)) {
					return fmt.Errorf("free chunk at %#x is not in the free set", c.ptr)
				}
				nFree++
			} else {
				inUse += c.size
				if c.size < c.req {
					return fmt.Errorf("chunk at %#x holds %d B, less than its request of %d B", c.ptr, c.size, c.req)
				}
			}
			if c.size%MinAllocationSize != 0 || (c.ptr-g.ptr)%MinAllocationSize != 0 {
				// RoundedBytes makes every chunk a multiple of
				// kMinAllocationSize, so every boundary in a region is
				// 256 B aligned (allocator-spec §2).
				return fmt.Errorf("chunk at %#x (size %d B) is off the %d B alignment of its region at %#x", c.ptr, c.size, MinAllocationSize, g.ptr)
			}
			if a.inUse(h) && c.ptr+c.size-g.ptr > g.high {
				// The mark is the highest end ever in use
				// (PeakFootprint): no chunk in use lies above it.
				return fmt.Errorf("region at %#x: chunk in use at %#x ends above the region's mark of %d B", g.ptr, c.ptr, g.high)
			}
			prevFree = !a.inUse(h)
			at += c.size
			prev = h
		}
		if at != g.ptr+g.size {
			return fmt.Errorf("region at %#x: chunks end at %#x, the region at %#x", g.ptr, at, g.ptr+g.size)
		}
		if a.opts.Defrag {
			if err := a.checkHole(g); err != nil {
				return err
			}
		}
		if a.opts.Defrag && g.inUse != inUse-inUse0 {
			return fmt.Errorf("region at %#x: %d B in use kept, its chunks in use hold %d B", g.ptr, g.inUse, inUse-inUse0)
		}
	}
	for i, ri := range a.order {
		if !a.regions[ri].alive || i > 0 && a.regions[a.order[i-1]].ptr >= a.regions[ri].ptr {
			return fmt.Errorf("the regions by address are out of order or hold a dead region at %d", i)
		}
	}
	alive := 0
	for i := range a.regions {
		if a.regions[i].alive {
			alive++
		}
	}
	if alive != len(a.order) {
		return fmt.Errorf("%d regions alive, %d in the regions by address", alive, len(a.order))
	}
	if nFree != a.free.Len() {
		return fmt.Errorf("free set holds %d chunks, regions have %d free chunks", a.free.Len(), nFree)
	}
	if footprint != a.footprint || a.footprint > a.peakFootprint {
		return fmt.Errorf("footprint %d B, peak %d B; the alive regions' marks add up to %d B", a.footprint, a.peakFootprint, footprint)
	}
	if inUse != a.stats.BytesInUse || pool != a.stats.PoolBytes {
		return fmt.Errorf("bytes_in_use %d / pool_bytes %d, chunks add up to %d / %d", a.stats.BytesInUse, a.stats.PoolBytes, inUse, pool)
	}
	if pool != a.mem.Reserved() {
		return fmt.Errorf("pool_bytes %d disagrees with the device's %d", pool, a.mem.Reserved())
	}
	return nil
}

// PeakFootprint implements strategies.Footprinter: the most the sum over
// the alive regions of each one's mark, the highest chunk end ever in use
// in it since it was made, ever reached. Chunks are best fit
// with ties to the lowest address, so no request ever needed what lies
// above a region's mark. What the regions hold beyond their marks is the
// framework's reservation policy, not placement waste: preallocated (JAX
// by default, TensorFlow without allow_growth), the one region of the
// whole limit; growing on demand (allocator-spec §2.4), a region is the
// larger of the request and curr_region_allocation_bytes_, which doubles
// at every extension, so the last region's rest was reserved ahead of
// any request (gen-gpt2-medium-train: 8.98 GB placed of 17.2 GB
// reserved), and a region left below its end because a request did not
// fit its rest was cut off by the region boundary a growing reservation
// draws, which one preallocated region does not have.
func (a *Allocator) PeakFootprint() int64 { return a.peakFootprint }

// PeakFootprintVar implements strategies.FootprintWatcher.
func (a *Allocator) PeakFootprintVar() *int64 { return &a.peakFootprint }

// PeakAllocated implements strategies.AllocatedPeaker: peak_bytes_in_use,
// which only find raises, right after it raised bytes_in_use for a
// Malloc.
func (a *Allocator) PeakAllocated() (int64, bool) { return a.stats.PeakBytesInUse, true }

// DefragStats implements strategies.Defragmenter: the defragmentation
// events and the bytes they moved.
func (a *Allocator) DefragStats() (events, moved int64) {
	return a.stats.DefragEvents, a.stats.DefragMovedBytes
}

// Notes implements strategies.Noter: the assumptions of this
// configuration (Options.Notes), none for TSL's own BFC.
func (a *Allocator) Notes() []string { return a.opts.Notes }

var (
	_ strategies.Allocator        = (*Allocator)(nil)
	_ strategies.Layouter         = (*Allocator)(nil)
	_ strategies.Defragmenter     = (*Allocator)(nil)
	_ strategies.Noter            = (*Allocator)(nil)
	_ strategies.Toucher          = (*Allocator)(nil)
	_ strategies.FootprintWatcher = (*Allocator)(nil)
	_ strategies.AllocatedPeaker  = (*Allocator)(nil)
)
