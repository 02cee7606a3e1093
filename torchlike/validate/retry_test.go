package validate_test

import (
	"bytes"
	"testing"

	"membench/torchlike/snapshot"
	"membench/torchlike/validate"
)

// with max_split_size_mb set, a cudaMalloc failure that
// malloc recovers from (num_alloc_retries stays 0, no OOM is recorded) is
// replayed as torch.cuda.empty_cache().
//
// Upstream (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, all stored
// versions): after alloc_block fails, release_available_cached_blocks frees
// only the single cached block found by lower_bound({stream,
// max(size, max_split_size)}) (or oversize blocks from the largest down)
// and alloc_block is retried; release_cached_blocks is not reached when that
// retry succeeds. Without a recorded OOM, torchlike/validate/validate.go models an
// unlimited device, so WouldRelease says false and the burst is taken for
// empty_cache(), which frees every unsplit cached segment. The recording
// below is what upstream produces with max_split_size_mb:100 on a device
// where 150+300+2 MiB are cached and only 100 MiB more fit.
func TestValidateMaxSplitRetryWithoutOOM(t *testing.T) {
	const MiB = 1 << 20
	a, b, c, d := int64(1<<40), int64(1<<40+256*MiB), int64(1<<40+768*MiB), int64(1<<40+1024*MiB)
	e := entry
	tr := []snapshot.TraceEntry{
		e("segment_alloc", a, 150*MiB), e("alloc", a, 150*MiB),
		e("segment_alloc", b, 300*MiB), e("alloc", b, 300*MiB),
		e("segment_alloc", c, 2*MiB), e("alloc", c, 4096),
		e("free_requested", a, 150*MiB), e("free_completed", a, 150*MiB),
		e("free_requested", b, 300*MiB), e("free_completed", b, 300*MiB),
		e("free_requested", c, 4096), e("free_completed", c, 4096),
		// malloc(120 MiB): get_free_block rejects the 150 MiB block
		// (150 >= 120 + 20), cudaMalloc fails, release_available_cached_blocks
		// frees the 150 MiB block, the retry succeeds.
		e("segment_free", a, 150*MiB),
		e("segment_alloc", d, 120*MiB), e("alloc", d, 120*MiB),
	}
	snap := &snapshot.Snapshot{
		Settings:     &snapshot.Settings{MaxSplitSize: 100 * MiB, PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:100"},
		DeviceTraces: [][]snapshot.TraceEntry{tr},
		Segments: []snapshot.Segment{
			{Address: b, TotalSize: 300 * MiB, SegmentType: "large", Blocks: []snapshot.Block{{Address: b, Size: 300 * MiB, State: "inactive"}}},
			{Address: c, TotalSize: 2 * MiB, SegmentType: "small", Blocks: []snapshot.Block{{Address: c, Size: 2 * MiB, State: "inactive"}}},
			{Address: d, TotalSize: 120 * MiB, AllocatedSize: 120 * MiB, ActiveSize: 120 * MiB, RequestedSize: 120 * MiB, SegmentType: "large",
				Blocks: []snapshot.Block{{Address: d, Size: 120 * MiB, RequestedSize: 120 * MiB, State: "active_allocated"}}},
		},
	}
	reps, err := validate.Validate(snap, validate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.Agree() {
			var buf bytes.Buffer
			r.WriteReport(&buf, "review")
			t.Errorf("validate disagrees with what upstream records:\n%s", buf.String())
		}
	}
}
