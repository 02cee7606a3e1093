package torchlike

import (
	"testing"

	"membench/strategies"
)

// WouldRelease overestimates what an expandable-segment
// allocation has to map.
//
// Upstream (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, every stored
// version: eb42ad6e…, 001074d2…, and the newest with
// is_expandable_segments_active): alloc_block calls
// try_allocate_expandable_block(p.size()), whose find_expandable_block
// starts from a free block just before the unmapped range when there is one
// (`if (allocatable(c->prev)) c = c->prev;`), so map_block only maps
// ceil((size - tail)/page) pages. The model's Malloc does the same
// (tryAllocateExpandableBlock), but WouldRelease (seed.go) assumes
// ceil(size/page) pages, so with a free tail and the device's free memory
// between the two figures it answers "would release" while Malloc maps
// without releasing. The validator then does not infer a recorded
// empty_cache() before that allocation (explainedByNext returns true) and
// the replay diverges at the first segment_unmap.
func TestWouldReleaseExpandableFreeTail(t *testing.T) {
	sp, err := strategies.ParseSpec("torch:expandable_segments=True")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(sp)
	if err != nil {
		t.Fatal(err)
	}
	// 40 MiB mapped by the first allocation + 30 MiB free on the device.
	capacity := int64(70 * MiB)
	dev := strategies.Device{Name: "t", Kind: strategies.GPU, Total: capacity, Capacity: capacity, Free: capacity, Granularity: 2 * MiB}
	a := New(cfg, strategies.NewMemory(&dev))
	var first string
	a.OnTrace = func(act string, addr, size, stream int64) {
		if first == "" {
			first = act
		}
	}
	// 30 MiB: two 20 MiB pages mapped, a 10 MiB free tail stays before
	// the unmapped rest of the reservation.
	if _, ok := a.Malloc(30*MiB, 0); !ok {
		t.Fatal("first allocation failed")
	}
	first = ""
	// 25 MiB: the lower_bound misses (only the 10 MiB tail is free), and
	// the expandable path needs one more page (15 MiB beyond the tail),
	// which fits in the 30 MiB the device has left.
	would := a.WouldRelease(25*MiB, 0)
	if _, ok := a.Malloc(25*MiB, 0); !ok {
		t.Fatal("second allocation failed")
	}
	released := first == ActionSegmentUnmap || first == ActionSegmentFree
	if would != released {
		t.Errorf("WouldRelease = %t, but Malloc's first device action was %q", would, first)
	}
}
