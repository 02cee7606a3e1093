package tpurt

import (
	"strconv"
	"testing"

	"membench/internal/hugemem"
	"membench/internal/livebench"
	"membench/internal/livepair"
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

// BenchmarkLiveHugePages times the model with its free set's arenas in
// huge pages (internal/hugemem) against one without, in one process in
// alternate stretches (internal/livepair): cpu-ns/event-small and -huge,
// and their ratio.
func BenchmarkLiveHugePages(b *testing.B) {
	for _, live := range []int{1000, 1000000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			defer func() { hugemem.Off = false }()
			livepair.Run(b, live, [2]string{"small", "huge"}, func(k int) { hugemem.Off = k == 0 }, func(int) livebench.Model {
				d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
				a := New(Options{}, strategies.NewMemory(&d))
				return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
			})
		})
	}
}
