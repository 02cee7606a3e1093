package harness

import (
	"testing"
	"time"

	"membench/internal/cpuclock"
	"membench/strategies"
	"membench/traces"
)

// nullAllocator places nothing: every Malloc succeeds with a new handle
// and Free does nothing. A replay through it costs what the harness
// itself costs (the reader, the id tracker, the peaks and the timeline),
// the floor under every strategy's figure in BenchmarkReplay.
type nullAllocator struct {
	mem  *strategies.Memory
	next strategies.Handle
}

func (a *nullAllocator) Malloc(size, stream int64) (strategies.Handle, bool) {
	a.next++
	return a.next, true
}
func (a *nullAllocator) Free(h strategies.Handle)   {}
func (a *nullAllocator) LastOOM() strategies.OOM    { return strategies.OOM{} }
func (a *nullAllocator) Memory() *strategies.Memory { return a.mem }
func (a *nullAllocator) Allocated() int64           { return 0 }
func (a *nullAllocator) Check() error               { return nil }

// BenchmarkReplayFloor replays the corpus trace gpt-generate through
// nullAllocator, events in memory as BenchmarkReplay reads them, and
// reports cpu-ns/event: what a strategy's cpu-ns/event there is made of
// before its allocator does anything.
func BenchmarkReplayFloor(b *testing.B) {
	evs := loadCorpus(b, "gpt-generate")
	dev := device(b, strategies.DefaultDevice)
	b.ReportAllocs()
	var cpu0 time.Duration
	runs := 0
	for b.Loop() {
		if runs == 0 {
			cpu0 = cpuclock.Now()
		}
		runs++
		a := &nullAllocator{mem: strategies.NewMemory(&dev)}
		if _, err := ReplayWith("floor", &traces.SliceReader{Events: evs}, a, "null", DefaultOptions); err != nil {
			b.Fatal(err)
		}
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(evs))
	b.ReportMetric(ns, "ns/event")
	b.ReportMetric(float64((cpuclock.Now()-cpu0).Nanoseconds())/float64(runs)/float64(len(evs)), "cpu-ns/event")
}
