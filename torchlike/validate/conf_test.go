package validate_test

import (
	"bytes"
	"testing"

	"membench/torchlike/snapshot"
	"membench/torchlike/validate"
)

// knobs that change the recorded segment sequence but that
// a snapshot only carries inside allocator_settings["PYTORCH_CUDA_ALLOC_CONF"]
// (upstream writes last_allocator_settings there) are dropped by
// torchlike/snapshot/settings.go:Settings.Config, and torchlike.Config cannot
// express one of them at all.
//
//   - max_non_split_rounding_mb (AcceleratorAllocatorConfig /
//     CUDAAllocatorConfig, newest stored CUDACachingAllocator.cpp:
//     get_free_block rejects an oversize block only when
//     block->size >= p.size() + max_non_split_rounding_size(); older
//     versions, e.g. 001074d2…, use the constant kLargeBuffer).
//   - large_segment_size_mb (newest c10/core/AllocatorConfig:
//     get_allocation_size returns large_segment_size() for
//     1 MiB < size < 10 MiB, and find_expandable_block uses it as the
//     large-pool page size; must be > 10 MB). Config has no such field and
//     ParseConfig rejects the key.
//
// Each case below is what the newest upstream records for the stated
// configuration.
func TestValidateConfString(t *testing.T) {
	const MiB = 1 << 20
	s := int64(1 << 40)
	e := entry
	cases := []struct {
		name string
		snap *snapshot.Snapshot
	}{
		{
			// max_split_size_mb:100,max_non_split_rounding_mb:100: a 150 MiB
			// request reuses a cached 200 MiB oversize block whole
			// (200 < 150 + 100), so no segment_alloc follows.
			name: "max_non_split_rounding_mb",
			snap: &snapshot.Snapshot{
				Settings: &snapshot.Settings{MaxSplitSize: 100 * MiB,
					PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:100,max_non_split_rounding_mb:100"},
				DeviceTraces: [][]snapshot.TraceEntry{{
					e("segment_alloc", s, 200*MiB),
					e("alloc", s, 200*MiB),
					e("free_requested", s, 200*MiB),
					e("free_completed", s, 200*MiB),
					e("alloc", s, 150*MiB),
				}},
				Segments: []snapshot.Segment{{Address: s, TotalSize: 200 * MiB, AllocatedSize: 200 * MiB, ActiveSize: 200 * MiB,
					RequestedSize: 150 * MiB, SegmentType: "large",
					Blocks: []snapshot.Block{{Address: s, Size: 200 * MiB, RequestedSize: 150 * MiB, State: "active_allocated"}}}},
			},
		},
		{
			// large_segment_size_mb:12: a 2 MiB request gets a 12 MiB segment
			// (get_allocation_size), split 2 MiB + 10 MiB.
			name: "large_segment_size_mb",
			snap: &snapshot.Snapshot{
				Settings: &snapshot.Settings{MaxSplitSize: -1, PYTORCH_CUDA_ALLOC_CONF: "large_segment_size_mb:12"},
				DeviceTraces: [][]snapshot.TraceEntry{{
					e("segment_alloc", s, 12*MiB),
					e("alloc", s, 2*MiB),
				}},
				Segments: []snapshot.Segment{{Address: s, TotalSize: 12 * MiB, AllocatedSize: 2 * MiB, ActiveSize: 2 * MiB,
					RequestedSize: 2 * MiB, SegmentType: "large",
					Blocks: []snapshot.Block{
						{Address: s, Size: 2 * MiB, RequestedSize: 2 * MiB, State: "active_allocated"},
						{Address: s + 2*MiB, Size: 10 * MiB, State: "inactive"},
					}}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reps, err := validate.Validate(c.snap, validate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if !r.Agree() {
					var b bytes.Buffer
					r.WriteReport(&b, c.name)
					t.Errorf("validate disagrees with what upstream records for %q:\n%s", c.snap.Settings.PYTORCH_CUDA_ALLOC_CONF, b.String())
				}
			}
		})
	}
}

// entry is a trace entry of the tests' hand-written recordings: an action
// at an address, of a size.
func entry(act string, addr, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: act, Addr: addr, Size: size}
}
