package validate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"membench/internal/freeset"
)

// Interval states, kept in freeset.Key.B.
const (
	live int32 = 0
	free int32 = 1
)

// unbounded is the extent of memory beyond the last interval the window
// shows: the region may go on, so a chunk there may be as large as
// anything.
const unbounded = math.MaxInt64 / 4

// state is what the window tells of the allocator's memory at one point:
// intervals known live or free, by address, and the free ones by (size,
// address) as the BFC searches them. Everything between intervals is a
// gap: memory the window has not shown (held by buffers allocated before
// it and never freed in it, or free space it never needed, or not in any
// region at all).
type state struct {
	byAddr *freeset.Set // every known interval: Addr, Size, B = live or free
	free   *freeset.Set // free intervals by (Size, Addr)
	// evidence is the union of the chunks the recording shows, merged
	// where they overlap (not where they only touch): memory inside one
	// of these intervals is inside one region, so two free chunks that
	// meet strictly inside one are one chunk to the BFC, which coalesces
	// within a region and never across regions (§2.3).
	evidence [][2]int64
	// closedBelow and closedAbove hold the addresses across which no
	// chunk extends, downwards and upwards: learned from the recorded
	// decisions (see learn). What the window does not show cannot change
	// unseen: every free is recorded, so memory not free at one point
	// stays so unless the window shows it allocated and freed, and then
	// it is in another region, which the BFC never coalesces across.
	closedBelow, closedAbove map[int64]bool
}

func newState(chunks [][2]int64) *state {
	s := &state{byAddr: freeset.New(true), free: freeset.New(false), closedBelow: map[int64]bool{}, closedAbove: map[int64]bool{}}
	slices.SortFunc(chunks, func(x, y [2]int64) int {
		if x[0] != y[0] {
			if x[0] < y[0] {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, c := range chunks {
		if n := len(s.evidence); n > 0 && c[0] < s.evidence[n-1][1] {
			s.evidence[n-1][1] = max(s.evidence[n-1][1], c[1])
			continue
		}
		s.evidence = append(s.evidence, c)
	}
	return s
}

// internal reports whether address b lies strictly inside one recorded
// chunk's extent, so that what meets at b is in one region.
func (s *state) internal(b int64) bool {
	i, _ := slices.BinarySearchFunc(s.evidence, b, func(iv [2]int64, b int64) int {
		switch {
		case iv[1] <= b:
			return -1
		case iv[0] >= b:
			return 1
		}
		return 0
	})
	return i < len(s.evidence) && s.evidence[i][0] < b && b < s.evidence[i][1]
}

// at returns the known interval that holds address a.
func (s *state) at(a int64) (freeset.Key, bool) {
	k, ok := s.byAddr.Before(freeset.Key{Addr: a + 1})
	if ok && k.Addr <= a && a < k.Addr+k.Size {
		return k, true
	}
	return freeset.Key{}, false
}

func (s *state) insert(k freeset.Key) {
	s.byAddr.Insert(k)
	if k.B == free {
		s.free.Insert(k)
	}
}

func (s *state) remove(k freeset.Key) {
	s.byAddr.Remove(k)
	if k.B == free {
		s.free.Remove(k)
	}
}

// errConflict is wrapped when the recording contradicts itself: a chunk
// handed out over a live one, or a free of memory that is not a live
// chunk.
var errConflict = errors.New("the recording contradicts itself")

// occupy marks [lo, hi) live, as the recording says it became: free
// intervals it overlaps keep their parts outside it, gaps inside it
// become known. A live interval inside it is a contradiction.
func (s *state) occupy(lo, hi int64) error {
	// Intervals overlapping [lo, hi): from the one holding lo onwards.
	k, ok := s.at(lo)
	if !ok {
		k, ok = s.byAddr.After(freeset.Key{Addr: lo})
	}
	var over []freeset.Key
	for ok && k.Addr < hi {
		if k.Addr+k.Size > lo {
			if k.B == live {
				return fmt.Errorf("%w: a chunk at %#x of %d bytes overlaps the live chunk at %#x of %d bytes", errConflict, lo, hi-lo, k.Addr, k.Size)
			}
			over = append(over, k)
		}
		k, ok = s.byAddr.After(k)
	}
	for _, k := range over {
		s.remove(k)
		if k.Addr < lo {
			s.insert(freeset.Key{Addr: k.Addr, Size: lo - k.Addr, B: free})
		}
		if end := k.Addr + k.Size; end > hi {
			s.insert(freeset.Key{Addr: hi, Size: end - hi, B: free})
		}
	}
	s.insert(freeset.Key{Addr: lo, Size: hi - lo, B: live})
	return nil
}

// forget drops every live interval that overlaps [lo, hi): after the
// recording contradicted itself there, the window must have lost events
// (a free it never recorded), and the recording's own later word is
// trusted.
func (s *state) forget(lo, hi int64) {
	k, ok := s.at(lo)
	if !ok {
		k, ok = s.byAddr.After(freeset.Key{Addr: lo})
	}
	var drop []freeset.Key
	for ok && k.Addr < hi {
		if k.B == live && k.Addr+k.Size > lo {
			drop = append(drop, k)
		}
		k, ok = s.byAddr.After(k)
	}
	for _, k := range drop {
		s.remove(k)
	}
}

// release frees the live chunk [lo, lo+size) and coalesces it with free
// neighbours in the same region, as DeallocateRawInternal does (§2.3).
// size 0 means whatever the live chunk at lo holds.
func (s *state) release(lo, size int64) (int64, error) {
	k, ok := s.at(lo)
	if !ok || k.B != live || k.Addr != lo {
		return 0, fmt.Errorf("%w: a free at %#x, where no live chunk starts", errConflict, lo)
	}
	if size != 0 && k.Size != size {
		return 0, fmt.Errorf("%w: a free of %d bytes at %#x, where the live chunk holds %d", errConflict, size, lo, k.Size)
	}
	s.remove(k)
	k.B = free
	if nx, ok := s.byAddr.After(k); ok && nx.B == free && nx.Addr == k.Addr+k.Size && s.internal(nx.Addr) {
		s.remove(nx)
		k.Size += nx.Size
	}
	if pv, ok := s.byAddr.Before(k); ok && pv.B == free && pv.Addr+pv.Size == k.Addr && s.internal(k.Addr) {
		s.remove(pv)
		k.Addr, k.Size = pv.Addr, pv.Size+k.Size
	}
	s.insert(k)
	return k.Size, nil
}

// extents says how far the free chunk k might reach beyond what is known
// of it, below and above: across adjacent free intervals not known to be
// in the same region, then across a gap (memory the window never shows,
// which may be free and part of the same chunk); a live chunk closes a
// side. Beyond the last known interval the reach is unbounded.
func (s *state) extents(k freeset.Key) (below, above int64) {
	for at := k; !s.closedBelow[at.Addr]; {
		pv, ok := s.byAddr.Before(at)
		if !ok {
			below = unbounded
			break
		}
		if end := pv.Addr + pv.Size; end < at.Addr {
			below += at.Addr - end
			break
		}
		if pv.B != free {
			break
		}
		below += pv.Size
		at = pv
	}
	for at := k; !s.closedAbove[at.Addr+at.Size]; {
		nx, ok := s.byAddr.After(at)
		if !ok {
			above = unbounded
			break
		}
		if end := at.Addr + at.Size; nx.Addr > end {
			above += nx.Addr - end
			break
		}
		if nx.B != free {
			break
		}
		above += nx.Size
		at = nx
	}
	return min(below, unbounded), min(above, unbounded)
}

// learn records what a recorded allocation of chunk bytes at lo, for a
// request rounded to r, tells of the memory around it, if the BFC's rules
// hold (§2.2): the chunk chosen starts where the allocation does, so the
// memory just below lo was not free in the same region; and a chunk handed
// out whole (larger than r) was exactly that large, so the memory just
// above its end was not free in the same region either. Only what cannot
// change unseen is kept: a gap (memory the window has not shown stays as
// it was, since every free is recorded) or known free memory (then lo is
// a region boundary, which never moves). A live neighbour teaches
// nothing, as it may be freed later and coalesce. It must be called
// before the allocation is applied to the state.
func (s *state) learn(lo, chunk, r int64) {
	permanent := func(a int64) bool {
		k, ok := s.at(a)
		return !ok || k.B == free
	}
	if permanent(lo - 1) {
		s.closedBelow[lo] = true
	}
	if end := lo + chunk; chunk > r && permanent(end) {
		s.closedAbove[end] = true
	}
}
