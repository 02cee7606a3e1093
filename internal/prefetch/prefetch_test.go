package prefetch

import (
	"testing"
	"unsafe"
)

// TestLine: a prefetch of any line of a live object changes nothing.
func TestLine(t *testing.T) {
	xs := make([]int64, 1024)
	for i := range xs {
		xs[i] = int64(i)
		Line(unsafe.Pointer(&xs[i]))
	}
	for i := range xs {
		if xs[i] != int64(i) {
			t.Fatalf("xs[%d] = %d", i, xs[i])
		}
	}
}

// TestLines: prefetching a range, aligned or not, of one byte or many
// lines, changes nothing.
func TestLines(t *testing.T) {
	xs := make([]byte, 4096)
	for i := range xs {
		xs[i] = byte(i)
	}
	for _, c := range []struct{ off, n int }{{0, 1}, {0, 64}, {10, 64}, {63, 2}, {5, 528}, {0, 4096}} {
		Lines(unsafe.Pointer(&xs[c.off]), uintptr(c.n))
	}
	for i := range xs {
		if xs[i] != byte(i) {
			t.Fatalf("xs[%d] = %d", i, xs[i])
		}
	}
}

// TestLines9: prefetching nine lines from the start of one, at the start
// and at the end of an array, changes nothing.
func TestLines9(t *testing.T) {
	xs := make([]uint64, 1024) // a large allocation: it starts on a line
	for i := range xs {
		xs[i] = uint64(i) * 3
	}
	Lines9(unsafe.Pointer(&xs[0]))
	Lines9(unsafe.Pointer(&xs[len(xs)-72]))
	for i := range xs {
		if xs[i] != uint64(i)*3 {
			t.Fatalf("xs[%d] = %d", i, xs[i])
		}
	}
}
