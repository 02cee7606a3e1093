package platform

import "membench/strategies"

// Place implements strategies.Placer: each buffer is its own device
// allocation.
func (a *Allocator) Place(h strategies.Handle) strategies.Block {
	b := a.bufs.At(int32(h))
	return strategies.Block{Addr: b.addr, Size: b.size, Requested: b.req, State: strategies.BlockAllocated}
}

// SetTracer implements strategies.Tracer: every Malloc is a device
// allocation (a segment of one block) and every Free gives it back.
func (a *Allocator) SetTracer(fn func(strategies.TraceEvent)) { a.tracer = fn }

func (a *Allocator) trace(act strategies.TraceAction, addr, size, stream int64) {
	if a.tracer != nil {
		a.tracer(strategies.TraceEvent{Action: act, Addr: addr, Size: size, Stream: stream})
	}
}
