package bfc

import "membench/strategies"

// Place implements strategies.Placer: the chunk that holds a live
// allocation.
func (a *Allocator) Place(h strategies.Handle) strategies.Block {
	c := &a.chunks[h]
	return strategies.Block{Addr: c.ptr, Size: c.size, Requested: c.req, State: strategies.BlockAllocated}
}

// SetTracer implements strategies.Tracer: fn is told of every region the
// allocator takes from the device (Extend, §2.4) or gives back (garbage
// collection, §2.5), and of every chunk a defragmentation moves. Those
// are the only places that look for it: finding, splitting and
// coalescing chunks never do.
func (a *Allocator) SetTracer(fn func(strategies.TraceEvent)) { a.tracer = fn }

func (a *Allocator) trace(ev strategies.TraceEvent) {
	if a.tracer != nil {
		a.tracer(ev)
	}
}
