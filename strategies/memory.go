package strategies

import "math"

// Memory is one replay's view of a Device: the bytes the allocator holds
// from it, the device calls it made and their modelled cost. Allocators call
// it for every cudaMalloc/cudaFree/map/unmap; the harness reads it for
// peak-reserved-B, device-mallocs, device-frees and modeled-alloc-sec.
//
// Addresses: the device hands out virtual addresses from a bump pointer
// aligned to the granularity, never reusing a range. Real drivers do reuse
// freed ranges; the only rule that sees addresses is PyTorch's best-fit tie
// break, so `membench validate` replaces this choice with the recorded
// addresses through the torch model's own hook (torchlike.Allocator's
// AddrHook). Assumption, stated in the README.
type Memory struct {
	Dev *Device

	used, peak     int64
	mallocs, frees int64
	// ps is the modelled time in picoseconds: integer sums keep the
	// reported seconds exact and independent of summation order.
	ps int64
	// hits counts the allocations served from the allocator's cache
	// (Hit), charged when the time is read (Seconds): a count is one
	// increment a malloc, where charging each was a load, a test and a
	// branch (every charge is non-negative, so that the saturating sum
	// does not depend on its order).
	hits int64
	cost costs
	next int64

	// Limit, if > 0, caps the bytes the allocator may hold below the
	// device capacity (used by capacity search).
	Limit int64

	// Share, when set, is the device as several processes see it
	// (colocation): what the others hold is not available to this one.
	// Reserved and Peak stay this process's own.
	Share *Share
}

// Share is one device's memory held by all the processes on it: each
// process's Memory adds to it what it takes and subtracts what it gives
// back, and finds available only what none holds.
type Share struct{ used, peak int64 }

// Used is what every process on the device holds; Peak its maximum.
func (s *Share) Used() int64 { return s.used }
func (s *Share) Peak() int64 { return s.peak }

func (s *Share) add(n int64) {
	if s == nil {
		return
	}
	s.used += n
	s.peak = max(s.peak, s.used)
}

// vaBase is where simulated device addresses start: high, 2 MiB aligned,
// and well clear of 0 so that an address is never mistaken for "none".
const vaBase int64 = 0x7f0000000000

// NewMemory starts a replay on d.
func NewMemory(d *Device) *Memory {
	return &Memory{Dev: d, next: vaBase, cost: costs{
		malloc: picos(d.MallocSec), free: picos(d.FreeSec), mapPage: picos(d.MapSec),
		unmapPage: picos(d.UnmapSec), hit: picos(d.HitSec)}}
}

type costs struct{ malloc, free, mapPage, unmapPage, hit int64 }

// picos converts seconds to picoseconds, saturating: device figures are
// bounded when parsed (ParseDevice), but a relocation's bytes over a
// bandwidth can still be large.
func picos(sec float64) int64 {
	ps := sec*1e12 + 0.5
	if !(ps < math.MaxInt64) {
		return math.MaxInt64
	}
	return int64(ps)
}

// charge adds ps picoseconds to the modelled time, saturating at the
// largest int64 (about 107 days) rather than wrapping to a negative time.
func (m *Memory) charge(ps int64) { m.ps = addSat(m.ps, ps) }

// addSat is a+b for non-negative operands, saturating.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat is n·c for non-negative operands, saturating.
func mulSat(n, c int64) int64 {
	if c != 0 && n > math.MaxInt64/c {
		return math.MaxInt64
	}
	return n * c
}

func (m *Memory) capacity() int64 {
	if m.Limit > 0 && m.Limit < m.Dev.Capacity {
		return m.Limit
	}
	return m.Dev.Capacity
}

// Available is what the device could still hand out.
func (m *Memory) Available() int64 {
	if m.Share != nil {
		return m.capacity() - m.Share.used
	}
	return m.capacity() - m.used
}

// Reserved is the bytes currently held; Peak its maximum so far.
func (m *Memory) Reserved() int64 { return m.used }
func (m *Memory) Peak() int64     { return m.peak }

// Mallocs and Frees count device calls (cudaMalloc or one map_block call;
// cudaFree or one unmap).
func (m *Memory) Mallocs() int64 { return m.mallocs }
func (m *Memory) Frees() int64   { return m.frees }

// Seconds is the modelled time of every device call and cache hit.
func (m *Memory) Seconds() float64 {
	return float64(addSat(m.ps, mulSat(m.hits, m.cost.hit))) / 1e12
}

func (m *Memory) take(size int64) {
	m.used += size
	m.Share.add(size)
	if m.used > m.peak {
		m.peak = m.used
	}
}

// Malloc is one cudaMalloc(size): it fails without side effects when the
// device has not size bytes left.
func (m *Memory) Malloc(size int64) (addr int64, ok bool) {
	if size <= 0 || size > m.Available() {
		return 0, false
	}
	m.take(size)
	m.mallocs++
	m.charge(m.cost.malloc)
	return m.Address(size), true
}

// Seed counts size bytes as already held when a replay starts from a
// recorded mid-run layout: no device call, no cost.
func (m *Memory) Seed(size int64) { m.take(size) }

// Free is one cudaFree of a range Malloc returned.
func (m *Memory) Free(size int64) {
	m.used -= size
	m.Share.add(-size)
	m.frees++
	m.charge(m.cost.free)
}

// Address reserves size bytes of virtual address space
// (cuMemAddressReserve) without physical memory.
func (m *Memory) Address(size int64) int64 {
	a := m.next
	g := m.Dev.Granularity
	if g <= 0 {
		g = 2 * MiB
	}
	m.next += (size + g - 1) / g * g
	return a
}

// Map backs size bytes made of pages physical pages (cuMemCreate +
// cuMemMap for each page, counted as one device allocation as PyTorch's
// num_device_alloc counts map_block). It fails without side effects when
// the device lacks the memory.
func (m *Memory) Map(size int64, pages int64) bool {
	if size > m.Available() {
		return false
	}
	m.take(size)
	m.mallocs++
	m.charge(mulSat(pages, m.cost.mapPage))
	return true
}

// Unmap releases size bytes in pages pages.
func (m *Memory) Unmap(size int64, pages int64) {
	m.used -= size
	m.Share.add(-size)
	m.frees++
	m.charge(mulSat(pages, m.cost.unmapPage))
}

// Hit charges an allocation served from the allocator's cache (counted:
// Seconds charges the hits).
func (m *Memory) Hit() { m.hits++ }

// Move charges a relocation of bytes live bytes: read and write once over
// the HBM, or out to the host and back when the device cannot copy in place.
func (m *Memory) Move(bytes int64, viaHost bool) {
	bw := m.Dev.HBMBytesPerSec
	if viaHost {
		bw = m.Dev.HostBytesPerSec
	}
	if bw > 0 {
		m.charge(picos(float64(bytes) * 2 / bw))
	}
}
