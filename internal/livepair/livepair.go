// Package livepair times two builds of an allocator model on
// internal/livebench's workload in one process, in alternate stretches of
// events, so that both see the same moments of a shared machine: on the
// 2-core machine that three benchmarking sessions share, separate runs of
// the 10^6 live-allocation case vary by a third, which hides a change of
// a tenth. tpurt's BenchmarkLiveHugePages uses it to time the model's
// arrays in huge pages (internal/hugemem) against ordinary ones.
package livepair

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"membench/internal/cpuclock"
	"membench/internal/livebench"
	"membench/internal/prefetch"
	"membench/strategies"
)

// Stretch is the events each build runs before the other takes over:
// long enough that refilling the caches and the TLB with its own data,
// which the other build's stretch evicted, is a small part of it (a
// model in small pages needs thousands of TLB entries again, one in huge
// pages a few dozen, so short stretches would favour the latter).
const Stretch = 1 << 18

// Run builds models newModel(0) and newModel(1), warms each up with live
// allocations of the same random sizes, then times b.N events of each,
// alternately a free of a random live allocation and an allocation, as
// livebench.Run does, in alternate stretches. It calls use(k) before
// building model k and before each of its stretches, for the caller to
// switch what differs between the two (a setting that the model reads
// as its arrays grow, which they also do in the timed events: the TPU
// model's free set grows from one range to 406,000 then). It reports
// each build's CPU time per event as cpu-ns/event-<names[k]> and the
// second's over the first's as ratio.
func Run(b *testing.B, live int, names [2]string, use func(k int), newModel func(k int) livebench.Model) {
	type side struct {
		m     livebench.Model
		rng   *rand.Rand
		hs    []strategies.Handle
		pick  []int32
		sizes []int64
		cpu   time.Duration
	}
	var sides [2]side
	steps := (b.N + 1) / 2
	for k := range sides {
		s := &sides[k]
		use(k)
		s.m = newModel(k)
		s.rng = rand.New(rand.NewPCG(15, uint64(live)))
		size := func() int64 { return livebench.Size(s.rng) }
		s.hs = make([]strategies.Handle, live)
		for i := range s.hs {
			var ok bool
			if s.hs[i], ok = s.m.Malloc(size(), 0); !ok {
				b.Fatal("out of memory while warming up")
			}
		}
		s.pick, s.sizes = make([]int32, steps), make([]int64, steps)
		for i := range s.pick {
			s.pick[i], s.sizes[i] = int32(s.rng.IntN(live)), size()
		}
	}
	b.ResetTimer()
	for from := 0; from < steps; from += Stretch / 2 {
		to := min(steps, from+Stretch/2)
		for k := range sides {
			s := &sides[k]
			use(k)
			t0 := cpuclock.Now()
			for i := from; i < to; i++ {
				if i+4 < steps {
					prefetch.Line(unsafe.Pointer(&s.hs[s.pick[i+4]]))
				}
				if i+2 < steps {
					s.m.Touch(s.hs[s.pick[i+2]])
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
		b.ReportMetric(float64(s.cpu.Nanoseconds())/float64(2*steps), "cpu-ns/event-"+names[k])
	}
	if sides[0].cpu > 0 {
		b.ReportMetric(float64(sides[1].cpu)/float64(sides[0].cpu), "ratio")
	}
}
