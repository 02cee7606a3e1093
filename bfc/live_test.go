package bfc

import (
	"testing"

	"membench/internal/livebench"
	"membench/strategies"
)

// BenchmarkLive is harness.BenchmarkReplayLive on the allocator alone
// (internal/livebench), in one region of 75% of an 80 GB card as JAX
// takes it. ns/op is per event; cpu-ns/event is the CPU time per event,
// which on a shared machine is steadier.
func BenchmarkLive(b *testing.B) {
	livebench.Sizes(b, func() livebench.Model {
		d, _ := strategies.ParseDevice("a100-80g")
		a := New(Options{Limit: d.Capacity / 4 * 3}, strategies.NewMemory(&d))
		return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
	})
}
