package hugepage

import "testing"

func TestInner(t *testing.T) {
	for _, c := range []struct{ a, n, off, m uintptr }{
		{0, Size, 0, Size},
		{0, Size - 1, 0, 0},
		{1, Size, 0, 0},
		{1, 2*Size - 1, Size - 1, Size},
		{Size - 4096, 3 * Size, 4096, 2 * Size},
		{5 * Size, 0, 0, 0},
		{5*Size + 12288, 4 * Size, Size - 12288, 3 * Size},
	} {
		off, m := inner(c.a, c.n)
		if off != c.off || m != c.m {
			t.Errorf("inner(%#x, %#x) = %#x, %#x; want %#x, %#x", c.a, c.n, off, m, c.off, c.m)
		}
		if m > 0 && ((c.a+off)%Size != 0 || m%Size != 0 || off+m > c.n) {
			t.Errorf("inner(%#x, %#x): %#x bytes at %#x are not whole huge pages inside", c.a, c.n, m, c.a+off)
		}
	}
}
