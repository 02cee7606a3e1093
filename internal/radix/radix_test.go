package radix

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortAsStableSort: Sort gives slices.SortStableFunc's order (equal
// keys in their input order) for keys of every width, low bits set or
// clear, all equal or all zero, with a spare too short or long enough.
func TestSortAsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n     int
		width uint
		align uint64
	}{
		{0, 8, 1}, {1, 8, 1}, {100, 1, 1}, {1000, 11, 1}, {1000, 12, 256}, {5000, 34, 128},
		{5000, 64, 1}, {3000, 0, 1}, {2000, 40, 1 << 20},
	} {
		xs := make([]Keyed, c.n)
		for i := range xs {
			var k uint64
			if c.width > 0 {
				k = rng.Uint64() >> (64 - c.width) / c.align * c.align
			}
			xs[i] = Keyed{k, int32(i)} // I, the place in the input, shows stability
		}
		want := slices.Clone(xs)
		slices.SortStableFunc(want, func(a, b Keyed) int { return cmp.Compare(a.Key, b.Key) })
		for _, spare := range [][]Keyed{nil, make([]Keyed, c.n)} {
			got, _ := Sort(slices.Clone(xs), spare)
			if !slices.Equal(got, want) {
				t.Errorf("%d keys of %d bits on %d: not the stable sort's order", c.n, c.width, c.align)
			}
		}
	}
}
