package cpuclock

import (
	"runtime"
	"testing"
)

// TestNowAdvances: spinning for a while shows in the CPU time.
func TestNowAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage here")
	}
	t0 := Now()
	x := 0
	for Now()-t0 < 20e6 { // 20 ms of CPU
		for i := range 1 << 16 {
			x += i
		}
	}
	if x == 0 || Now() <= t0 {
		t.Fatal("the CPU time did not advance")
	}
}
