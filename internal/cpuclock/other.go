//go:build !unix

package cpuclock

import "time"

// Now is zero where there is no getrusage: the benchmarks' CPU figures
// are then zero, and their wall times stand alone.
func Now() time.Duration { return 0 }

// System is zero where there is no getrusage.
func System() time.Duration { return 0 }
