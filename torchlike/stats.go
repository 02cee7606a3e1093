package torchlike

import "fmt"

// Stat is c10's Stat: a gauge with its peak and running totals.
type Stat struct{ Current, Peak, Allocated, Freed int64 }

// Stat array indexes, as c10's StatType.
const (
	All   = 0
	Small = 1
	Large = 2
)

// StatArray is one statistic for the aggregate and each pool.
type StatArray [3]Stat

// gauge is a Stat as the allocator keeps it: Freed is Allocated less
// Current (a Stat starts at zero and only increase and decrease change it),
// so a decrease is one subtraction.
type gauge struct{ cur, peak, allocated int64 }

// increase adds n > 0 and returns the new current, as computed: read
// back from memory, a value just stored waits for the store to forward
// it (stat.increase takes the aggregate's peak from it).
func (g *gauge) increase(n int64) int64 {
	cur := g.cur + n
	g.cur = cur
	g.peak = max(g.peak, cur)
	g.allocated += n
	return cur
}

func (g *gauge) decrease(n int64) { g.cur -= n }

func (g *gauge) stat() Stat {
	return Stat{Current: g.cur, Peak: g.peak, Allocated: g.allocated, Freed: g.allocated - g.cur}
}

// stat is a StatArray as the allocator keeps it: the pools' gauges (0
// small, 1 large) and the aggregate's peak. The aggregate's current,
// allocated and freed are the pools' sums, read when the statistics are
// (Allocator.Stats), so that an allocation or a free updates one pool
// instead of the pool and the aggregate: the statistics were a twentieth
// of a torch replay.
type stat struct {
	pool    [2]gauge
	allPeak int64
}

// poolIndex is the index of a pool in stat.pool.
func poolIndex(small bool) int {
	if small {
		return 0
	}
	return 1
}

// increase adds n > 0 to a pool's gauge. The aggregate's peak is taken
// from the pool's new current as computed, not as stored (gauge.increase;
// increase and add written so made BenchmarkModel about 1 ns an event
// faster, of the 6 that all the statistics cost).
func (s *stat) increase(small bool, n int64) {
	i := poolIndex(small)
	cur := s.pool[i].increase(n)
	s.allPeak = max(s.allPeak, cur+s.pool[1-i].cur)
}

func (s *stat) decrease(small bool, n int64) { s.pool[poolIndex(small)].cur -= n }

// add is increase for n > 0 and decrease for n < 0, without a branch on
// n's sign (free_block's change of the inactive-split statistics has any
// sign, unpredictably): a decrease leaves the peaks, which are never
// below the currents, as they are.
func (s *stat) add(small bool, n int64) {
	i := poolIndex(small)
	g := &s.pool[i]
	cur := g.cur + n
	g.cur = cur
	g.allocated += max(n, 0)
	g.peak = max(g.peak, cur)
	s.allPeak = max(s.allPeak, cur+s.pool[1-i].cur)
}

// current is the Current of StatArray index i (All, Small or Large).
func (s *stat) current(i int) int64 {
	if i == All {
		return s.pool[0].cur + s.pool[1].cur
	}
	return s.pool[i-1].cur
}

func (s *stat) array() StatArray {
	small, large := s.pool[0].stat(), s.pool[1].stat()
	all := Stat{Current: small.Current + large.Current, Peak: s.allPeak,
		Allocated: small.Allocated + large.Allocated, Freed: small.Freed + large.Freed}
	return StatArray{All: all, Small: small, Large: large}
}

// resetPeak sets every peak to its current value
// (DeviceCachingAllocator::resetPeakStats).
func (s *stat) resetPeak() {
	for i := range s.pool {
		s.pool[i].peak = s.pool[i].cur
	}
	s.allPeak = s.current(All)
}

// counters are DeviceStats as the allocator keeps them (see stat).
//
// Active and ActiveBytes differ from Allocation and AllocatedBytes only
// while a block is freed but awaits its stream events (FreeRequested, or a
// warm start's pending blocks): until the first such block they are equal,
// field for field, and only the latter are kept (activeApart false), so
// that an allocation and a free update two statistics fewer. splitActive
// copies them apart for good when the first block is left pending.
type counters struct {
	Allocation, Segment, Active, InactiveSplit                     stat
	AllocatedBytes, ReservedBytes, ActiveBytes, InactiveSplitBytes stat
	RequestedBytes                                                 stat
	NumAllocRetries, NumOOMs, NumSyncAllStreams                    int64
	NumDeviceAlloc, NumDeviceFree                                  int64
	MaxSplitSize                                                   int64
	OversizeAllocations, OversizeSegments                          gauge
	activeApart                                                    bool
}

// splitActive starts keeping Active and ActiveBytes apart (see counters).
func (c *counters) splitActive() {
	if !c.activeApart {
		c.Active, c.ActiveBytes = c.Allocation, c.AllocatedBytes
		c.activeApart = true
	}
}

// active returns Active and ActiveBytes as they are now.
func (c *counters) active() (*stat, *stat) {
	if c.activeApart {
		return &c.Active, &c.ActiveBytes
	}
	return &c.Allocation, &c.AllocatedBytes
}

// stats returns the counters as DeviceStats.
func (c *counters) stats() Stats {
	active, activeBytes := c.active()
	return Stats{
		Allocation: c.Allocation.array(), Segment: c.Segment.array(), Active: active.array(),
		InactiveSplit: c.InactiveSplit.array(), AllocatedBytes: c.AllocatedBytes.array(),
		ReservedBytes: c.ReservedBytes.array(), ActiveBytes: activeBytes.array(),
		InactiveSplitBytes: c.InactiveSplitBytes.array(), RequestedBytes: c.RequestedBytes.array(),
		NumAllocRetries: c.NumAllocRetries, NumOOMs: c.NumOOMs, NumSyncAllStreams: c.NumSyncAllStreams,
		NumDeviceAlloc: c.NumDeviceAlloc, NumDeviceFree: c.NumDeviceFree, MaxSplitSize: c.MaxSplitSize,
		OversizeAllocations: c.OversizeAllocations.stat(), OversizeSegments: c.OversizeSegments.stat(),
	}
}

// resetPeak is torch.cuda.reset_peak_memory_stats(). Active's peaks are
// reset too when they are kept apart; otherwise Allocation's are theirs.
func (c *counters) resetPeak() {
	for _, s := range []*stat{&c.Allocation, &c.Segment, &c.Active, &c.InactiveSplit,
		&c.AllocatedBytes, &c.ReservedBytes, &c.ActiveBytes, &c.InactiveSplitBytes, &c.RequestedBytes} {
		s.resetPeak()
	}
	c.OversizeAllocations.peak = c.OversizeAllocations.cur
	c.OversizeSegments.peak = c.OversizeSegments.cur
}

// Stats is DeviceStats (allocator-spec §1.11), the source of
// torch.cuda.memory_stats().
type Stats struct {
	Allocation, Segment, Active, InactiveSplit                     StatArray
	AllocatedBytes, ReservedBytes, ActiveBytes, InactiveSplitBytes StatArray
	RequestedBytes                                                 StatArray
	NumAllocRetries, NumOOMs, NumSyncAllStreams                    int64
	NumDeviceAlloc, NumDeviceFree                                  int64
	MaxSplitSize                                                   int64
	OversizeAllocations, OversizeSegments                          Stat
}

// Map flattens the statistics under torch.cuda.memory_stats() key names
// ("allocated_bytes.all.current", "num_ooms", ...).
func (s *Stats) Map() map[string]int64 {
	m := map[string]int64{}
	arrays := []struct {
		name string
		a    *StatArray
	}{
		{"allocation", &s.Allocation}, {"segment", &s.Segment}, {"active", &s.Active},
		{"inactive_split", &s.InactiveSplit}, {"allocated_bytes", &s.AllocatedBytes},
		{"reserved_bytes", &s.ReservedBytes}, {"active_bytes", &s.ActiveBytes},
		{"inactive_split_bytes", &s.InactiveSplitBytes}, {"requested_bytes", &s.RequestedBytes},
	}
	pools := [3]string{"all", "small_pool", "large_pool"}
	for _, a := range arrays {
		for i, p := range pools {
			st := a.a[i]
			m[fmt.Sprintf("%s.%s.current", a.name, p)] = st.Current
			m[fmt.Sprintf("%s.%s.peak", a.name, p)] = st.Peak
			m[fmt.Sprintf("%s.%s.allocated", a.name, p)] = st.Allocated
			m[fmt.Sprintf("%s.%s.freed", a.name, p)] = st.Freed
		}
	}
	for _, o := range []struct {
		name string
		s    Stat
	}{{"oversize_allocations", s.OversizeAllocations}, {"oversize_segments", s.OversizeSegments}} {
		m[o.name+".current"] = o.s.Current
		m[o.name+".peak"] = o.s.Peak
		m[o.name+".allocated"] = o.s.Allocated
		m[o.name+".freed"] = o.s.Freed
	}
	m["num_alloc_retries"] = s.NumAllocRetries
	m["num_ooms"] = s.NumOOMs
	m["num_sync_all_streams"] = s.NumSyncAllStreams
	m["num_device_alloc"] = s.NumDeviceAlloc
	m["num_device_free"] = s.NumDeviceFree
	if s.MaxSplitSize != unlimited {
		m["max_split_size"] = s.MaxSplitSize
	} else {
		m["max_split_size"] = -1
	}
	return m
}
