package strategies

// Placer is a model that can say where a live allocation lies: Place
// returns the block that holds the allocation h (its address, the bytes
// the allocator gave it, the bytes requested, BlockAllocated). An export
// of a replay (`membench export`) reads it after each Malloc and before
// each Free, so that a model reports its placement decisions without a
// hook in its allocation path, and a replay that exports nothing pays
// nothing.
type Placer interface {
	Place(h Handle) Block
}

// Tracer is a model that reports what it does beyond placing the
// requests it is given: the device memory it takes and gives back, the
// live blocks it moves, the blocks it holds for itself, and the
// out-of-memory events it records itself. SetTracer installs fn (nil
// removes it), which then receives each such decision as it is made, in
// the order the model makes them; the model checks for a tracer only at
// those decisions, none of which is on the path of a cached allocation.
// With Placer, it is what an export of a replay in PyTorch's snapshot
// format needs (allocator-spec §1.12: segment_alloc, segment_free,
// segment_map, segment_unmap, oom).
type Tracer interface {
	SetTracer(fn func(TraceEvent))
}

// TraceAction is what a TraceEvent reports.
type TraceAction uint8

const (
	// TraceSegmentAlloc is a device allocation the model carves blocks
	// from: a cudaMalloc'd segment, a BFC region, the TPU runtime's heap.
	TraceSegmentAlloc TraceAction = iota + 1
	// TraceSegmentFree gives one back, whole.
	TraceSegmentFree
	// TraceSegmentMap maps physical pages into reserved address space
	// (PyTorch's expandable segments, allocator-spec §1.10).
	TraceSegmentMap
	// TraceSegmentUnmap unmaps them.
	TraceSegmentUnmap
	// TraceMove relocates a live block from From to Addr
	// (defragmentation, which only the TPU runtime and the what-if
	// defrag knobs do).
	TraceMove
	// TraceHold is a block the model holds for itself, not for a caller's
	// allocation: a loaded program of the TPU runtime.
	TraceHold
	// TraceRelease gives such a block back.
	TraceRelease
	// TraceOOM is an out-of-memory the model records itself, as
	// PyTorch's allocator does (Size is the rounded request, DeviceFree
	// what the device had left). A model that does not report them has
	// its failures taken from LastOOM.
	TraceOOM
)

var traceActionNames = [...]string{"", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "move", "hold", "release", "oom"}

func (a TraceAction) String() string {
	if int(a) < len(traceActionNames) {
		return traceActionNames[a]
	}
	return "unknown"
}

// TraceEvent is one decision a Tracer reports. Addr and Size are the
// range (for TraceMove, the block's new address and its size); Requested
// is a block's requested bytes (TraceMove, TraceHold); Stream is the
// stream the memory belongs to.
type TraceEvent struct {
	Action     TraceAction
	Addr, Size int64
	Stream     int64
	From       int64 // TraceMove: the block's address before
	Requested  int64
	DeviceFree int64 // TraceOOM
}
