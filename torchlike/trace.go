package torchlike

import "membench/strategies"

// Place implements strategies.Placer: the block behind a live handle.
func (a *Allocator) Place(h strategies.Handle) strategies.Block {
	b := &a.arena[h]
	st := strategies.BlockAllocated
	if b.pending() {
		st = strategies.BlockPending
	}
	return strategies.Block{Addr: b.addr, Size: b.size, Requested: b.req, State: st}
}

// SetTracer implements strategies.Tracer through OnTrace, which already
// reports every segment event and oom in the order the real allocator
// records them: it replaces OnTrace (nil clears it), so a caller that
// validates (which sets OnTrace itself) does not also trace. With
// PYTORCH_NO_CUDA_MEMORY_CACHING the allocator records nothing, as
// upstream's uncached path records no memory history.
func (a *Allocator) SetTracer(fn func(strategies.TraceEvent)) {
	if fn == nil {
		a.OnTrace = nil
		return
	}
	a.OnTrace = func(action string, addr, size, stream int64) {
		ev := strategies.TraceEvent{Addr: addr, Size: size, Stream: stream}
		switch action {
		case ActionSegmentAlloc:
			ev.Action = strategies.TraceSegmentAlloc
		case ActionSegmentFree:
			ev.Action = strategies.TraceSegmentFree
		case ActionSegmentMap:
			ev.Action = strategies.TraceSegmentMap
		case ActionSegmentUnmap:
			ev.Action = strategies.TraceSegmentUnmap
		case ActionOOM:
			// OnTrace's oom carries the device's free bytes as its addr,
			// as a snapshot's oom entry does (device_free).
			ev = strategies.TraceEvent{Action: strategies.TraceOOM, Size: size, Stream: stream, DeviceFree: addr}
		default:
			return
		}
		fn(ev)
	}
}
