package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n        float64
		decimals int
		want     string
	}{
		{0, Auto, "0 B"},
		{512, Auto, "512 B"},
		{1023, 2, "1023 B"},
		{1536, Auto, "1.50 KiB"},
		{1536, 2, "1.50 KiB"},
		{12.5 * (1 << 20), Auto, "12.5 MiB"},
		{738197504, Auto, "704 MiB"},
		{686272540, 2, "654.48 MiB"},
		{702545920, 0, "670 MiB"},
		{78 << 30, Auto, "78.0 GiB"},
		{3 << 50, Auto, "3.00 PiB"},
		{4096 << 50, Auto, "4096 PiB"},
		{-1536, Auto, "-1.50 KiB"},
		{-100, 2, "-100 B"},
	} {
		if got := Bytes(c.n, c.decimals); got != c.want {
			t.Errorf("Bytes(%v, %d) = %q, want %q", c.n, c.decimals, got, c.want)
		}
	}
}
