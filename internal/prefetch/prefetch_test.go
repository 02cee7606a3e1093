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
