package harness

import (
	"fmt"

	"membench/strategies"
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

// PeakAllocated makes nullAllocator a strategies.AllocatedPeaker, as every
// model of speedSpecs is: the replay then asks for the peak once, at the
// end, where it called Allocated after every allocation, a call that no
// strategy's replay makes and that the floor under them should not count.
func (a *nullAllocator) PeakAllocated() (int64, bool) { return 0, true }

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

// plainDefrag and plainTPU are plainFootprinter for the BFC and the TPU
// runtime model, whose relocations (Defragmenter) and program loads
// (ProgramLoader) the replay must still see: hiding them would change
// the outcome, not only how the peaks are read.
type plainDefrag struct {
	plainFootprinter
	d strategies.Defragmenter
}

func (p plainDefrag) DefragStats() (events, moved int64) { return p.d.DefragStats() }

type plainTPU struct {
	plainDefrag
	l strategies.ProgramLoader
}

func (p plainTPU) LoadProgram(size int64) (strategies.Program, error) { return p.l.LoadProgram(size) }
func (p plainTPU) ProgramLoaded(q strategies.Program) bool            { return p.l.ProgramLoaded(q) }

func plainOf(a strategies.Allocator) strategies.Allocator {
	f, isF := a.(strategies.Footprinter)
	d, isD := a.(strategies.Defragmenter)
	l, isL := a.(strategies.ProgramLoader)
	switch {
	case isF && isD && isL:
		return plainTPU{plainDefrag{plainFootprinter{a, f}, d}, l}
	case isF && isD && !isL:
		return plainDefrag{plainFootprinter{a, f}, d}
	case isF && !isD && !isL:
		return plainFootprinter{a, f}
	case !isF && !isD && !isL:
		return plainAllocator{a}
	}
	panic(fmt.Sprintf("plainOf: no plain wrapper for %T", a))
}
