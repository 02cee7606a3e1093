package torchlike

import "testing"

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
