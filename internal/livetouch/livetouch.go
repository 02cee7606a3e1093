// Package livetouch times an allocator model's touch of an allocation
// ahead (strategies.MallocToucher) on internal/livebench's workload: a
// free of a random live allocation, then an allocation, each free's
// allocation touched two event pairs ahead as the replay does
// (strategies.Toucher). Several builds of the model, each touching its
// allocations a different number of event pairs ahead (or not at all),
// run in one process in alternate stretches of events, as
// internal/livepair's two do, so that all see the same moments of a
// shared machine: the distance that serves a model best at 10^3 and at
// 10^6 live allocations, and what touching ahead gains, show beside each
// other. tpurt and bfc run it (issue 15's live-set growth target).
package livetouch

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"membench/internal/cpuclock"
	"membench/internal/prefetch"
	"membench/strategies"
)

// Model is an allocator model's four calls that the benchmark makes.
type Model struct {
	Malloc      func(n, stream int64) (strategies.Handle, bool)
	Free        func(strategies.Handle)
	Touch       func(strategies.Handle)
	TouchMalloc func(n, stream int64)
}

// Stretch is the events each build runs before the next takes over
// (internal/livepair's, for the same reason: long enough that refilling
// the caches after another build's stretch is a small part of it).
const Stretch = 1 << 18

// Run builds one model per distance (newModel), warms each up with live
// allocations of the same random sizes, then times b.N events of each in
// alternate stretches: each allocation is touched (TouchMalloc) dists[k]
// event pairs before it, or not at all for a distance of 0. It reports
// each build's CPU time per event as cpu-ns/event-d<distance>, and each
// build's over the first's as ratio-d<distance>.
func Run(b *testing.B, live int, dists []int, newModel func() Model) {
	type side struct {
		m     Model
		hs    []strategies.Handle
		pick  []int32
		sizes []int64
		cpu   time.Duration
	}
	sides := make([]side, len(dists))
	steps := (b.N + 1) / 2
	for k := range sides {
		s := &sides[k]
		s.m = newModel()
		rng := rand.New(rand.NewPCG(15, uint64(live)))
		size := func() int64 {
			if rng.IntN(100) == 0 {
				return (1 + rng.Int64N(2<<20)) + 1<<20
			}
			return 512 + rng.Int64N(48<<10-512)
		}
		s.hs = make([]strategies.Handle, live)
		for i := range s.hs {
			var ok bool
			if s.hs[i], ok = s.m.Malloc(size(), 0); !ok {
				b.Fatal("out of memory while warming up")
			}
		}
		s.pick, s.sizes = make([]int32, steps), make([]int64, steps)
		for i := range s.pick {
			s.pick[i], s.sizes[i] = int32(rng.IntN(live)), size()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for from := 0; from < steps; from += Stretch / 2 {
		to := min(steps, from+Stretch/2)
		for k := range sides {
			s := &sides[k]
			d := dists[k]
			t0 := cpuclock.Now()
			for i := from; i < to; i++ {
				if i+4 < steps {
					prefetch.Line(unsafe.Pointer(&s.hs[s.pick[i+4]]))
				}
				if i+2 < steps {
					s.m.Touch(s.hs[s.pick[i+2]])
				}
				if d > 0 && i+d < steps {
					s.m.TouchMalloc(s.sizes[i+d], 0)
				}
				v := s.pick[i]
				s.m.Free(s.hs[v])
				h, ok := s.m.Malloc(s.sizes[i], 0)
				if !ok {
					b.Fatal("out of memory")
				}
				s.hs[v] = h
			}
			s.cpu += cpuclock.Now() - t0
		}
	}
	for k, s := range sides {
		name := "d" + strconv.Itoa(dists[k])
		b.ReportMetric(float64(s.cpu.Nanoseconds())/float64(2*steps), "cpu-ns/event-"+name)
		if k > 0 && sides[0].cpu > 0 {
			b.ReportMetric(float64(s.cpu)/float64(sides[0].cpu), "ratio-"+name)
		}
	}
}

// Sizes runs Run at 10^3 and at 10^6 live allocations, as sub-benchmarks
// live=1000 and live=1000000.
func Sizes(b *testing.B, dists []int, newModel func() Model) {
	for _, live := range []int{1000, 1000000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			Run(b, live, dists, newModel)
		})
	}
}
