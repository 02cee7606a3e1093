package torchlike

// Scenarios of PyTorch's own caching-allocator tests, replayed against the
// model. Each case names the upstream test it comes from (file and test
// function) and restates that test's expectations; where the upstream test
// only says "this must not raise", the case adds the exact statistics that
// c10/cuda/CUDACachingAllocator.cpp produces for the same sequence, and its
// comment says they are derived.
//
// Upstream files read (pytorch/pytorch): test/test_cuda.py (classes
// TestCuda, TestCudaMallocAsync, TestMemPool), test/test_cuda_multigpu.py
// (TestCudaMultiGPU) and test/test_cuda_expandable_segments.py, which
// reruns TestCuda and TestCudaMallocAsync with expandable_segments:True;
// the cases whose expectations hold in both modes run in both.
//
// Translation rules:
//   - torch.empty/rand/zeros of n bytes is one malloc of n bytes (float32
//     tensors: 4 bytes an element); `del t` is a free; a Python temporary
//     (`torch.rand(...)` not assigned) is an alloc followed by a free.
//   - NativeCachingAllocator::allocate never calls malloc for size 0: a
//     zero-size tensor is no request at all (op layer, below).
//   - t.record_stream(s) followed by `del t` is FreeRequested (the block
//     stays active, pending its event); the event completing is
//     FreeCompleted. Events never complete on their own in the model, which
//     is the case the upstream tests provoke with torch.cuda._sleep.
//   - torch.cuda.memory._set_allocator_settings(conf) replaces
//     max_split_size, roundup_power2_divisions and
//     garbage_collection_threshold with conf's values or their defaults
//     (AcceleratorAllocatorConfig::parseArgs resets those three) and sets
//     the other keys conf names.
//   - torch.cuda.reset_peak_memory_stats sets every peak to its current
//     value (DeviceCachingAllocator::resetPeakStats).
//   - memory_allocated/max_memory_allocated/memory_reserved/
//     max_memory_reserved are allocated_bytes.all.{current,peak} and
//     reserved_bytes.all.{current,peak}; mem_get_info's free figure is the
//     device's Available().
//
// After every op the runner calls Check and the cross-check of
// test_cuda_multigpu.py:_check_memory_stat_consistency (statistics
// recounted from the snapshot/layout), so every case also exercises that.

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"membench/strategies"
)

// pop is one step of a replayed upstream test.
type pop struct {
	kind   string // alloc, del, freereq, freedone, empty, settings, resetpeak, do
	id     int
	size   int64
	stream int64
	conf   string
	fn     func(t *testing.T, s *psim)
}

func tAlloc(id int, size int64) pop { return pop{kind: "alloc", id: id, size: size} }
func tAllocOn(id int, size, stream int64) pop {
	return pop{kind: "alloc", id: id, size: size, stream: stream}
}
func tDel(id int) pop { return pop{kind: "del", id: id} }

// tRecordedDel is `del t` after t.record_stream(other): the free is
// requested, the block waits for its event.
func tRecordedDel(id int) pop { return pop{kind: "freereq", id: id} }

// tEventsDone is the recorded stream's event completing (process_events).
func tEventsDone(id int) pop             { return pop{kind: "freedone", id: id} }
func tEmpty() pop                        { return pop{kind: "empty"} }
func tSettings(conf string) pop          { return pop{kind: "settings", conf: conf} }
func tResetPeak() pop                    { return pop{kind: "resetpeak"} }
func tDo(fn func(*testing.T, *psim)) pop { return pop{kind: "do", fn: fn} }

// tTemp is a Python temporary: allocated and dropped at once.
func tTemp(id int, size int64) []pop { return []pop{tAlloc(id, size), tDel(id)} }

// tExpect checks torch.cuda.memory_stats() keys mid-sequence.
func tExpect(want map[string]int64) pop {
	return tDo(func(t *testing.T, s *psim) {
		t.Helper()
		m := s.a.Stats().Map()
		for _, k := range sortedKeys(want) {
			if got, ok := m[k]; !ok || got != want[k] {
				t.Errorf("op %d: stat %s = %d, want %d", s.step, k, got, want[k])
			}
		}
	})
}

// tMark remembers a stat so that tDelta can check how much it moved.
func tMark(key string) pop {
	return tDo(func(t *testing.T, s *psim) { s.marks[key] = s.stat(key) })
}

func tDelta(key string, want int64) pop {
	return tDo(func(t *testing.T, s *psim) {
		t.Helper()
		if got := s.stat(key) - s.marks[key]; got != want {
			t.Errorf("op %d: %s moved by %d, want %d", s.step, key, got, want)
		}
		s.marks[key] = s.stat(key)
	})
}

func seq(parts ...any) []pop {
	var out []pop
	for _, p := range parts {
		switch p := p.(type) {
		case pop:
			out = append(out, p)
		case []pop:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("seq: %T", p))
		}
	}
	return out
}

// psim is one replay: the allocator, the live tensors by id, and what the
// snapshot's trace recorded.
type psim struct {
	t     *testing.T
	a     *Allocator
	live  map[int]strategies.Handle // -1: a zero-size tensor
	trace []string
	ooms  []int
	marks map[string]int64
	step  int
}

const zeroSize strategies.Handle = -1

// newTorch builds the allocator the spec torch:knobs configures on device.
func newTorch(t *testing.T, knobs, device string) *Allocator {
	t.Helper()
	cfg := parseTorch(t, knobs)
	dev, err := strategies.ParseDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, strategies.NewMemory(&dev))
}

func newPsim(t *testing.T, knobs, device string) *psim {
	t.Helper()
	if device == "" {
		device = "a100-80g"
	}
	s := &psim{t: t, a: newTorch(t, knobs, device), live: map[int]strategies.Handle{}, marks: map[string]int64{}}
	s.a.OnTrace = func(act string, addr, size, stream int64) {
		s.trace = append(s.trace, fmt.Sprintf("%s %d", act, size))
	}
	return s
}

func (s *psim) stat(key string) int64 {
	v, ok := s.a.Stats().Map()[key]
	if !ok {
		s.t.Fatalf("no stat %q", key)
	}
	return v
}

func (s *psim) addr(id int) int64 {
	h, ok := s.live[id]
	if !ok || h == zeroSize {
		s.t.Fatalf("tensor %d is not live", id)
	}
	return s.a.Addr(h)
}

func (s *psim) apply(o pop) {
	t := s.t
	t.Helper()
	s.step++
	switch o.kind {
	case "alloc":
		if _, dup := s.live[o.id]; dup {
			t.Fatalf("op %d: tensor %d allocated twice", s.step, o.id)
		}
		if o.size == 0 {
			s.live[o.id] = zeroSize
			break
		}
		h, ok := s.a.Malloc(o.size, o.stream)
		if !ok {
			s.ooms = append(s.ooms, o.id)
			break
		}
		s.live[o.id] = h
	case "del", "freereq", "freedone":
		h, ok := s.live[o.id]
		if !ok {
			t.Fatalf("op %d: %s of tensor %d, which is not live", s.step, o.kind, o.id)
		}
		if h != zeroSize {
			switch o.kind {
			case "del":
				s.a.Free(h)
			case "freereq":
				s.a.FreeRequested(h)
			case "freedone":
				s.a.FreeCompleted(h)
			}
		}
		if o.kind != "freereq" {
			delete(s.live, o.id)
		}
	case "empty":
		s.a.EmptyCache()
	case "settings":
		if err := applySettings(s.a, o.conf); err != nil {
			t.Fatalf("op %d: settings %q: %v", s.step, o.conf, err)
		}
	case "resetpeak":
		resetPeakStats(s.a)
	case "do":
		o.fn(t, s)
	default:
		t.Fatalf("unknown op %q", o.kind)
	}
	if err := s.a.Check(); err != nil {
		t.Fatalf("after op %d (%s %d): %v\n%s", s.step, o.kind, o.id, err, layoutString(s.a))
	}
	if err := checkStatConsistency(s.a); err != nil {
		t.Fatalf("after op %d (%s %d): %v\n%s", s.step, o.kind, o.id, err, layoutString(s.a))
	}
}

// applySettings is torch.cuda.memory._set_allocator_settings(conf).
func applySettings(a *Allocator, conf string) error {
	sp, err := strategies.ParseSpec("torch:" + conf)
	if err != nil {
		return err
	}
	c, err := ParseConfig(sp)
	if err != nil {
		return err
	}
	// Reset to their defaults unless given (AcceleratorAllocatorConfig::parseArgs).
	a.cfg.MaxSplitSize = c.MaxSplitSize
	a.cfg.Divisions = c.Divisions
	a.cfg.GCThreshold = c.GCThreshold
	for _, p := range sp.Params {
		switch p.Key {
		case "expandable_segments":
			a.cfg.ExpandableSegments = c.ExpandableSegments
		case "max_non_split_rounding_mb":
			a.cfg.MaxNonSplitRounding = c.MaxNonSplitRounding
		}
	}
	return nil
}

// resetPeakStats is torch.cuda.reset_peak_memory_stats().
func resetPeakStats(a *Allocator) { a.stats.resetPeak() }

// checkStatConsistency is test_cuda_multigpu.py:_check_memory_stat_consistency:
// the current statistics recounted from the snapshot (one entry per
// segment; expandable segments are not counted as segments and their
// free blocks are not inactive_split). Unlike upstream it also checks the
// keys that recount to zero.
func checkStatConsistency(a *Allocator) error {
	if a.cfg.NoCaching {
		return nil
	}
	// Recounted in an array, by counter and by pool (all, small, large),
	// and turned into memory_stats() keys once: building two keys for
	// every block took most of the upstream cases' time, since this
	// check runs after every operation.
	const (
		segment = iota
		allocation
		active
		inactiveSplit
		allocatedBytes
		reservedBytes
		activeBytes
		inactiveSplitBytes
		requestedBytes
	)
	names := [...]string{"segment", "allocation", "active", "inactive_split", "allocated_bytes",
		"reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"}
	var count [len(names)][3]int64
	var err error
	a.Layout(func(seg strategies.Segment) {
		pool, _, _ := strings.Cut(seg.Pool, "-")
		var p int
		switch pool {
		case "small":
			p = 1
		case "large":
			p = 2
		default:
			err = fmt.Errorf("segment at %#x in pool %q: memory_stats() has no such pool", seg.Addr, seg.Pool)
			return
		}
		add := func(stat int, n int64) {
			count[stat][0] += n
			count[stat][p] += n
		}
		expandable := strings.HasSuffix(seg.Pool, "-expandable")
		if !expandable {
			add(segment, 1)
		}
		split := len(seg.Blocks) > 1
		for _, b := range seg.Blocks {
			switch b.State {
			case strategies.BlockUnmapped:
				continue
			case strategies.BlockAllocated:
				add(allocation, 1)
				add(allocatedBytes, b.Size)
				fallthrough
			case strategies.BlockPending:
				add(active, 1)
				add(activeBytes, b.Size)
				add(requestedBytes, b.Requested)
			case strategies.BlockFree:
				if split && !expandable {
					add(inactiveSplit, 1)
					add(inactiveSplitBytes, b.Size)
				}
			}
			add(reservedBytes, b.Size)
		}
	})
	if err != nil {
		return err
	}
	want := map[string]int64{}
	for i, name := range names {
		for p, pool := range []string{"all", "small_pool", "large_pool"} {
			want[name+"."+pool+".current"] = count[i][p]
		}
	}
	got := a.Stats().Map()
	for _, k := range sortedKeys(want) {
		if got[k] != want[k] {
			return fmt.Errorf("memory_stats()[%q] = %d, the snapshot recounts %d", k, got[k], want[k])
		}
	}
	return nil
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// pcase is one upstream scenario: configuration, device, ops, and what
// must hold afterwards.
type pcase struct {
	name   string // upstream file:Class.test_function (and variant)
	knobs  string
	device string // strategies.ParseDevice spec; "" = a100-80g (80 GiB total)
	ops    []pop
	ooms   []int    // ids whose allocation must raise OutOfMemoryError
	layout string   // layoutString at the end
	trace  []string // segment/oom events of the whole run
	stats  map[string]int64
}

func runP(t *testing.T, c pcase) *psim {
	t.Helper()
	s := newPsim(t, c.knobs, c.device)
	for _, o := range c.ops {
		s.apply(o)
	}
	if fmt.Sprint(s.ooms) != fmt.Sprint(c.ooms) && !(len(s.ooms) == 0 && len(c.ooms) == 0) {
		t.Errorf("allocations that raised OutOfMemoryError: %v, want %v", s.ooms, c.ooms)
	}
	if c.layout != "" {
		if got := layoutString(s.a); got != strings.TrimSpace(c.layout) {
			t.Errorf("layout:\n%s\nwant:\n%s", got, strings.TrimSpace(c.layout))
		}
	}
	if c.trace != nil && strings.Join(s.trace, "\n") != strings.Join(c.trace, "\n") {
		t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(s.trace, "\n"), strings.Join(c.trace, "\n"))
	}
	m := s.a.Stats().Map()
	for _, k := range sortedKeys(c.stats) {
		if got, ok := m[k]; !ok || got != c.stats[k] {
			t.Errorf("stat %s = %d, want %d", k, got, c.stats[k])
		}
	}
	return s
}

func ceilTo(x, m int64) int64 { return (x + m - 1) / m * m }

const (
	esKnobs = "expandable_segments:True"
	a100    = int64(81920) * MiB // a100-80g: cudaMemGetInfo total
	// fraction120 is the per-process fraction that allows exactly 120 MiB
	// of an a100-80g (3/2048, exact in binary), as
	// test_max_split_expandable and test_garbage_collect_expandable
	// compute it from mem_get_info with nothing reserved beforehand.
	fraction120 = "0.00146484375"
)

// ---------------------------------------------------------------------------
// test_cuda_multigpu.py:TestCudaMultiGPU._test_memory_stats_generator

// changeTracker is _test_memory_stats_generator's assert_change and the
// last/max values it carries from one call to the next.
type changeTracker struct{ m, maxM, r, maxR int64 }

func (ct *changeTracker) change(comp int64, emptyCache, resetPeak bool) pop {
	return tDo(func(t *testing.T, s *psim) {
		t.Helper()
		m, maxM := s.stat("allocated_bytes.all.current"), s.stat("allocated_bytes.all.peak")
		switch {
		case comp > 0 && !(m > ct.m):
			t.Errorf("op %d: memory_allocated %d did not increase from %d", s.step, m, ct.m)
		case comp < 0 && !(m < ct.m):
			t.Errorf("op %d: memory_allocated %d did not decrease from %d", s.step, m, ct.m)
		case comp == 0 && m != ct.m:
			t.Errorf("op %d: memory_allocated %d changed from %d", s.step, m, ct.m)
		}
		if m > maxM || maxM < ct.maxM {
			t.Errorf("op %d: max_memory_allocated %d (was %d) below memory_allocated %d or fell", s.step, maxM, ct.maxM, m)
		}
		ct.m, ct.maxM = m, maxM
		r, maxR := s.stat("reserved_bytes.all.current"), s.stat("reserved_bytes.all.peak")
		if r > maxR || maxR < ct.maxR {
			t.Errorf("op %d: max_memory_reserved %d (was %d) below memory_reserved %d or fell", s.step, maxR, ct.maxR, r)
		}
		ct.r, ct.maxR = r, maxR
		if emptyCache {
			sync1, alloc1, free1 := s.stat("num_sync_all_streams"), s.stat("num_device_alloc"), s.stat("num_device_free")
			if m > 0 && alloc1 < 1 {
				t.Errorf("op %d: %d bytes allocated but num_device_alloc = %d", s.step, m, alloc1)
			}
			s.a.EmptyCache()
			if got := s.stat("num_sync_all_streams"); got != sync1+1 {
				t.Errorf("op %d: empty_cache: num_sync_all_streams %d -> %d, want +1", s.step, sync1, got)
			}
			if s.stat("num_device_alloc") < alloc1 || s.stat("num_device_free") < free1 {
				t.Errorf("op %d: empty_cache: device call counters fell", s.step)
			}
			r2, maxR2 := s.stat("reserved_bytes.all.current"), s.stat("reserved_bytes.all.peak")
			if r2 > ct.r || r2 > maxR2 || maxR2 != ct.maxR {
				t.Errorf("op %d: empty_cache: reserved %d -> %d, peak %d -> %d", s.step, ct.r, r2, ct.maxR, maxR2)
			}
			ct.r = r2
		}
		if resetPeak {
			resetPeakStats(s.a)
			ct.maxM, ct.maxR = ct.m, ct.r
		}
	})
}

// memoryStatsSteps is the generator as a list of steps (what it does
// between two yields). tensors2 is shuffled by perm, as torch.randperm does.
func memoryStatsSteps(perm *rand.Rand, expandable bool) [][]pop {
	const N = 35
	ct := &changeTracker{}
	var steps [][]pop
	var cur []pop
	yield := func() { steps = append(steps, cur); cur = nil }
	do := func(ps ...pop) { cur = append(cur, ps...) }

	do(ct.change(0, false, false), ct.change(0, false, true), ct.change(0, true, false),
		ct.change(0, false, true), ct.change(0, false, false))
	yield()

	// tensors1 = [alloc(1), alloc(10, 20), alloc(200, 300, 2000)]
	// The 480 MB tensor gets a ceil_to(2 MiB) segment whose 247808-byte
	// tail (< 1 MiB) stays attached to it; with expandable segments it is
	// split off (rem >= 512), so the block is the request itself.
	big := int64(480247808)
	if expandable {
		big = 480000000
	}
	m1 := 512 + 1024 + big
	do(tAlloc(1, 4), tAlloc(2, 800), tAlloc(3, 4*200*300*2000),
		tExpect(map[string]int64{"allocated_bytes.all.current": m1}), ct.change(1, false, false))
	yield()

	type tensor struct {
		id    int
		numel int64
	}
	var tensors2 []tensor
	next := 100
	newT := func(numel int64) {
		do(tAlloc(next, 4*numel))
		tensors2 = append(tensors2, tensor{next, numel})
		next++
	}
	for i := int64(1); i <= N/2; i++ { // small ones
		newT(i * i * 4)
		do(ct.change(1, false, false))
		yield()
	}
	for i := int64(5); i < N/2+5; i++ { // large ones
		newT(i * i * 7 * i * 9 * i * 11)
		do(ct.change(1, false, i%2 == 0))
		yield()
	}
	newT(0) // alloc(0, 0, 0): no request
	do(ct.change(0, false, false))
	yield()

	permute := make([]tensor, len(tensors2))
	for i, j := range perm.Perm(len(tensors2)) {
		permute[i] = tensors2[j]
		do(ct.change(0, false, false))
		yield()
	}
	// del tensors2; tensors2 = permute; del permute: references only.
	for k := 0; k < 3; k++ {
		do(ct.change(0, false, k == 2))
		yield()
	}
	tensors2 = permute
	for i := 0; i < N/2; i++ {
		x := tensors2[i].numel
		do(tDel(tensors2[i].id))
		tensors2 = append(tensors2[:i], tensors2[i+1:]...)
		do(ct.change(-x, false, false))
		yield()
	}
	for i := int64(2); i < 2*N/3+2; i++ {
		newT(i * i * 3 * i * 8)
		do(ct.change(1, false, false))
		yield()
	}
	for _, x := range tensors2 {
		do(tDel(x.id))
	}
	do(ct.change(-1, false, true), ct.change(0, false, false),
		tExpect(map[string]int64{"allocated_bytes.all.current": m1}))
	yield()

	do(tDel(1), tDel(2), tDel(3), ct.change(-1, false, true),
		tExpect(map[string]int64{"allocated_bytes.all.current": 0}),
		ct.change(0, true, false), ct.change(0, false, true),
		// derived: nothing is live or pending, so empty_cache returned
		// every segment (or unmapped every page).
		tExpect(map[string]int64{"reserved_bytes.all.current": 0, "segment.all.current": 0, "active.all.current": 0}))
	yield()
	return steps
}

func TestUpstreamMemoryStatsGenerator(t *testing.T) {
	for _, es := range []bool{false, true} {
		knobs, suffix := "", ""
		if es {
			knobs, suffix = esKnobs, "/expandable_segments"
		}
		// test_cuda_multigpu.py:TestCudaMultiGPU.test_memory_stats: the
		// generator on one device, stats recounted after every step.
		t.Run("test_cuda_multigpu.py:test_memory_stats"+suffix, func(t *testing.T) {
			s := newPsim(t, knobs, "")
			for _, step := range memoryStatsSteps(rand.New(rand.NewSource(1)), es) {
				for _, o := range step {
					s.apply(o)
				}
			}
			if len(s.ooms) > 0 {
				t.Errorf("OOMs: %v", s.ooms)
			}
		})
		// test_cuda_multigpu.py:TestCudaMultiGPU.test_memory_stats_multigpu:
		// two devices (two allocators) advanced in lock step, then in a
		// semi-random order (gen1 advances 0-2 steps per gen0 step).
		t.Run("test_cuda_multigpu.py:test_memory_stats_multigpu"+suffix, func(t *testing.T) {
			order := rand.New(rand.NewSource(2))
			for round := 0; round < 2; round++ {
				d0, d1 := newPsim(t, knobs, ""), newPsim(t, knobs, "")
				g0 := memoryStatsSteps(rand.New(rand.NewSource(3)), es)
				g1 := memoryStatsSteps(rand.New(rand.NewSource(4)), es)
				i0, i1 := 0, 0
				for i0 < len(g0) || i1 < len(g1) {
					if i0 < len(g0) {
						for _, o := range g0[i0] {
							d0.apply(o)
						}
						i0++
					}
					n := 1
					if round == 1 {
						n = order.Intn(3)
						if i0 == len(g0) {
							n = len(g1)
						}
					}
					for ; n > 0 && i1 < len(g1); n-- {
						for _, o := range g1[i1] {
							d1.apply(o)
						}
						i1++
					}
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------

func TestUpstreamCases(t *testing.T) {
	var cases []pcase

	// test_cuda.py:TestCuda.test_memory_stats: torch.randn(256) makes
	// active_bytes.all.current grow by exactly 1 KiB with nothing freed;
	// del + empty_cache bring it back, active_bytes.all.freed = 1024, and
	// after reset_peak_memory_stats max_memory_allocated/reserved are back
	// at their (zero) starting values.
	for _, knobs := range []string{"", esKnobs} {
		cases = append(cases, pcase{
			name: "test_cuda.py:TestCuda.test_memory_stats" + suffixFor(knobs), knobs: knobs,
			ops: seq(tAlloc(1, 256*4),
				tExpect(map[string]int64{"active_bytes.all.current": 1024, "active_bytes.all.freed": 0}),
				tDel(1), tEmpty(),
				tExpect(map[string]int64{"active_bytes.all.current": 0, "active_bytes.all.freed": 1024}),
				tResetPeak()),
			stats: map[string]int64{"allocated_bytes.all.peak": 0, "reserved_bytes.all.peak": 0},
		})
	}

	// test_cuda.py:TestCuda.test_memory_allocation:
	// caching_allocator_alloc(1) raises memory_allocated, deleting it
	// restores it (here: by the 512-byte minimum block).
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCuda.test_memory_allocation",
		ops: seq(tAlloc(1, 1), tExpect(map[string]int64{"allocated_bytes.all.current": 512}),
			tDel(1), tExpect(map[string]int64{"allocated_bytes.all.current": 0})),
	})

	// test_cuda.py:TestCuda.test_out_of_memory: with a live 4 KiB tensor,
	// torch.empty(1024**3 * 800000000, int8) raises "Tried to allocate
	// 800000000.00 GiB" and leaves the live tensor alone. (Its second
	// half, "Tried to allocate more than 1EB memory", is checked by
	// NativeCachingAllocator::allocate before malloc: outside the model.)
	for _, knobs := range []string{"", esKnobs} {
		cases = append(cases, pcase{
			name: "test_cuda.py:TestCuda.test_out_of_memory" + suffixFor(knobs), knobs: knobs,
			ops: seq(tAlloc(1, 4096), tAlloc(2, 1024*1024*1024*800000000),
				tDo(func(t *testing.T, s *psim) {
					if msg := s.a.LastOOM().Message; !strings.Contains(msg, "Tried to allocate 800000000.00 GiB") {
						t.Errorf("OOM message %q", msg)
					}
				})),
			ooms:  []int{2},
			stats: map[string]int64{"num_ooms": 1, "allocated_bytes.all.current": 4096, "allocation.all.current": 1},
		})
	}

	// test_cuda.py:TestCuda.test_out_of_memory_retry on an a100-80g
	// (total 81920 MiB, 81408 MiB obtainable): a = half the total memory
	// succeeds, a second half raises, after `del a` it succeeds.
	// Derived: the second success reuses a's cached block (same address,
	// no new device allocation); the failure cost one counted retry.
	half := a100 / 2
	reuse := tDo(func(t *testing.T, s *psim) {
		if s.addr(3) != s.marks["addr"] {
			t.Errorf("b at %#x, a was at %#x: cached block not reused", s.addr(3), s.marks["addr"])
		}
	})
	markA := tDo(func(t *testing.T, s *psim) { s.marks["addr"] = s.addr(1) })
	cases = append(cases, pcase{
		name:  "test_cuda.py:TestCuda.test_out_of_memory_retry",
		ops:   seq(tEmpty(), tAlloc(1, half), markA, tAlloc(2, half), tDel(1), tAlloc(3, half), reuse, tDel(3), tEmpty()),
		ooms:  []int{2},
		trace: []string{"segment_alloc 42949672960", "oom 42949672960", "segment_free 42949672960"},
		stats: map[string]int64{"num_ooms": 1, "num_alloc_retries": 1, "num_device_alloc": 1, "reserved_bytes.all.current": 0},
	}, pcase{
		name: "test_cuda.py:TestCuda.test_out_of_memory_retry/expandable_segments", knobs: esKnobs,
		ops:   seq(tEmpty(), tAlloc(1, half), markA, tAlloc(2, half), tDel(1), tAlloc(3, half), reuse, tDel(3), tEmpty()),
		ooms:  []int{2},
		trace: []string{"segment_map 42949672960", "oom 42949672960", "segment_unmap 42949672960"},
		stats: map[string]int64{"num_ooms": 1, "num_alloc_retries": 1, "num_device_alloc": 1, "reserved_bytes.all.current": 0},
	})

	// test_cuda.py:TestCuda.test_set_per_process_memory_fraction on an
	// a100-80g: with fraction 0.5, int(total*0.499) - max_memory_reserved
	// bytes fit beside a live 4 KiB tensor; int(total*0.5) bytes raise
	// "out of memory". (The fraction is set after the first tensor
	// upstream; nothing before it depends on it.) Derived: the refusal
	// comes from the fraction check, not cudaMalloc, after one retry.
	total := a100 // a variable: Python truncates the float product
	app := int64(float64(total)*0.499) - 2*MiB
	seg := ceilTo(ceilTo(app, 512), 2*MiB)
	esMapped := ceilTo(ceilTo(app, 512), 20*MiB)
	fracOps := seq(tAlloc(1, 4096), tEmpty(), tAlloc(2, app), tDel(2), tEmpty(), tAlloc(3, a100/2))
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCuda.test_set_per_process_memory_fraction", knobs: "per_process_memory_fraction:0.5",
		ops: fracOps, ooms: []int{3},
		trace: []string{"segment_alloc 2097152", fmt.Sprintf("segment_alloc %d", seg), fmt.Sprintf("segment_free %d", seg), "oom 42949672960"},
		stats: map[string]int64{"num_ooms": 1, "num_alloc_retries": 1, "reserved_bytes.all.current": 2 * MiB},
	}, pcase{
		name:  "test_cuda.py:TestCuda.test_set_per_process_memory_fraction/expandable_segments",
		knobs: "per_process_memory_fraction:0.5," + esKnobs, ops: fracOps, ooms: []int{3},
		trace: []string{"segment_map 2097152", fmt.Sprintf("segment_map %d", esMapped), fmt.Sprintf("segment_unmap %d", esMapped), "oom 42949672960"},
		stats: map[string]int64{"num_ooms": 1, "num_alloc_retries": 1, "reserved_bytes.all.current": 2 * MiB},
	})

	// test_cuda.py:TestCuda.test_record_stream: tmp (4 floats) is made on
	// a side stream, used on the current stream (record_stream) and
	// dropped; a new 4-float tensor on the side stream must not get its
	// block while the copy is pending ("allocation reused too soon"), and
	// must get it once the current stream has synchronized ("allocation
	// not reused").
	const side = 7
	for _, knobs := range []string{"", esKnobs} {
		cases = append(cases, pcase{
			name: "test_cuda.py:TestCuda.test_record_stream" + suffixFor(knobs), knobs: knobs,
			ops: seq(tAlloc(1, 16), // result, current stream
				tAllocOn(2, 16, side), tDo(func(t *testing.T, s *psim) { s.marks["ptr"] = s.addr(2) }),
				tRecordedDel(2),
				tAllocOn(3, 16, side),
				tDo(func(t *testing.T, s *psim) {
					if s.addr(3) == s.marks["ptr"] {
						t.Errorf("allocation reused too soon")
					}
				}),
				tEventsDone(2), // torch.cuda.current_stream().synchronize()
				tAllocOn(4, 16, side),
				tDo(func(t *testing.T, s *psim) {
					if s.addr(4) != s.marks["ptr"] {
						t.Errorf("allocation not reused: %#x, want %#x", s.addr(4), s.marks["ptr"])
					}
				})),
		})
	}

	// test_cuda.py:TestCuda.test_record_stream_on_shifted_view: a block
	// whose view was recorded on another (busy) stream is not reused by
	// the allocating stream after `del`, even once that stream synced.
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCuda.test_record_stream_on_shifted_view",
		ops: seq(tAllocOn(1, 8, side), tDo(func(t *testing.T, s *psim) { s.marks["ptr"] = s.addr(1) }),
			tRecordedDel(1), tAllocOn(2, 8, side),
			tDo(func(t *testing.T, s *psim) {
				if s.addr(2) == s.marks["ptr"] {
					t.Errorf("try_realloc got the recorded block")
				}
			})),
		stats: map[string]int64{"active.all.current": 2, "allocation.all.current": 1},
	})

	// test_cuda.py:TestCuda.test_caching_allocator_record_stream_oom
	// (issue #19219): 100 iterations each allocate 160 MiB on the current
	// stream, record it on a side stream and drop it; allocations held back
	// by record_stream must be freed by the OOM retry instead of raising.
	// Device: 1 GiB (upstream relies on the real card filling up).
	// Derived: y + 5 pending x fill 960 MiB, so every 5th allocation
	// fails, synchronizes (freeing the 5 pending blocks) and retries:
	// 19 retries, no OOM; the final empty_cache leaves y alone.
	var rsOps []pop
	rsOps = append(rsOps, tAllocOn(1000, 160*MiB, side))
	for i := 0; i < 100; i++ {
		rsOps = append(rsOps, tAlloc(i, 160*MiB), tRecordedDel(i))
	}
	rsOps = append(rsOps, tEmpty())
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCuda.test_caching_allocator_record_stream_oom", device: "gpu:capacity=1GiB",
		ops: rsOps,
		stats: map[string]int64{"num_ooms": 0, "num_alloc_retries": 19, "num_sync_all_streams": 20,
			"num_device_alloc": 101, "num_device_free": 100, "reserved_bytes.all.current": 160 * MiB, "segment.all.current": 1},
	}, pcase{
		name: "test_cuda.py:TestCuda.test_caching_allocator_record_stream_oom/expandable_segments", device: "gpu:capacity=1GiB",
		knobs: esKnobs, ops: rsOps,
		stats: map[string]int64{"num_ooms": 0, "num_alloc_retries": 19, "num_sync_all_streams": 20,
			"reserved_bytes.all.current": 160 * MiB, "active.all.current": 1},
	})

	// test_cuda.py:TestCudaMallocAsync.test_memory_snapshot: a 2*311x411
	// float temporary, then `unused` (310x410) and x (311x411) tile one
	// small segment so that x is its second block; 1000 tensors of 128
	// floats (512 B, the minimum block) tile into the same segment and are
	// freed in random order; after del unused, x and empty_cache the last
	// trace action is segment_free (segment_unmap with expandable segments).
	snapshotOps := func() []pop {
		ops := seq(tTemp(1, 2*311*411*4), tAlloc(2, 310*410*4), tAlloc(3, 311*411*4))
		for i := 0; i < 1000; i++ {
			ops = append(ops, tAlloc(10+i, 512))
		}
		ops = append(ops, tExpect(map[string]int64{"allocation.small_pool.current": 1002, "reserved_bytes.all.current": 2 * MiB}))
		for _, i := range rand.New(rand.NewSource(5)).Perm(1000) {
			ops = append(ops, tDel(10+i))
		}
		ops = append(ops, tTemp(5000, 128*5*4)...)
		return append(ops, tDo(func(t *testing.T, s *psim) {
			found := false
			s.a.Layout(func(seg strategies.Segment) {
				for i, b := range seg.Blocks {
					if b.Requested == 311*411*4 {
						found = true
						if i != 1 || b.Addr != s.addr(3) || b.Addr != seg.Addr+ceilTo(310*410*4, 512) {
							t.Errorf("x is block %d at %#x of the segment at %#x", i, b.Addr, seg.Addr)
						}
					}
				}
			})
			if !found {
				t.Errorf("no block with requested_size %d", 311*411*4)
			}
		}), tDel(2), tDel(3), tEmpty(), tDo(func(t *testing.T, s *psim) {
			last := s.trace[len(s.trace)-1]
			if !strings.HasPrefix(last, "segment_free ") && !strings.HasPrefix(last, "segment_unmap ") {
				t.Errorf("last trace action %q", last)
			}
		}))
	}
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCudaMallocAsync.test_memory_snapshot", ops: snapshotOps(),
		trace: []string{"segment_alloc 2097152", "segment_free 2097152"},
	}, pcase{
		name: "test_cuda.py:TestCudaMallocAsync.test_memory_snapshot/expandable_segments", knobs: esKnobs,
		ops: snapshotOps(), trace: []string{"segment_map 2097152", "segment_unmap 2097152"},
	})

	// test_cuda.py:TestCudaMallocAsync.test_max_split_expandable: 120 MiB
	// allowed; 40 MiB each from a normal, an expandable and a normal
	// segment (max_split_size_mb:40), a 4th raises; after del all, 120 MiB
	// succeeds: release_cached_blocks runs with an expandable block in the
	// free list. Derived trace: release_available_cached_blocks frees the
	// two oversize cudaMalloc blocks from the largest address down,
	// skipping the expandable one (80 MiB < 120, so it reports failure);
	// release_cached_blocks then unmaps the expandable pages.
	cases = append(cases, pcase{
		name:  "test_cuda.py:TestCudaMallocAsync.test_max_split_expandable",
		knobs: "per_process_memory_fraction:" + fraction120,
		ops: seq(tEmpty(),
			tSettings("expandable_segments:False,max_split_size_mb:40"), tAlloc(1, 40*MiB),
			tSettings("expandable_segments:True,max_split_size_mb:40"), tAlloc(2, 40*MiB),
			tSettings("expandable_segments:False,max_split_size_mb:40"), tAlloc(3, 40*MiB),
			tAlloc(4, 40*MiB), tDel(1), tDel(2), tDel(3), tAlloc(5, 120*MiB)),
		ooms: []int{4},
		trace: []string{"segment_alloc 41943040", "segment_map 41943040", "segment_alloc 41943040", "oom 41943040",
			"segment_free 41943040", "segment_free 41943040", "segment_unmap 41943040", "segment_alloc 125829120"},
		layout: "large: A125829120",
		stats:  map[string]int64{"num_ooms": 1, "num_alloc_retries": 2, "reserved_bytes.all.current": 120 * MiB},
	})

	// test_cuda.py:TestCudaMallocAsync.test_garbage_collect_expandable:
	// 120 MiB allowed, garbage_collection_threshold:0.5; 40 MiB from a
	// normal and 40 MiB from an expandable segment, both freed; 80 MiB
	// must succeed, with GC running while an expandable block is in the
	// free list. Derived: GC (80 MiB reserved > 60 MiB) frees the unsplit
	// 40 MiB segment only; the expandable segment grows by 40 MiB.
	cases = append(cases, pcase{
		name:  "test_cuda.py:TestCudaMallocAsync.test_garbage_collect_expandable",
		knobs: "per_process_memory_fraction:" + fraction120,
		ops: seq(tEmpty(),
			tSettings("expandable_segments:False,garbage_collection_threshold:0.5"), tAlloc(1, 40*MiB),
			tSettings("expandable_segments:True,garbage_collection_threshold:0.5"), tAlloc(2, 40*MiB),
			tDel(1), tDel(2), tAlloc(3, 80*MiB)),
		trace:  []string{"segment_alloc 41943040", "segment_map 41943040", "segment_free 41943040", "segment_map 41943040"},
		layout: "large-expandable: A83886080 U",
		stats:  map[string]int64{"num_ooms": 0, "num_alloc_retries": 0, "reserved_bytes.all.current": 80 * MiB},
	})

	// test_cuda.py:TestCudaMallocAsync.test_allocator_settings: deltas of
	// active_bytes.all.allocated for 21 Mi floats (84 MiB) under changing
	// roundup_power2_divisions: none -> 84 MiB; 4 -> 96 MiB (requested
	// still 84 MiB); a later setting without the key resets it -> 84 MiB;
	// [64:8,...] -> 88 MiB; 100 Mi floats (400 MiB) under 256:2 -> 512 MiB;
	// release_lock_on_cudamalloc:True resets again -> 84 MiB.
	const nbytes, nbig = 21 * MiB * 4, 100 * MiB * 4
	const key, req = "active_bytes.all.allocated", "requested_bytes.all.allocated"
	for _, knobs := range []string{"", esKnobs} {
		cases = append(cases, pcase{
			name: "test_cuda.py:TestCudaMallocAsync.test_allocator_settings" + suffixFor(knobs), knobs: knobs,
			ops: seq(tEmpty(), tMark(key), tSettings(""), tAlloc(1, nbytes), tDelta(key, nbytes),
				tMark(req), tSettings("roundup_power2_divisions:4"), tAlloc(2, nbytes),
				tDelta(key, 96*MiB), tDelta(req, nbytes),
				tSettings("garbage_collection_threshold:0.5"),
				tSettings("garbage_collection_threshold:0.5,max_split_size_mb:40"),
				tEmpty(), tMark(key), tAlloc(3, nbytes), tDelta(key, nbytes),
				tEmpty(), tSettings("garbage_collection_threshold:0.5,roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]"),
				tMark(key), tAlloc(4, nbytes), tDelta(key, 88*MiB),
				tEmpty(), tMark(key), tAlloc(5, nbig), tDelta(key, 512*MiB),
				tEmpty(), tSettings("release_lock_on_cudamalloc:True"),
				tMark(key), tAlloc(6, nbytes), tDel(4), tDelta(key, nbytes)),
		})
	}

	// test_cuda.py:TestCudaMallocAsync.test_cachingAllocator_raw_alloc:
	// raw_alloc of 1 MiB moves requested_bytes.all.allocated by 1 MiB with
	// the caching allocator enabled ...
	cases = append(cases, pcase{
		name: "test_cuda.py:TestCudaMallocAsync.test_cachingAllocator_raw_alloc/enabled",
		ops:  seq(tMark(req), tAlloc(1, MiB), tDelta(req, MiB), tDel(1)),
	}, pcase{
		// ... and by 0 with it disabled (caching_allocator_enable(False),
		// the same uncached_allocate path as PYTORCH_NO_CUDA_MEMORY_CACHING):
		// uncached allocations bypass DeviceStats entirely.
		name:  "test_cuda.py:TestCudaMallocAsync.test_cachingAllocator_raw_alloc/disabled",
		knobs: "PYTORCH_NO_CUDA_MEMORY_CACHING:1",
		ops:   seq(tMark(req), tAlloc(1, MiB), tDelta(req, 0), tDel(1)),
		stats: map[string]int64{"requested_bytes.all.allocated": 0, "reserved_bytes.all.peak": 0, "segment.all.peak": 0},
	})

	// test_cuda.py:TestCudaMallocAsync.test_raises_oom[max_split_size_mb_setting=False/True]:
	// torch.empty(1024**4) floats (4 TiB) raises OutOfMemoryError, with and
	// without max_split_size_mb:1024 (which takes the
	// release_available_cached_blocks path).
	// test_cuda.py:TestCudaMallocAsync.test_notifies_oom: the OOM observer
	// fires; the model's equivalent is the oom trace event (OnTrace).
	for _, knobs := range []string{"", "max_split_size_mb:1024", esKnobs, esKnobs + ",max_split_size_mb:1024"} {
		variant := knobs
		if variant == "" {
			variant = "default"
		}
		cases = append(cases, pcase{
			name:  "test_cuda.py:TestCudaMallocAsync.test_raises_oom+test_notifies_oom/" + variant,
			knobs: knobs, ops: seq(tEmpty(), tAlloc(1, 1024*1024*1024*1024*4)),
			ooms: []int{1}, trace: []string{"oom 4398046511104"},
			stats: map[string]int64{"num_ooms": 1, "reserved_bytes.all.current": 0},
		})
	}

	// test_cuda_multigpu.py:TestCudaMultiGPU.test_cuda_memory_leak_detection:
	// a function keeping an 8 Mi-float tensor is a leak both by
	// memory_allocated and by the driver's count of used memory.
	// test_cuda_multigpu.py:TestCudaMultiGPU.test_mem_get_info: that
	// allocation lowers mem_get_info's free bytes.
	// Derived: the driver sees the 32 MiB segment, or with expandable
	// segments the two 20 MiB pages mapped for it.
	for _, v := range []struct {
		knobs string
		used  int64
	}{{"", 32 * MiB}, {esKnobs, 40 * MiB}} {
		knobs, used := v.knobs, v.used
		cases = append(cases, pcase{
			name:  "test_cuda_multigpu.py:test_cuda_memory_leak_detection+test_mem_get_info" + suffixFor(knobs),
			knobs: knobs,
			ops: seq(tEmpty(),
				tDo(func(t *testing.T, s *psim) { s.marks["free"] = s.a.Memory().Available() }),
				tAlloc(1, 8*MiB*4),
				tDo(func(t *testing.T, s *psim) {
					if got := s.marks["free"] - s.a.Memory().Available(); got != used {
						t.Errorf("device free memory fell by %d, want %d", got, used)
					}
				})),
			stats: map[string]int64{"allocated_bytes.all.current": 32 * MiB},
		})
	}

	// test_cuda.py:TestCudaMallocAsync.test_allocator_settings (invalid
	// settings) and test_allocator_memory_fraction_setting (valid and
	// invalid per_process_memory_fraction values): see TestUpstreamSettingsValidation.

	// Adapted: test_cuda.py:TestMemPool.test_mempool_with_allocator. A
	// private pool runs the same malloc/should_split code as the default
	// pool; its expectation is about packing: one 1 MiB tensor makes a 2 MiB
	// small segment, a second fits in it, a third needs a second segment.
	cases = append(cases, pcase{
		name: "test_cuda.py:TestMemPool.test_mempool_with_allocator (default pool)",
		ops: seq(tAlloc(1, MiB), tExpect(map[string]int64{"segment.all.current": 1}),
			tAlloc(2, MiB), tExpect(map[string]int64{"segment.all.current": 1}),
			tAlloc(3, MiB), tExpect(map[string]int64{"segment.all.current": 2})),
		layout: "small: A1048576 A1048576\nsmall: A1048576 F1048576",
	})
	// Adapted: test_cuda.py:TestMemPool.test_nested_mempool: two 20 MiB
	// tensors in a pool make two segments (each exactly 20 MiB, unsplit).
	cases = append(cases, pcase{
		name:   "test_cuda.py:TestMemPool.test_nested_mempool (default pool)",
		ops:    seq(tAlloc(1, 20*MiB), tAlloc(2, 20*MiB)),
		layout: "large: A20971520\nlarge: A20971520",
		stats:  map[string]int64{"segment.large_pool.current": 2},
	})
	// Adapted: test_cuda.py:TestMemPool.test_mempool_ctx_multithread, its
	// default-pool half: two 1 MiB int8 tensors from two threads share one
	// small segment whose active_size is 2097152.
	cases = append(cases, pcase{
		name:   "test_cuda.py:TestMemPool.test_mempool_ctx_multithread (default pool)",
		ops:    seq(tAlloc(1, MiB), tAlloc(2, MiB)),
		layout: "small: A1048576 A1048576",
		stats:  map[string]int64{"active_bytes.all.current": 2 * MiB, "segment.all.current": 1},
	})
	// Adapted: test_cuda.py:TestCuda.test_graph_memory_stats_and_use_result_after_destroy_graph.
	// Its post-graph-deletion expectation ("b is the only live reference":
	// 1 segment of delta_cudaMalloc_bytes_post_del_g, 1 active block of
	// numel*4 bytes) is what an eager allocation of b alone gives.
	for _, g := range []struct {
		bytes, segment int64
		pool           string
	}{
		{512, 2 * MiB, "small"}, {MiB, 2 * MiB, "small"}, {MiB + 512, 20 * MiB, "large"},
		{10*MiB - 512, 20 * MiB, "large"}, {10*MiB + 512, 12 * MiB, "large"},
	} {
		cases = append(cases, pcase{
			name: fmt.Sprintf("test_cuda.py:TestCuda.test_graph_memory_stats_and_use_result_after_destroy_graph (eager, %d B)", g.bytes),
			ops:  seq(tAlloc(1, g.bytes)),
			stats: map[string]int64{"segment." + g.pool + "_pool.current": 1, "reserved_bytes." + g.pool + "_pool.current": g.segment,
				"active." + g.pool + "_pool.current": 1, "active_bytes." + g.pool + "_pool.current": g.bytes},
		})
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runP(t, c) })
	}
}

func suffixFor(knobs string) string {
	if knobs == esKnobs {
		return "/expandable_segments"
	}
	return ""
}

// TestUpstreamSettingsValidation: which PYTORCH_CUDA_ALLOC_CONF strings
// upstream accepts and rejects.
func TestUpstreamSettingsValidation(t *testing.T) {
	for _, c := range []struct {
		name, conf string
		ok         bool
	}{
		// test_cuda.py:TestCudaMallocAsync.test_allocator_settings: each
		// of these raises ValueError from _accelerator_setAllocatorSettings.
		{"test_allocator_settings/unknown keys", "foo:1,bar:2", false},
		{"test_allocator_settings/gc threshold 1.2", "garbage_collection_threshold:1.2", false},
		{"test_allocator_settings/max_split_size_mb 2", "max_split_size_mb:2", false},
		{"test_allocator_settings/release_lock none", "release_lock_on_cudamalloc:none", false},
		{"test_allocator_settings/pinned_use_cuda_host_register none", "pinned_use_cuda_host_register:none", false},
		{"test_allocator_settings/pinned_num_register_threads none", "pinned_num_register_threads:none", false},
		{"test_allocator_settings/pinned_num_register_threads 1024", "pinned_num_register_threads:1024", false},
		// ... and these settings, used by the test, are accepted.
		{"test_allocator_settings/roundup 4", "roundup_power2_divisions:4", true},
		{"test_allocator_settings/gc+max_split", "garbage_collection_threshold:0.5,max_split_size_mb:40", true},
		{"test_allocator_settings/gc+roundup list", "garbage_collection_threshold:0.5,roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]", true},
		{"test_allocator_settings/release_lock True", "release_lock_on_cudamalloc:True", true},
		// test_cuda.py:TestCudaMallocAsync.test_allocator_memory_fraction_setting:
		// per_process_memory_fraction in PYTORCH_CUDA_ALLOC_CONF accepts
		// 0.0, 0.5 and 1.0 and rejects -0.1 and 1.1 ("per_process_memory_fraction
		// is invalid, set it in [0.0, 1.0]").
		{"test_allocator_memory_fraction_setting/0.0", "per_process_memory_fraction:0.0", true},
		{"test_allocator_memory_fraction_setting/0.5", "per_process_memory_fraction:0.5", true},
		{"test_allocator_memory_fraction_setting/1.0", "per_process_memory_fraction:1.0", true},
		{"test_allocator_memory_fraction_setting/-0.1", "per_process_memory_fraction:-0.1", false},
		{"test_allocator_memory_fraction_setting/1.1", "per_process_memory_fraction:1.1", false},
	} {
		t.Run("test_cuda.py:TestCudaMallocAsync."+c.name, func(t *testing.T) {
			sp, err := strategies.ParseSpec("torch:" + c.conf)
			if err == nil {
				_, err = ParseConfig(sp)
			}
			if (err == nil) != c.ok {
				t.Errorf("%q: error %v, want accepted=%v", c.conf, err, c.ok)
			}
		})
	}
}

// TestUpstreamAllocatorFuzz adapts test_cuda.py:TestCudaMallocAsync.test_allocator_fuzz:
// 10000 random steps (alloc of 2-20 MiB int32 tensors, free, empty_cache
// with weights 1:1:0.1, freeing first while 1 GiB/10 worth of elements is
// live) must never raise. Python's random.seed(123) stream is not
// reproduced; the distribution is. Derived: freeing everything and
// emptying the cache returns every byte.
func TestUpstreamAllocatorFuzz(t *testing.T) {
	for _, knobs := range []string{"", esKnobs} {
		t.Run("test_cuda.py:TestCudaMallocAsync.test_allocator_fuzz"+suffixFor(knobs), func(t *testing.T) {
			s := newPsim(t, knobs, "")
			rng := rand.New(rand.NewSource(123))
			type tensor struct {
				id    int
				numel int64
			}
			var mem []tensor
			var total int64
			id := 0
			free := func() {
				i := rng.Intn(len(mem))
				x := mem[i]
				mem = append(mem[:i], mem[i+1:]...)
				s.apply(tDel(x.id))
				total -= x.numel
			}
			for n := 0; n < 10000; n++ {
				for total >= 1024*1024*1024/(4*10) {
					free()
				}
				wFree := 0.0
				if len(mem) > 0 {
					wFree = 1
				}
				r := rng.Float64() * (1 + wFree + 0.1)
				switch {
				case r < 1:
					b := 2*MiB/4 + rng.Int63n(20*MiB/4-2*MiB/4)
					s.apply(tAlloc(id, 4*b))
					mem = append(mem, tensor{id, b})
					id++
					total += b
				case r < 1+wFree:
					free()
				default:
					s.apply(tEmpty())
				}
			}
			for len(mem) > 0 {
				free()
			}
			s.apply(tEmpty())
			if len(s.ooms) > 0 {
				t.Errorf("OOMs: %v", s.ooms)
			}
			m := s.a.Stats().Map()
			for _, k := range []string{"reserved_bytes.all.current", "allocated_bytes.all.current", "num_ooms", "segment.all.current"} {
				if m[k] != 0 {
					t.Errorf("%s = %d after freeing everything", k, m[k])
				}
			}
			if m["num_device_alloc"] < 2 {
				t.Errorf("num_device_alloc = %d: the fuzz never reached the device", m["num_device_alloc"])
			}
		})
	}
}
