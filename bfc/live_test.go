package bfc

import (
	"strconv"
	"testing"

	"membench/internal/livebench"
	"membench/strategies"
)

// BenchmarkLive is harness.BenchmarkReplayLive on the allocator alone,
// without the replay around it: the same sizes and the same steady state
// (a free of a random live chunk, then an allocation), at 10^3 and 10^6
// live chunks, in one region of 75% of an 80 GB card as JAX takes it, so
// that a change to the allocator's cost per event at either size shows
// without the replay's own costs. ns/op is per event; cpu-ns/event is the
// CPU time per event, which on a shared machine is steadier.
func BenchmarkLive(b *testing.B) {
	for _, live := range []int{1000, 1000000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			d, _ := strategies.ParseDevice("a100-80g")
			a := New(Options{Limit: d.Capacity / 4 * 3}, strategies.NewMemory(&d))
			livebench.Run(b, live, a.Malloc, a.Free, a.Touch)
		})
	}
}
