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

// TestSystemAdvances: touching fresh memory, whose pages the kernel
// zeroes on the first touch, shows in the system time, and the system
// time stays within the CPU time.
func TestSystemAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage here")
	}
	s0 := System()
	for range 16 { // up to 1 GiB, 64 MiB at a time
		b := make([]byte, 64<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		if System() > s0 {
			break
		}
	}
	if s := System(); s <= s0 || s > Now() {
		t.Fatalf("system time %v after %v, CPU time %v", s, s0, Now())
	}
}
