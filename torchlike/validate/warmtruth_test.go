package validate

import (
	"fmt"
	"testing"

	"membench/strategies"
	"membench/torchlike/snapshot"
)

// TestWarmLayoutTruth holds the reconstructed warm start against the
// layout the recording allocator really had at the cut, for programs
// recorded with max_split_size (with empty_cache calls, with a small
// device that makes the model release oversize blocks and run out, with
// another max_non_split_rounding and with rounding divisions): every live
// block is there, and its true size lies in [Size, MaxSize]; a size given
// as certain (Size == MaxSize), as the whole-segment rule for blocks of
// max_split_size or more gives it, is the true one. Applying that rule to
// blocks of half max_split_size or more fails it (37 to 112 wrong
// blocks a program).
func TestWarmLayoutTruth(t *testing.T) {
	for _, c := range []struct {
		knobs, conf string
		ms          int64
		divisions   int
		empty       int
		capacity    int64
	}{
		{"max_split_size_mb=40", "max_split_size_mb:40", 40, 0, 0, 1 << 40},
		{"max_split_size_mb=21", "max_split_size_mb:21", 21, 0, 97, 1 << 40},
		{"max_split_size_mb=100", "max_split_size_mb:100", 100, 0, 0, 2 << 30},
		{"max_split_size_mb=40", "max_split_size_mb:40", 40, 0, 131, 2 << 30},
		{"max_split_size_mb=40,max_non_split_rounding_mb=64", "max_split_size_mb:40,max_non_split_rounding_mb:64", 40, 0, 0, 1 << 40},
		{"max_split_size_mb=40,roundup_power2_divisions=4", "max_split_size_mb:40,roundup_power2_divisions:4", 40, 4, 0, 1 << 40},
	} {
		name := fmt.Sprintf("%s, empty_cache every %d, %d MiB", c.knobs, c.empty, c.capacity>>20)
		for seed := uint64(1); seed <= 2; seed++ {
			type state struct {
				at   int // trace entries before it
				segs []strategies.Segment
			}
			var states []state
			r := newRecorder(t, "torch:"+c.knobs, c.capacity, 0)
			step := 0
			workloadHook(r, seed, 3000, c.empty, func() {
				if step++; step%37 != 0 {
					return
				}
				var segs []strategies.Segment
				r.a.Layout(func(s strategies.Segment) {
					s.Blocks = append([]strategies.Block(nil), s.Blocks...)
					segs = append(segs, s)
				})
				states = append(states, state{len(r.trace), segs})
			})
			st := &snapshot.Settings{MaxSplitSize: c.ms << 20, PYTORCH_CUDA_ALLOC_CONF: c.conf}
			for i := range st.RoundupPower2Divisions {
				st.RoundupPower2Divisions[i] = int64(c.divisions)
			}
			snap := snapshotOf(st, r)
			wrong := 0
			for _, s := range states {
				l, err := cut(snap, s.at).InitialState(0)
				if err != nil {
					t.Fatalf("%s, program %d, cut %d: %v", name, seed, s.at, err)
				}
				got := map[int64]snapshot.LBlock{}
				for _, ls := range l.Segments {
					for _, b := range ls.Blocks {
						got[b.Address] = b
					}
				}
				for _, sg := range s.segs {
					for _, b := range sg.Blocks {
						if b.State != strategies.BlockAllocated && b.State != strategies.BlockPending {
							continue
						}
						g, ok := got[b.Addr]
						if ok && g.Size <= b.Size && b.Size <= g.MaxSize {
							continue
						}
						if wrong++; wrong <= 3 {
							t.Errorf("%s, program %d, cut %d: block %#x at offset %d of a %d B segment is %d B, reconstructed %d..%d (present %v)",
								name, seed, s.at, b.Addr, b.Addr-sg.Addr, sg.Size, b.Size, g.Size, g.MaxSize, ok)
						}
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%s, program %d: %d live blocks reconstructed wrong", name, seed, wrong)
			}
		}
	}
}
