package bfc

import (
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"membench/internal/prefetch"
	"membench/strategies"
)

// liveBench warms an allocator up with live allocations, then times b.N
// events, alternately a free of a random live one and an allocation,
// prefetching as the replay does.
func liveBench(b *testing.B, live int, malloc func(n, stream int64) (strategies.Handle, bool), free, touch func(strategies.Handle)) {
	rng := rand.New(rand.NewPCG(15, uint64(live)))
	size := func() int64 {
		if rng.IntN(100) == 0 {
			return (1 + rng.Int64N(2<<20)) + 1<<20
		}
		return 512 + rng.Int64N(48<<10-512)
	}
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
	cpu := cpuTime()
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
	b.ReportMetric(float64(cpuTime()-cpu)/float64(2*steps), "cpu-ns/event")
}

// cpuTime is the CPU time the process has used, user and system, in
// nanoseconds: on a machine that other jobs share, a benchmark's wall time
// counts the time it waited for a core, and its CPU time does not.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

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
			liveBench(b, live, a.Malloc, a.Free, a.Touch)
		})
	}
}
