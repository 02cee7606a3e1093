package tpurt

import (
	"testing"

	"membench/internal/livebench"
	"membench/strategies"
)

// BenchmarkLive is harness.BenchmarkReplayLive on the model alone
// (internal/livebench), on a 64 GiB heap. ns/op is per event;
// cpu-ns/event is the CPU time per event, which on a shared machine is
// steadier.
func BenchmarkLive(b *testing.B) {
	livebench.Sizes(b, func() livebench.Model {
		d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
		a := New(Options{}, strategies.NewMemory(&d))
		return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
	})
}
