// Package budget bounds the time and memory one call may take, for tests
// and fuzz targets: a decoder that a few hostile bytes can keep busy for
// minutes or make allocate gigabytes fails the test that feeds it those
// bytes, instead of only a user who meets them.
//
// Time is the process's CPU time (user and system, every thread), not the
// wall clock, so that a loaded machine does not make a test flake; memory
// is the bytes allocated (runtime.MemStats.TotalAlloc), which does not
// depend on when the collector runs.
package budget

import (
	"runtime"
	"testing"
	"time"
)

// Default bounds of one fuzz input.
const (
	FuzzTime  = 1 * time.Second
	FuzzBytes = 256 << 20
)

// Check runs f and fails tb when it used more than maxTime of CPU or
// allocated more than maxBytes. It returns what f used.
func Check(tb testing.TB, maxTime time.Duration, maxBytes uint64, f func()) (time.Duration, uint64) {
	tb.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	f()
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	used, alloc := c1-c0, m1.TotalAlloc-m0.TotalAlloc
	if used > maxTime {
		tb.Errorf("took %v of CPU, more than the bound of %v", used, maxTime)
	}
	if alloc > maxBytes {
		tb.Errorf("allocated %d MiB, more than the bound of %d MiB", alloc>>20, maxBytes>>20)
	}
	return used, alloc
}

// Fuzz is Check with the bounds of one fuzz input.
func Fuzz(tb testing.TB, f func()) {
	tb.Helper()
	Check(tb, FuzzTime, FuzzBytes, f)
}
