package hugemem

import "testing"

func TestInner(t *testing.T) {
	for _, c := range []struct{ a, n, off, m uintptr }{
		{0, hugePage, 0, hugePage},
		{0, hugePage - 1, 0, 0},
		{1, hugePage, 0, 0},
		{1, 2*hugePage - 1, hugePage - 1, hugePage},
		{hugePage - 4096, 3 * hugePage, 4096, 2 * hugePage},
		{5 * hugePage, 0, 0, 0},
		{5*hugePage + 12288, 4 * hugePage, hugePage - 12288, 3 * hugePage},
	} {
		off, m := inner(c.a, c.n)
		if off != c.off || m != c.m {
			t.Errorf("inner(%#x, %#x) = %#x, %#x; want %#x, %#x", c.a, c.n, off, m, c.off, c.m)
		}
		if m > 0 && ((c.a+off)%hugePage != 0 || m%hugePage != 0 || off+m > c.n) {
			t.Errorf("inner(%#x, %#x): %#x bytes at %#x are not whole huge pages inside", c.a, c.n, m, c.a+off)
		}
	}
}
