package harness

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"membench/strategies"
	"membench/torchlike"
	"membench/traces/torchsnap"
)

// ValidateOptions tune Validate.
type ValidateOptions struct {
	// Devices to validate; nil means every device in the snapshot.
	Devices []int
	// Capacity is the device memory the allocator could obtain, used when
	// the trace records no OOM to infer it from; 0 means unlimited.
	Capacity int64
}

// SegEvent is one allocator decision as a snapshot records it: the
// sequence `membench validate` compares.
type SegEvent struct {
	Action string
	Addr   int64 // the address, or for oom the device's free bytes
	Size   int64
	Entry  int // index in the device's trace (recorded events only)
}

func (e SegEvent) String() string {
	if e.Action == "oom" {
		return fmt.Sprintf("oom %d (device free %d)", e.Size, e.Addr)
	}
	return fmt.Sprintf("%s %d @%#x", e.Action, e.Size, e.Addr)
}

// DeviceReport is the outcome of validating one device.
type DeviceReport struct {
	Device         int
	Entries        int
	Counts         map[string]int
	Start          string // how the layout at the first entry was obtained
	Settings       string
	Capacity       int64 // 0: unlimited
	CapacityFrom   string
	EmptyCache     int // inferred torch.cuda.empty_cache() calls
	Compared       int // segment events that agree before the first divergence
	Recorded       []SegEvent
	Simulated      []SegEvent
	Diverged       bool
	DivergeAt      int // index into Recorded/Simulated
	DivergeEntry   int // trace entry being replayed when it was seen
	Note           string
	PeakSimulated  int64
	PeakRecorded   int64
	AddrMismatches int // allocations placed elsewhere than recorded (diagnostic)
}

// Agree reports exact agreement: every segment event and OOM in order,
// with the same action and size.
func (r *DeviceReport) Agree() bool { return !r.Diverged }

// Validate replays the recorded requests of a PyTorch memory snapshot
// through torchlike, configured from the snapshot's own allocator
// settings, device by device, and compares the allocator's decisions
// (segment_alloc, segment_free, segment_map, segment_unmap, oom) with the
// recorded ones.
//
// Three things a snapshot does not say are inferred, and each is reported:
// the layout when recording began (undone backwards from the final
// segments by torchsnap), the device's capacity (from a recorded OOM:
// reserved bytes plus the device's free bytes at that moment), and calls
// to torch.cuda.empty_cache() (a burst of segment frees that the next
// allocation does not explain). While the simulation agrees, new segments
// take the addresses the recording reports, so that best-fit ties between
// segments break as they did on the real device.
func Validate(snap *torchsnap.Snapshot, opts ValidateOptions) ([]*DeviceReport, error) {
	devs := opts.Devices
	if devs == nil {
		devs = snap.Devices()
	}
	present := map[int]bool{}
	for _, d := range snap.Devices() {
		present[d] = true
	}
	var out []*DeviceReport
	for _, d := range devs {
		if !present[d] {
			return nil, fmt.Errorf("device %d is not in the snapshot (devices: %v)", d, snap.Devices())
		}
		r, err := validateDevice(snap, d, opts)
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", d, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func configFromSettings(s *torchsnap.Settings) (torchlike.Config, string) {
	cfg := torchlike.DefaultConfig()
	if s == nil {
		return cfg, "no allocator_settings recorded: PyTorch defaults"
	}
	if s.MaxSplitSize > 0 {
		cfg.MaxSplitSize = s.MaxSplitSize
	}
	cfg.GCThreshold = s.GarbageCollectionThreshold
	cfg.ExpandableSegments = s.ExpandableSegments
	for i, v := range s.RoundupPower2Divisions {
		cfg.Divisions[i] = int64(v)
	}
	desc := fmt.Sprintf("max_split_size=%d garbage_collection_threshold=%g expandable_segments=%t roundup_power2_divisions=%v",
		s.MaxSplitSize, s.GarbageCollectionThreshold, s.ExpandableSegments, s.RoundupPower2Divisions)
	if s.PYTORCH_CUDA_ALLOC_CONF != "" {
		desc += fmt.Sprintf(" (PYTORCH_CUDA_ALLOC_CONF=%q)", s.PYTORCH_CUDA_ALLOC_CONF)
	}
	return cfg, desc
}

func isSegEvent(a string) bool {
	switch a {
	case torchsnap.ActionSegmentAlloc, torchsnap.ActionSegmentFree, torchsnap.ActionSegmentMap, torchsnap.ActionSegmentUnmap:
		return true
	}
	return false
}

func segDelta(e torchsnap.TraceEntry) int64 {
	switch e.Action {
	case torchsnap.ActionSegmentAlloc, torchsnap.ActionSegmentMap:
		return e.Size
	case torchsnap.ActionSegmentFree, torchsnap.ActionSegmentUnmap:
		return -e.Size
	}
	return 0
}

func validateDevice(snap *torchsnap.Snapshot, d int, opts ValidateOptions) (*DeviceReport, error) {
	tr := snap.Trace(d)
	rep := &DeviceReport{Device: d, Entries: len(tr), Counts: map[string]int{}, DivergeAt: -1, DivergeEntry: -1}
	cfg, desc := configFromSettings(snap.Settings)
	rep.Settings = desc
	hasCompleted := false
	var maxAddr int64
	for _, e := range tr {
		rep.Counts[e.Action]++
		hasCompleted = hasCompleted || e.Action == torchsnap.ActionFreeCompleted
		maxAddr = max(maxAddr, e.Addr)
	}
	for _, s := range snap.Segments {
		maxAddr = max(maxAddr, s.Address+s.TotalSize)
	}

	layout, err := snap.InitialState(d)
	if err != nil {
		return nil, fmt.Errorf("reconstructing the layout at the first trace entry: %w", err)
	}
	var startReserved int64
	nBlocks := 0
	for _, s := range layout.Segments {
		startReserved += s.Size
		nBlocks += len(s.Blocks)
	}
	if len(layout.Segments) == 0 {
		rep.Start = "cold start: no memory held when recording began"
	} else {
		rep.Start = fmt.Sprintf("warm start: seeded with %d segments (%d B reserved) and %d live blocks, reconstructed by undoing the trace from the final segments", len(layout.Segments), startReserved, nBlocks)
	}

	// Capacity: from the first recorded OOM, else the user's, else unlimited.
	reserved := startReserved
	for _, e := range tr {
		reserved += segDelta(e)
		if e.Action == torchsnap.ActionOOM {
			rep.Capacity = reserved + e.DeviceFree
			rep.CapacityFrom = fmt.Sprintf("inferred from the recorded oom: reserved %d B + device free %d B", reserved, e.DeviceFree)
			break
		}
	}
	if rep.Capacity == 0 && opts.Capacity > 0 {
		rep.Capacity, rep.CapacityFrom = opts.Capacity, "--capacity"
	}
	if rep.Capacity == 0 {
		rep.CapacityFrom = "unlimited (no oom recorded; set --capacity to model one)"
	}
	capacity := rep.Capacity
	if capacity == 0 {
		capacity = 1 << 50
	}
	dev := strategies.Device{Name: "snapshot", Kind: strategies.GPU, Total: capacity, Capacity: capacity, Free: capacity, Granularity: 2 << 20}
	mem := strategies.NewMemory(&dev)
	// Fallback addresses start well above every recorded one.
	mem.SetNextAddr((maxAddr>>30 + 1<<14) << 30)
	a := torchlike.New(cfg, mem)

	live := map[int64]strategies.Handle{}
	if err := seed(a, layout, cfg.ExpandableSegments, live); err != nil {
		return nil, err
	}

	var sim, rec []SegEvent
	a.OnTrace = func(act torchlike.TraceAction, addr, size, stream int64) {
		sim = append(sim, SegEvent{Action: act.String(), Addr: addr, Size: size, Entry: -1})
	}
	mem.AddrHook = func(size int64) int64 {
		i := len(sim)
		if i >= len(rec) || rep.Diverged {
			return 0
		}
		switch r := rec[i]; r.Action {
		case torchsnap.ActionSegmentAlloc:
			if r.Size == size {
				return r.Addr
			}
		case torchsnap.ActionSegmentMap:
			return r.Addr // a new expandable reservation starts where its first page is mapped
		}
		return 0
	}
	checked := 0
	compare := func(k int) {
		n := min(len(sim), len(rec))
		for ; checked < n && !rep.Diverged; checked++ {
			s, r := sim[checked], rec[checked]
			if s.Action != r.Action || s.Size != r.Size {
				rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, checked, k
				return
			}
			rep.Compared++
		}
	}
	// explainedByNext reports whether the recorded segment frees starting
	// at entry k are the release path of the next allocation (or recorded
	// OOM) rather than a torch.cuda.empty_cache() call.
	explainedByNext := func(k int) bool {
		for j := k + 1; j < len(tr); j++ {
			switch e := tr[j]; e.Action {
			case torchsnap.ActionSegmentFree, torchsnap.ActionSegmentUnmap, torchsnap.ActionSegmentAlloc, torchsnap.ActionSegmentMap:
				continue
			case torchsnap.ActionAlloc, torchsnap.ActionOOM:
				return a.WouldRelease(e.Size, e.Stream)
			default:
				return false
			}
		}
		return false
	}
	recReserved := startReserved
	rep.PeakRecorded = startReserved
	for k, e := range tr {
		switch e.Action {
		case torchsnap.ActionAlloc:
			h, ok := a.Malloc(e.Size, e.Stream)
			if !ok {
				if !rep.Diverged {
					rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, len(rec), k
					rep.Note = fmt.Sprintf("the simulation ran out of memory allocating %d B where the recording succeeded", e.Size)
				}
				continue
			}
			if _, dup := live[e.Addr]; dup {
				return nil, fmt.Errorf("trace entry %d: alloc at %#x, which is already live", k, e.Addr)
			}
			live[e.Addr] = h
			if a.Addr(h) != e.Addr {
				rep.AddrMismatches++
			}
		case torchsnap.ActionFreeRequested, torchsnap.ActionFreeCompleted, torchsnap.ActionFree:
			h, ok := live[e.Addr]
			if !ok {
				if rep.Diverged {
					continue // the simulation failed this block's allocation
				}
				return nil, fmt.Errorf("trace entry %d: %s of %#x, which is not live", k, e.Action, e.Addr)
			}
			switch {
			case e.Action == torchsnap.ActionFreeRequested && hasCompleted:
				a.FreeRequested(h)
			case e.Action == torchsnap.ActionFreeCompleted:
				a.FreeCompleted(h)
				delete(live, e.Addr)
			default:
				a.Free(h)
				delete(live, e.Addr)
			}
		case torchsnap.ActionSegmentAlloc, torchsnap.ActionSegmentFree, torchsnap.ActionSegmentMap, torchsnap.ActionSegmentUnmap:
			rec = append(rec, SegEvent{Action: e.Action, Addr: e.Addr, Size: e.Size, Entry: k})
			recReserved += segDelta(e)
			rep.PeakRecorded = max(rep.PeakRecorded, recReserved)
			if (e.Action == torchsnap.ActionSegmentFree || e.Action == torchsnap.ActionSegmentUnmap) &&
				len(sim) < len(rec) && !rep.Diverged && !explainedByNext(k) {
				a.EmptyCache()
				rep.EmptyCache++
			}
		case torchsnap.ActionOOM:
			rec = append(rec, SegEvent{Action: "oom", Addr: e.DeviceFree, Size: e.Size, Entry: k})
			if h, ok := a.Malloc(e.Size, e.Stream); ok {
				a.Free(h)
				if !rep.Diverged {
					rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, len(rec)-1, k
					rep.Note = fmt.Sprintf("the simulation allocated %d B where the recording ran out of memory", e.Size)
				}
			}
		}
		compare(k)
	}
	if !rep.Diverged && len(sim) != len(rec) {
		rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, checked, len(tr)
		rep.Note = fmt.Sprintf("the recording has %d segment events, the simulation %d", len(rec), len(sim))
	}
	for i := range rec {
		if i < len(sim) {
			sim[i].Entry = rec[i].Entry
		}
	}
	rep.Recorded, rep.Simulated = rec, sim
	rep.PeakSimulated = mem.Peak()
	return rep, nil
}

// seed installs the reconstructed starting layout.
func seed(a *torchlike.Allocator, l *torchsnap.Layout, expandable bool, live map[int64]strategies.Handle) error {
	type poolKey struct {
		stream int64
		small  bool
	}
	runs := map[poolKey][]torchlike.SeedRun{}
	var keys []poolKey
	for _, s := range l.Segments {
		var blocks []torchlike.SeedBlock
		for _, b := range s.Blocks {
			blocks = append(blocks, torchlike.SeedBlock{Addr: b.Address, Size: b.Size, Requested: b.RequestedSize, Pending: b.Pending})
		}
		if s.Expandable {
			if !expandable {
				return fmt.Errorf("segment at %#x is expandable but the snapshot's settings say expandable_segments=False", s.Address)
			}
			k := poolKey{s.Stream, s.Small}
			if _, ok := runs[k]; !ok {
				keys = append(keys, k)
			}
			runs[k] = append(runs[k], torchlike.SeedRun{Addr: s.Address, Size: s.Size, Live: blocks})
			continue
		}
		hs, err := a.SeedSegment(s.Address, s.Size, s.Stream, s.Small, blocks)
		if err != nil {
			return err
		}
		for i, h := range hs {
			live[blocks[i].Addr] = h
		}
	}
	for _, k := range keys {
		rs := runs[k]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Addr < rs[j].Addr })
		hss, err := a.SeedExpandable(rs[0].Addr, k.stream, k.small, rs)
		if err != nil {
			return err
		}
		for i, hs := range hss {
			for j, h := range hs {
				live[rs[i].Live[j].Addr] = h
			}
		}
	}
	return nil
}

// WriteReport prints a device report for people: what was compared, the
// first divergence with the events around it, and peak reserved memory.
func (r *DeviceReport) WriteReport(w io.Writer, name string) {
	fmt.Fprintf(w, "%s: device %d: %d trace entries (%s)\n", name, r.Device, r.Entries, countsString(r.Counts))
	fmt.Fprintf(w, "  start: %s\n", r.Start)
	fmt.Fprintf(w, "  settings: %s\n", r.Settings)
	fmt.Fprintf(w, "  capacity: %s\n", r.CapacityFrom)
	if r.EmptyCache > 0 {
		fmt.Fprintf(w, "  replayed %d torch.cuda.empty_cache() calls (bursts of segment frees no allocation explains)\n", r.EmptyCache)
	}
	fmt.Fprintf(w, "  segment events and OOMs compared: %d of %d recorded (%d simulated)\n", r.Compared, len(r.Recorded), len(r.Simulated))
	if r.Diverged {
		fmt.Fprintf(w, "  FIRST DIVERGENCE at segment event %d (trace entry %d)", r.DivergeAt, r.DivergeEntry)
		if r.Note != "" {
			fmt.Fprintf(w, ": %s", r.Note)
		}
		fmt.Fprintln(w)
		lo, hi := max(0, r.DivergeAt-3), r.DivergeAt+4
		fmt.Fprintf(w, "    %-5s  %-52s  %s\n", "#", "recorded", "simulated")
		for i := lo; i < hi && (i < len(r.Recorded) || i < len(r.Simulated)); i++ {
			rs, ss := "-", "-"
			if i < len(r.Recorded) {
				rs = fmt.Sprintf("[entry %d] %s", r.Recorded[i].Entry, r.Recorded[i])
			}
			if i < len(r.Simulated) {
				ss = r.Simulated[i].String()
			}
			mark := " "
			if i == r.DivergeAt {
				mark = ">"
			}
			fmt.Fprintf(w, "  %s %-5d  %-52s  %s\n", mark, i, rs, ss)
		}
	} else {
		fmt.Fprintf(w, "  agree: every segment event and OOM matches in action, size and order\n")
	}
	if r.AddrMismatches > 0 {
		fmt.Fprintf(w, "  note: %d allocations were placed at a different address than recorded\n", r.AddrMismatches)
	}
	fmt.Fprintf(w, "  peak reserved: simulated %d B, recorded %d B", r.PeakSimulated, r.PeakRecorded)
	if r.PeakSimulated == r.PeakRecorded {
		fmt.Fprintf(w, " (identical)\n")
	} else {
		fmt.Fprintf(w, " (differ by %d B)\n", r.PeakSimulated-r.PeakRecorded)
	}
}

func countsString(c map[string]int) string {
	var ks []string
	for k := range c {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
	}
	return strings.Join(parts, ", ")
}
