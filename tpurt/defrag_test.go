package tpurt

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
)

// TestByAddrDown: the radix sort defragment orders the live buffers by
// gives the comparison sort's order, from the highest address down, for
// addresses on the granule and off it, below 2^32 and far above, and for
// few buffers and many.
func TestByAddrDown(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n           int
		limit, gran int64
	}{
		{10, 1 << 30, 128}, {63, 1 << 30, 1}, {64, 1 << 30, 128}, {1000, 1 << 34, 128},
		{5000, 1 << 40, 1}, {5000, 1 << 52, 4096}, {3000, 1 << 20, 256},
	} {
		d, _ := strategies.ParseDevice("tpu-v5e")
		a := New(Options{}, strategies.NewMemory(&d))
		a.limit = c.limit
		seen := map[int64]bool{}
		var hs []int32
		for len(hs) < c.n {
			addr := rng.Int64N(c.limit/c.gran) * c.gran
			if seen[addr] {
				continue
			}
			seen[addr] = true
			hs = append(hs, a.bufs.Put(buffer{addr: addr, req: 1}))
		}
		want := slices.Clone(hs)
		slices.SortFunc(want, func(x, y int32) int { return cmp.Compare(a.bufs.At(y).addr, a.bufs.At(x).addr) })
		if got := a.byAddrDown(hs); !slices.Equal(got, want) {
			t.Errorf("%d buffers below %d on %d B: radix order differs from the comparison sort's", c.n, c.limit, c.gran)
		}
	}
}
