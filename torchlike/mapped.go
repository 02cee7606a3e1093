package torchlike

import "membench/internal/spanset"

// Overlaps reports whether [addr, addr+size) overlaps memory the model has
// mapped. The validator uses it to refuse a recorded address for a new
// segment when a damaged recording would make two segments share memory.
//
// The mapped memory is kept as address ranges (mappedSet), built from the
// blocks at the first call and kept since by the device's own events (a
// segment made or released, pages mapped or unmapped, a seed, an uncached
// tensor), so that a call is a search. Why: the call read every block, at
// every new segment, and validating a snapshot of 70,000 segments was
// quadratic (141,000 live blocks: 10.5 s).
func (a *Allocator) Overlaps(addr, size int64) bool {
	if size <= 0 {
		return false
	}
	if a.mappedSet == nil {
		// markMapped, not Insert: where a replay placed two
		// reservations over each other (the validator, not knowing a
		// card's total, takes one of a petabyte), two blocks may be
		// mapped at one address, and a second Insert of a start panics.
		a.mappedSet = spanset.New()
		for i := range a.arena {
			if b := &a.arena[i]; b.inUse() && b.mapped() {
				a.markMapped(b.addr, b.size)
			}
		}
	}
	sp, ok := a.mappedSet.Floor(addr + size - 1)
	return ok && sp.End() > addr
}

// traceMapped keeps mappedSet by a device event of trace.
func (a *Allocator) traceMapped(act string, addr, size int64) {
	switch act {
	case ActionSegmentAlloc, ActionSegmentMap:
		a.markMapped(addr, size)
	case ActionSegmentFree, ActionSegmentUnmap:
		a.unmarkMapped(addr, size)
	}
}

// markMapped adds [addr, addr+size) to mappedSet, if it is kept.
func (a *Allocator) markMapped(addr, size int64) {
	if a.mappedSet == nil || size <= 0 {
		return
	}
	a.unmarkMapped(addr, size) // the set's spans must stay disjoint
	a.mappedSet.Insert(spanset.Span{Start: addr, Size: size})
}

// unmarkMapped takes [addr, addr+size) out of mappedSet, if it is kept:
// the spans it overlaps go, but for their parts outside it.
func (a *Allocator) unmarkMapped(addr, size int64) {
	if a.mappedSet == nil || size <= 0 {
		return
	}
	end := addr + size
	for {
		sp, ok := a.mappedSet.Floor(end - 1)
		if !ok || sp.End() <= addr {
			return
		}
		a.mappedSet.Remove(sp.Start)
		if sp.Start < addr {
			a.mappedSet.Insert(spanset.Span{Start: sp.Start, Size: addr - sp.Start})
		}
		if sp.End() > end {
			a.mappedSet.Insert(spanset.Span{Start: end, Size: sp.End() - end})
		}
	}
}
