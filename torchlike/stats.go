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

// gauge is a Stat as the allocator keeps it: the bytes (or blocks)
// allocated and freed, whose difference is the current (a Stat starts
// at zero and only increase and decrease change it), so that a rise
// stores one figure, allocated, and reads freed to test the peak, and
// a fall is one addition to freed. Kept as current and allocated, a rise
// stored both: taking the store of allocated out sped the torch model's
// replay of gpt-generate by about 3% (2026-11-25), the same loads and
// instructions as this and one store more a rise.
//
// thr is a threshold for the pool gauges (poolStats).
type gauge struct{ allocated, freed, peak, thr int64 }

// cur is the gauge's current.
func (g *gauge) cur() int64 { return g.allocated - g.freed }

// increase adds n > 0 and returns the new current. The peak is raised
// behind a branch rather than with max: past a trace's first moments
// the peak is rarely passed, so the branch is predicted and the peak is
// not stored again at every allocation. (The pools' gauges rise by
// counters.raise, which tests a threshold instead.)
func (g *gauge) increase(n int64) int64 {
	all := g.allocated + n
	g.allocated = all
	cur := all - g.freed
	if cur > g.peak {
		g.peak = cur
	}
	return cur
}

func (g *gauge) decrease(n int64) { g.freed += n }

func (g *gauge) stat() Stat {
	return Stat{Current: g.cur(), Peak: g.peak, Allocated: g.allocated, Freed: g.freed}
}

// The statistics a pool keeps, as indexes of poolStats: those a malloc
// and a free change first, so that they share the record's first cache
// lines.
const (
	sAllocation = iota
	sAllocatedBytes
	sRequestedBytes
	sInactiveSplit
	sInactiveSplitBytes
	sActive
	sActiveBytes
	sSegment
	sReservedBytes
	nStats
)

// poolStats is one pool's gauges, one per statistic, and their
// thresholds, padded to 512 bytes so that a pool's record is found with
// a shift.
//
// g[k].thr is a threshold below which the pool's current of statistic
// k cannot pass a peak: it is at least the pool's current and at most
// its peak, and the two pools' thresholds add up to at most the
// aggregate's peak. While each pool's current is at most its
// threshold, neither the pool's peak nor the aggregate's can have been
// passed, so that raise tests one figure where it tested two (and read
// the other pool's current to test the second), and a rise of one
// pool's current leaves the other's threshold as it is. A raise that
// passes its pool's threshold raises the peaks it passed and gives its
// pool all the room the aggregate's peak leaves (share): the pool's
// threshold is the least of its peak and the aggregate's peak less the
// other pool's current, and the other pool's threshold is its current,
// so that the other pool's next rise takes the room back. A fall
// leaves every threshold a bound.
//
// Before (2026-11-24) the other pool's threshold was left as it was,
// and a bound only because every raise lowered it by the rise: a store
// to the other pool's record at each raise, three to five a torch
// malloc. Without it, the model's replay of gpt-generate ran 2 to 3%
// faster (BenchmarkModel, 2026-11-25); a room shared half and half
// instead passed the thresholds so often that the model ran 19% more
// instructions an event.
type poolStats struct {
	g [nStats]gauge
	_ [512 - nStats*32]byte
}

// Pool indexes of counters.pool: pi(small).
const (
	piLarge = 0
	piSmall = 1
)

// pi is the index of a pool in counters.pool, as a block's small flag
// gives it: one byte load, no branch.
func pi(small bool) int { return int(b2u(small)) }

// counters are DeviceStats as the allocator keeps them: per pool, all of
// a pool's gauges in one record (poolStats), and the aggregate's peaks.
// The aggregate's current, allocated and freed are the pools' sums, read
// when the statistics are (Allocator.Stats), so that an allocation or a
// free updates one pool instead of the pool and the aggregate. A malloc or
// a free finds its pool's record once (pools) and updates each statistic
// at a fixed offset from it, where a statistic kept apart from the others
// (a [2]gauge per statistic) computed its pool's place anew at each of
// the five or six updates: the statistics were 70 of the model's 390
// instructions an event on gpt-generate.
//
// Active and ActiveBytes differ from Allocation and AllocatedBytes only
// while a block is freed but awaits its stream events (FreeRequested, or a
// warm start's pending blocks): until the first such block they are equal,
// field for field, and only the latter are kept (activeApart false), so
// that an allocation and a free update two statistics fewer. splitActive
// copies them apart for good when the first block is left pending.
type counters struct {
	pool                                        [2]poolStats // piLarge, piSmall
	allPeak                                     [nStats]int64
	NumAllocRetries, NumOOMs, NumSyncAllStreams int64
	NumDeviceAlloc, NumDeviceFree               int64
	MaxSplitSize                                int64
	OversizeAllocations, OversizeSegments       gauge
	activeApart                                 bool
}

// pools returns the record of a pool and of the other one.
func (c *counters) pools(small bool) (p, o *poolStats) {
	i := pi(small) & 1 // & 1: no bounds test
	return &c.pool[i], &c.pool[i^1]
}

// raise adds n > 0 to statistic k of pool p (o the other pool) and
// raises the pool's peak and the aggregate's if the rise passes them,
// which it can only if the current passes the pool's threshold
// (poolStats; then both peaks are tested, and the thresholds shared
// anew). Its test is behind a branch rather than with max: past a
// trace's first moments the peaks are rarely passed, so the branch is
// predicted and the peaks are not stored again at every allocation.
func (c *counters) raise(k int, p, o *poolStats, n int64) {
	g := &p.g[k]
	g.allocated += n
	if cur := g.allocated - g.freed; cur > g.thr {
		// share, written out with the figures at hand.
		h := &o.g[k]
		h.thr = h.allocated - h.freed
		g.peak = max(g.peak, cur)
		all := max(c.allPeak[k], cur+h.thr)
		c.allPeak[k] = all
		g.thr = min(g.peak, all-h.thr)
	}
}

// share sets the thresholds of statistic k of pool p and the other, o,
// from the currents and peaks (poolStats): p has all the room the
// aggregate's peak leaves above the two currents, o none.
func (c *counters) share(k int, p, o *poolStats) {
	g, h := &p.g[k], &o.g[k]
	g.thr = min(g.peak, c.allPeak[k]-h.cur())
	h.thr = h.cur()
}

// shift adds n of either sign to statistic k of pool p (o the other
// pool), without a branch on n's sign (free_block's change of the
// inactive-split statistics has any sign, unpredictably): a decrease
// leaves the peaks, which are never below the currents, as they are.
// The thresholds are shared anew (share) after the peaks are raised.
func (c *counters) shift(k int, p, o *poolStats, n int64) {
	g := &p.g[k]
	g.allocated += max(n, 0)
	g.freed += max(-n, 0)
	cur := g.cur()
	g.peak = max(g.peak, cur)
	c.allPeak[k] = max(c.allPeak[k], cur+o.g[k].cur())
	c.share(k, p, o)
}

// setThresholds sets every threshold anew (share, the room to the small
// pool, which serves most requests), after the peaks or the currents
// were set other than by raise and shift.
func (c *counters) setThresholds() {
	for k := range nStats {
		c.share(k, &c.pool[piSmall], &c.pool[piLarge])
	}
}

// increase adds n > 0 to statistic k of the pool small says.
func (c *counters) increase(k int, small bool, n int64) {
	p, o := c.pools(small)
	c.raise(k, p, o, n)
}

// decrease subtracts n > 0 from statistic k of the pool small says.
func (c *counters) decrease(k int, small bool, n int64) { c.pool[pi(small)&1].g[k].freed += n }

// current is the Current of statistic k at StatArray index i (All, Small
// or Large).
func (c *counters) current(k, i int) int64 {
	switch i {
	case All:
		return c.pool[piSmall].g[k].cur() + c.pool[piLarge].g[k].cur()
	case Small:
		return c.pool[piSmall].g[k].cur()
	}
	return c.pool[piLarge].g[k].cur()
}

// array is statistic k as a StatArray.
func (c *counters) array(k int) StatArray {
	small, large := c.pool[piSmall].g[k].stat(), c.pool[piLarge].g[k].stat()
	all := Stat{Current: small.Current + large.Current, Peak: c.allPeak[k],
		Allocated: small.Allocated + large.Allocated, Freed: small.Freed + large.Freed}
	return StatArray{All: all, Small: small, Large: large}
}

// splitActive starts keeping Active and ActiveBytes apart (see counters).
func (c *counters) splitActive() {
	if !c.activeApart {
		for i := range c.pool {
			p := &c.pool[i].g
			p[sActive], p[sActiveBytes] = p[sAllocation], p[sAllocatedBytes]
		}
		c.allPeak[sActive], c.allPeak[sActiveBytes] = c.allPeak[sAllocation], c.allPeak[sAllocatedBytes]
		c.activeApart = true // the thresholds copied are bounds for the copies
	}
}

// active returns the statistics that hold Active and ActiveBytes now.
func (c *counters) active() (int, int) {
	if c.activeApart {
		return sActive, sActiveBytes
	}
	return sAllocation, sAllocatedBytes
}

// stats returns the counters as DeviceStats.
func (c *counters) stats() Stats {
	active, activeBytes := c.active()
	return Stats{
		Allocation: c.array(sAllocation), Segment: c.array(sSegment), Active: c.array(active),
		InactiveSplit: c.array(sInactiveSplit), AllocatedBytes: c.array(sAllocatedBytes),
		ReservedBytes: c.array(sReservedBytes), ActiveBytes: c.array(activeBytes),
		InactiveSplitBytes: c.array(sInactiveSplitBytes), RequestedBytes: c.array(sRequestedBytes),
		NumAllocRetries: c.NumAllocRetries, NumOOMs: c.NumOOMs, NumSyncAllStreams: c.NumSyncAllStreams,
		NumDeviceAlloc: c.NumDeviceAlloc, NumDeviceFree: c.NumDeviceFree, MaxSplitSize: c.MaxSplitSize,
		OversizeAllocations: c.OversizeAllocations.stat(), OversizeSegments: c.OversizeSegments.stat(),
	}
}

// resetPeak is torch.cuda.reset_peak_memory_stats()
// (DeviceCachingAllocator::resetPeakStats): every peak becomes its
// current value. Active's peaks are reset too when they are kept apart;
// otherwise Allocation's are theirs.
func (c *counters) resetPeak() {
	for k := range nStats {
		for i := range c.pool {
			c.pool[i].g[k].peak = c.pool[i].g[k].cur()
		}
		c.allPeak[k] = c.current(k, All)
	}
	c.OversizeAllocations.peak = c.OversizeAllocations.cur()
	c.OversizeSegments.peak = c.OversizeSegments.cur()
	c.setThresholds()
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
