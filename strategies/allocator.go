// Package strategies is the vocabulary every other package shares and
// nothing else: the Allocator contract the framework models implement, the
// Device presets (each figure with its source or labelled an assumption)
// and the Memory a replay draws from, which counts device calls and their
// modelled cost, and the parsing of strategy specs such as
// `torch:expandable_segments=true`. It imports no other package of
// membench, so that torchlike, bfc, tflike and jaxlike depend only on it.
package strategies

// Handle names one live allocation inside an allocator. Allocators hand out
// small integers (indexes into their own block tables) so that the replay
// loop can keep them in a map without allocating.
type Handle int32

// Allocator is what every framework model implements: the contract between
// the replay harness and torchlike, tflike and jaxlike.
//
// An Allocator is single-threaded and owns a *Memory (the device it carves).
// Malloc returning ok=false is an out-of-memory: the allocator has done
// everything its real counterpart would (cache flushes, retries), counted the
// failure, and LastOOM describes the moment. The harness records it and
// goes on without the allocation.
type Allocator interface {
	Malloc(size, stream int64) (h Handle, ok bool)
	Free(h Handle)
	// LastOOM describes the most recent failed Malloc.
	LastOOM() OOM
	// Memory is the device state the allocator draws from: reserved
	// bytes, device calls and modelled cost are counted there.
	Memory() *Memory
	// Allocated is the bytes held by live allocations as the allocator
	// counts them (rounded block sizes); never below the requested bytes.
	Allocated() int64
	// Layout reports every segment (PyTorch) or region (BFC) with its
	// blocks in address order, for state maps and invariant checks.
	Layout(fn func(Segment))
	// Check verifies the allocator's own invariants (no overlapping
	// blocks, accounting that balances) and is called by tests after
	// every event; it may be slow.
	Check() error
}

// OOM describes a failed allocation the way PyTorch's OutOfMemoryError and
// XLA's RESOURCE_EXHAUSTED messages do.
type OOM struct {
	Requested int64 // bytes the caller asked for
	Rounded   int64 // bytes the allocator tried to obtain (PyTorch reports alloc_size)
	Reserved  int64 // bytes held from the device at that moment
	Allocated int64 // bytes in live allocations
	// DeviceFree is what the device could still hand out.
	DeviceFree int64
	// LargestFree is the largest contiguous free block inside the
	// allocator's own reservations (XLA's "largest free chunk").
	LargestFree int64
	Message     string
}

// BlockState is what a block in a Layout is doing.
type BlockState uint8

const (
	BlockFree      BlockState = iota // cached, reusable
	BlockAllocated                   // handed to a live allocation
	BlockPending                     // freed by the program, awaiting stream events
	BlockUnmapped                    // reserved address space with no physical pages
)

func (s BlockState) String() string {
	return [...]string{"free", "allocated", "pending", "unmapped"}[s]
}

// Segment is one device reservation as an allocator sees it: a cudaMalloc
// segment, a mapped run of an expandable segment, or a BFC region.
type Segment struct {
	Addr   int64
	Size   int64
	Stream int64
	Pool   string // "small", "large", "bfc", ...
	Blocks []Block
}

// Block is a piece of a Segment.
type Block struct {
	Addr      int64
	Size      int64
	Requested int64
	State     BlockState
}
