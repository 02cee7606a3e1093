package torchlike

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"membench/strategies"
)

// Layout implements strategies.Allocator: one Segment per cudaMalloc
// segment and one per expandable reservation (its unmapped ranges shown as
// BlockUnmapped), in address order.
func (a *Allocator) Layout(fn func(strategies.Segment)) {
	var heads []int32
	for i := range a.arena {
		if a.arena[i].inUse() && a.arena[i].prev == none {
			heads = append(heads, int32(i))
		}
	}
	sort.Slice(heads, func(x, y int) bool { return a.arena[heads[x]].addr < a.arena[heads[y]].addr })
	for _, h := range heads {
		hb := &a.arena[h]
		seg := strategies.Segment{Addr: hb.addr, Stream: hb.stream, Pool: "large"}
		if hb.small {
			seg.Pool = "small"
		}
		if hb.es != none {
			seg.Pool += "-expandable"
		}
		for i := h; i != none; i = a.arena[i].next {
			b := &a.arena[i]
			st := strategies.BlockFree
			switch {
			case !b.mapped():
				st = strategies.BlockUnmapped
			case b.allocated():
				st = strategies.BlockAllocated
			case b.pending():
				st = strategies.BlockPending
			}
			seg.Blocks = append(seg.Blocks, strategies.Block{Addr: b.addr, Size: b.size, Requested: b.req, State: st})
			seg.Size += b.size
		}
		fn(seg)
	}
}

// Check implements strategies.Allocator. It verifies that the blocks of
// every segment tile it without gaps or overlaps, that no two segments
// overlap, that the free blocks are exactly the members of the free sets,
// that no two free mapped neighbours were left unmerged, and that the
// statistics agree with a recount of the blocks and with the device. It
// walks the arena once, without building a Layout, so that tests can call
// it after every event of a real trace.
func (a *Allocator) Check() error {
	if a.cfg.NoCaching {
		return nil
	}
	var live []span
	for i := range a.exp {
		if es := &a.exp[i]; es.live {
			live = append(live, span{es.base, es.base + es.size})
		}
	}
	slices.SortFunc(live, func(x, y span) int { return cmp.Compare(x.start, y.start) })
	if !slices.Equal(live, a.resv) {
		return fmt.Errorf("the live expandable segments %v are not the reserved ranges %v", live, a.resv)
	}
	var reserved, allocated, active, requested [3]int64
	var nFree, nUnmapped int
	for i := range a.arena {
		b := &a.arena[i]
		if !b.inUse() {
			continue
		}
		pi := Large
		if b.small {
			pi = Small
		}
		pl := a.poolOf(b)
		switch {
		case !b.mapped():
			nUnmapped++
			if !pl.unmapped.Contains(key(b, int32(i))) {
				return fmt.Errorf("unmapped block at %#x is missing from its pool's unmapped set", b.addr)
			}
		case b.allocated() || b.pending():
			active[pi] += b.size
			requested[pi] += b.req
			if b.allocated() {
				allocated[pi] += b.size
			}
		default:
			nFree++
			if !pl.blocks.Contains(key(b, int32(i))) {
				return fmt.Errorf("free block at %#x is missing from its pool's free set", b.addr)
			}
		}
		if b.mapped() {
			reserved[pi] += b.size
		}
		if b.allocated() && b.pending() {
			return fmt.Errorf("block at %#x both allocated and pending", b.addr)
		}
		if (b.allocated() || b.pending()) && b.size < b.req {
			return fmt.Errorf("block at %#x holds %d B, less than its request of %d B", b.addr, b.size, b.req)
		}
		if b.size <= 0 || (!a.cfg.LegacyRoundup && b.size%MinBlockSize != 0) {
			// Every size is a multiple of kMinBlockSize (§1.2, §1.6), so
			// every block boundary in a segment is 512 B aligned; PyTorch
			// before 2.4 left some sizes unrounded.
			return fmt.Errorf("block at %#x: size %d B is not a positive multiple of %d B", b.addr, b.size, MinBlockSize)
		}
		if b.prev != none {
			p := &a.arena[b.prev]
			if p.next != int32(i) || p.addr+p.size != b.addr || p.es != b.es || p.small != b.small || p.stream != b.stream {
				return fmt.Errorf("block at %#x does not follow its prev at %#x", b.addr, p.addr)
			}
			if p.mapped() && b.mapped() && !p.allocated() && !p.pending() && !b.allocated() && !b.pending() {
				return fmt.Errorf("free neighbours at %#x and %#x not merged", p.addr, b.addr)
			}
		}
		if b.next != none && a.arena[b.next].prev != int32(i) {
			return fmt.Errorf("block at %#x: next's prev link is broken", b.addr)
		}
	}
	if n := a.small.blocks.Len() + a.large.blocks.Len(); n != nFree {
		return fmt.Errorf("free sets hold %d blocks, the arena has %d free blocks", n, nFree)
	}
	if n := a.small.unmapped.Len() + a.large.unmapped.Len(); n != nUnmapped {
		return fmt.Errorf("unmapped sets hold %d blocks, the arena has %d", n, nUnmapped)
	}
	if err := a.checkNotes(); err != nil {
		return err
	}
	if err := a.checkExpandableMemo(); err != nil {
		return err
	}
	// Mapped memory must not overlap. Within a segment the links above
	// already prove the blocks tile it; across segments, compare the
	// extents of their mapped blocks, sorted by address. (Unmapped address
	// space may overlap: validate places new segments where the recording
	// says, and a modelled reservation of 1.125 × the device can reach into
	// the next real one.)
	a.extents = a.extents[:0]
	for i := range a.arena {
		if b := &a.arena[i]; !b.inUse() || b.prev != none {
			continue
		}
		lo, hi := int64(-1), int64(-1)
		for j := int32(i); j != none; j = a.arena[j].next {
			if b := &a.arena[j]; b.mapped() {
				if lo < 0 {
					lo = b.addr
				}
				hi = b.addr + b.size
			}
		}
		if lo >= 0 {
			a.extents = append(a.extents, [2]int64{lo, hi})
		}
	}
	sort.Slice(a.extents, func(x, y int) bool { return a.extents[x][0] < a.extents[y][0] })
	for i := 1; i < len(a.extents); i++ {
		if a.extents[i][0] < a.extents[i-1][1] {
			return fmt.Errorf("memory at %#x overlaps a segment's ending at %#x", a.extents[i][0], a.extents[i-1][1])
		}
	}
	_, activeBytes := a.stats.active()
	for _, i := range []int{Small, Large} {
		for _, c := range []struct {
			name      string
			got, want int64
		}{
			{"reserved_bytes", a.stats.current(sReservedBytes, i), reserved[i]},
			{"allocated_bytes", a.stats.current(sAllocatedBytes, i), allocated[i]},
			{"active_bytes", a.stats.current(activeBytes, i), active[i]},
			{"requested_bytes", a.stats.current(sRequestedBytes, i), requested[i]},
		} {
			if c.got != c.want {
				return fmt.Errorf("%s[%d] is %d, the blocks add up to %d", c.name, i, c.got, c.want)
			}
		}
	}
	if r := a.stats.current(sReservedBytes, All); r != a.mem.Reserved() {
		return fmt.Errorf("reserved_bytes %d disagrees with the device's %d", r, a.mem.Reserved())
	}
	return nil
}

// checkExpandableMemo checks what find_expandable_block's searches
// learnt (expandableCandidate, lessons): for each lesson, every unmapped
// range of its stream below the address it keeps is still too short for
// its size.
func (a *Allocator) checkExpandableMemo() error {
	// The check's walks are not the model's: the tests count those.
	defer func(n int64) { a.expWalked = n }(a.expWalked)
	for _, pl := range []*pool{&a.small, &a.large} {
		if !a.expKnown(pl) {
			continue
		}
		l := a.lessonsOf(pl)
		for _, m := range l.m[:l.n] {
			if c, at := a.firstFit(pl, m.stream, m.size, 0); c != none && at < m.from {
				return fmt.Errorf("unmapped range at %#x on stream %d holds %d B, but the search for it starts above it at %#x", at, m.stream, m.size, m.from)
			}
		}
	}
	return nil
}

// checkNotes checks that a list of whole blocks its pool trusts names
// every whole free block outside expandable segments: release and
// garbage collection release only the blocks their list names.
func (a *Allocator) checkNotes() error {
	for _, pl := range []*pool{&a.small, &a.large} {
		for _, l := range []struct {
			bit   uint8
			name  string
			noted []int32
		}{{trustRelease, "release", pl.wholes}, {trustGC, "collection", pl.gcWholes}} {
			if pl.trust&l.bit == 0 {
				continue
			}
			named := make([]bool, len(a.arena))
			for _, i := range l.noted {
				if int(i) < len(named) {
					named[i] = true
				}
			}
			for i := range a.arena {
				b := &a.arena[i]
				if b.inUse() && freeMapped(b) && !b.isSplit() && b.es == none && a.poolOf(b) == pl && !named[i] {
					return fmt.Errorf("whole free block at %#x is missing from its pool's %s notes", b.addr, l.name)
				}
			}
		}
	}
	return nil
}
