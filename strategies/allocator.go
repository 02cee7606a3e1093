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
	// Check verifies the allocator's own invariants (no overlapping
	// blocks, accounting that balances) and is called by tests after
	// every event; it may be slow.
	Check() error
}

// The optional capabilities below are what a model may declare beyond
// Allocator. Each is declared once, here, with its meaning; the harness
// finds a model's capabilities by asserting these interfaces and never by
// a model's name or an ad-hoc method set, so that a new model gains a
// feature by implementing the interface and nothing else changes.

// Layouter is a model that can show its memory: Layout reports every
// segment (PyTorch) or region (BFC) with its blocks in address order. The
// harness records it for the report's state maps (the layout at peak
// reserved, and at a chosen event); a model without it replays as well and
// its state maps stay empty. Each Segment passed to fn, Blocks included,
// is the caller's to keep.
type Layouter interface {
	Layout(fn func(Segment))
}

// Toucher is a model that can be read ahead: Touch asks for the record of
// the live allocation h that Free(h) reads first to be brought into the
// cache, without waiting for it (internal/prefetch), and changes nothing.
// With a large live set (10^6 blocks) that record is a cache miss; the
// harness touches the allocation a free will release a few events before
// the free, so that the miss overlaps the events in between.
type Toucher interface {
	Touch(h Handle)
}

// Releaser is a model whose memory can serve the next model built: a
// sweep builds thousands of models one after another on each worker, and
// their record arrays were most of the garbage it made, which made the
// collector compete with the sweep's workers (issue 15). Release hands
// that memory on; the model must not be used afterwards. The harness
// calls it when a replay it built the model for is over; a model without
// it leaves its memory to the collector.
type Releaser interface {
	Release()
}

// Defragmenter is a model that can relocate live buffers to make room (the
// TPU runtime model, or a GPU what-if). DefragStats returns how many
// relocation events it ran and the bytes they moved, which the harness
// reports as defrag-events and defrag-moved-B; a model without it reports
// zero.
type Defragmenter interface {
	DefragStats() (events, moved int64)
}

// Footprinter is a model whose reservation is a policy rather than a need:
// a BFC allocator that preallocates its whole limit as one region. Its
// PeakFootprint is the most memory its own placement ever needed: the
// highest point carved out of the region (end of the highest chunk in use,
// from the region's start), over the whole replay. The harness reports it
// as peak-footprint-B, so that a framework's preallocation is not read as
// fragmentation; a model without it needed what it reserved, and its peak
// footprint is its peak reserved bytes.
type Footprinter interface {
	PeakFootprint() int64
}

// FootprintWatcher is a Footprinter whose peak footprint is one variable
// that it keeps up to date after every Malloc: PeakFootprintVar returns
// its address, which stays valid for the model's life. The harness needs
// the event at which the peak footprint first reached its maximum, so it
// reads the peak after every allocation; a load where PeakFootprint was an
// interface call an allocation (issue 15: the replay's cost per event
// against the decode of its trace). Nothing but the model may write it.
type FootprintWatcher interface {
	Footprinter
	PeakFootprintVar() *int64
}

// AllocatedPeaker is a model that keeps the peak of Allocated itself:
// PeakAllocated returns the most that Allocated returned right after any
// successful Malloc since the model was built, and ok false for a
// configuration that does not keep it. The harness reads it once, at the
// end of a replay, instead of calling Allocated after every allocation.
type AllocatedPeaker interface {
	PeakAllocated() (peak int64, ok bool)
}

// Noter is a model with something to say beside its results: the
// assumptions it rests on rather than published behaviour (a
// closed-source runtime, an unpublished policy), and the knobs of its
// configuration that have no effect as set (a setting that acts only
// together with another, or not on this device). Notes returns them as
// sentences, in a fixed order, each saying "assumption" where it is one;
// the harness copies them onto the replay's Result, and the CLI and the
// report print them beside the results. The device's own assumptions are
// the Device's Notes, not the model's.
type Noter interface {
	Notes() []string
}

// Program names one program a ProgramLoader loaded.
type Program int32

// ProgramLoader is a model with a program reservation beside its buffers:
// the TPU runtime, where a loaded executable's code, static data and
// temporaries are one contiguous reservation that stays loaded across
// launches until it is unloaded or evicted for a buffer (allocator-spec
// §6.4). A compiled replay on such a model loads an executable's temp as
// its program instead of allocating it as a buffer, and asks
// ProgramLoaded before reusing it, since the model may have evicted it
// meanwhile. LoadProgram's error is an out-of-memory (the runtime's
// message), not an input error.
type ProgramLoader interface {
	LoadProgram(size int64) (Program, error)
	ProgramLoaded(p Program) bool
}

// UnsupportedDeviceError is what a model's constructor returns for a
// device it has no model of (PyTorch's CUDA caching allocator on a TPU):
// the harness refuses the pair when the user named both the strategy and
// the device, and leaves it out of a matrix built from defaults.
type UnsupportedDeviceError struct {
	Strategy string // the strategy's name
	Device   string // the device as named
	Reason   string // why, and what to use instead
}

func (e *UnsupportedDeviceError) Error() string {
	return e.Strategy + " on " + e.Device + " is not modelled: " + e.Reason
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
