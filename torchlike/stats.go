package torchlike

import "fmt"

// Stat is c10's Stat: a gauge with its peak and running totals.
type Stat struct{ Current, Peak, Allocated, Freed int64 }

func (s *Stat) increase(n int64) {
	s.Current += n
	s.Peak = max(s.Peak, s.Current)
	s.Allocated += n
}

func (s *Stat) decrease(n int64) {
	s.Current -= n
	s.Freed += n
}

// Stat array indexes, as c10's StatType.
const (
	All   = 0
	Small = 1
	Large = 2
)

// StatArray is one statistic for the aggregate and each pool.
type StatArray [3]Stat

func (s *StatArray) increase(small bool, n int64) {
	s[All].increase(n)
	if small {
		s[Small].increase(n)
	} else {
		s[Large].increase(n)
	}
}

func (s *StatArray) decrease(small bool, n int64) {
	s[All].decrease(n)
	if small {
		s[Small].decrease(n)
	} else {
		s[Large].decrease(n)
	}
}

func (s *StatArray) add(small bool, n int64) {
	if n > 0 {
		s.increase(small, n)
	} else if n < 0 {
		s.decrease(small, -n)
	}
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
