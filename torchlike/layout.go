package torchlike

import (
	"fmt"
	"sort"

	"membench/strategies"
)

// Layout implements strategies.Allocator: one Segment per cudaMalloc
// segment and one per expandable reservation (its unmapped ranges shown as
// BlockUnmapped), in address order.
func (a *Allocator) Layout(fn func(strategies.Segment)) {
	var heads []int32
	for i := range a.arena {
		if a.arena[i].inUse && a.arena[i].prev == none {
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
			case !b.mapped:
				st = strategies.BlockUnmapped
			case b.allocated:
				st = strategies.BlockAllocated
			case b.pending:
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
// overlap, that free blocks are exactly the members of the free sets, that
// no two free mapped neighbours were left unmerged, and that the
// statistics agree with a recount of the blocks and with the device.
func (a *Allocator) Check() error {
	if a.cfg.NoCaching {
		return nil
	}
	var lastEnd int64
	var reserved, allocated, active, requested [3]int64
	free := map[int32]bool{}
	for _, pl := range []*pool{&a.small, &a.large} {
		for _, k := range pl.blocks.items() {
			b := &a.arena[k.b]
			if !b.inUse || b.allocated || b.pending || !b.mapped || b.addr != k.addr || b.size != k.size || b.stream != k.stream || b.small != pl.small {
				return fmt.Errorf("free set entry %+v disagrees with its block %+v", k, *b)
			}
			free[k.b] = true
		}
		for _, k := range pl.unmapped.items() {
			b := &a.arena[k.b]
			if !b.inUse || b.mapped || b.addr != k.addr {
				return fmt.Errorf("unmapped set entry %+v disagrees with its block %+v", k, *b)
			}
		}
	}
	var err error
	a.Layout(func(s strategies.Segment) {
		if err != nil {
			return
		}
		if s.Addr < lastEnd {
			err = fmt.Errorf("segment at %#x overlaps the previous one ending at %#x", s.Addr, lastEnd)
			return
		}
		lastEnd = s.Addr + s.Size
		pi := Large
		if s.Pool == "small" || s.Pool == "small-expandable" {
			pi = Small
		}
		at := s.Addr
		prevFreeMapped := false
		for _, b := range s.Blocks {
			if b.Addr != at || b.Size <= 0 {
				err = fmt.Errorf("segment at %#x: block at %#x size %d does not follow at %#x", s.Addr, b.Addr, b.Size, at)
				return
			}
			at += b.Size
			if b.State != strategies.BlockUnmapped {
				reserved[pi] += b.Size
			}
			isFreeMapped := b.State == strategies.BlockFree
			if isFreeMapped && prevFreeMapped {
				err = fmt.Errorf("segment at %#x: free neighbours at %#x not merged", s.Addr, b.Addr)
				return
			}
			prevFreeMapped = isFreeMapped
			if b.State == strategies.BlockAllocated {
				allocated[pi] += b.Size
			}
			if b.State == strategies.BlockAllocated || b.State == strategies.BlockPending {
				active[pi] += b.Size
				requested[pi] += b.Requested
			}
		}
	})
	if err != nil {
		return err
	}
	nFree := 0
	for i := range a.arena {
		b := &a.arena[i]
		if b.inUse && b.mapped && !b.allocated && !b.pending {
			nFree++
			if !free[int32(i)] {
				return fmt.Errorf("free block at %#x is missing from its pool's free set", b.addr)
			}
		}
	}
	if nFree != len(free) {
		return fmt.Errorf("free sets hold %d blocks, arena has %d free blocks", len(free), nFree)
	}
	for pi := range 3 {
		if pi == All {
			continue
		}
		for _, c := range []struct {
			name string
			got  int64
			want int64
		}{
			{"reserved_bytes", a.stats.ReservedBytes[pi].Current, reserved[pi]},
			{"allocated_bytes", a.stats.AllocatedBytes[pi].Current, allocated[pi]},
			{"active_bytes", a.stats.ActiveBytes[pi].Current, active[pi]},
			{"requested_bytes", a.stats.RequestedBytes[pi].Current, requested[pi]},
		} {
			if c.got != c.want {
				return fmt.Errorf("%s[%d] is %d, blocks add up to %d", c.name, pi, c.got, c.want)
			}
		}
	}
	if r := a.stats.ReservedBytes[All].Current; r != a.mem.Reserved() {
		return fmt.Errorf("reserved_bytes %d disagrees with the device's %d", r, a.mem.Reserved())
	}
	return nil
}
