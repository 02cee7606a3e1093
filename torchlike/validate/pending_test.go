package validate_test

import (
	"bytes"
	"testing"

	"membench/torchlike/snapshot"
	"membench/torchlike/validate"
)

// the validator replays free_completed entries that the
// real allocator recorded *inside* malloc's OOM-retry path before it
// replays that malloc, so the model sees a free block the real
// get_free_block never saw.
//
// Upstream (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, eb42ad6e…,
// 001074d2… and the newest stored version alike), DeviceCachingAllocator::
// malloc runs get_free_block first and, on a miss, alloc_block, then
// release_cached_blocks, whose synchronize_and_free_events calls free_block
// (trace FREE_COMPLETED) for blocks waiting on record_stream events, then
// release_blocks (SEGMENT_FREE), then alloc_block(isRetry) (SEGMENT_ALLOC)
// and finally alloc_found_block (ALLOC). It never searches the pool again,
// so a block that only became free during the retry is not used: a new
// segment is allocated. The recorded order is therefore
//
//	free_requested A            (del A after A.record_stream(s))
//	free_completed A            (synchronize_and_free_events, inside malloc(B))
//	segment_free F              (release_blocks)
//	segment_alloc 40 MiB        (alloc_block retry)
//	alloc B
//
// torchlike/validate/validate.go applies free_completed A as soon as it reads it
// (a.FreeCompleted), then at segment_free F asks WouldRelease(B), which now
// finds A in the free set and says false, so the burst is taken for an
// empty_cache() call; the model's Malloc(B) then reuses A and never issues
// the recorded segment_alloc. FSDP-style programs (record_stream plus
// num_alloc_retries > 0 near the memory limit) produce exactly this.
func TestValidatePendingFreeCompletedInsideRetry(t *testing.T) {
	const MiB = 1 << 20
	s1, s2, s3 := int64(1<<40), int64(1<<40+64*MiB), int64(1<<40+128*MiB)
	e := entry
	tr := []snapshot.TraceEntry{
		e("segment_alloc", s1, 60*MiB),
		e("alloc", s1, 60*MiB), // P
		e("free_requested", s1, 60*MiB),
		e("free_completed", s1, 60*MiB),
		e("alloc", s1, 40*MiB),        // A: splits P's segment
		e("alloc", s1+40*MiB, 20*MiB), // L: takes the 20 MiB remainder whole
		e("segment_alloc", s2, 10*MiB),
		e("alloc", s2, 10*MiB), // F
		e("free_requested", s2, 10*MiB),
		e("free_completed", s2, 10*MiB),
		e("free_requested", s1, 40*MiB), // A, used on another stream: pending
		// malloc(B = 40 MiB): get_free_block misses, cudaMalloc fails
		// (70 MiB reserved of 100), release_cached_blocks:
		e("free_completed", s1, 40*MiB), // synchronize_and_free_events
		e("segment_free", s2, 10*MiB),   // release_blocks: F (A is split)
		e("segment_alloc", s3, 40*MiB),  // alloc_block(isRetry)
		e("alloc", s3, 40*MiB),          // B
	}
	snap := &snapshot.Snapshot{
		Settings:     &snapshot.Settings{MaxSplitSize: -1},
		DeviceTraces: [][]snapshot.TraceEntry{tr},
		Segments: []snapshot.Segment{
			{Device: 0, Address: s1, TotalSize: 60 * MiB, AllocatedSize: 20 * MiB, ActiveSize: 20 * MiB, RequestedSize: 20 * MiB, SegmentType: "large",
				Blocks: []snapshot.Block{
					{Address: s1, Size: 40 * MiB, State: "inactive"},
					{Address: s1 + 40*MiB, Size: 20 * MiB, RequestedSize: 20 * MiB, State: "active_allocated"},
				}},
			{Device: 0, Address: s3, TotalSize: 40 * MiB, AllocatedSize: 40 * MiB, ActiveSize: 40 * MiB, RequestedSize: 40 * MiB, SegmentType: "large",
				Blocks: []snapshot.Block{{Address: s3, Size: 40 * MiB, RequestedSize: 40 * MiB, State: "active_allocated"}}},
		},
	}
	reps, err := validate.Validate(snap, validate.Options{Capacity: 100 * MiB})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.Agree() {
			var b bytes.Buffer
			r.WriteReport(&b, "review")
			t.Errorf("the recording is what upstream produces, but validate disagrees:\n%s", b.String())
		}
	}
}

// TestValidateReleasePathWithGC: a block freed after record_stream,
// completed by the next malloc's release path (synchronize_and_free_events)
// and released with it, is read as that release path, not as a plain free
// followed by an empty_cache() call, which reproduces the same segment
// events: also with garbage collection on, where the completions' plain
// reading is tried first (plainThenBurst) and must be the malloc's own
// release path to be taken. (Found in review: the plain reading took the
// empty_cache() call.)
func TestValidateReleasePathWithGC(t *testing.T) {
	const MiB = 1 << 20
	s1, s2, s3, s4 := int64(1<<40), int64(1<<40+64*MiB), int64(1<<40+128*MiB), int64(1<<40+192*MiB)
	e := entry
	tr := []snapshot.TraceEntry{
		e("segment_alloc", s1, 40*MiB),
		e("alloc", s1, 40*MiB), // A
		e("segment_alloc", s2, 10*MiB),
		e("alloc", s2, 10*MiB), // F
		e("free_requested", s2, 10*MiB),
		e("free_completed", s2, 10*MiB),
		e("segment_alloc", s4, 40*MiB),
		e("alloc", s4, 40*MiB),          // L
		e("free_requested", s1, 40*MiB), // A, used on another stream: pending
		// malloc(B = 40 MiB): get_free_block misses, cudaMalloc fails
		// (90 MiB reserved of 100), release_cached_blocks:
		e("free_completed", s1, 40*MiB), // synchronize_and_free_events
		e("segment_free", s2, 10*MiB),   // release_blocks
		e("segment_free", s1, 40*MiB),
		e("segment_alloc", s3, 40*MiB), // alloc_block(isRetry)
		e("alloc", s3, 40*MiB),         // B
	}
	for _, c := range []struct {
		conf      string
		threshold float64
	}{
		{"", 0},
		{"garbage_collection_threshold:0.5", 0.5}, // inert without a fraction
		{"garbage_collection_threshold:0.95,per_process_memory_fraction:1.0", 0.95},
	} {
		gc := c.conf
		set := &snapshot.Settings{MaxSplitSize: -1, GarbageCollectionThreshold: c.threshold, PYTORCH_CUDA_ALLOC_CONF: c.conf}
		snap := &snapshot.Snapshot{
			Settings:     set,
			DeviceTraces: [][]snapshot.TraceEntry{tr},
			Segments: []snapshot.Segment{
				{Device: 0, Address: s3, TotalSize: 40 * MiB, AllocatedSize: 40 * MiB, ActiveSize: 40 * MiB, RequestedSize: 40 * MiB, SegmentType: "large",
					Blocks: []snapshot.Block{{Address: s3, Size: 40 * MiB, RequestedSize: 40 * MiB, State: "active_allocated"}}},
				{Device: 0, Address: s4, TotalSize: 40 * MiB, AllocatedSize: 40 * MiB, ActiveSize: 40 * MiB, RequestedSize: 40 * MiB, SegmentType: "large",
					Blocks: []snapshot.Block{{Address: s4, Size: 40 * MiB, RequestedSize: 40 * MiB, State: "active_allocated"}}},
			},
		}
		reps, err := validate.Validate(snap, validate.Options{Capacity: 100 * MiB, Check: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			if !r.Agree() || r.EmptyCache != 0 || r.InferredFailures != 0 {
				var b bytes.Buffer
				r.WriteReport(&b, "synthetic")
				t.Errorf("%q: %d empty_cache() calls and %d device failures inferred for a malloc's release path:\n%s", gc, r.EmptyCache, r.InferredFailures, b.String())
			}
		}
	}
}
