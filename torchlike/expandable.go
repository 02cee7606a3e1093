package torchlike

import (
	"cmp"
	"math"
	"slices"

	"membench/internal/freeset"
)

// expSeg is an ExpandableSegment (allocator-spec §1.10): a virtual address
// reservation of 1.125 × the device's memory for one (stream, pool), backed
// page by page.
type expSeg struct {
	base, size, page int64
	stream           int64
	small            bool
	mapped           []bool // per page; grown lazily as upstream's handles_
	live             bool
	// owner is the allocator whose own mapped is; nil when mapped may be
	// shared with a clone (Clone), which copies it before a write
	// (ownPages).
	owner *Allocator
}

// ownPages makes es's page map this allocator's own, copying it if it may
// share it with a clone, before a write to it. Why shared: a copy of
// every segment's map at each Clone was, with a segment on each of
// 100,000 streams, 100,000 allocations for each copy of the model that
// validate makes to try a reading of a burst (11 s for such a recording).
func (a *Allocator) ownPages(es *expSeg) {
	if es.owner != a {
		es.mapped = slices.Clone(es.mapped)
		es.owner = a
	}
}

// tryAllocateExpandableBlock is try_allocate_expandable_block: find (or
// create) a run of free and unmapped blocks of at least size bytes and map
// what is unmapped in it.
func (a *Allocator) tryAllocateExpandableBlock(stream int64, pl *pool, size int64) int32 {
	c := a.findExpandableBlock(stream, pl, size)
	if !a.arena[c].mapped() && !a.mapBlock(c, min(a.arena[c].size, size)) {
		return none
	}
	for a.arena[c].size < size {
		// invariant: free -> unmapped -> ...; mapping merges into c.
		remaining := size - a.arena[c].size
		n := a.arena[c].next
		if !a.mapBlock(n, min(remaining, a.arena[n].size)) {
			return none
		}
		c = n
	}
	a.eraseFromBlocks(c)
	return c
}

func (a *Allocator) allocatable(i int32) bool {
	if i == none {
		return false
	}
	b := &a.arena[i]
	return !b.allocated() && !b.pending()
}

// reservation is the page and the size of a new expandable segment of
// the small or the large pool: PyTorch's ExpandableSegment reserves
// address space for 1.125 times the device's total memory, in pages of
// 2 MiB (small pool) or large_segment_size (allocator-spec §1.10).
func (a *Allocator) reservation(small bool) (page, size int64) {
	page = a.cfg.LargeSegmentSize
	if small {
		page = SmallBuffer
	}
	total := a.mem.Dev.Total
	return page, (total + total/8 + page - 1) / page * page
}

// reserve notes a new expandable segment's range in resv.
func (a *Allocator) reserve(base, size int64) {
	i, _ := slices.BinarySearchFunc(a.resv, base, func(s span, b int64) int { return cmp.Compare(s.start, b) })
	a.resv = slices.Insert(a.resv, i, span{base, base + size})
}

// unreserve drops a released segment's range from resv.
func (a *Allocator) unreserve(base int64) {
	if i, ok := slices.BinarySearchFunc(a.resv, base, func(s span, b int64) int { return cmp.Compare(s.start, b) }); ok {
		a.resv = slices.Delete(a.resv, i, i+1)
	}
}

// Released is how many expandable segments the allocator has released
// (cuMemAddressFree), every segment made or seeded less the live ones:
// the validator's reading ahead of the recorded maps starts again after
// one, whose range the device may give again.
func (a *Allocator) Released() int64 { return int64(len(a.exp) - len(a.resv)) }

// Reserved reports whether [addr, addr+size) meets the address range of
// a live expandable segment (made, or seeded, and not released): the
// validator places a new one only where none is.
func (a *Allocator) Reserved(addr, size int64) bool {
	i, _ := slices.BinarySearchFunc(a.resv, addr, func(s span, x int64) int { return cmp.Compare(s.end, x+1) })
	return i < len(a.resv) && a.resv[i].start < addr+size
}

// ReservationSize is the size of the address range a new expandable
// segment of the pool reserves, for a caller placing one (the validator).
func (a *Allocator) ReservationSize(small bool) int64 {
	_, size := a.reservation(small)
	return size
}

// findExpandableBlock is find_expandable_block: the lowest-address
// unmapped range of this stream (extended back over a free block before it)
// whose consecutive free and unmapped blocks reach size; else a new segment.
func (a *Allocator) findExpandableBlock(stream int64, pl *pool, size int64) int32 {
	found, at := a.expandableCandidate(stream, pl, size)
	a.learn(pl, stream, size, at)
	if found != none {
		return found
	}
	page, size := a.reservation(pl.small)
	es := expSeg{size: size, page: page, stream: stream, small: pl.small, live: true, owner: a}
	es.base = a.place(es.size, a.mem.Address(es.size))
	a.exp = append(a.exp, es)
	a.reserve(es.base, es.size)
	a.expLargest[pi(pl.small)&1] = max(a.expLargest[pi(pl.small)&1], es.size)
	i := a.newBlock(block{addr: es.base, size: es.size, stream: stream, small: pl.small, prev: none, next: none, es: int32(len(a.exp) - 1)})
	pl.unmapped.Insert(key(&a.arena[i], i))
	a.lower(pl, es.base)
	return i
}

// expandableCandidate is find_expandable_block's search of the existing
// segments, without creating one: none when a new segment is needed, and
// the address of the unmapped range it stopped at (math.MaxInt64 when
// none).
//
// Upstream walks the stream's unmapped ranges from the lowest address
// on, and so did this model, which a trace can make quadratic: unmapped
// ranges a page long between allocated pages (every other page freed,
// then released), then allocations of two pages that fail, each walking
// every range before the one that holds it (1,000 ranges and 100,000
// failed allocations took 1.0 s, 2026-11-25). So the search starts where
// an earlier one stopped (lessons), when it asks for as much or more on
// the same stream: every range below that address was too
// short then, and is still, unless a run of free and unmapped blocks has
// grown since. Only two changes make one reach far enough: a block freed
// (any free in the pool makes the search start from the lowest address
// again: poolFrees) and a free block unmapped, which lengthens no run
// but gives the run through it a range to start from, lower than the one
// it had if it went on into an unmapped range above (the release after a
// failed mapping unmaps the free block before the range the search
// found: TestExpandableSearchAfterUnmap), so unmapBlock moves the start
// down to it, as a new segment does to its base. A warm start's seed,
// which brings ranges of its own, makes the search forget what it learnt
// (SeedExpandable). Allocating and mapping only shorten runs or keep
// them. Check verifies the claim after every event in --check replays
// and the property tests (FuzzExpandableSearch compares the two searches
// step by step).
//
// The pool keeps the lessons of the last expMemos searches of different
// streams or sizes, so that requests alternating between a few streams or
// sizes each start where theirs stopped. The search still looks at every
// range below the one that holds the request when a free comes between
// two searches, or when the requests cycle through more streams and
// sizes than that. A request larger than every segment the pool has made
// (expLargest) looks at none: no run is longer than its segment.
func (a *Allocator) expandableCandidate(stream int64, pl *pool, size int64) (int32, int64) {
	if size > a.expLargest[pi(pl.small)&1] && !walkFromStart {
		// A run ends where its segment does, and no segment of the
		// pool is that large: the walk would find nothing. Each such
		// request makes a segment of its own, so that the walks of a
		// run of them were quadratic (100,000 failed allocations of 2
		// GiB on a 1 GiB card, nine sizes: 5.3 s).
		return none, math.MaxInt64
	}
	var from int64
	if a.expKnown(pl) && !walkFromStart {
		l := a.lessonsOf(pl)
		for _, m := range l.m[:l.n] {
			if m.stream == stream && m.size <= size {
				from = max(from, m.from)
			}
		}
	}
	return a.firstFit(pl, stream, size, from)
}

// firstFit is find_expandable_block's walk from address from on: the
// first unmapped range of stream at or above it whose run (from the free
// block before it, if any) holds size bytes, as the block the run starts
// at and the range's address, or none and math.MaxInt64. It counts the
// ranges it looks at (Allocator.expWalked).
func (a *Allocator) firstFit(pl *pool, stream, size, from int64) (int32, int64) {
	found, at := int32(none), int64(math.MaxInt64)
	pl.unmapped.Ascend(freeset.Key{Stream: stream, Addr: from}, func(k freeset.Key) bool {
		if k.Stream != stream {
			return false
		}
		a.expWalked++
		c := a.expandableStart(k.B)
		if a.expandableRun(c, size) >= size {
			found, at = c, k.Addr
			return false
		}
		return true
	})
	return found, at
}

// lessonsOf returns pl's lessons, nil before the first search learnt
// any.
func (a *Allocator) lessonsOf(pl *pool) *lessons {
	if a.lessons == nil {
		return nil
	}
	return &a.lessons[pi(pl.small)&1]
}

// lessonsMade returns pl's lessons, making the allocator's at the first
// call.
func (a *Allocator) lessonsMade(pl *pool) *lessons {
	if a.lessons == nil {
		a.lessons = new([2]lessons)
	}
	return a.lessonsOf(pl)
}

// expKnown says whether what the last searches learnt holds still: no
// block of the pool has been freed since.
func (a *Allocator) expKnown(pl *pool) bool {
	l := a.lessonsOf(pl)
	return l != nil && l.n > 0 && l.frees == a.poolFrees(pl)
}

// learn keeps a search's lesson: no unmapped range of stream below at
// holds size bytes. The lessons learnt before a free are dropped; one of
// the same stream and size is replaced, else a free entry taken, else
// the oldest replaced.
func (a *Allocator) learn(pl *pool, stream, size, at int64) {
	l := a.lessonsMade(pl)
	if frees := a.poolFrees(pl); l.frees != frees {
		l.n, l.at, l.frees = 0, 0, frees
	}
	m := expMemo{stream, size, at}
	for i := range l.m[:l.n] {
		if e := &l.m[i]; e.stream == stream && e.size == size {
			*e = m
			return
		}
	}
	if l.n < expMemos {
		l.m[l.n] = m
		l.n++
		return
	}
	l.m[l.at] = m
	l.at = (l.at + 1) % expMemos
}

// lower moves every lesson's start down to addr, where a new unmapped
// range of pl may begin (unmapBlock, a new segment).
func (a *Allocator) lower(pl *pool, addr int64) {
	l := a.lessonsOf(pl)
	if l == nil {
		return
	}
	for i := range l.m[:l.n] {
		l.m[i].from = min(l.m[i].from, addr)
	}
}

// poolFrees counts the frees of pl's blocks, from its statistics, so that
// Free, the replay's commonest step, need not tell the search anything:
// a free of an allocated block adds one to the pool's freed allocations,
// and a free that completes a pending block (FreeCompleted; an allocated
// block's Free left pending by FreeRequested) one to its freed active
// blocks, kept apart from the allocations once any block has been pending
// (counters.activeApart). Nothing else changes either, and neither ever
// falls.
func (a *Allocator) poolFrees(pl *pool) int64 {
	ps := &a.stats.pool[pi(pl.small)&1]
	return ps.g[sAllocation].freed + ps.g[sActive].freed
}

// walkFromStart makes expandableCandidate walk from the lowest address
// every time, as upstream does: the reference the tests compare with.
var walkFromStart = false

// expandableStart is where find_expandable_block starts a run at the
// unmapped block u: the free block before it, if there is one, else u.
func (a *Allocator) expandableStart(u int32) int32 {
	if p := a.arena[u].prev; a.allocatable(p) {
		return p
	}
	return u
}

// expandableRun is the bytes of the consecutive free and unmapped blocks
// from c on, counted until they reach size.
func (a *Allocator) expandableRun(c int32, size int64) int64 {
	var bytes int64
	for b := c; bytes < size && a.allocatable(b); b = a.arena[b].next {
		bytes += a.arena[b].size
	}
	return bytes
}

// mapBlock is map_block: back the first size bytes of an unmapped block
// with whole pages, splitting off what stays unmapped, and merge with free
// neighbours.
func (a *Allocator) mapBlock(i int32, size int64) bool {
	b := &a.arena[i]
	es := &a.exp[b.es]
	begin := (b.addr - es.base) / es.page
	end := (b.addr + size - es.base + es.page - 1) / es.page
	if begin == end {
		return false
	}
	bytes := (end - begin) * es.page
	if !a.mem.Map(bytes, end-begin) {
		return false
	}
	a.ownPages(es)
	for int64(len(es.mapped)) < end {
		es.mapped = append(es.mapped, false)
	}
	for p := begin; p < end; p++ {
		es.mapped[p] = true
	}
	pl := a.poolOf(b)
	pl.unmapped.Remove(key(b, i))
	b.st |= stMapped
	if bytes < b.size {
		r := a.newBlock(block{addr: b.addr + bytes, size: b.size - bytes, stream: b.stream, small: b.small, prev: i, next: b.next, es: b.es})
		b = &a.arena[i]
		if b.next != none {
			a.arena[b.next].prev = r
		}
		b.next = r
		b.size = bytes
		pl.unmapped.Insert(key(&a.arena[r], r))
	}
	a.tryMerge(i, a.arena[i].prev)
	a.tryMerge(i, a.arena[i].next)
	a.insertIntoBlocks(i)
	b = &a.arena[i]
	a.stats.increase(sReservedBytes, b.small, bytes)
	a.stats.NumDeviceAlloc++
	a.trace(ActionSegmentMap, es.base+begin*es.page, bytes, b.stream)
	return true
}

// unmapBlock is unmap_block: release the whole pages inside a free block,
// leaving the partial pages at either end mapped and free.
func (a *Allocator) unmapBlock(i int32) {
	b := &a.arena[i]
	es := &a.exp[b.es]
	begin := (b.addr - es.base + es.page - 1) / es.page
	end := (b.addr + b.size - es.base) / es.page
	if begin >= end {
		return
	}
	uAddr, uSize := es.base+begin*es.page, (end-begin)*es.page
	a.ownPages(es)
	for p := begin; p < end; p++ {
		es.mapped[p] = false
	}
	pl := a.poolOf(b)
	pl.blocks.Remove(key(b, i))
	if before := uAddr - b.addr; before > 0 {
		nb := a.newBlock(block{addr: b.addr, size: before, stream: b.stream, small: b.small, prev: b.prev, next: i, es: b.es, st: stMapped})
		b = &a.arena[i]
		if b.prev != none {
			a.arena[b.prev].next = nb
		}
		b.prev = nb
		a.insertIntoBlocks(nb)
	}
	b = &a.arena[i]
	if after := b.addr + b.size - (uAddr + uSize); after > 0 {
		nb := a.newBlock(block{addr: uAddr + uSize, size: after, stream: b.stream, small: b.small, prev: i, next: b.next, es: b.es, st: stMapped})
		b = &a.arena[i]
		if b.next != none {
			a.arena[b.next].prev = nb
		}
		b.next = nb
		a.insertIntoBlocks(nb)
	}
	b = &a.arena[i]
	b.addr, b.size = uAddr, uSize
	b.st &^= stMapped
	a.tryMerge(i, b.prev)
	a.tryMerge(i, a.arena[i].next)
	b = &a.arena[i]
	pl.unmapped.Insert(key(b, i))
	a.lower(pl, b.addr) // a new range (expandableCandidate)
	a.mem.Unmap(uSize, end-begin)
	a.stats.decrease(sReservedBytes, b.small, uSize)
	a.stats.NumDeviceFree++
	a.trace(ActionSegmentUnmap, uAddr, uSize, b.stream)
}

// releaseExpandableSegment drops a segment whose whole range is one
// unmapped block (cuMemAddressFree).
func (a *Allocator) releaseExpandableSegment(i int32) {
	b := &a.arena[i]
	a.exp[b.es].live = false
	a.exp[b.es].mapped = nil
	a.unreserve(a.exp[b.es].base)
	a.poolOf(b).unmapped.Remove(key(b, i))
	a.deleteBlock(i)
}
