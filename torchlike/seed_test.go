package torchlike

import (
	"fmt"
	"strings"
	"testing"

	"membench/strategies"
)

// TestSeedRefusesSplitOversize: a warm start whose cudaMalloc segment has
// a free block split from it (live blocks beside it) and not below
// max_split_size is refused, naming the block: PyTorch splits no block
// that large (should_split) and, when an allocation fails, frees such a
// block with cudaFree as if it were its whole segment
// (release_available_cached_blocks), which for a block inside a segment
// is a CUDA error upstream; the model released the block as a segment
// (a segment_free of 96 MiB at an address inside the 100 MiB segment)
// and left its neighbours linked to a slot the next segment took. A
// whole oversize segment, or a split block under the limit, is seeded
// as before.
func TestSeedRefusesSplitOversize(t *testing.T) {
	const mb = 1 << 20
	base := int64(1 << 40) // clear of the model's own addresses
	for _, c := range []struct {
		name string
		size int64
		live []SeedBlock
		ok   bool
	}{
		{"split oversize", 100 * mb, []SeedBlock{{Addr: base, Size: 2 * mb, Requested: 2 * mb}, {Addr: base + 98*mb, Size: 2 * mb, Requested: 2 * mb}}, false},
		{"split at the limit", 42 * mb, []SeedBlock{{Addr: base, Size: 2 * mb, Requested: 2 * mb}}, false},
		{"pending beside it", 100 * mb, []SeedBlock{{Addr: base, Size: 2 * mb, Requested: 2 * mb, Pending: true}}, false},
		{"whole oversize", 100 * mb, nil, true},
		{"oversize live", 100 * mb, []SeedBlock{{Addr: base, Size: 100 * mb, Requested: 100 * mb}}, true},
		{"split under the limit", 60 * mb, []SeedBlock{{Addr: base + 30*mb, Size: 2 * mb, Requested: 2 * mb}}, true},
	} {
		a := newTorch(t, "max_split_size_mb=40", "a100-40g:capacity=150MiB")
		var trace []string
		a.OnTrace = func(act string, addr, size, stream int64) {
			trace = append(trace, act)
		}
		_, err := a.SeedSegment(base, c.size, 0, false, c.live)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			// What the model then did: an allocation that fails on
			// the device released the split block.
			a.Malloc(60*mb, 0)
			t.Errorf("%s: seeded; then %s; %v", c.name, strings.Join(trace, ","), a.Check())
			continue
		}
		if !strings.Contains(err.Error(), "max_split_size") || !strings.Contains(err.Error(), "0x100") {
			t.Errorf("%s: error %q names neither the block nor the setting", c.name, err)
		}
	}
	// Without max_split_size every split block may be seeded.
	a := New(DefaultConfig(), strategies.NewMemory(&strategies.Device{Name: "x", Total: 1 << 30}))
	if _, err := a.SeedSegment(base, 100*mb, 0, false, []SeedBlock{{Addr: base, Size: 2 * mb, Requested: 2 * mb}}); err != nil {
		t.Error(err)
	}
}

// TestLargeSegmentAboveSplitLimit: large_segment_size_mb more than 1 MiB
// above max_split_size_mb (cudaMalloc segments) is refused. A 2 MiB
// request then gets a 64 MiB segment whose 62 MiB remainder, split off
// and free, is not below a 40 MiB max_split_size, and an allocation that
// fails on the device frees it with cudaFree as if it were a segment
// (release_available_cached_blocks): a CUDA error upstream (the pointer is
// inside a segment), which the model replayed as a segment_free of 62 MiB
// and a fit, its blocks' links broken. At most 1 MiB above (every
// remainder below the limit), or with expandable segments (no cudaMalloc
// segment), the pair is accepted.
func TestLargeSegmentAboveSplitLimit(t *testing.T) {
	for _, c := range []struct {
		knobs string
		ok    bool
	}{
		{"max_split_size_mb=40,large_segment_size_mb=64", false},
		{"max_split_size_mb=40,large_segment_size_mb=42", false},
		{"max_split_size_mb=40,large_segment_size_mb=41", true},
		{"max_split_size_mb=40,large_segment_size_mb=40", true},
		{"max_split_size_mb=40,large_segment_size_mb=64,expandable_segments=true", true},
		{"large_segment_size_mb=64", true},
	} {
		sp, err := strategies.ParseSpec("torch:" + c.knobs)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(sp)
		if c.ok != (err == nil) {
			t.Errorf("%s: error %v, want ok %v", c.knobs, err, c.ok)
			if err == nil {
				dev, _ := strategies.ParseDevice("a100-40g:capacity=200MiB")
				a := New(cfg, strategies.NewMemory(&dev))
				var trace []string
				a.OnTrace = func(act string, addr, size, stream int64) {
					trace = append(trace, fmt.Sprintf("%s %d", act, size>>20))
				}
				h, _ := a.Malloc(2<<20, 0)
				a.Malloc(2<<20, 0)
				a.Free(h)
				_, fit := a.Malloc(150<<20, 0)
				t.Logf("%s: %s; fit %v; %v", c.knobs, strings.Join(trace, ","), fit, a.Check())
			}
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "large_segment_size_mb") || !strings.Contains(err.Error(), "max_split_size_mb")) {
			t.Errorf("%s: error %q names not both settings", c.knobs, err)
		}
	}
}
