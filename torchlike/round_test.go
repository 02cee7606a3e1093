package torchlike

import (
	"testing"

	"membench/strategies"
)

// TestRoundSizeReconstructionRows: round_size's rows (allocator-spec.md §1.2), once used by
// the snapshot reconstruction's own copy of the rule, now the only one.
func TestRoundSizeReconstructionRows(t *testing.T) {
	var none [16]int64
	four := [16]int64{}
	for i := range four {
		four[i] = 4
	}
	for _, c := range []struct {
		n, want int64
		div     *[16]int64
	}{
		{1, 512, &none}, {512, 512, &none}, {513, 1024, &none}, {1 << 20, 1 << 20, &none},
		{10<<20 + 1, 10<<20 + 512, &none},
		{1200, 1536, &[16]int64{4}}, // divisions apply only above 512*d bytes
		{4097, 5120, &[16]int64{4}}, // next quarter above 4096
		{1200, 1536, &none},
		{2047, 2048, &four}, {5 << 20, 5 << 20, &four}, {(5 << 20) + 1, 6 << 20, &four},
		{(1 << 30) + 1, (1 << 30) + (1 << 28), &four},
		{1 << 30, 1 << 30, &four},
	} {
		if got := RoundSize(c.n, c.div, false); got != c.want {
			t.Errorf("roundSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if got := roundupPower2NextDivision(1200, 4); got != 1280 { // allocator-spec.md §1.2 example
		t.Errorf("roundupPower2NextDivision(1200, 4) = %d", got)
	}
}

// TestMallocRoundsAsRoundSize: Malloc's own rounding of the commonest
// requests (below 2 MiB without divisions) gives RoundSize's size, seen in
// the block allocated (the first allocation of a fresh allocator splits
// its segment at the rounded size), for requests on either side of every
// boundary the short path tests, with and without divisions and the
// legacy roundup.
func TestMallocRoundsAsRoundSize(t *testing.T) {
	dev, err := strategies.ParseDevice(strategies.DefaultDevice)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, edge := range []int64{1, MinBlockSize, 2 * MinBlockSize, SmallSize, 2 << 20} {
		for d := int64(-3); d <= 3; d++ {
			if n := edge + d; n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	for n := int64(1); n < 3<<20; n += 4093 {
		sizes = append(sizes, n)
	}
	for _, cfg := range []Config{{}, {Divisions: [16]int64{4, 4}}, {Divisions: [16]int64{0, 4}}, {LegacyRoundup: true}, {LegacyRoundup: true, Divisions: [16]int64{1, 1}}} {
		for _, n := range sizes {
			a := New(cfg, strategies.NewMemory(&dev))
			h, ok := a.Malloc(n, 0)
			if !ok {
				t.Fatalf("%+v: Malloc(%d) failed", cfg, n)
			}
			if got, want := a.arena[h].size, RoundSize(n, &cfg.Divisions, cfg.LegacyRoundup); got != want {
				t.Errorf("%+v: Malloc(%d) allocated %d B, RoundSize says %d", cfg, n, got, want)
			}
			a.Release()
		}
	}
}
