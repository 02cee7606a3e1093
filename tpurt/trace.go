package tpurt

import "membench/strategies"

// Place implements strategies.Placer: a live buffer's device address
// (the heap's base plus its offset, as Layout shows it) and the bytes it
// occupies.
func (a *Allocator) Place(h strategies.Handle) strategies.Block {
	b := a.bufs.At(int32(h))
	return strategies.Block{Addr: a.base + b.addr, Size: a.sizeOf(b), Requested: max(b.req, -b.req), State: strategies.BlockAllocated}
}

// SetTracer implements strategies.Tracer: fn is told when the heap is
// taken from the device (one segment, the whole heap), when a program is
// loaded (TraceHold, at the top of the reservation) or unloaded
// (TraceRelease, with the programs above it moving down to close the
// gap, as the reservation is modelled as their sum), and of every buffer
// a defragmentation moves. Placing and freeing buffers never look for
// it.
func (a *Allocator) SetTracer(fn func(strategies.TraceEvent)) { a.tracer = fn }

func (a *Allocator) trace(ev strategies.TraceEvent) {
	if a.tracer != nil {
		a.tracer(ev)
	}
}

// traceUnload reports the unloading of loaded program p: its release at
// its place in the reservation (programs lie in load order from the
// bottom, as Layout shows them), then the move of each program above it.
func (a *Allocator) traceUnload(p Program) {
	if n := len(a.loaded); n > 0 && a.loaded[n-1] == p {
		// The last loaded (an eviction's): nothing above it moves.
		sz := a.programs[p].size
		a.trace(strategies.TraceEvent{Action: strategies.TraceRelease, Addr: a.base + a.reserved - sz, Size: sz, Requested: sz})
		return
	}
	a.orderRead += len(a.loaded)
	at := a.base
	gone := a.programs[p].size
	after := false
	for _, q := range a.loaded {
		sz := a.programs[q].size
		switch {
		case q == p:
			a.trace(strategies.TraceEvent{Action: strategies.TraceRelease, Addr: at, Size: sz, Requested: sz})
			after = true
		case after:
			a.trace(strategies.TraceEvent{Action: strategies.TraceMove, Addr: at - gone, From: at, Size: sz, Requested: sz})
		}
		at += sz
	}
}
