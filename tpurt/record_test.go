package tpurt

import (
	"math"
	"testing"

	"membench/strategies"
)

// TestRecordSizes: a buffer's record keeps its request only, and its
// size is the request rounded to the granule, whether the granule is a
// power of two (rounded by a mask) or not (by a division), before and
// after its free (Block and Place of a freed handle answer as before).
func TestRecordSizes(t *testing.T) {
	for _, g := range []int64{128, 96, 1} {
		d, _ := strategies.ParseDevice("tpu-v6e:capacity=64MiB")
		a := New(Options{Granule: g}, strategies.NewMemory(&d))
		var hs []strategies.Handle
		var reqs []int64
		for _, n := range []int64{1, 95, 96, 97, 128, 129, 1000, 4095, 1 << 20} {
			h, ok := a.Malloc(n, 0)
			if !ok {
				t.Fatalf("granule %d: %d B did not fit", g, n)
			}
			hs, reqs = append(hs, h), append(reqs, n)
		}
		if err := a.Check(); err != nil {
			t.Fatalf("granule %d: %v", g, err)
		}
		for i, h := range hs {
			want := (reqs[i] + g - 1) / g * g
			off, size := a.Block(h)
			if size != want {
				t.Errorf("granule %d: %d B occupies %d, want %d", g, reqs[i], size, want)
			}
			p := a.Place(h)
			if p.Size != want || p.Requested != reqs[i] || p.Addr != a.base+off {
				t.Errorf("granule %d: Place of %d B = %+v", g, reqs[i], p)
			}
			a.Free(h)
			if off2, size2 := a.Block(h); off2 != off || size2 != want {
				t.Errorf("granule %d: after the free Block = %d, %d; want %d, %d", g, off2, size2, off, want)
			}
			if p2 := a.Place(h); p2 != p {
				t.Errorf("granule %d: after the free Place = %+v, want %+v", g, p2, p)
			}
			if err := a.Check(); err != nil {
				t.Fatalf("granule %d: %v", g, err)
			}
		}
		if a.Allocated() != 0 {
			t.Errorf("granule %d: %d B in use after every free", g, a.Allocated())
		}
	}
}

// TestRoundByMask: Round rounds by a mask when the granule is a power of
// two, and must answer as the division it replaced for every request,
// negative ones and those near the overflow included.
func TestRoundByMask(t *testing.T) {
	for _, g := range []int64{1, 2, 128, 4096, 96, 1000} {
		d, _ := strategies.ParseDevice("tpu-v6e:capacity=64MiB")
		a := New(Options{Granule: g}, strategies.NewMemory(&d))
		ns := []int64{0, 1, g - 1, g, g + 1, 2*g - 1, 1 << 40, math.MaxInt64 - g, math.MaxInt64 - g + 1, math.MaxInt64, -1, -g, -g - 1, -(1 << 40), math.MinInt64 + g}
		for n := int64(-300); n <= 300; n++ {
			ns = append(ns, n)
		}
		for _, n := range ns {
			want := int64(math.MaxInt64)
			if n <= math.MaxInt64-g {
				want = (n + g - 1) / g * g
			}
			if got := a.Round(n); got != want {
				t.Fatalf("granule %d: Round(%d) = %d, want %d", g, n, got, want)
			}
		}
	}
}
