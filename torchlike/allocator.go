package torchlike

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"membench/internal/binset"
	"membench/internal/freeset"
	"membench/internal/hugemem"
	"membench/internal/prefetch"
	"membench/internal/spanset"
	"membench/strategies"
)

// none is the nil block index.
const none int32 = -1

// block is PyTorch's Block (allocator-spec §1.3), kept in an arena and
// named by index so that splitting and merging allocate nothing once the
// arena has grown to the trace's high-water mark.
type block struct {
	addr, size, req, stream int64
	gcBase                  int64 // gc_count_base, stamped on insertion into the free set
	prev, next              int32 // address neighbours inside one segment
	es                      int32 // expandable segment, or none
	small                   bool  // pool
	// st is the block's state, bits stAllocated, stPending, stMapped
	// and stInUse, in one byte so that free's test of a neighbour
	// (freeMapped) is one load and one comparison where four flags
	// were four loads (a wider load of four flag bytes would wait on
	// the byte stores a free makes just before, which the processor
	// cannot forward to it; one byte's can be).
	st uint8
	_  [10]byte // to 64 bytes: a record is one cache line, found with a shift
}

// A block record fills one cache line (the arena's slots are whole lines).
var (
	_ [64 - unsafe.Sizeof(block{})]byte
	_ [unsafe.Sizeof(block{}) - 64]byte
)

// The bits of block.st.
const (
	stAllocated uint8 = 1 << iota
	stPending         // freed by the program, awaiting its stream events
	stMapped
	stInUse // the arena slot holds a block
)

func (b *block) allocated() bool { return b.st&stAllocated != 0 }
func (b *block) pending() bool   { return b.st&stPending != 0 }
func (b *block) mapped() bool    { return b.st&stMapped != 0 }
func (b *block) inUse() bool     { return b.st&stInUse != 0 }

// isSplit reports whether b has an address neighbour in its segment.
// Both links are none (-1, every bit set) only if their AND is: one test
// and no branch where prev != none || next != none was two branches on
// data (a block's neighbours come and go unpredictably).
func (b *block) isSplit() bool { return b.prev&b.next != none }

// at is link c as an unsigned index of the arena: none, -1, is above
// every index, so that j < len(arena) says both that c names a block and
// that the index is in bounds (which the compiler then does not test
// again), where c != none and the index's bounds test were two.
func at(c int32) uint { return uint(uint32(c)) }

// linked reports whether either of two links is not none, as isSplit
// tests a block's own two: a merged block's segment is still split when
// the outer neighbours of what it merged are not both none.
func linked(prev, next int32) bool { return prev&next != none }

// pool is a BlockPool: the free blocks of one size class, and for
// expandable segments the unmapped address ranges.
type pool struct {
	small    bool
	blocks   *binset.Set  // free, mapped blocks by (stream, size, addr)
	unmapped *freeset.Set // unmapped expandable ranges by (stream, addr)
	// getFreeBlocksCallCount ages cached blocks for garbage collection.
	getFreeBlocksCallCount int64
	// wholes are the blocks Free has left whole (a free segment, which
	// release_cached_blocks returns) since the last releaseBlocks, when
	// trust has trustRelease: releaseBlocks then looks at them alone
	// instead of every cached block (see there). candKeys is its
	// scratch.
	wholes   []int32
	candKeys []freeset.Key
	// gcWholes are the whole free blocks of the large pool, the only
	// ones garbage collection may release, when trust has trustGC: the
	// ones a first collection found by a scan and those Free has left
	// whole since, some of them no longer whole or free
	// (garbageCollectCachedBlocks). gcKeys is its scratch.
	gcWholes []int32
	gcKeys   []freeset.Key
	// trust says which of the lists of whole blocks are complete, in one
	// byte so that Free, which notes a whole block if either is, tests
	// one value.
	trust uint8
}

// lessons are what the last searches of find_expandable_block in a pool
// learnt (expandableCandidate): while the pool's frees are still frees
// (Allocator.poolFrees), for each of the first n entries, every unmapped
// range of its stream below its address is too short, with the blocks
// after it, for its size or more. at is the entry that the next search
// finding no entry of its stream and size replaces when all are taken.
// The allocator keeps them apart (Allocator.lessons), made at the first
// search, so that its record and its pools stay as short as they were.
// (In the pools or the record, gpt-generate's replay with expandable
// segments read an x-decode-cpu of 2.41-2.54 against 2.35-2.46 with the
// same instructions, eight runs of each binary; kept apart, 2.37-2.48,
// with the TPU model, which none of this touches, 3 % slower too: the
// binary's code layout moves these figures as much.)
type lessons struct {
	m     [expMemos]expMemo
	n, at int
	frees int64
	// released is the pool's state when releaseBlocks last unmapped
	// its paged blocks (pagedBlocks), valid while releasedOK: a release
	// of a pool in that state again would change nothing (pagedStamp).
	released   pagedStamp
	releasedOK bool
	// largest is the pool's largest free block when the pool was in the
	// state largestAt, valid while largestOK (largestFree).
	largest   int64
	largestAt releaseStamp
	largestOK bool
}

// releaseStamp is what changes whenever a pool's free, mapped blocks may
// have: its allocations (every split and every block taken), its frees
// (every merge and every block given back), the device's maps and frees
// of memory (a page mapped, unmapped or a segment released), and the
// page its expandable segments map by.
type releaseStamp struct{ allocs, frees, maps, unmaps, page int64 }

// pagedStamp is what changes whenever a pool may hold a free, mapped
// block that spans a page the last release did not find: a block of a
// page or more entering its free set (binset.Set.BigInserts), the
// device's maps and frees of memory, and the page.
type pagedStamp struct {
	bigIns             uint64
	maps, unmaps, page int64
}

// expMemo is one search's lesson (lessons).
type expMemo struct{ stream, size, from int64 }

// expMemos is how many searches' lessons a pool keeps: a trace that
// alternates between a few streams or sizes finds its own.
const expMemos = 8

// The bits of pool.trust.
const (
	trustRelease uint8 = 1 << iota // pool.wholes
	trustGC                        // pool.gcWholes
)

// Allocator is the model of CUDACachingAllocator's DeviceCachingAllocator
// for one device. See doc.go.
type Allocator struct {
	cfg   Config
	mem   *strategies.Memory
	arena []block
	freeB []int32 // recycled arena slots
	// expWalked counts the unmapped ranges find_expandable_block's
	// searches have looked at, for the tests that bound them.
	expWalked int64

	small, large pool
	exp          []expSeg
	pendingQ     []int32    // blocks freed by the program, awaiting free_completed
	extents      [][2]int64 // Check's scratch
	noCacheBytes int64      // live bytes when caching is disabled

	allowedMax int64 // allowed_memory_maximum when MemoryFraction is set
	// quick says that the configuration allows Malloc's commonest case
	// (caching, Divisions[0] unset, fastFit), and largeMinRem is
	// should_split's least remainder in the large pool then
	// (minRemainder): both set by New, as the configuration does not
	// change after it (a setter, as torch.cuda.memory's
	// _set_allocator_settings, would have to set them again).
	quick       bool
	largeMinRem int64
	stats       counters
	// seeded says that blocks were seeded (SeedSegment, SeedExpandable),
	// whose statistics are not a Malloc's (PeakAllocated).
	seeded  bool
	lastOOM strategies.OOM
	// largestPending says lastOOM's LargestFree is still to be found
	// (LastOOM).
	largestPending bool
	// touched is the block Touch was last asked for (none at first),
	// whose neighbours the next Touch asks for.
	touched int32

	// OnTrace, if set, receives every segment_alloc, segment_free,
	// segment_map, segment_unmap and oom in the order the real allocator
	// records them (size is the rounded request for oom, addr the device's
	// free bytes, as in a snapshot's trace).
	OnTrace func(action string, addr, size, stream int64)
	// OnComplete, if set, is told of every block that the allocator's
	// own synchronize_and_free_events completed (empty_cache or a malloc's
	// release path) after FreeRequested: its handle is then dead.
	OnComplete func(h strategies.Handle)
	// lessons are each pool's (by pi) lessons of find_expandable_block's
	// searches, made at the first (lessonsOf).
	lessons *[2]lessons

	// AddrHook, if set, is asked for the device address of every new
	// segment and expandable reservation; returning 0 keeps the device
	// model's address. The validator gives the recorded addresses, so
	// that best-fit ties between segments break as they did on the real
	// device; nothing else sees addresses.
	AddrHook func(size int64) int64
	// mappedSet is the device memory the model has mapped, once Overlaps
	// has been asked (mapped.go).
	mappedSet *spanset.Set
	// The fields below are read only when memory runs short (searches
	// for expandable ranges, releases) and by tests; they sit last, so
	// that the ones every event reads keep their places (the record's
	// layout has moved gpt-generate's x-decode-cpu by a few hundredths).

	// pagedSearched counts pagedBlocks' searches, for the tests that
	// bound them.
	pagedSearched int64
	// expLargest is the largest expandable segment each pool (small,
	// large) has made: no run of free and unmapped blocks is longer
	// (expandableCandidate).
	expLargest [2]int64
	// resv are the live expandable segments' address ranges, sorted by
	// start, for Reserved: kept when one is made, seeded or released
	// (never per event). The segments (exp) hold the same, in the order
	// made; the index answers a search where they would be read whole.
	resv []span
}

// span is an address range [start, end).
type span struct{ start, end int64 }

// place returns the address of a new device range of size bytes: the
// hook's choice, or addr (the device model's).
func (a *Allocator) place(size, addr int64) int64 {
	if a.AddrHook != nil {
		if h := a.AddrHook(size); h != 0 {
			return h
		}
	}
	return addr
}

// New builds an allocator on mem.
func New(cfg Config, mem *strategies.Memory) *Allocator {
	if cfg.LargeSegmentSize <= 0 {
		cfg.LargeSegmentSize = LargeBuffer
	}
	if cfg.MaxNonSplitRounding <= 0 {
		cfg.MaxNonSplitRounding = LargeBuffer
	}
	if cfg.MaxSplitSize <= 0 {
		cfg.MaxSplitSize = unlimited
	}
	a := &Allocator{cfg: cfg, mem: mem, touched: none}
	a.small = pool{small: true, unmapped: freeset.New(true)}
	a.large = pool{unmapped: freeset.New(true)}
	if b, ok := released.Get().(*buffers); ok {
		a.arena, a.freeB = b.arena, b.freeB
		a.small.blocks, a.large.blocks = b.small, b.large
	} else {
		a.small.blocks, a.large.blocks = binset.New(), binset.New()
	}
	if cfg.FractionSet {
		a.allowedMax = int64(cfg.MemoryFraction * float64(mem.Dev.Total))
	}
	a.stats.MaxSplitSize = cfg.MaxSplitSize
	a.quick = !cfg.NoCaching && cfg.Divisions[0] == 0 && a.fastFit()
	a.largeMinRem = a.minRemainder(&a.large, MinBlockSize)
	a.growArena() // the spare slot (slot)
	return a
}

// buffers are the block arena and its list of free slots, and the pools'
// free sets (of 65 KiB each), which an allocator released (Release)
// leaves to the next one built, empty: they are nearly all a short replay
// allocates.
type buffers struct {
	arena        []block
	freeB        []int32
	small, large *binset.Set
}

var released sync.Pool // of *buffers

// Release implements strategies.Releaser: the arena and the pools' free
// sets, emptied, go to the next allocator built. The arena goes at length
// 0, and growArena appends zeroed slots over it, so nothing of this
// allocator's blocks reaches the next. The allocator must
// not be used after Release (strategies.Releaser); nothing checks that it
// is not.
func (a *Allocator) Release() {
	if a.arena == nil {
		return
	}
	a.small.blocks.Reset()
	a.large.blocks.Reset()
	released.Put(&buffers{a.arena[:0], a.freeB[:0], a.small.blocks, a.large.blocks})
	a.arena, a.freeB, a.small.blocks, a.large.blocks = nil, nil, nil, nil
}

// Config returns the configuration the allocator was built with.
func (a *Allocator) Config() Config { return a.cfg }

// Memory implements strategies.Allocator.
func (a *Allocator) Memory() *strategies.Memory { return a.mem }

// LastOOM implements strategies.Allocator. Its LargestFree, the largest
// cached block, is found here rather than at the failed allocation: it
// takes a pass over every cached block, which at each of a run of failed
// allocations made the replay quadratic, and the replay asks for the
// record of an OOM (of its first thousand) right after the allocation
// failed, so that nothing has changed in between.
func (a *Allocator) LastOOM() strategies.OOM {
	if a.largestPending {
		a.lastOOM.LargestFree, a.largestPending = a.largestFree(), false
	}
	return a.lastOOM
}

// Allocated is allocated_bytes.all.current (with caching disabled, which
// keeps no statistics, the bytes of live tensors).
func (a *Allocator) Allocated() int64 {
	if a.cfg.NoCaching {
		return a.noCacheBytes
	}
	return a.stats.current(sAllocatedBytes, All)
}

// PeakAllocated implements strategies.AllocatedPeaker with
// allocated_bytes.all.peak, which only a Malloc raises (allocFoundBlock)
// as long as no block was seeded (a warm start from a snapshot seeds its
// live blocks before any Malloc, raising it too); with caching disabled
// there are no statistics. In either case ok is false.
func (a *Allocator) PeakAllocated() (int64, bool) {
	if a.cfg.NoCaching || a.seeded {
		return 0, false
	}
	return a.stats.allPeak[sAllocatedBytes], true
}

// Stats returns the torch.cuda.memory_stats() counters as they are now.
func (a *Allocator) Stats() *Stats {
	s := a.stats.stats()
	return &s
}

// slot returns a free arena slot, not in use (a given-up block's other
// fields may be left in it: deleteBlock): the last of freeB, which is
// never empty, as slot and allocFoundBlock, having taken the last, add a
// new slot at the arena's end (growArena). The slots are taken in the
// order a stack of recycled slots, growing the arena when empty, would
// give them: the spare at freeB's bottom is the next new slot.
func (a *Allocator) slot() int32 {
	n := len(a.freeB) - 1
	i := a.freeB[n]
	a.freeB = a.freeB[:n]
	if n == 0 {
		a.growArena()
	}
	return i
}

// newBlock puts b in a free arena slot and returns its index.
func (a *Allocator) newBlock(b block) int32 {
	i := a.slot()
	b.st |= stInUse
	a.arena[i] = b
	return i
}

// deleteBlock gives block i's slot up: it leaves use and joins freeB.
// Only its state is cleared (not in use, not allocated, pending or
// mapped): whatever takes the slot sets every field it reads (newBlock
// the whole record, a split in takeDone or allocFoundBlock each field
// but the garbage-collection age, stamped when the block is next free),
// and every walk of the arena skips the slots not in use. Zeroing the
// whole record was a fifth of a merging free's instructions.
func (a *Allocator) deleteBlock(i int32) {
	a.arena[i].st = 0
	a.freeSlot(i)
}

// freeSlot puts slot i, whose state is cleared (deleteBlock), on freeB.
// Free clears a merged neighbour's state through the pointer it holds,
// before the set's update, and frees the slot after it: found again
// after the set's call, the record was an index reloaded, tested and
// scaled (seven instructions a merge).
func (a *Allocator) freeSlot(i int32) {
	a.freeB = append(a.freeB, i)
}

func (a *Allocator) poolOf(b *block) *pool {
	if b.small {
		return &a.small
	}
	return &a.large
}

func key(b *block, i int32) freeset.Key {
	return freeset.Key{Stream: b.stream, Size: b.size, Addr: b.addr, B: i}
}

// insertIntoBlocks is BlockPool::insert_into_blocks: it stamps the block's
// garbage-collection age base.
func (a *Allocator) insertIntoBlocks(i int32) {
	b := &a.arena[i]
	p := a.poolOf(b)
	b.gcBase = p.getFreeBlocksCallCount
	p.blocks.Insert(key(b, i))
}

func (a *Allocator) eraseFromBlocks(i int32) {
	b := &a.arena[i]
	a.poolOf(b).blocks.Remove(key(b, i))
}

func (a *Allocator) trace(act string, addr, size, stream int64) {
	if a.mappedSet != nil {
		a.traceMapped(act, addr, size)
	}
	if a.OnTrace != nil {
		a.OnTrace(act, addr, size, stream)
	}
}

// fastFit says that Malloc's best fit is the free set's answer, stepped
// on along the stream only over expandable blocks (growableFit): with no
// max_split_size and no garbage collection, findFreeBlock's oversize
// tests all pass and nothing ages. It reads the configuration each time,
// as torch.cuda.memory._set_allocator_settings may change it between
// allocations.
func (a *Allocator) fastFit() bool {
	return a.cfg.MaxSplitSize == unlimited && !a.gcEnabled()
}

func (a *Allocator) setFraction() bool { return a.cfg.FractionSet }

func (a *Allocator) gcEnabled() bool { return a.setFraction() && a.cfg.GCThreshold > 0 }

// params is AllocParams.
type params struct {
	size, allocSize, stream int64
	pool                    *pool
	block                   int32
	// set says where block is with respect to its pool's free set:
	// found there (get_free_block takes it out, but the model leaves
	// that to allocFoundBlock, which puts a split remainder in its
	// place with Replace instead of removing one key and inserting
	// another), or not in it (a new segment's block).
	set setState
}

// setState is where allocFoundBlock's block stands with respect to its
// pool's free set.
type setState uint8

const (
	// notInSet: the block is a new segment's (or expandable range's),
	// not in the set; a split's remainder is inserted.
	notInSet setState = iota
	// inSet: the block is in the set as found; the remainder takes
	// its place (Replace), or it leaves (Remove).
	inSet
	// setDone: the set has had the update already (binset.TakeFit).
	setDone
	// setTried: in the set as found, by binset.TakeFit, which found
	// that its short update (binset's Move or Take) does not apply:
	// the general Replace or Remove, without trying it again.
	setTried
)

// Malloc is DeviceCachingAllocator::malloc (allocator-spec §1.7).
//
// Its commonest case is written first, and malloc is the rest: a request
// of up to 2 MiB (rounded to a multiple of MinBlockSize: Divisions[0]
// unset), fastFit, without expandable segments, whose best fit
// binset.TakeFit finds and takes (gpt-generate: 87% of mallocs). The
// configuration's part of those tests is made once, in New (quick), and
// should_split's least remainder chosen without minRemainder's tests,
// so that the case costs a few tests where malloc's path made a dozen.
//
// The fit path after the rounding (expandable segments, TakeFit) is
// written here and again in malloc's fastFit case. Merged into one, with
// the general rounding as the other branch before it, Malloc ran 2.4
// more instructions a malloc on gpt-generate (cachegrind, 2026-11-24),
// and 3.4 with that branch in a function of its own: the values coming
// from two branches took moves and a larger frame on the commonest case.
//
// So is takeDone's work, once the set has been updated: written here,
// at the end, for the best fits of both segment modes and for TakeFit's
// best fit that Take and Put took instead, and in takeDone for malloc's
// paths. Called, takeDone was a call's arguments set up and its frame
// made and unmade on nine mallocs in ten, and its values that Malloc
// held already (the request, the stream, the pool) stored to its own
// frame and read back around the spare slot's growth: in line, the
// model's instructions an event on gpt-generate went from 235.3 to
// 228.8, and from 255.4 to 249.0 with expandable segments (cachegrind,
// BenchmarkModel, 2026-11-25). A third copy, for the case without
// expandable segments alone (where no block is expandable, so that its
// tests go), ran 3 instructions an event fewer there and was not worth
// the copy. TestMallocAsGeneralPath holds every copy to the general path.
func (a *Allocator) Malloc(orig, stream int64) (strategies.Handle, bool) {
	if !a.quick || uint64(orig-1) >= 2<<20-1 {
		return a.malloc(orig, stream)
	}
	size := (orig + MinBlockSize - 1) &^ (MinBlockSize - 1)
	pl, minRem := &a.large, a.largeMinRem
	if size <= SmallSize {
		pl, minRem = &a.small, MinBlockSize
	}
	// The best fit taken, block i of bSize bytes (not a whole Key, which
	// was zeroed on the stack at every call).
	var i int32
	var bSize int64
	if len(a.exp) != 0 {
		// With expandable segments made: malloc's path written out
		// (see there), the best fit found (Fit), then looked at (can
		// it grow?), then taken from the set by its short paths, so
		// that takeDone's work calls nothing. TakeFit, which takes
		// the best fit in the same call, cannot be used here: the
		// block must be looked at before the set changes. (Taking it
		// and giving it back when it could grow, as tried, cost far
		// more than it saved where tails that could grow are common,
		// as in a replay that builds up 10^6 blocks; and this path as
		// a function of its own cost a call's 5 instructions an event.)
		k, found := pl.blocks.Fit(stream, size)
		if !found {
			k, found = pl.blocks.LowerBound(freeset.Key{Stream: stream, Size: size})
		}
		if !found || k.Stream != stream {
			return a.mallocSlow(orig, size, stream, pl, true)
		}
		if b := &a.arena[k.B]; b.es != none {
			if !a.cfg.ExpandableSegments {
				return a.mallocSlow(orig, size, stream, pl, false)
			}
			if b.next != none && !a.arena[b.next].mapped() {
				k = a.growableFit(pl, k)
			}
		}
		var done bool
		if k.Size-size >= minRem {
			done = pl.blocks.Move(k, freeset.Key{Stream: stream, Size: k.Size - size, Addr: k.Addr + size, B: k.B})
		} else {
			done = pl.blocks.Take(k)
		}
		if !done {
			a.mem.Hit()
			return strategies.Handle(a.allocFoundBlock(pl, k.B, setTried, size, stream, orig, k.Size, k.Addr)), true
		}
		i, bSize = k.B, k.Size
	} else {
		k, found, done := pl.blocks.TakeFit(stream, size, minRem)
		if !done {
			// fitTried's takeSplit, here so that the block is
			// taken below (see fitTried).
			if !found || !pl.takeSplit(k, size, stream, minRem) {
				return a.fitRest(orig, size, stream, pl, k, found)
			}
		}
		i, bSize = k.B, k.Size
	}
	// takeDone's work (see there) on block i, of bSize bytes, which the set
	// has had taken, its remainder in its place when it splits.
	a.mem.Hit()
	small := pl.small
	arena := a.arena
	b := &arena[i]
	alreadySplit := b.isSplit()
	expandable := b.es != none
	ps, po := a.stats.pools(small)
	taken, tSize := i, bSize
	if bSize-size >= minRem {
		k := len(a.freeB) - 1
		nb := a.freeB[k]
		a.freeB = a.freeB[:k]
		r := b
		n := &arena[nb]
		n.addr, n.size, n.stream, n.prev, n.next, n.es = r.addr, size, stream, r.prev, i, r.es
		n.small, n.st, n.req = small, stMapped|stInUse|stAllocated, orig
		if j := at(r.prev); j < uint(len(arena)) {
			arena[j].next = nb
		}
		r.prev = nb
		r.addr += size
		r.size -= size
		if !expandable {
			if alreadySplit {
				ps.g[sInactiveSplitBytes].freed += size
			} else {
				a.stats.raise(sInactiveSplitBytes, ps, po, r.size)
				a.stats.raise(sInactiveSplit, ps, po, 1)
			}
		}
		taken, tSize = nb, size
	} else {
		if alreadySplit && !expandable {
			ps.g[sInactiveSplitBytes].freed += bSize
			ps.g[sInactiveSplit].freed++
		}
		b.st |= stAllocated
		b.req = orig
	}
	a.stats.raise(sAllocation, ps, po, 1)
	a.stats.raise(sAllocatedBytes, ps, po, tSize)
	if a.stats.activeApart {
		a.stats.raise(sActive, ps, po, 1)
		a.stats.raise(sActiveBytes, ps, po, tSize)
	}
	a.stats.raise(sRequestedBytes, ps, po, orig)
	if len(a.freeB) == 0 {
		a.growArena()
	}
	return strategies.Handle(taken), true
}

// malloc is Malloc but for its commonest case.
func (a *Allocator) malloc(orig, stream int64) (strategies.Handle, bool) {
	if a.cfg.NoCaching {
		return a.mallocNoCache(orig, stream)
	}
	// round_size (Config.roundSize), its commonest case written out: a
	// request of 1 B up to 2 MiB takes the interval of Divisions[0], and
	// with none set there (the default) is rounded up to a multiple of
	// MinBlockSize (the legacy roundup differs only where a division is
	// 1). RoundSize's call was half of all the rounding's cost, and
	// roundSize with this test in front is over the inliner's budget.
	var size int64
	if uint64(orig-1) < 2<<20-1 && a.cfg.Divisions[0] == 0 {
		size = (orig + MinBlockSize - 1) &^ (MinBlockSize - 1)
	} else {
		size = a.cfg.roundSize(orig)
	}
	pl := &a.large
	if size <= SmallSize {
		pl = &a.small
	}
	if a.fastFit() {
		// getFreeBlock when fastFit: the best fit on the stream is
		// the answer, or for an expandable block the one
		// growableFit steps to, as findFreeBlock's other tests all
		// pass (max_split_size refuses nothing) and no age is counted
		// (no garbage collection). Without getFreeBlock's and
		// findFreeBlock's calls and tests (and written here, as a
		// function of its own is not inlined), a torch replay of
		// gpt-generate ran 5% fewer of the model's instructions;
		// without params, built in memory for mallocSlow's calls, 8%
		// fewer again (and 16% with expandable segments, which took
		// findFreeBlock's path).
		if len(a.exp) == 0 {
			// Without expandable segments no block is expandable:
			// the best fit is the block taken, and the free set
			// finds it and takes it (or puts the remainder in its
			// place) in one call, TakeFit, when the block is its
			// class's only one.
			minRem := a.minRemainder(pl, size)
			k, found, done := pl.blocks.TakeFit(stream, size, minRem)
			if done {
				a.mem.Hit()
				return strategies.Handle(a.takeDone(pl, k.B, size, stream, orig, k.Size, minRem)), true
			}
			return a.fitTried(orig, size, stream, minRem, pl, k, found)
		}
		k, found := pl.blocks.Fit(stream, size)
		if !found {
			k, found = pl.blocks.LowerBound(freeset.Key{Stream: stream, Size: size})
		}
		if found && k.Stream == stream {
			if b := &a.arena[k.B]; b.es != none {
				if !a.cfg.ExpandableSegments {
					return a.mallocSlow(orig, size, stream, pl, false)
				}
				// growableFit's first test, here: a block
				// that no unmapped range follows cannot grow,
				// and is the answer (gpt-generate: nearly
				// every one).
				if b.next != none && !a.arena[b.next].mapped() {
					k = a.growableFit(pl, k)
				}
			}
			// The set's update first, by its short paths, so that
			// takeDone's work calls nothing (the block's record,
			// read above, is not changed by the set).
			a.mem.Hit()
			minRem := a.minRemainder(pl, size)
			var done bool
			if k.Size-size >= minRem {
				done = pl.blocks.Move(k, freeset.Key{Stream: stream, Size: k.Size - size, Addr: k.Addr + size, B: k.B})
			} else {
				done = pl.blocks.Take(k)
			}
			if done {
				return strategies.Handle(a.takeDone(pl, k.B, size, stream, orig, k.Size, minRem)), true
			}
			return strategies.Handle(a.allocFoundBlock(pl, k.B, setTried, size, stream, orig, k.Size, k.Addr)), true
		}
		return a.mallocSlow(orig, size, stream, pl, true)
	}
	return a.mallocSlow(orig, size, stream, pl, false)
}

// fitTried is malloc after binset.TakeFit did not take the best fit
// for a request of orig bytes rounded to size on stream from pool pl
// (fastFit, no expandable segments; should_split's least remainder
// minRem): found says whether it found it, k, and left the set's update
// to this path: binset's Take and Put when k's class is a record or a
// chunk, then takeDone, else fitRest. Malloc does the same in line.
//
// allocFoundBlock, not takeDone, for a class spilled to a tree: it reads
// the block's record before it updates the set, which at 10^6 live
// blocks (where most best fits are in spilled classes) descends the
// classes' trees, so that the record's miss can overlap theirs.
// Updating the set first and then taking the block by takeDone saved
// 1.9 instructions an event on gpt-generate; the live-set benchmark's
// 10^6 side seemed slower with it (x-live1k-cpu 1.74 -> 1.99, medians of
// 10 interleaved runs, p=0.007, with other changes), though cachegrind
// counted the same misses and later runs on a busier machine resolved
// nothing, so the order that was measured before is kept.
func (a *Allocator) fitTried(orig, size, stream, minRem int64, pl *pool, k freeset.Key, found bool) (strategies.Handle, bool) {
	if found && pl.takeSplit(k, size, stream, minRem) {
		// TakeFit found k, of a class with several keys (a chunk) or
		// with the remainder's class not empty, and left it: takeSplit
		// does Replace's or Remove's work there, so that takeDone
		// takes the block (a tenth of gpt-generate's mallocs, which
		// allocFoundBlock and the general Replace and Remove took at
		// about twice the instructions). A class that spilled to a
		// tree is still allocFoundBlock's (above).
		a.mem.Hit()
		return strategies.Handle(a.takeDone(pl, k.B, size, stream, orig, k.Size, minRem)), true
	}
	return a.fitRest(orig, size, stream, pl, k, found)
}

// takeSplit takes k, a best fit for size bytes on stream, from the
// pool's free set by binset's short paths, Take and then Put (else
// Insert) of its remainder when it splits (should_split's least
// remainder minRem), and reports whether Take applied: false, with the
// set unchanged, when k's class spilled to a tree. Malloc and fitTried
// take TakeFit's best fit so when TakeFit left it.
func (pl *pool) takeSplit(k freeset.Key, size, stream, minRem int64) bool {
	if !pl.blocks.Take(k) {
		return false
	}
	if k.Size-size >= minRem {
		rem := freeset.Key{Stream: stream, Size: k.Size - size, Addr: k.Addr + size, B: k.B}
		if !pl.blocks.Put(rem) {
			pl.blocks.Insert(rem)
		}
	}
	return true
}

// fitRest is fitTried when its Take did not apply (k's class spilled
// to a tree) or TakeFit found nothing: allocFoundBlock takes k, or the
// best fit LowerBound finds, or mallocSlow finds that nothing fits.
// Malloc calls it after its own Take.
func (a *Allocator) fitRest(orig, size, stream int64, pl *pool, k freeset.Key, found bool) (strategies.Handle, bool) {
	set := setTried
	if !found {
		k, found = pl.blocks.LowerBound(freeset.Key{Stream: stream, Size: size})
		set = inSet
	}
	if found && k.Stream == stream {
		a.mem.Hit()
		return strategies.Handle(a.allocFoundBlock(pl, k.B, set, size, stream, orig, k.Size, k.Addr)), true
	}
	return a.mallocSlow(orig, size, stream, pl, true)
}

// mallocSlow is malloc when the best fit is not fastFit's (searched
// says that it was searched for, and refused), or when nothing fits:
// the fallbacks of allocator-spec §1.7.
func (a *Allocator) mallocSlow(orig, size, stream int64, pl *pool, searched bool) (strategies.Handle, bool) {
	// Set field by field rather than from a composite literal, which
	// the compiler builds apart and copies in pieces that stall (see
	// allocFoundBlock).
	var p params
	p.size, p.stream, p.pool, p.block = size, stream, pl, none
	ok := !searched && a.getFreeBlock(&p)
	if ok {
		a.mem.Hit()
	} else {
		// The segment size is needed from here on only.
		p.allocSize = a.cfg.allocSize(size)
		if a.gcEnabled() {
			a.garbageCollectCachedBlocks()
		}
		ok = a.allocBlock(&p, false) ||
			(a.releaseAvailableCachedBlocks(&p) && a.allocBlock(&p, false)) ||
			(a.releaseCachedBlocks() && a.allocBlock(&p, true))
	}
	if !ok {
		free := a.mem.Available()
		a.lastOOM = strategies.OOM{
			Requested: orig, Rounded: p.allocSize, Reserved: a.mem.Reserved(),
			Allocated: a.stats.current(sAllocatedBytes, All), DeviceFree: free,
		}
		a.largestPending = true
		a.lastOOM.Message = fmt.Sprintf("CUDA out of memory. Tried to allocate %s. %s free; %s reserved in total by PyTorch, of which %s allocated",
			formatSize(p.allocSize), formatSize(free), formatSize(a.mem.Reserved()), formatSize(a.lastOOM.Allocated))
		a.trace(ActionOOM, free, size, stream)
		a.stats.NumOOMs++
		return -1, false
	}
	b := &a.arena[p.block]
	return strategies.Handle(a.allocFoundBlock(p.pool, p.block, p.set, p.size, p.stream, orig, b.size, b.addr)), true
}

// getFreeBlock is get_free_block (allocator-spec §1.5, §1.10): the single
// best-fit candidate is examined and the oversize rules may refuse it.
func (a *Allocator) getFreeBlock(p *params) bool {
	if a.gcEnabled() {
		p.pool.getFreeBlocksCallCount++
	}
	k, ok := a.findFreeBlock(p)
	if !ok {
		return false
	}
	p.block, p.set = k.B, inSet
	return true
}

// findFreeBlock is get_free_block's search without its side effects.
func (a *Allocator) findFreeBlock(p *params) (freeset.Key, bool) {
	pl := p.pool
	k, ok := pl.blocks.LowerBound(freeset.Key{Stream: p.stream, Size: p.size})
	if !ok || k.Stream != p.stream {
		return k, false
	}
	if a.arena[k.B].es != none {
		if a.cfg.ExpandableSegments {
			k = a.growableFit(pl, k)
		} else {
			// Expandable segments were turned off after some were made:
			// take the first non-expandable block instead.
			for {
				nk, ok := pl.blocks.After(k)
				if !ok || nk.Stream != p.stream {
					return k, false
				}
				k = nk
				if a.arena[k.B].es == none {
					break
				}
			}
		}
	}
	ms := a.cfg.MaxSplitSize
	if p.size < ms && k.Size >= ms {
		return k, false
	}
	if p.size >= ms && k.Size >= p.size+a.cfg.MaxNonSplitRounding {
		return k, false
	}
	return k, true
}

// growableFit is get_free_block's walk from k, the best fit, an
// expandable block of pl: it compares the tail block of a segment by the
// size it can grow to (its size plus the unmapped range after it), and
// steps on along k's stream while the next block can grow to less. A
// block that cannot grow (no unmapped range follows it) is the answer
// without a look at the next: the next on the stream is at least as
// large, and can only grow.
func (a *Allocator) growableFit(pl *pool, k freeset.Key) freeset.Key {
	for a.arena[k.B].es != none {
		ek := a.expandableSize(k.B)
		if ek == k.Size {
			break
		}
		nk, ok := pl.blocks.After(k)
		if !ok || nk.Stream != k.Stream || a.expandableSize(nk.B) >= ek {
			break
		}
		k = nk
	}
	return k
}

func (a *Allocator) expandableSize(i int32) int64 {
	b := &a.arena[i]
	s := b.size
	if b.next != none && !a.arena[b.next].mapped() {
		s += a.arena[b.next].size
	}
	return s
}

// shouldSplit is should_split (allocator-spec §1.6) for a block of
// blockSize bytes in pool pl and a request of size.
func (a *Allocator) shouldSplit(pl *pool, blockSize, size int64) bool {
	return blockSize-size >= a.minRemainder(pl, size)
}

// minRemainder is should_split's rule as the least remainder that splits
// a block for a request of size in pool pl: MinBlockSize in the small
// pool and with expandable segments, else above SmallSize for a request
// below max_split_size, and none (math.MaxInt64) for one at or above it.
// binset.TakeFit applies it.
func (a *Allocator) minRemainder(pl *pool, size int64) int64 {
	if pl.small || a.cfg.ExpandableSegments {
		return MinBlockSize
	}
	if size < a.cfg.MaxSplitSize {
		return SmallSize + 1
	}
	return math.MaxInt64
}

// allocBlock is alloc_block: one cudaMalloc of the segment size, or the
// expandable-segment mapping path.
func (a *Allocator) allocBlock(p *params, isRetry bool) bool {
	if isRetry {
		a.stats.NumAllocRetries++
	}
	size := p.allocSize
	if a.setFraction() && a.mem.Reserved()+size > a.allowedMax {
		return false
	}
	if a.cfg.ExpandableSegments {
		p.block = a.tryAllocateExpandableBlock(p.stream, p.pool, p.size)
		return p.block != none
	}
	addr, ok := a.mem.Malloc(size)
	if !ok {
		return false
	}
	addr = a.place(size, addr)
	p.block = a.newBlock(block{addr: addr, size: size, stream: p.stream, small: p.pool.small, prev: none, next: none, es: none, st: stMapped})
	a.stats.increase(sSegment, p.pool.small, 1)
	a.stats.increase(sReservedBytes, p.pool.small, size)
	a.stats.NumDeviceAlloc++
	if size >= a.cfg.MaxSplitSize {
		a.stats.OversizeSegments.increase(1)
	}
	a.trace(ActionSegmentAlloc, addr, size, p.stream)
	return true
}

// allocFoundBlock is alloc_found_block: the allocation keeps the front
// (low-address) part and the remainder returns to the pool when
// should_split says so. The found block is read through one pointer,
// found again only after slot, which may move the arena (each lookup
// by index was a bounds test and an address computed anew).
//
// Block i of pool pl, of bSize bytes at bAddr, is taken for a request
// of orig bytes rounded to size on stream; set says whether it is still
// in pl's free set, under the key {stream, bSize, bAddr, i}, or has been
// taken from it already (setDone). The block's size
// and address are passed (as the free set's search found them) rather
// than read from the block, so that the split decision and the free
// set's update need not wait for the block's record, which at 10^6 live
// blocks is a cache miss (nine arguments: all in registers).
func (a *Allocator) allocFoundBlock(pl *pool, i int32, set setState, size, stream, orig, bSize, bAddr int64) int32 {
	small := pl.small
	split := a.shouldSplit(pl, bSize, size)
	arena := a.arena
	b := &arena[i]
	alreadySplit := b.isSplit()
	expandable := b.es != none
	ps, po := a.stats.pools(small)
	taken := i
	if split {
		rem := i
		// The new block's fields are set one by one in its slot: built
		// as a struct and copied (newBlock), its freshly written fields
		// would be read back in 16-byte pieces that span two of their
		// stores, which the processor cannot forward (a stall that was
		// a quarter of this function's time). The slot is the last
		// of freeB, which is never empty (slot).
		k := len(a.freeB) - 1
		nb := a.freeB[k]
		a.freeB = a.freeB[:k]
		r := b
		n := &arena[nb]
		n.addr, n.size, n.stream, n.prev, n.next, n.es = r.addr, size, stream, r.prev, rem, r.es
		n.small, n.st = small, stMapped|stInUse
		if j := at(r.prev); j < uint(len(arena)) {
			arena[j].next = nb
		}
		r.prev = nb
		r.addr += size
		r.size -= size
		r.gcBase = pl.getFreeBlocksCallCount
		if !expandable {
			if alreadySplit {
				ps.g[sInactiveSplitBytes].freed += size
			} else {
				a.stats.raise(sInactiveSplitBytes, ps, po, r.size)
				a.stats.raise(sInactiveSplit, ps, po, 1)
			}
		}
		taken, b = nb, n
	} else if alreadySplit && !expandable {
		ps.g[sInactiveSplitBytes].freed += b.size
		ps.g[sInactiveSplit].freed++
	}
	b.st |= stAllocated
	b.req = orig
	a.stats.raise(sAllocation, ps, po, 1)
	a.stats.raise(sAllocatedBytes, ps, po, b.size)
	if a.stats.activeApart {
		a.stats.raise(sActive, ps, po, 1)
		a.stats.raise(sActiveBytes, ps, po, b.size)
	}
	a.stats.raise(sRequestedBytes, ps, po, orig)
	if b.size >= a.cfg.MaxSplitSize {
		a.stats.OversizeAllocations.increase(1)
	}
	// The free set last: the remainder {stream, bSize − size, bAddr +
	// size, i} takes the found block's place (insert_into_blocks after
	// the erase), or the block leaves it whole. Last, so that only
	// taken lives across its calls and nothing above is spilled for
	// them.
	if set != setDone {
		found := freeset.Key{Stream: stream, Size: bSize, Addr: bAddr, B: i}
		rem := freeset.Key{Stream: stream, Size: bSize - size, Addr: bAddr + size, B: i}
		switch {
		case set == notInSet:
			if split {
				pl.blocks.Insert(rem)
			}
		case split:
			if set != inSet || !pl.blocks.Move(found, rem) {
				pl.blocks.Replace(found, rem)
			}
		default:
			if set != inSet || !pl.blocks.Take(found) {
				pl.blocks.Remove(found)
			}
		}
	}
	if len(a.freeB) == 0 {
		a.growArena()
	}
	return taken
}

// takeDone is allocFoundBlock for malloc's commonest cases (and
// Malloc's, which has its body in line: see there), written apart:
// with fastFit (max_split_size unlimited: no allocation is
// oversize), and the free set updated already by its short paths
// (binset.TakeFit, or Move or Take), which found block i of bSize bytes
// and, when bSize − size ≥ minRem (should_split), put its remainder in
// its place. It calls nothing but growArena, at its end, so that its
// values stay in registers: allocFoundBlock, which may call the set's
// methods after its statistics, kept a dozen of its arguments and
// values on the stack and read them back (gpt-generate, cachegrind:
// 18 of the model's 286 instructions an event). allocFoundBlock's
// comments say why each step is written as it is.
func (a *Allocator) takeDone(pl *pool, i int32, size, stream, orig, bSize, minRem int64) int32 {
	small := pl.small
	arena := a.arena
	b := &arena[i]
	alreadySplit := b.isSplit()
	expandable := b.es != none
	ps, po := a.stats.pools(small)
	taken, tSize := i, bSize
	if bSize-size >= minRem {
		k := len(a.freeB) - 1
		nb := a.freeB[k]
		a.freeB = a.freeB[:k]
		r := b
		n := &arena[nb]
		n.addr, n.size, n.stream, n.prev, n.next, n.es = r.addr, size, stream, r.prev, i, r.es
		n.small, n.st, n.req = small, stMapped|stInUse|stAllocated, orig
		if j := at(r.prev); j < uint(len(arena)) {
			arena[j].next = nb
		}
		r.prev = nb
		r.addr += size
		r.size -= size
		// No gcBase stamp: with fastFit nothing is collected, so
		// the free blocks' ages are never read.
		if !expandable {
			if alreadySplit {
				ps.g[sInactiveSplitBytes].freed += size
			} else {
				a.stats.raise(sInactiveSplitBytes, ps, po, r.size)
				a.stats.raise(sInactiveSplit, ps, po, 1)
			}
		}
		taken, tSize = nb, size
	} else {
		if alreadySplit && !expandable {
			ps.g[sInactiveSplitBytes].freed += bSize
			ps.g[sInactiveSplit].freed++
		}
		b.st |= stAllocated
		b.req = orig
	}
	a.stats.raise(sAllocation, ps, po, 1)
	a.stats.raise(sAllocatedBytes, ps, po, tSize)
	if a.stats.activeApart {
		a.stats.raise(sActive, ps, po, 1)
		a.stats.raise(sActiveBytes, ps, po, tSize)
	}
	a.stats.raise(sRequestedBytes, ps, po, orig)
	if len(a.freeB) == 0 {
		a.growArena()
	}
	return taken
}

// growArena adds arenaGrowth zeroed slots at the end of the arena to the
// free slots, which slot and allocFoundBlock call when they have taken
// the last, so that a free slot is always there to take; apart and not
// inlined so that allocFoundBlock, taking its slot, makes no call and
// keeps its values in registers. The new slots go onto freeB highest
// first, so that they are taken lowest first, each when no recycled
// slot is left: the order in which a slot taken from an empty freeB
// would append them one by one.
//
// Several at once: a replay that builds up many blocks (the live-set
// benchmark's warm-up of 10^6 allocations) takes a new slot per
// allocation, and a call per slot cost about 15 instructions a slot more
// than the append in line it replaced.
//
// The arena grows in huge pages once it passes 4 MiB (hugemem.Grow, as
// the TPU model's records and the BFC's do), and so do the free sets'
// node arrays (binset, freeset): with 10^6 live blocks a free reads its
// block and its two neighbours at random in some 100 MB of records, each
// in a 4 KiB page of its own, a miss in the processor's address
// translation too (and the touch's prefetches of them waited for the
// page walks). Three interleaved runs of each binary
// (harness.BenchmarkReplayLiveSteady, 2026-11-25): torch's 10^6 side
// 133-147 -> 122-126 cpu-ns/event, with expandable segments 135-157 ->
// 127-130; BenchmarkReplayLivePaired 105-122 -> 98-111 and 109-134 ->
// 100-110; gpt-generate, whose arena stays small, unchanged.
//
//go:noinline
func (a *Allocator) growArena() {
	n := len(a.arena)
	a.arena = hugemem.Grow(a.arena, n+arenaGrowth)[:n+arenaGrowth]
	clear(a.arena[n:]) // a released arena's old records lie past its length
	for i := n + arenaGrowth - 1; i >= n; i-- {
		a.freeB = append(a.freeB, int32(i))
	}
}

// arenaGrowth is the slots growArena adds: a 4 KiB run of block records.
const arenaGrowth = 64

// Touch implements strategies.Toucher: it prefetches the block of h, a
// few events before its free, and the address neighbours of the block
// touched before, whose record that touch asked for and which has had
// the events since to come in: a free reads its neighbours to merge with
// them, and with 10^6 live blocks they miss the cache as the block does.
func (a *Allocator) Touch(h strategies.Handle) {
	p := a.touched
	a.touched = none
	if h >= 0 && int(h) < len(a.arena) {
		prefetch.Line(unsafe.Pointer(&a.arena[h]))
		a.touched = int32(h)
	}
	if p >= 0 && int(p) < len(a.arena) {
		b := &a.arena[p]
		if b.prev >= 0 {
			prefetch.Line(unsafe.Pointer(&a.arena[b.prev]))
		}
		if b.next >= 0 {
			prefetch.Line(unsafe.Pointer(&a.arena[b.next]))
		}
	}
}

// FreeRequested is the program's free (allocator-spec §1.8): allocated
// statistics drop now; the memory stays active until FreeCompleted, as it
// does while record_stream events are outstanding.
func (a *Allocator) FreeRequested(h strategies.Handle) {
	if a.cfg.NoCaching {
		return
	}
	a.stats.splitActive()
	a.freeRequested(h)
	a.pendingQ = append(a.pendingQ, int32(h))
}

func (a *Allocator) freeRequested(h strategies.Handle) {
	b := &a.arena[h]
	b.st = b.st&^stAllocated | stPending
	a.allocatedDrop(b)
}

// allocatedDrop is free's update of the allocated statistics for b.
func (a *Allocator) allocatedDrop(b *block) {
	ps := &a.stats.pool[pi(b.small)&1]
	ps.g[sAllocation].freed++
	ps.g[sAllocatedBytes].freed += b.size
	if b.size >= a.cfg.MaxSplitSize {
		a.stats.OversizeAllocations.decrease(1)
	}
}

// FreeCompleted is free_block: the block merges with free address
// neighbours (prev first, then next) and returns to its pool. A block
// left pending by FreeRequested is no longer allocated, so Free does just
// that.
func (a *Allocator) FreeCompleted(h strategies.Handle) { a.Free(h) }

// Free implements strategies.Allocator: a free with no cross-stream uses,
// so free_requested and free_completed happen together (the block is
// never left pending). It is free_block (allocator-spec §1.8) for block
// h, allocated or pending: an allocated block stops being allocated and
// the allocated statistics drop first; a pending one's events are
// complete (FreeCompleted). Free is free_block itself rather than a
// wrapper around it, whose call was a twentieth of a free's instructions.
func (a *Allocator) Free(h strategies.Handle) {
	if a.cfg.NoCaching {
		a.freeNoCache(h)
		return
	}
	i := int32(h)
	arena := a.arena
	b := &arena[i]
	orig, req, small := b.size, b.req, b.small
	ps, po := a.stats.pools(small)
	st := b.st
	if st&stAllocated != 0 {
		// allocatedDrop, with the pool's record found once.
		ps.g[sAllocation].freed++
		ps.g[sAllocatedBytes].freed += orig
		if orig >= a.cfg.MaxSplitSize {
			a.stats.OversizeAllocations.decrease(1)
		}
	}
	b.st = st &^ (stAllocated | stPending)
	if st&stMapped == 0 {
		a.freeUnmapped(i)
		return
	}
	// Merge with the free neighbours, prev first, then next, as
	// free_block does (try_merge_blocks), and update the free set in as
	// few steps as the merges allow: the merged block takes a
	// neighbour's place (Replace) rather than both neighbours leaving
	// and the merged block arriving. The neighbours found free are
	// named by index (cp, cn) and their keys read only when the set is
	// told, before their slots are given up: keys carried across the
	// merges were copied through the stack.
	//
	// b stays valid throughout (nothing here grows the arena).
	//
	// A link is tested as an unsigned index (at): below the arena's
	// length is neither none (-1, above every index as unsigned) nor out
	// of the arena, one comparison for both tests and the index's
	// bounds.
	cp, cn := b.prev, b.next
	if j := at(cp); j >= uint(len(arena)) || !freeMapped(&arena[j]) {
		cp = none
	}
	if j := at(cn); j >= uint(len(arena)) || !freeMapped(&arena[j]) {
		cn = none
	}
	pl := a.poolOf(b)
	if !a.quick {
		// The age base, which only garbage collection reads (and
		// quick says that it is off: fastFit), so that the commonest
		// configuration does not store it at every free.
		b.gcBase = pl.getFreeBlocksCallCount
	}
	// The statistics that do not depend on the merges first; those that
	// do, the inactive-split ones, in each case below before the set
	// is told, so that few values live across the set's calls (each
	// that did was stored to the stack on every free and read back:
	// nine, when the statistics came after the merges). Those change
	// by the neighbours merged, nMerged, and b's orig bytes: the
	// merged neighbours leave them, and the merged block joins them if
	// its segment is still split, one block for nMerged and orig bytes
	// more than they held (a rise, whose peaks are tested behind
	// predicted branches; with one neighbour merged the count is
	// unchanged, with two it falls); if the segment is whole again, the
	// neighbours' bytes, b.size-orig, leave alone. A merged
	// neighbour's state is cleared through its pointer before the set's
	// update and its slot given up (freeSlot) after it, its record
	// intact, so that setSlow, when the short paths do not apply, reads
	// the keys again.
	if a.stats.activeApart {
		ps.g[sActive].freed++
		ps.g[sActiveBytes].freed += orig
	}
	ps.g[sRequestedBytes].freed += req
	split := b.es == none // the inactive-split statistics apply
	switch {
	case cp == none && cn == none:
		if split && b.isSplit() {
			a.stats.raise(sInactiveSplit, ps, po, 1)
			a.stats.raise(sInactiveSplitBytes, ps, po, orig)
		}
		if !pl.blocks.Put(key(b, i)) {
			a.setSlow(pl, none, i)
		}
	case cn == none:
		s := &arena[cp]
		if split {
			if linked(s.prev, b.next) {
				a.stats.raise(sInactiveSplitBytes, ps, po, orig)
			} else {
				ps.g[sInactiveSplit].freed++
				ps.g[sInactiveSplitBytes].freed += s.size
			}
		}
		old := key(s, cp)
		b.addr, b.prev, b.size = s.addr, s.prev, b.size+s.size
		if j := at(s.prev); j < uint(len(arena)) {
			arena[j].next = i
		}
		s.st = 0
		if !pl.blocks.Move(old, key(b, i)) {
			a.setSlow(pl, cp, i)
		}
		a.freeSlot(cp)
	case cp == none:
		s := &arena[cn]
		if split {
			if linked(b.prev, s.next) {
				a.stats.raise(sInactiveSplitBytes, ps, po, orig)
			} else {
				ps.g[sInactiveSplit].freed++
				ps.g[sInactiveSplitBytes].freed += s.size
			}
		}
		old := key(s, cn)
		b.next, b.size = s.next, b.size+s.size
		if j := at(s.next); j < uint(len(arena)) {
			arena[j].prev = i
		}
		s.st = 0
		if !pl.blocks.Move(old, key(b, i)) {
			a.setSlow(pl, cn, i)
		}
		a.freeSlot(cn)
	default:
		s, t := &arena[cp], &arena[cn]
		if split {
			if linked(s.prev, t.next) {
				ps.g[sInactiveSplit].freed++
				a.stats.raise(sInactiveSplitBytes, ps, po, orig)
			} else {
				ps.g[sInactiveSplit].freed += 2
				ps.g[sInactiveSplitBytes].freed += s.size + t.size
			}
		}
		old, gone := key(s, cp), key(t, cn)
		b.addr, b.prev, b.next, b.size = s.addr, s.prev, t.next, b.size+s.size+t.size
		if j := at(s.prev); j < uint(len(arena)) {
			arena[j].next = i
		}
		if j := at(t.next); j < uint(len(arena)) {
			arena[j].prev = i
		}
		s.st, t.st = 0, 0
		if !pl.blocks.Take(gone) {
			pl.blocks.Remove(gone)
		}
		if !pl.blocks.Move(old, key(&a.arena[i], i)) {
			a.setSlow(pl, cp, i)
		}
		a.freeSlot(cp)
		a.freeSlot(cn)
	}
	if pl.trust != 0 {
		if b := &a.arena[i]; b.prev&b.next == none {
			a.noteWhole(pl, i)
		}
	}
}

// setSlow is Free's update of pl's free set by its general methods when
// the short path (Put, Move) does not apply: block i, merged, takes the
// place of its neighbour c (Replace), whose record is as it was in the
// set, or joins the set (Insert) if c is none.
//
//go:noinline
func (a *Allocator) setSlow(pl *pool, c, i int32) {
	k := key(&a.arena[i], i)
	if c == none {
		pl.blocks.Insert(k)
		return
	}
	pl.blocks.Replace(key(&a.arena[c], c), k)
}

// freeUnmapped is free_block for an unmapped block i. It is not reached
// (only mapped blocks are ever allocated) but kept as upstream's general
// merge, which handles unmapped neighbours.
func (a *Allocator) freeUnmapped(i int32) {
	b := &a.arena[i]
	orig, req, small := b.size, b.req, b.small
	var dBlocks, dBytes int64
	for _, c := range [2]int32{b.prev, b.next} {
		if s := a.tryMerge(i, c); s > 0 {
			dBlocks--
			dBytes -= s
		}
	}
	a.insertIntoBlocks(i)
	b = &a.arena[i]
	if b.isSplit() {
		dBlocks++
		dBytes += b.size
	}
	ps, po := a.stats.pools(small)
	if b.es == none {
		a.stats.shift(sInactiveSplit, ps, po, dBlocks)
		a.stats.shift(sInactiveSplitBytes, ps, po, dBytes)
	}
	if a.stats.activeApart {
		ps.g[sActive].freed++
		ps.g[sActiveBytes].freed += orig
	}
	ps.g[sRequestedBytes].freed += req
}

// mergeable is try_merge_blocks' test: src, a neighbour of dst, merges
// into it if it is free, has no outstanding events and is mapped alike.
//
// The three conditions are combined without branches: whether a
// neighbour is free is as good as random, so one branch on the result
// mispredicts where three would (the test was a twentieth of a replay).
func (a *Allocator) mergeable(dst, src int32) bool {
	if src == none {
		return false
	}
	s, d := &a.arena[src], &a.arena[dst]
	return s.st&(stAllocated|stPending|stMapped) == d.st&stMapped
}

// freeMapped is mergeable for a neighbour of a mapped block: s is free,
// has no outstanding events, and is mapped.
func freeMapped(s *block) bool {
	return s.st&(stAllocated|stPending|stMapped) == stMapped
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// tryMerge is try_merge_blocks: src merges into dst if it is free, has no
// outstanding events and is mapped alike; it returns the bytes subsumed.
func (a *Allocator) tryMerge(dst, src int32) int64 {
	if !a.mergeable(dst, src) {
		return 0
	}
	s := &a.arena[src]
	if s.mapped() {
		a.poolOf(s).blocks.Remove(key(s, src))
	} else {
		a.poolOf(s).unmapped.Remove(key(s, src))
	}
	return a.absorb(dst, src)
}

// absorb merges src, a mergeable neighbour of dst that has left its set,
// into dst and returns the bytes it brought.
func (a *Allocator) absorb(dst, src int32) int64 {
	s, d := &a.arena[src], &a.arena[dst]
	if d.prev == src {
		d.addr = s.addr
		d.prev = s.prev
		if d.prev != none {
			a.arena[d.prev].next = dst
		}
	} else {
		d.next = s.next
		if d.next != none {
			a.arena[d.next].prev = dst
		}
	}
	n := s.size
	d.size += n
	a.deleteBlock(src)
	return n
}

// releaseBlock is release_block: cudaFree of a whole, free segment.
func (a *Allocator) releaseBlock(i int32) {
	b := a.arena[i]
	a.trace(ActionSegmentFree, b.addr, b.size, b.stream)
	a.mem.Free(b.size)
	a.stats.decrease(sSegment, b.small, 1)
	a.stats.decrease(sReservedBytes, b.small, b.size)
	a.stats.NumDeviceFree++
	if b.size >= a.cfg.MaxSplitSize {
		a.stats.OversizeSegments.decrease(1)
	}
	a.poolOf(&b).blocks.Remove(key(&b, i))
	a.deleteBlock(i)
}

// releaseAvailableCachedBlocks is release_available_cached_blocks: with
// max_split_size set, free one oversize cached block at least as large as
// the request, else oversize blocks from the largest down.
func (a *Allocator) releaseAvailableCachedBlocks(p *params) bool {
	ms := a.cfg.MaxSplitSize
	if ms == unlimited {
		return false
	}
	pl := p.pool
	want := max(p.size, ms)
	k, ok := pl.blocks.LowerBound(freeset.Key{Stream: p.stream, Size: want})
	if ok && k.Stream == p.stream && a.arena[k.B].es == none {
		a.releaseBlock(k.B)
		return true
	}
	// No single block is large enough: free oversize blocks from the
	// largest on this stream downward, even if they fall short.
	var cur freeset.Key
	if ok {
		cur, ok = pl.blocks.Before(k)
	} else {
		cur, ok = pl.blocks.Max()
	}
	var released int64
	for ok && released < want && cur.Size >= ms && cur.Stream == p.stream {
		prev, more := pl.blocks.Before(cur)
		if a.arena[cur.B].es == none {
			released += cur.Size
			a.releaseBlock(cur.B)
		}
		cur, ok = prev, more
	}
	return released >= want
}

// releaseCachedBlocks is release_cached_blocks, torch.cuda.empty_cache():
// complete every pending free, then return every whole free segment
// (large pool first, in free-set order) and unmap every free expandable page.
func (a *Allocator) releaseCachedBlocks() bool {
	a.synchronizeAndFreeEvents()
	a.releaseBlocks(&a.large)
	a.releaseBlocks(&a.small)
	return true
}

// EmptyCache is torch.cuda.empty_cache().
func (a *Allocator) EmptyCache() {
	if !a.cfg.NoCaching {
		a.releaseCachedBlocks()
	}
}

func (a *Allocator) synchronizeAndFreeEvents() {
	a.stats.NumSyncAllStreams++
	q := a.pendingQ
	a.pendingQ = a.pendingQ[:0]
	for _, i := range q {
		if a.arena[i].inUse() && a.arena[i].pending() {
			a.FreeCompleted(strategies.Handle(i))
			if a.OnComplete != nil {
				a.OnComplete(strategies.Handle(i))
			}
		}
	}
}

// releaseBlocks is release_blocks for the pool, the part of
// release_cached_blocks that returns every whole free segment and unmaps
// every free expandable page.
//
// A whole free segment can only come from Free (a block freed and merged
// with its free neighbours into its whole segment) or from the seed of a
// warm start; split blocks, which are most of the cache, are never
// released here. So when the pool is trusted (a first scan has been made,
// no expandable segment exists, and Free has noted every block it left
// whole since: pool.wholes), the blocks noted and still whole and free are
// the ones the scan would release, and they are released in the order the
// scan would meet them (the free set's). The scan cost a pass over every
// cached block at each failed allocation: quadratic in a trace whose
// allocations keep failing while many split blocks are cached (0.9 MB of
// allocations on 50,000 streams took 16 s).
func (a *Allocator) releaseBlocks(pl *pool) {
	if pl.trust&trustRelease != 0 && len(a.exp) == 0 && !scanEveryRelease {
		a.releaseWholes(pl)
		return
	}
	pl.trust, pl.wholes = pl.trust|trustRelease, pl.wholes[:0]
	var toUnmap []int32
	paged := a.cfg.ExpandableSegments && a.stats.current(sSegment, All) == 0 && !scanEveryRelease
	if paged {
		if a.releasedAlready(pl) {
			return
		}
		toUnmap = a.pagedBlocks(pl)
	} else {
		for _, k := range pl.blocks.Items() {
			b := &a.arena[k.B]
			if b.es != none {
				toUnmap = append(toUnmap, k.B)
			} else if !b.isSplit() {
				a.releaseBlock(k.B)
			}
		}
	}
	for _, i := range toUnmap {
		a.unmapBlock(i)
		b := &a.arena[i]
		if !b.isSplit() && !b.mapped() {
			a.releaseExpandableSegment(i)
		}
	}
	if paged {
		a.noteReleased(pl)
	}
}

// releasedAlready reports whether the pool is as the last release of its
// paged blocks left it, as far as a release can tell: no block of a page
// or more has entered its free set since, and no memory has been mapped
// or unmapped. A release then would change nothing: it unmapped every
// whole page of the free blocks and released every segment left wholly
// unmapped, so the paged blocks it would find are the ones whose pages it
// could not unmap, and blocks smaller than a page span none. Why: each
// failed allocation releases the cached blocks, and pagedBlocks searches
// once for each stream holding blocks under a page; a trace whose
// allocations kept failing while a small block stayed live on each of
// many streams paid that at every failure (torch with expandable
// segments, 6,250 streams and 18,750 failed allocations: 5.6 s; 12,500
// and 37,500: 25 s), and so did the capacity searches of a trace that
// fits (membench capacity on 12,500 streams: 7.1 s), whose replays at too
// small a capacity fail allocation after allocation. The pool's
// allocations and frees once made part of the state, so that a small
// allocation and free between every two failures still searched every
// stream each time (6,250 streams, 6,250 such failures: 1.9 s; 12,500
// and 12,500: 8.4 s).
func (a *Allocator) releasedAlready(pl *pool) bool {
	if releaseEveryTime {
		return false
	}
	l := a.lessonsOf(pl)
	at, ok := a.pagedStamp(pl)
	return ok && l != nil && l.releasedOK && l.released == at
}

// releaseEveryTime makes every release of a pool's paged blocks search
// for them (no releasedAlready), and largestFree read every cached block:
// the reference the tests compare with.
var releaseEveryTime = false

// noteReleased records the pool's state after a release of its paged
// blocks (releasedAlready).
func (a *Allocator) noteReleased(pl *pool) {
	if at, ok := a.pagedStamp(pl); ok {
		l := a.lessonsMade(pl)
		l.released, l.releasedOK = at, true
	}
}

// releaseStamp is the pool's releaseStamp now.
func (a *Allocator) releaseStamp(pl *pool) releaseStamp {
	ps := &a.stats.pool[pi(pl.small)&1]
	return releaseStamp{allocs: ps.g[sAllocation].allocated, frees: a.poolFrees(pl),
		maps: a.stats.NumDeviceAlloc, unmaps: a.stats.NumDeviceFree, page: a.pageOf(pl)}
}

// pagedStamp is the pool's pagedStamp now, and whether it has one: the
// free set counts the blocks of a page or more that enter it from the
// first stamp on (binset.Set.Watch), for pages no smaller than its
// largest class (2 MiB, the small pool's page; the large pool's is 11 MiB
// or more), and a pool of smaller pages, which only a test's settings
// could give, has no stamp and releases every time.
func (a *Allocator) pagedStamp(pl *pool) (pagedStamp, bool) {
	page := a.pageOf(pl)
	if page < binset.Classes*binset.Gran {
		return pagedStamp{}, false
	}
	pl.blocks.Watch(page)
	return pagedStamp{bigIns: pl.blocks.BigInserts(), maps: a.stats.NumDeviceAlloc,
		unmaps: a.stats.NumDeviceFree, page: page}, true
}

// pageOf is the page by which pl's expandable segments map memory.
func (a *Allocator) pageOf(pl *pool) int64 {
	if pl.small {
		return SmallBuffer
	}
	return a.cfg.LargeSegmentSize
}

// pagedBlocks is, with expandable segments on, the free blocks of pl that
// span at least one of the pool's pages, in the free set's order: the
// only ones releaseBlocks' unmapping changes when no cudaMalloc segment
// exists (none is made with expandable segments on, and SeedSegment
// refuses one, but settings changed during a run, as upstream's tests
// change them, may leave some): every block of the pool is then in an
// expandable segment, and one smaller than a page spans no whole page,
// so unmapBlock leaves it as it is and it stays mapped, not released. The
// set is ordered by (stream, size, address): each stream's blocks of a
// page or more are found by a search rather than by a pass over every
// cached block, which at each of a run of failed allocations made the
// replay quadratic (0.55 MB of allocations, 20,000 small blocks cached:
// 3.4 s).
func (a *Allocator) pagedBlocks(pl *pool) []int32 {
	page := a.pageOf(pl)
	var out []int32
	k, ok := pl.blocks.Min()
	for ok {
		if k.Size < page {
			a.pagedSearched++
			if k, ok = pl.blocks.LowerBound(freeset.Key{Stream: k.Stream, Size: page}); !ok {
				break
			}
			continue
		}
		out = append(out, k.B)
		k, ok = pl.blocks.After(k)
	}
	return out
}

// scanEveryRelease makes releaseBlocks and garbage collection scan every
// cached block, as they once did always: the reference of the tests that
// the noted blocks give the same releases.
var scanEveryRelease = false

// releaseWholes is releaseBlocks of a trusted pool: the blocks Free noted
// that are still free, whole and in pl, in the free set's order (a block
// noted twice, or a slot reused since, counts once).
func (a *Allocator) releaseWholes(pl *pool) {
	ks := a.stillWhole(pl, pl.wholes, pl.candKeys[:0])
	for _, k := range ks {
		a.releaseBlock(k.B)
	}
	pl.wholes, pl.candKeys = pl.wholes[:0], ks[:0]
}

// stillWhole appends to ks the keys of the blocks of noted that are still
// free, whole, outside any expandable segment and in pl, in the free set's
// order (a block noted twice, or a slot reused since, counts once).
func (a *Allocator) stillWhole(pl *pool, noted []int32, ks []freeset.Key) []freeset.Key {
	for _, i := range noted {
		if int(i) >= len(a.arena) {
			continue
		}
		b := &a.arena[i]
		if !freeMapped(b) || b.isSplit() || b.es != none || a.poolOf(b) != pl {
			continue
		}
		if k := key(b, i); pl.blocks.Contains(k) {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, sizeOrder)
	return slices.CompactFunc(ks, func(x, y freeset.Key) bool { return sizeOrder(x, y) == 0 })
}

// sizeOrder is the free set's order (freeset.Key: stream and address as
// unsigned, then size between them).
func sizeOrder(x, y freeset.Key) int {
	switch {
	case x.Stream != y.Stream:
		return cmp.Compare(uint64(x.Stream), uint64(y.Stream))
	case x.Size != y.Size:
		return cmp.Compare(x.Size, y.Size)
	}
	return cmp.Compare(uint64(x.Addr), uint64(y.Addr))
}

// noteWhole is Free's note of block i, left whole in pl, for releaseBlocks.
// Past one note per arena slot the notes are dropped and the next release
// scans again, so that a trace with no OOM keeps no list that grows.
//
//go:noinline
func (a *Allocator) noteWhole(pl *pool, i int32) {
	if pl.trust&trustRelease != 0 {
		if len(pl.wholes) >= len(a.arena) {
			pl.trust, pl.wholes = pl.trust&^trustRelease, pl.wholes[:0]
		} else {
			pl.wholes = append(pl.wholes, i)
		}
	}
	if pl.trust&trustGC != 0 {
		if len(pl.gcWholes) >= 2*len(a.arena) {
			pl.trust, pl.gcWholes = pl.trust&^trustGC, pl.gcWholes[:0]
		} else {
			pl.gcWholes = append(pl.gcWholes, i)
		}
	}
}

// garbageCollectCachedBlocks is garbage_collect_cached_blocks
// (allocator-spec §1.9): while the reservation is above the threshold, it
// releases the whole free blocks of the large pool at least as old as
// their average age, pass after pass, until it has reclaimed enough.
//
// Upstream reads every cached block of the pool to find the whole ones,
// and again at each pass, at every allocation the cache does not serve
// while the reservation is above the threshold: quadratic in a trace whose
// allocations keep failing with many split blocks cached (1.3 MB of
// 35,000 failing allocations over 10,000 cached blocks: 3.8 s). The whole
// free blocks are found instead as releaseBlocks finds them, from a first
// scan and then from Free's notes (pool.gcWholes), and each pass reads
// those alone; the releases, their order (the free set's) and the ages
// are upstream's.
func (a *Allocator) garbageCollectCachedBlocks() {
	limit := int64(a.cfg.GCThreshold * float64(a.allowedMax))
	total := a.mem.Reserved()
	if total <= limit {
		return
	}
	if a.stats.current(sSegment, All) == 0 && !scanEveryRelease {
		// No cudaMalloc segment (the statistic counts no expandable
		// one): the newest upstream never collects an expandable
		// segment's block, so each pass would release nothing.
		return
	}
	pl := &a.large
	// The whole free blocks in the free set's order: the noted ones, of
	// which a trusted list names every one when no expandable segment
	// exists, else upstream's scan, whose expandable blocks count in the
	// average age though none is released.
	ks := pl.gcKeys[:0]
	if pl.trust&trustGC != 0 && len(a.exp) == 0 && !scanEveryRelease {
		ks = a.stillWhole(pl, pl.gcWholes, ks)
	} else {
		for _, k := range pl.blocks.Items() {
			if !a.arena[k.B].isSplit() {
				ks = append(ks, k)
			}
		}
	}
	ks = a.collect(pl, ks, total-limit)
	pl.trust |= trustGC
	pl.gcWholes = pl.gcWholes[:0]
	for _, k := range ks {
		pl.gcWholes = append(pl.gcWholes, k.B)
	}
	pl.gcKeys = ks[:0]
}

// collect is garbage_collect_cached_blocks' passes over ks, the whole
// free blocks of pl in the free set's order: each pass releases those
// outside expandable segments at least as old as the average age of all
// of ks then, until target bytes are reclaimed or a pass releases none.
// It returns the blocks it left.
func (a *Allocator) collect(pl *pool, ks []freeset.Key, target int64) []freeset.Key {
	age := func(i int32) int64 { return pl.getFreeBlocksCallCount - a.arena[i].gcBase }
	var totalAge int64
	for _, k := range ks {
		totalAge += age(k.B)
	}
	var reclaimed int64
	for freed := true; reclaimed < target && freed && len(ks) > 0; {
		threshold := float64(totalAge) / float64(len(ks))
		freed = false
		kept := ks[:0]
		for _, k := range ks {
			if g := age(k.B); a.arena[k.B].es == none && float64(g) >= threshold {
				freed = true
				reclaimed += k.Size
				totalAge -= g
				a.releaseBlock(k.B)
			} else {
				kept = append(kept, k)
			}
		}
		ks = kept
	}
	return ks
}

// largestFree is the largest cached (free, mapped) block of either
// pool, the OOM's LargestFree. Each pool's figure is kept with the pool's
// state (releaseStamp) and taken again while that has not changed: the
// harness asks for it at each of a replay's first thousand failed
// allocations, and a storm of them with nothing freed or allocated in
// between read every cached block at each (with a small block live on
// each of 12,500 streams, 7 % of a replay's time).
func (a *Allocator) largestFree() int64 {
	var m int64
	for _, pl := range []*pool{&a.small, &a.large} {
		l, at := a.lessonsMade(pl), a.releaseStamp(pl)
		if !l.largestOK || l.largestAt != at || releaseEveryTime {
			var big int64
			for _, k := range pl.blocks.Items() {
				big = max(big, k.Size)
			}
			l.largest, l.largestAt, l.largestOK = big, at, true
		}
		m = max(m, l.largest)
	}
	return m
}

// mallocNoCache and freeNoCache model PYTORCH_NO_CUDA_MEMORY_CACHING=1:
// upstream's uncached_allocate and uncached_delete, a bare cudaMalloc of
// the requested size and cudaFree per tensor that touch no DeviceStats and
// record no memory history.
func (a *Allocator) mallocNoCache(orig, stream int64) (strategies.Handle, bool) {
	addr, ok := a.mem.Malloc(orig)
	if !ok {
		a.lastOOM = strategies.OOM{Requested: orig, Rounded: orig, Reserved: a.mem.Reserved(),
			Allocated: a.noCacheBytes, DeviceFree: a.mem.Available()}
		a.lastOOM.Message = fmt.Sprintf("CUDA out of memory. Tried to allocate %s.", formatSize(orig))
		return -1, false
	}
	addr = a.place(orig, addr)
	a.markMapped(addr, orig)
	small := orig <= SmallSize
	i := a.newBlock(block{addr: addr, size: orig, req: orig, stream: stream, small: small, prev: none, next: none, es: none, st: stMapped | stAllocated})
	a.noCacheBytes += orig
	return strategies.Handle(i), true
}

func (a *Allocator) freeNoCache(h strategies.Handle) {
	b := a.arena[h]
	a.mem.Free(b.size)
	a.unmarkMapped(b.addr, b.size)
	a.noCacheBytes -= b.size
	a.deleteBlock(int32(h))
}

// formatSize is c10's format_size, used in OOM messages.
func formatSize(n int64) string {
	switch {
	case n <= 1024:
		return fmt.Sprintf("%d bytes", n)
	case n <= 1048576:
		return fmt.Sprintf("%.2f KiB", float64(n)/1024)
	case n <= 1073741824:
		return fmt.Sprintf("%.2f MiB", float64(n)/1048576)
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/1073741824)
}

var _ strategies.AllocatedPeaker = (*Allocator)(nil)
