// Package livebench holds the allocator models' live-set benchmark: the
// steady state of harness.BenchmarkReplayLive (a free of a random live
// allocation, then an allocation) on a model alone, without the replay
// around it, so that a change to the model's cost per event at 10^3 or
// 10^6 live allocations shows without the replay's own costs. The BFC and
// the TPU runtime model run it (issue 15's live-set growth target).
package livebench

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"membench/internal/cpuclock"
	"membench/internal/prefetch"
	"membench/strategies"
)

// Run warms an allocator up with live allocations, then times b.N
// events, alternately a free of a random live one and an allocation,
// prefetching as the replay does.
func Run(b *testing.B, live int, malloc func(n, stream int64) (strategies.Handle, bool), free, touch func(strategies.Handle)) {
	rng := rand.New(rand.NewPCG(15, uint64(live)))
	size := func() int64 { return Size(rng) }
	hs := make([]strategies.Handle, live)
	for i := range hs {
		hs[i], _ = malloc(size(), 0)
	}
	// The steady events' choices, drawn before the timer starts.
	steps := (b.N + 1) / 2
	pick := make([]int32, steps)
	sizes := make([]int64, steps)
	for k := range pick {
		pick[k], sizes[k] = int32(rng.IntN(live)), size()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuclock.Now()
	for k := range steps {
		// As the replay does with a large live set: the handle of
		// the free 8 events on is brought in, and the record of the
		// free 4 events on.
		if k+4 < steps {
			prefetch.Line(unsafe.Pointer(&hs[pick[k+4]]))
		}
		if k+2 < steps {
			touch(hs[pick[k+2]])
		}
		v := pick[k]
		free(hs[v])
		h, ok := malloc(sizes[k], 0)
		if !ok {
			b.Fatal("out of memory")
		}
		hs[v] = h
	}
	b.ReportMetric(float64((cpuclock.Now()-cpu).Nanoseconds())/float64(2*steps), "cpu-ns/event")
}

// Size draws a request of the workload from rng: 99 % small (512 B to
// 48 KiB) and 1 % large (1 to 3 MiB). Every benchmark on this workload
// (harness.BenchmarkReplayLive and BenchmarkReplayLivePaired, Run,
// package livepair, tpurt's staircase) draws its sizes here, so that
// they all measure the same allocations.
func Size(rng *rand.Rand) int64 {
	if rng.IntN(100) == 0 {
		return (1 + rng.Int64N(2<<20)) + 1<<20
	}
	return 512 + rng.Int64N(48<<10-512)
}

// Model is an allocator model's three calls that the benchmark makes.
type Model struct {
	Malloc func(n, stream int64) (strategies.Handle, bool)
	Free   func(strategies.Handle)
	Touch  func(strategies.Handle)
}

// Sizes runs Run at 10^3 and at 10^6 live allocations, as sub-benchmarks
// live=1000 and live=1000000, each on a model that newModel builds.
func Sizes(b *testing.B, newModel func() Model) {
	for _, live := range []int{1000, 1000000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			m := newModel()
			Run(b, live, m.Malloc, m.Free, m.Touch)
		})
	}
}
