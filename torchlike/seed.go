package torchlike

import (
	"fmt"
	"slices"
	"sort"

	"membench/strategies"
)

// This file serves `membench validate`: starting the model from a layout
// recorded mid-run, and the queries the validator needs to line a
// simulation up with a recorded trace.

// SeedBlock is a block live (or awaiting its stream events) when a
// recording began.
type SeedBlock struct {
	Addr, Size, Requested int64
	Pending               bool
}

// SeedSegment installs a cudaMalloc segment that existed before the
// replay started, with its live blocks; the gaps between them become free
// blocks, as PyTorch's merging leaves them. Nothing is counted as a device
// call. It returns the handles of the live blocks in the order given.
func (a *Allocator) SeedSegment(addr, size, stream int64, small bool, live []SeedBlock) ([]strategies.Handle, error) {
	if a.cfg.ExpandableSegments {
		return nil, fmt.Errorf("seeding a non-expandable segment into an allocator with expandable_segments")
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Addr < live[j].Addr })
	if err := a.splitUnderLimit(addr, size, small, live); err != nil {
		return nil, err
	}
	a.mem.Seed(size)
	a.markMapped(addr, size)
	a.stats.increase(sSegment, small, 1)
	a.stats.increase(sReservedBytes, small, size)
	if size >= a.cfg.MaxSplitSize {
		a.stats.OversizeSegments.increase(1)
	}
	hs, _, _, err := a.seedRun(addr, size, stream, small, none, live, true)
	return hs, err
}

// splitUnderLimit refuses a large cudaMalloc segment, its live blocks
// sorted by address, whose free gaps are split from it (it has a live
// block) and not below max_split_size. PyTorch splits no block that large
// (should_split), so these settings never make such a layout (a warm
// start's reconstruction makes one when a live block took a cached
// oversize block whole, its remainder unseen in the trace); and an
// allocation that fails frees an oversize cached block with cudaFree as if
// it were its whole segment (release_available_cached_blocks), which for
// a block inside a segment is a CUDA error upstream and would leave the
// model releasing part of a segment.
func (a *Allocator) splitUnderLimit(addr, size int64, small bool, live []SeedBlock) error {
	if small || len(live) == 0 || a.cfg.MaxSplitSize == unlimited {
		return nil
	}
	at, end := addr, addr+size
	for i := 0; i <= len(live); i++ {
		next := end // the gap after the last live block
		if i < len(live) {
			next = min(live[i].Addr, end)
		}
		if gap := next - at; gap >= a.cfg.MaxSplitSize {
			return fmt.Errorf("segment at %#x: free block at %#x of %d bytes is split from the segment yet not below max_split_size (%d bytes), which PyTorch does not split off (should_split): not a layout these settings make (in a warm start, perhaps a live block's unsplit oversize remainder, up to max_non_split_rounding, that the trace does not reveal); the model cannot replay it", addr, at, gap, a.cfg.MaxSplitSize)
		}
		if i < len(live) {
			at = max(at, live[i].Addr+live[i].Size)
		}
	}
	return nil
}

// seedRun tiles [addr, addr+size) with the live blocks and free gaps,
// linking them as one segment (or one mapped run of an expandable one). It
// returns the live blocks' handles and the run's first and last blocks.
func (a *Allocator) seedRun(addr, size, stream int64, small bool, es int32, live []SeedBlock, mapped bool) ([]strategies.Handle, int32, int32, error) {
	a.seeded = true
	// A seed may leave whole free blocks that no note names: the next
	// release and collection scan again.
	a.small.trust, a.large.trust = 0, 0
	var hs []strategies.Handle
	var ids []int32
	at, end := addr, addr+size
	add := func(b block) int32 {
		b.stream, b.small, b.es, b.prev, b.next = stream, small, es, none, none
		if mapped {
			b.st |= stMapped
		}
		i := a.newBlock(b)
		if n := len(ids); n > 0 {
			a.arena[ids[n-1]].next = i
			a.arena[i].prev = ids[n-1]
		}
		ids = append(ids, i)
		return i
	}
	for _, l := range live {
		if l.Addr < at || l.Addr+l.Size > end || l.Size <= 0 {
			return nil, none, none, fmt.Errorf("block at %#x size %d does not fit its segment [%#x, %#x)", l.Addr, l.Size, addr, end)
		}
		if l.Addr > at {
			add(block{addr: at, size: l.Addr - at})
		}
		st := stAllocated
		if l.Pending {
			st = stPending
		}
		i := add(block{addr: l.Addr, size: l.Size, req: l.Requested, st: st})
		hs = append(hs, strategies.Handle(i))
		at = l.Addr + l.Size
	}
	if at < end {
		add(block{addr: at, size: end - at})
	}
	for _, i := range ids {
		b := &a.arena[i]
		if b.pending() {
			a.stats.splitActive()
		}
		switch {
		case b.allocated() || b.pending():
			if a.stats.activeApart {
				a.stats.increase(sActive, small, 1)
				a.stats.increase(sActiveBytes, small, b.size)
			}
			a.stats.increase(sRequestedBytes, small, b.req)
			if b.allocated() {
				a.stats.increase(sAllocation, small, 1)
				a.stats.increase(sAllocatedBytes, small, b.size)
				if b.size >= a.cfg.MaxSplitSize {
					a.stats.OversizeAllocations.increase(1)
				}
			} else {
				a.pendingQ = append(a.pendingQ, i)
			}
		case mapped:
			a.insertIntoBlocks(i)
			if es == none && b.isSplit() {
				a.stats.increase(sInactiveSplit, small, 1)
				a.stats.increase(sInactiveSplitBytes, small, b.size)
			}
		default:
			a.poolOf(b).unmapped.Insert(key(b, i))
		}
	}
	return hs, ids[0], ids[len(ids)-1], nil
}

// SeedRun is one mapped run of an expandable segment at the start of a
// recording.
type SeedRun struct {
	Addr, Size int64
	Live       []SeedBlock
}

// SeedExpandable installs an expandable segment for (stream, pool) whose
// reservation starts at base, with the given mapped runs; everything else
// in the reservation is unmapped. A snapshot does not record where a
// reservation starts, so the caller's base is an assumption (validate uses
// the lowest mapped address it knows for that stream and pool).
func (a *Allocator) SeedExpandable(base, stream int64, small bool, runs []SeedRun) ([][]strategies.Handle, error) {
	if !a.cfg.ExpandableSegments {
		return nil, fmt.Errorf("seeding an expandable segment into an allocator without expandable_segments")
	}
	// The seed's unmapped ranges and free blocks come from no free and
	// no unmap, so what find_expandable_block's last search learnt
	// (lessons) may no longer hold below where it stopped.
	a.lessons = nil
	page, size := a.reservation(small)
	es := expSeg{base: base, size: size, page: page, stream: stream, small: small, live: true, owner: a}
	a.exp = append(a.exp, es)
	a.reserve(es.base, es.size)
	a.expLargest[pi(small)&1] = max(a.expLargest[pi(small)&1], es.size)
	ei := int32(len(a.exp) - 1)
	sort.Slice(runs, func(i, j int) bool { return runs[i].Addr < runs[j].Addr })
	var out [][]strategies.Handle
	at, end := base, base+es.size
	var last int32 = none
	link := func(first, lastOfRun int32) {
		if last != none {
			a.arena[last].next = first
			a.arena[first].prev = last
		}
		last = lastOfRun
	}
	unmapped := func(from, to int64) {
		i := a.newBlock(block{addr: from, size: to - from, stream: stream, small: small, es: ei, prev: none, next: none})
		a.poolOf(&a.arena[i]).unmapped.Insert(key(&a.arena[i], i))
		link(i, i)
	}
	for _, r := range runs {
		if r.Addr < at || r.Addr+r.Size > end || (r.Addr-base)%page != 0 || r.Size%page != 0 {
			return nil, fmt.Errorf("mapped run at %#x size %d is not whole pages of the reservation at %#x", r.Addr, r.Size, base)
		}
		if r.Addr > at {
			unmapped(at, r.Addr)
		}
		hs, f, l, err := a.seedRun(r.Addr, r.Size, stream, small, ei, r.Live, true)
		if err != nil {
			return nil, err
		}
		link(f, l)
		out = append(out, hs)
		p0, p1 := (r.Addr-base)/page, (r.Addr+r.Size-base)/page
		a.ownPages(&a.exp[ei])
		for int64(len(a.exp[ei].mapped)) < p1 {
			a.exp[ei].mapped = append(a.exp[ei].mapped, false)
		}
		for p := p0; p < p1; p++ {
			a.exp[ei].mapped[p] = true
		}
		a.mem.Seed(r.Size)
		a.markMapped(r.Addr, r.Size)
		a.stats.increase(sReservedBytes, small, r.Size)
		at = r.Addr + r.Size
	}
	if at < end {
		unmapped(at, end)
	}
	return out, nil
}

// Addr is the address of a live allocation.
func (a *Allocator) Addr(h strategies.Handle) int64 { return a.arena[h].addr }

// WouldRelease reports whether Malloc(orig, stream) would, as its first
// device action, return cached memory to the device: a miss in the cache
// followed by garbage collection, or by a device allocation that fails and
// sends malloc down its release path (allocator-spec §1.7). The validator
// uses it to tell a recorded burst of segment frees that the next
// allocation explains from a call to torch.cuda.empty_cache().
func (a *Allocator) WouldRelease(orig, stream int64) bool {
	if a.cfg.NoCaching {
		return false
	}
	size := a.cfg.roundSize(orig)
	p := params{size: size, allocSize: a.cfg.allocSize(size), stream: stream, pool: &a.large, block: none}
	if size <= SmallSize {
		p.pool = &a.small
	}
	if _, ok := a.findFreeBlock(&p); ok {
		return false
	}
	if a.gcEnabled() && a.mem.Reserved() > int64(a.cfg.GCThreshold*float64(a.allowedMax)) {
		// Garbage collection frees at least the oldest unsplit cached
		// block of the large pool (its age is at least the average), if
		// there is one.
		for _, k := range a.large.blocks.Items() {
			if b := &a.arena[k.B]; !b.isSplit() && b.es == none {
				return true
			}
		}
	}
	if a.setFraction() && a.mem.Reserved()+p.allocSize > a.allowedMax {
		return true
	}
	need := p.allocSize
	if a.cfg.ExpandableSegments {
		need = a.expandableNeed(stream, p.pool, size)
	}
	return need > a.mem.Available()
}

// expandableNeed is the bytes tryAllocateExpandableBlock would map for a
// request of size bytes, found without side effects: the candidate of
// findExpandableBlock, then the pages each mapping step adds.
func (a *Allocator) expandableNeed(stream int64, pl *pool, size int64) int64 {
	page := a.cfg.LargeSegmentSize
	if pl.small {
		page = SmallBuffer
	}
	pages := func(n int64) int64 { return (n + page - 1) / page * page }
	c, _ := a.expandableCandidate(stream, pl, size)
	if c == none {
		return pages(size) // a new segment, mapped from its start
	}
	var need, have int64
	b := c
	if !a.arena[b].mapped() {
		m := pages(min(a.arena[b].size, size))
		need, have = m, m
	} else {
		have = a.arena[b].size
	}
	b = a.arena[b].next
	for have < size && b != none {
		if a.arena[b].mapped() { // a free mapped block merged in by map_block
			have += a.arena[b].size
		} else {
			m := pages(min(size-have, a.arena[b].size))
			need += m
			have += m
		}
		b = a.arena[b].next
	}
	return need
}

// IsPending reports whether a block freed with FreeRequested still awaits
// FreeCompleted (an empty_cache or a malloc's release path may have
// completed it since).
func (a *Allocator) IsPending(h strategies.Handle) bool {
	b := &a.arena[h]
	return b.inUse() && b.pending()
}

// Clone returns an independent copy of the allocator drawing from mem
// (itself a copy of the original's memory); the hooks (OnTrace, OnComplete,
// AddrHook) are not copied. The
// validator replays competing readings of a recording on clones.
func (a *Allocator) Clone(mem *strategies.Memory) *Allocator {
	c := *a
	c.mem = mem
	c.OnTrace, c.OnComplete, c.AddrHook = nil, nil, nil
	if a.mappedSet != nil {
		// Built again at the clone's first Overlaps, it was half of
		// validating a recording with an empty_cache() every few steps
		// over thousands of live blocks (each burst is read on a
		// clone, and each asks).
		c.mappedSet = a.mappedSet.Clone()
	}
	c.arena = append([]block(nil), a.arena...)
	c.freeB = append([]int32(nil), a.freeB...)
	c.pendingQ = append([]int32(nil), a.pendingQ...)
	c.extents = nil
	if a.lessons != nil {
		l := *a.lessons // the clone's own, as the notes below
		c.lessons = &l
	}
	c.small.blocks, c.small.unmapped = a.small.blocks.Clone(), a.small.unmapped.Clone()
	c.large.blocks, c.large.unmapped = a.large.blocks.Clone(), a.large.unmapped.Clone()
	// The notes too: appends to a shared array would write each other's.
	for _, p := range []*pool{&c.small, &c.large} {
		p.wholes, p.gcWholes = slices.Clone(p.wholes), slices.Clone(p.gcWholes)
		p.candKeys, p.gcKeys = nil, nil
	}
	// The segments' page maps are shared until either writes to one
	// (ownPages).
	for i := range a.exp {
		a.exp[i].owner = nil
	}
	c.exp = slices.Clone(a.exp)
	c.resv = slices.Clone(a.resv)
	return &c
}
