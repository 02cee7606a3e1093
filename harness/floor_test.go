package harness

import "membench/strategies"

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

// plainAllocator and plainFootprinter hide what a model offers the replay
// to read its peaks without a call an allocation (AllocatedPeaker,
// FootprintWatcher): through them the replay calls Allocated and
// PeakFootprint after every allocation, as it did before those existed.
type plainAllocator struct{ strategies.Allocator }

type plainFootprinter struct {
	strategies.Allocator
	f strategies.Footprinter
}

func (p plainFootprinter) PeakFootprint() int64 { return p.f.PeakFootprint() }

func plainOf(a strategies.Allocator) strategies.Allocator {
	if f, ok := a.(strategies.Footprinter); ok {
		return plainFootprinter{a, f}
	}
	return plainAllocator{a}
}
