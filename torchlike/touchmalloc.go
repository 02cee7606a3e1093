package torchlike

import (
	"unsafe"

	"membench/internal/freeset"
	"membench/internal/prefetch"
	"membench/strategies"
)

var _ strategies.MallocToucher = (*Allocator)(nil)

// TouchMalloc implements strategies.MallocToucher: it asks for what
// Malloc(orig, stream) will read, on the allocator as it stands, to be
// brought into the cache without waiting for it, and changes nothing.
// The harness calls it a few events before the Malloc once the live set
// is large (10^6 blocks), where those reads may miss the cache; the events
// in between may move the answer, and then the touch is wasted but the
// outcome the same (TestTouchMallocChangesNothing).
//
// The size is rounded and the pool chosen as Malloc does. A best fit that
// the free set's classes answer reads nothing uncached there (a bitmap and
// the class's record, binset.TouchLowerBound), so the block found is
// known, and its record, which allocFoundBlock reads and writes, is asked
// for; a search that goes to the free set's tree gets that tree's leaf
// asked for instead. Asking also for the found class's head leaf and for
// the leaf where the split's remainder goes was measured and left out
// (binset.TouchLowerBound's doc).
func (a *Allocator) TouchMalloc(orig, stream int64) {
	if a.cfg.NoCaching {
		return
	}
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
	k, ok := pl.blocks.TouchLowerBound(freeset.Key{Stream: stream, Size: size})
	if ok && k.Stream == stream && uint(k.B) < uint(len(a.arena)) {
		prefetch.Line(unsafe.Pointer(&a.arena[k.B]))
	}
}
