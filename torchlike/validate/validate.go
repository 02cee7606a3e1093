package validate

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"membench/strategies"
	"membench/torchlike"
	"membench/torchlike/snapshot"
	"membench/traces"
)

// Options tune Validate.
type Options struct {
	// Devices to validate; nil means every device in the snapshot.
	Devices []int
	// Capacity is the device memory the allocator could obtain, used when
	// the trace records no OOM to infer it from; 0 means unlimited.
	Capacity int64
	// Total is the device's total memory, what cudaMemGetInfo calls total:
	// the base of per_process_memory_fraction and of an expandable
	// segment's reservation, more than Capacity by what the CUDA context
	// and other processes hold (an A100 80GB's 80 GiB, of which a process
	// obtains about 79.5). 0 means the least it can be: the larger of
	// Capacity and the capacity a recorded OOM shows.
	Total int64
	// Check runs the model's invariant checker after every entry (tests).
	Check bool
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
	Device       int
	Entries      int
	Counts       map[string]int
	Start        string // how the layout at the first entry was obtained
	Settings     string
	Capacity     int64 // 0: unlimited
	CapacityFrom string
	EmptyCache   int // inferred torch.cuda.empty_cache() calls
	// UnknownActions counts trace entries whose action this version does
	// not know (a newer PyTorch's); they are skipped and reported.
	UnknownActions map[string]int
	// InferredFailures counts device mallocs that must have failed for
	// the recording to make sense although no OOM was recorded (the
	// device was fuller than modelled; see resolveBurst).
	InferredFailures int
	// FramesRead counts the bursts of releases whose reading the
	// recorded stack frames decided (see resolveBurst); FramesOverruled
	// those whose frames named malloc but where no failed device malloc
	// reproduces the recording, which were inferred as without frames.
	FramesRead      int
	FramesOverruled int
	// MallocRetries lists the device mallocs that failed and succeeded
	// when retried after malloc released cached segments, as the frames
	// of the releases show, each with the capacity bound it implies.
	MallocRetries  []CapacityBound
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
	// UncertainSizes counts the blocks live at a warm start that may own
	// an unsplit remainder the trace does not reveal, taken as none, of
	// up to MaxTail bytes (snapshot.Layout): a reading of the recording,
	// which a divergence may be owed to rather than the model.
	UncertainSizes int
	MaxTail        int64
	// reservations are the expandable reservations a warm start seeded,
	// whose bases are readings (lowerBases).
	reservations []seededReservation
}

// seededReservation is an expandable reservation a warm start seeded: its
// first run's address (which names it), its base and size, the end of
// its last run, and its page.
type seededReservation struct {
	first, base, size, end, page int64
}

// CapacityBound is what one failed device malloc says of the device: it
// could not give Segment bytes while Reserved bytes were held, so the
// memory the allocator could obtain was less than Reserved + Segment.
type CapacityBound struct {
	Entry    int   // the trace entry of the segment that the retry obtained
	Reserved int64 // recorded reserved bytes when the malloc failed
	Segment  int64 // the bytes it asked for
}

// Limit is the bound: the capacity is below it.
func (b CapacityBound) Limit() int64 { return b.Reserved + b.Segment }

// TightestBound is the lowest of the capacity bounds (ok false when
// there is none).
func (r *DeviceReport) TightestBound() (b CapacityBound, ok bool) {
	for i, x := range r.MallocRetries {
		if i == 0 || x.Limit() < b.Limit() {
			b = x
		}
	}
	return b, len(r.MallocRetries) > 0
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
// segments by torchlike/snapshot), the device's capacity (from a recorded OOM:
// reserved bytes plus the device's free bytes at that moment), and calls
// to torch.cuda.empty_cache() (a burst of segment frees that the next
// allocation does not explain). While the simulation agrees, new segments
// take the addresses the recording reports, so that best-fit ties between
// segments break as they did on the real device.
func Validate(snap *snapshot.Snapshot, opts Options) ([]*DeviceReport, error) {
	devs := opts.Devices
	if devs == nil {
		devs = snap.Devices()
	}
	present := map[int]bool{}
	for _, d := range snap.Devices() {
		present[d] = true
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("the snapshot holds no segments and no trace entries: nothing to validate")
	}
	if who, ok := snap.Settings.Foreign(); ok {
		// Replayed through the torch model, another allocator's
		// decisions only diverge from its own: that says the two
		// allocators differ, which no one asked.
		return nil, fmt.Errorf("not a PyTorch recording: %s; validate holds a PyTorch recording against the torch model (a torch export validates)", who)
	}
	var out []*DeviceReport
	for _, d := range devs {
		if !present[d] {
			return nil, fmt.Errorf("device %d is not in the snapshot (devices: %v)", d, snap.Devices())
		}
		if tr := snap.Trace(d); len(tr) > 0 && !slices.ContainsFunc(tr, func(e snapshot.TraceEntry) bool { return torchlike.KnownAction(e.Action) }) {
			return nil, fmt.Errorf("device %d: none of its %d trace entries has an action this version knows (first: %q): nothing to validate", d, len(tr), snapshot.ShortAction(tr[0].Action))
		}
		r, err := validateDevice(snap, d, opts, reading{})
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", d, err)
		}
		if !r.Agree() {
			r = otherReading(snap, d, opts, r)
		}
		if !r.Agree() {
			r = lowerBases(snap, d, opts, r)
		}
		out = append(out, r)
	}
	return out, nil
}

func segDelta(e snapshot.TraceEntry) int64 {
	switch e.Action {
	case torchlike.ActionSegmentAlloc, torchlike.ActionSegmentMap:
		return e.Size
	case torchlike.ActionSegmentFree, torchlike.ActionSegmentUnmap:
		return -e.Size
	}
	return 0
}

func hasDivisionOne(s *snapshot.Settings) bool {
	if s == nil {
		return false
	}
	for _, v := range s.RoundupPower2Divisions {
		if v == 1 {
			return true
		}
	}
	return false
}

// reading is how validateDevice reads what a recording leaves open.
type reading struct {
	legacyRoundup bool // PyTorch before 2.4's rounding
	tails         bool // warm-start blocks own every remainder the trace allows
	// baseCaps: the highest base a warm start's expandable reservation
	// may have, by the address of its first run (lowerBases).
	baseCaps map[int64]int64
}

// otherReading is first's replacement by the first other reading of the
// recording that agrees, or first when none does (first diverges).
//
// PyTorch before 2.4 left sizes unrounded where a division count is 1,
// and the snapshot does not say which version recorded it. Blocks live
// at a warm start may own unsplit remainders the trace never shows (at
// most 1 MiB each, or up to max_non_split_rounding for a block of
// max_split_size or more that is not its whole segment); the
// reconstruction takes none, and every one is the other extreme, tried
// with each rounding whose start has such blocks (a late start of an old
// recording may need both), when the first start has.
func otherReading(snap *snapshot.Snapshot, d int, opts Options, first *DeviceReport) *DeviceReport {
	bases := []*DeviceReport{first}
	if hasDivisionOne(snap.Settings) {
		if l, err := validateDevice(snap, d, opts, reading{legacyRoundup: true}); err == nil {
			if l.Agree() {
				return l
			}
			bases = append(bases, l)
		}
	}
	if first.UncertainSizes == 0 {
		return first
	}
	for i, b := range bases {
		if b.UncertainSizes == 0 {
			continue
		}
		t, err := validateDevice(snap, d, opts, reading{legacyRoundup: i == 1, tails: true})
		if err == nil && t.Agree() {
			t.UncertainSizes, t.MaxTail = b.UncertainSizes, b.MaxTail
			t.Start += fmt.Sprintf("; the %d blocks whose unsplit remainder the trace does not show (up to %d B) seeded with the largest it allows them: the reading that agrees", b.UncertainSizes, b.MaxTail)
			return t
		}
	}
	return first
}

// lowerBases is first's replacement by a reading of a warm start's
// expandable reservations based lower, when that agrees; otherwise first.
//
// No snapshot records where a reservation begins, and seed bases each as
// high as its runs and the trace's pages allow, which leaves it the
// longest unmapped tail after its last run and no unmapped head before
// its first. Where the simulation then mapped a request in that tail and
// the recording did not, the reservation began lower: PyTorch's
// find_expandable_block takes the first unmapped range, in address order,
// that holds the request with the free blocks next to it, so a tail that
// held it would have been taken, and a head is tried before any tail.
// The reservation is based the least number of pages lower that the
// recording's choice needs (baseCap), and the recording replayed again;
// each replay can find the next such map, up to maxBaseTries. (A review's
// random warm starts: the tail of a stream's first reservation mapped
// where the recording, its reservation based 20 MiB lower, mapped in the
// stream's next one.)
func lowerBases(snap *snapshot.Snapshot, d int, opts Options, first *DeviceReport) *DeviceReport {
	caps := map[int64]int64{}
	rep := first
	for range maxBaseTries {
		g, c, ok := rep.baseCap()
		if !ok {
			return first
		}
		if old, seen := caps[g.first]; seen && old <= c {
			return first
		}
		caps[g.first] = c
		next, err := validateDevice(snap, d, opts, reading{baseCaps: caps})
		if err != nil {
			return first
		}
		if next.Agree() {
			var lowered []string
			for _, r := range next.reservations {
				if _, ok := caps[r.first]; ok {
					lowered = append(lowered, fmt.Sprintf("run at %#x based at %#x", r.first, r.base))
				}
			}
			slices.Sort(lowered)
			next.Start += fmt.Sprintf("; expandable reservations based lower than their runs allow (%s): no snapshot records where a reservation begins, and where the replay mapped in their tails the recording mapped elsewhere or ran out of memory; the reading that agrees", strings.Join(lowered, ", "))
			return next
		}
		rep = next
	}
	return first
}

// maxBaseTries bounds lowerBases's replays of a recording.
const maxBaseTries = 8

// baseCap finds the first segment_map the simulation made and the
// recording did not (another address, or from the divergence on), in the
// unmapped tail of a reservation seeded at a warm start, and the highest
// base that reading of the recording allows the reservation:
//
//   - Where the recording mapped elsewhere (a map at another address is
//     no divergence, events agreeing in action and size, but the
//     reservation is read too long there all the same), the base that
//     ends the reservation a page short of the map's end.
//   - Where the recording ran out of memory instead (the map is the
//     divergence, an oom recorded there), the reservation began lower,
//     and its unmapped head, the lowest unmapped range and so the first
//     find_expandable_block tries, held the request but needed more
//     pages than the device had left. How many pages the head had
//     depends on what was unmapped at its front by then, which the
//     report does not keep: the base one page lower than this replay's,
//     a page at a time, while the replay maps the request in the tail
//     or in a head still too short to need the pages it did not have.
//     Capping the tail instead lowered such a base 28 pages where the
//     recording's was 5 below the run, and a head of as many pages as
//     the request 3 where it was 2 (two of a review's random warm
//     starts), and each of those readings agreed all the same.
func (r *DeviceReport) baseCap() (seededReservation, int64, bool) {
	if !r.Diverged {
		return seededReservation{}, 0, false
	}
	for i := range r.Simulated {
		e := r.Simulated[i]
		if e.Action != torchlike.ActionSegmentMap {
			continue
		}
		if i < len(r.Recorded) && r.Recorded[i].Action == e.Action && r.Recorded[i].Addr == e.Addr && r.Recorded[i].Size == e.Size {
			continue
		}
		oom := i == r.DivergeAt && i < len(r.Recorded) && r.Recorded[i].Action == "oom"
		for _, g := range r.reservations {
			if e.Addr < g.base || e.Addr >= g.base+g.size {
				continue
			}
			switch {
			case oom && (e.Addr < g.first || e.Addr == g.base || e.Addr >= g.end):
				// In the tail, or in a head one lowering made that
				// was still too short for the recording's pages.
				return g, g.base - g.page, true
			case e.Addr >= g.end:
				return g, e.Addr + e.Size - g.page - g.size, true
			}
		}
		if i >= r.DivergeAt {
			return seededReservation{}, 0, false
		}
	}
	return seededReservation{}, 0, false
}

func validateDevice(snap *snapshot.Snapshot, d int, opts Options, rd reading) (*DeviceReport, error) {
	tr := snap.Trace(d)
	rep := &DeviceReport{Device: d, Entries: len(tr), Counts: map[string]int{}, UnknownActions: map[string]int{}, DivergeAt: -1, DivergeEntry: -1}
	cfg, desc := snap.Settings.Config()
	if rd.legacyRoundup {
		cfg.LegacyRoundup = true
		desc += "; rounding as PyTorch before 2.4 (a division count of 1 leaves sizes unrounded), the only reading that agrees"
	}
	rep.Settings = desc
	hasCompleted, freeFrames := false, false
	var maxAddr int64
	for _, e := range tr {
		rep.Counts[e.Action]++
		hasCompleted = hasCompleted || e.Action == torchlike.ActionFreeCompleted
		if e.Action == torchlike.ActionFreeRequested || e.Action == torchlike.ActionFree {
			freeFrames = freeFrames || e.Frames != snapshot.FramesNone
		}
		maxAddr = max(maxAddr, e.Addr)
	}
	for _, s := range snap.Segments {
		maxAddr = max(maxAddr, s.Address+s.TotalSize)
	}

	for _, sg := range snap.Segments {
		if sg.Device == d && sg.PrivatePool {
			rep.Note = "the snapshot has segments in private pools (CUDA graphs or torch.cuda.MemPool), which the model does not have: expect a divergence"
			break
		}
	}
	layout, err := snap.Reconstruct(d, snapshot.LayoutOptions{LegacyRoundup: rd.legacyRoundup, Tails: rd.tails})
	if err != nil {
		return nil, fmt.Errorf("reconstructing the layout at the first trace entry: %w", err)
	}
	var startReserved int64
	nBlocks := 0
	for _, s := range layout.Segments {
		startReserved += s.Size
		nBlocks += len(s.Blocks)
	}
	rep.UncertainSizes, rep.MaxTail = layout.UncertainSizes(), layout.MaxTail()
	if len(layout.Segments) == 0 {
		rep.Start = "cold start: no memory held when recording began"
	} else {
		rep.Start = fmt.Sprintf("warm start: seeded with %d segments (%d B reserved) and %d live blocks, reconstructed by undoing the trace from the final segments", len(layout.Segments), startReserved, nBlocks)
	}

	// recReserved[k] is the recorded reserved bytes just before entry k.
	recReserved := make([]int64, len(tr)+1)
	recReserved[0] = startReserved
	for k, e := range tr {
		recReserved[k+1] = recReserved[k] + segDelta(e)
	}
	// Capacity: from the first recorded OOM, else the user's, else unlimited.
	for k, e := range tr {
		if e.Action == torchlike.ActionOOM {
			rep.Capacity = recReserved[k] + e.DeviceFree
			rep.CapacityFrom = fmt.Sprintf("inferred from the recorded oom: reserved %d B + device free %d B", recReserved[k], e.DeviceFree)
			break
		}
	}
	if rep.Capacity == 0 && opts.Capacity > 0 {
		rep.Capacity, rep.CapacityFrom = opts.Capacity, fmt.Sprintf("%d B (--capacity)", opts.Capacity)
	}
	if rep.Capacity == 0 {
		rep.CapacityFrom = "unlimited (no oom recorded; set --capacity to model one)"
	}
	capacity := rep.Capacity
	if capacity == 0 {
		capacity = 1 << 50
	}
	// The device's total memory: the snapshot does not record it (an OOM
	// records only what was free), and PyTorch takes the fraction of it
	// (allowed_memory_maximum = fraction × total, allocator-spec §1.9) and
	// reserves 1.125 times it for an expandable segment (§1.10). Unless
	// given, it is taken as the least it can be.
	total := max(capacity, opts.Capacity)
	if opts.Total > 0 {
		if opts.Total < rep.Capacity {
			return nil, fmt.Errorf("--total %d B is less than the %d B the allocator could obtain (%s)", opts.Total, rep.Capacity, rep.CapacityFrom)
		}
		total = opts.Total
	}
	dev := strategies.Device{Name: "snapshot", Kind: strategies.GPU, Total: total, Capacity: capacity, Free: capacity, Granularity: 2 << 20}
	if cfg.FractionSet {
		if rep.Capacity == 0 && opts.Total == 0 {
			return nil, fmt.Errorf("the recorded configuration sets per_process_memory_fraction, which is a fraction of the device's total memory: give it with --total")
		}
		if opts.Total > 0 {
			rep.Settings += fmt.Sprintf("; per_process_memory_fraction of %d B (--total)", total)
		} else {
			rep.Settings += fmt.Sprintf("; per_process_memory_fraction of %d B (the larger of --capacity and the capacity: the device's total memory is at least that; give it with --total)", total)
		}
	}
	mem := strategies.NewMemory(&dev)
	// Fallback addresses start well above every recorded one.
	v := &replayer{rep: rep, hasCompleted: hasCompleted, freeFrames: freeFrames, live: map[int64]strategies.Handle{},
		fallback: bump{next: (maxAddr>>30 + 1<<14) << 30}, ages: cfg.GCThreshold > 0 && cfg.FractionSet}
	v.attach(torchlike.New(cfg, mem), mem)
	v.tr, v.expandable, v.largePage = tr, cfg.ExpandableSegments, cfg.LargeSegmentSize
	if v.expandable {
		v.maps, v.next = mapsByStream(tr), map[poolKey]int{}
	}
	v.totalKnown = rep.Capacity > 0 || opts.Total > 0
	if v.rep.reservations, err = seed(v.a, layout, tr, cfg, v.live, v.totalKnown, rd.baseCaps); err != nil {
		return nil, err
	}
	for addr, h := range v.live {
		v.addrOf[h] = addr
	}
	// A burst's resolution replaces v by the copy it keeps, which has a
	// report of its own (clone): the loop reads and writes v.rep, never
	// rep, which after the first burst is a stale copy (its peak missed
	// every later segment event, and its Diverged stayed false).
	v.rep.PeakRecorded = startReserved
	for k := 0; k < len(tr); k++ {
		e := tr[k]
		switch e.Action {
		case torchlike.ActionSegmentAlloc, torchlike.ActionSegmentFree, torchlike.ActionSegmentMap, torchlike.ActionSegmentUnmap:
			v.rep.PeakRecorded = max(v.rep.PeakRecorded, recReserved[k+1])
			release := e.Action == torchlike.ActionSegmentFree || e.Action == torchlike.ActionSegmentUnmap
			if release && v.sim.Len() < v.rec.Len()+1 && !v.rep.Diverged {
				// A release the simulation has not made: the program
				// called empty_cache(), or the next allocation's device
				// malloc failed and its release path ran. Replay the
				// readings on copies and keep the one that reproduces
				// the recording up to that allocation.
				next, _, err := v.resolveBurst(tr, k, recReserved, false, v.burstHint(tr[k]))
				if err != nil {
					return nil, err
				}
				v = next
				k = v.resumeAt - 1
				continue
			}
			v.rec.Append(SegEvent{Action: e.Action, Addr: e.Addr, Size: e.Size, Entry: k})
		default:
			if e.Action == torchlike.ActionFreeCompleted && !v.rep.Diverged && v.sim.Len() <= v.rec.Len() {
				// Completions followed by releases are what a release
				// path records first (synchronize_and_free_events):
				// resolve them together with the releases.
				m := k
				for m < len(tr) && tr[m].Action == torchlike.ActionFreeCompleted {
					m++
				}
				if m < len(tr) && (tr[m].Action == torchlike.ActionSegmentFree || tr[m].Action == torchlike.ActionSegmentUnmap) {
					hint := v.burstHint(tr[m])
					// With garbage collection on, the completions as the
					// plain frees they look like first, on a copy, with
					// the releases after them resolved alone
					// (plainThenBurst says why); then, and first
					// without, the completions left to the model's
					// release path. If no reading reproduces the
					// recording, they are plain frees and the releases
					// are resolved alone below.
					if v.ages && v.noPlainFor != m {
						v.noPlainFor = m
						next, ok, err := v.plainThenBurst(tr, k, m, recReserved, hint, false)
						if err != nil {
							return nil, err
						}
						if ok {
							v = next
							k = v.resumeAt - 1
							continue
						}
					}
					if next, ok, err := v.resolveBurst(tr, k, recReserved, true, hint); err != nil {
						return nil, err
					} else if ok {
						if next.rep.AddrMismatches > v.rep.AddrMismatches {
							// The release path's reading reproduced
							// the segment events but put an allocation
							// elsewhere than recorded: the completions
							// may be plain frees and the releases an
							// empty_cache() call after them, which
							// leaves the freed block's pieces mapped
							// as they were, where the retry of a
							// release path takes the expandable tail
							// first (find_expandable_block). The
							// reading that also reproduces every
							// address is the recording's.
							alt, altOK, err := v.plainThenBurst(tr, k, m, recReserved, hint, true)
							if err != nil {
								return nil, err
							}
							if altOK && alt.rep.AddrMismatches < next.rep.AddrMismatches {
								next = alt
							}
						}
						v = next
						k = v.resumeAt - 1
						continue
					}
				}
			}
			if err := v.drive(k, e, false); err != nil {
				return nil, err
			}
		}
		v.compare(k)
		if opts.Check {
			if err := v.a.Check(); err != nil {
				return nil, fmt.Errorf("trace entry %d (%s): model invariant broken: %w", k, e.Action, err)
			}
		}
	}
	rep = v.rep
	if !rep.Diverged && v.sim.Len() != v.rec.Len() {
		rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, v.checked, len(tr)
		rep.Note = fmt.Sprintf("the recording has %d segment events, the simulation %d", v.rec.Len(), v.sim.Len())
	}
	rep.PeakSimulated = v.mem.Peak()
	if !rep.Diverged && rep.FramesRead > 0 && rep.PeakSimulated != rep.PeakRecorded {
		// Where the frames chose the readings, the recording is read
		// as it happened, and the peak it implies must be the
		// recording's (issue 13). (Elsewhere a burst read another way
		// can reach a peak the recording never had between agreeing
		// events; that is reported, not failed.)
		rep.Diverged, rep.DivergeAt, rep.DivergeEntry = true, v.checked, len(tr)
		rep.Note = fmt.Sprintf("every segment event agrees, but peak reserved is %d B simulated and %d B recorded", rep.PeakSimulated, rep.PeakRecorded)
	}
	rep.Recorded, rep.Simulated = v.rec.Slice(), v.sim.Slice()
	for i := range rep.Recorded {
		if i < len(rep.Simulated) {
			rep.Simulated[i].Entry = rep.Recorded[i].Entry
		}
	}
	return rep, nil
}

// replayer is one reading of a recording: the model's state, the live
// blocks by recorded address, and the segment events simulated and
// recorded so far. Competing readings of an ambiguous stretch run on
// clones (see resolveBurst).
type replayer struct {
	rep      *DeviceReport
	a        *torchlike.Allocator
	mem      *strategies.Memory
	live     map[int64]strategies.Handle
	fallback bump // addresses where the recording gives none
	sim, rec segLog
	// ages: garbage collection is on (garbage_collection_threshold with
	// a per-process memory fraction, as the model runs it), so the
	// blocks' ages (when each was freed) decide later releases
	// (plainThenBurst).
	ages bool
	// noPlainFor is the entry of the release burst whose completions'
	// plain reading was last tried (plainThenBurst): when it failed, the
	// completions before the burst are applied one at a time, and the
	// same reading from the next of them would replay the same state to
	// the same failure.
	noPlainFor   int
	checked      int
	hasCompleted bool
	// freeFrames: the recording's frees carry stack frames, so it was
	// made with context="all" and a release's frames are those of the
	// call that released (see burstHint).
	freeFrames bool
	resumeAt   int
	deferred   []deferredFree // completions left to the model's release path
	addrOf     map[strategies.Handle]int64
	// autoCompleted holds addresses whose pending blocks the model's own
	// synchronize_and_free_events completed; their recorded
	// free_completed, if it comes later, has nothing left to do.
	autoCompleted map[int64]bool
	// expandable: the recording's segments are expandable, so that
	// every new device range is a reservation, which records nothing
	// until pages are mapped in it (laterMap); largePage is the large
	// pool's page.
	expandable bool
	largePage  int64
	// tr is the device's trace; at, atStream and atSize are the entry
	// being replayed, its stream and its size.
	tr       []snapshot.TraceEntry
	at       int
	atStream int64
	atSize   int64
	// maps are the trace's segment_map entries by stream, and next the
	// cursor into them of each stream and pool (laterMap); nextShared:
	// next is the replayer's this one was cloned from too.
	maps       map[int64][]int32
	next       map[poolKey]int
	nextShared bool
	released   int64 // the model's reservations released when next was last valid
	// totalKnown: the card's total, and with it a reservation's size, is
	// known (an OOM, --capacity or --total), not taken as unlimited.
	totalKnown bool
}

// reach is how much of a new reservation of size bytes must be clear of
// live ones: all of it when the card's total is known, else its first
// byte (a total taken as unlimited makes every reservation a petabyte,
// and every recorded one below another would be refused).
func (v *replayer) reach(size int64) int64 {
	if v.totalKnown {
		return size
	}
	return 1
}

// poolKey names a stream's pool.
type poolKey struct {
	stream int64
	small  bool
}

// unreserved reports whether [addr, addr+size) meets no live
// reservation and no mapped memory.
func (v *replayer) unreserved(addr, size int64) bool {
	size = v.reach(size)
	return !v.a.Reserved(addr, size) && !v.a.Overlaps(addr, size)
}

// ofPool reports whether a recorded map of n bytes can be of the pool of
// the request being replayed: a large-pool map is whole large pages; a
// small-pool one, for a request of at most 1 MiB, one or two 2 MiB pages
// that are not.
func (v *replayer) ofPool(n int64) bool {
	if v.atSize > torchlike.SmallSize {
		return n%v.largePage == 0
	}
	return n <= 2*torchlike.SmallBuffer && n%v.largePage != 0
}

// laterMap is the base of a new expandable reservation of size bytes that
// the recorded segment event the simulation is at (i) does not give: one
// made by a malloc that failed (an oom), whose pages a later allocation
// of its stream maps, or by one whose first attempt failed, which
// records its releases before the map. It is the first map of the
// request's pool that lies in no reservation and no mapped memory: among
// the recorded events the simulation has yet to make (this entry's, and
// any an earlier one left), else among the later entries of its stream,
// in order; 0 if none.
//
// Given an address of the validator's own, such a reservation took the
// wrong place among the others, and a later request that more than one
// could hold was mapped in another than the recorded one (membench's
// exports disagreed so in 4 of 9,642 pairs of an export-validate
// campaign). Taken from a map of another entry, of the other pool, or
// read only within 1,024 entries (a failing 1 TiB request makes two
// reservations, the second mapped thousands of entries later), it took
// another reservation's place, and that one the next's (959 pairs of the
// campaign that followed).
//
// The later maps are read through a cursor per stream and pool (next):
// a map passed over, of the other pool or in a reservation or mapped
// memory, is passed over for good, and one taken lies in the new
// reservation from then on, so the reading of all of a recording's
// failing mallocs together reads each map of each stream at most twice
// between two releases of a reservation. A release starts every cursor
// again at the entry replayed: the device may give the released range to
// a new reservation, and a map passed over for lying in it may be that
// one's first.
func (v *replayer) laterMap(i int, size int64) int64 {
	for j := i; j < min(v.rec.Len(), i+lookAhead); j++ {
		if r := v.rec.At(j); r.Action == torchlike.ActionSegmentMap && v.ofPool(r.Size) && v.unreserved(r.Addr, size) {
			return r.Addr
		}
	}
	if n := v.a.Released(); n != v.released {
		v.next, v.nextShared, v.released = map[poolKey]int{}, false, n
	}
	later := v.maps[v.atStream]
	key := poolKey{v.atStream, v.atSize <= torchlike.SmallSize}
	c := v.next[key]
	// Maps before the entry are past; the cursor moves only forward.
	c += sort.Search(len(later)-c, func(n int) bool { return int(later[c+n]) > v.at })
	for ; c < len(later); c++ {
		if e := &v.tr[later[c]]; v.ofPool(e.Size) && v.unreserved(e.Addr, size) {
			v.setNext(key, c)
			return e.Addr
		}
	}
	v.setNext(key, c)
	return 0
}

// setNext moves the cursor of key, on a copy of the cursors if this
// replayer shares them with the one it was cloned from.
func (v *replayer) setNext(key poolKey, c int) {
	if v.next[key] == c {
		return
	}
	if v.nextShared {
		v.next, v.nextShared = maps.Clone(v.next), false
	}
	v.next[key] = c
}

// mapsByStream lists each stream's segment_map entries in trace order,
// for laterMap's cursors; copies of a replayer share it, read only.
func mapsByStream(tr []snapshot.TraceEntry) map[int64][]int32 {
	m := map[int64][]int32{}
	for k := range tr {
		if tr[k].Action == torchlike.ActionSegmentMap {
			m[tr[k].Stream] = append(m[tr[k].Stream], int32(k))
		}
	}
	return m
}

// lookAhead bounds how many recorded events past the simulation's place
// laterMap reads for the entry being replayed.
const lookAhead = 1024

type deferredFree struct {
	addr int64
	h    strategies.Handle
}

// attach wires the allocator's trace, completion and address hooks to
// this replayer.
func (v *replayer) attach(a *torchlike.Allocator, mem *strategies.Memory) {
	v.a, v.mem = a, mem
	if v.addrOf == nil {
		v.addrOf = map[strategies.Handle]int64{}
	}
	if v.autoCompleted == nil {
		v.autoCompleted = map[int64]bool{}
	}
	a.OnComplete = func(h strategies.Handle) {
		if addr, ok := v.addrOf[h]; ok {
			delete(v.live, addr)
			delete(v.addrOf, h)
			v.autoCompleted[addr] = true
			// A completion left to the release path is done: the
			// handle may name a new block at the same address by the
			// window's end (the model reuses its records), which
			// must not be completed for it.
			v.deferred = slices.DeleteFunc(v.deferred, func(d deferredFree) bool { return d.h == h && d.addr == addr })
		}
	}
	a.OnTrace = func(act string, addr, size, stream int64) {
		v.sim.Append(SegEvent{Action: act, Addr: addr, Size: size, Entry: -1})
	}
	// While the simulation agrees, a new segment takes the address the
	// recording gives it, so best-fit ties between segments break as
	// they did on the real device.
	a.AddrHook = v.place
}

// place is the address of a new device range of size bytes: the recorded
// one while the simulation agrees, else one of the validator's own.
func (v *replayer) place(size int64) int64 {
	i := v.sim.Len()
	if v.rep.Diverged {
		return v.fallback.take(size)
	}
	if i < v.rec.Len() {
		switch r := v.rec.At(i); r.Action {
		case torchlike.ActionSegmentAlloc:
			if r.Size == size && !v.a.Overlaps(r.Addr, size) {
				return r.Addr
			}
		case torchlike.ActionSegmentMap:
			// A new expandable reservation starts where its first page
			// is mapped, never inside another.
			if !v.a.Overlaps(r.Addr, r.Size) && (!v.expandable || !v.a.Reserved(r.Addr, v.reach(size))) {
				return r.Addr
			}
		}
	}
	if v.expandable {
		if addr := v.laterMap(i, size); addr != 0 {
			return addr
		}
	}
	return v.fallback.take(size)
}

func (v *replayer) clone() *replayer {
	c := *v
	rep := *v.rep
	c.rep = &rep
	mem := *v.mem
	// maps.Clone copies a map's tables whole, where inserting each entry
	// again took two thirds of the clone (an empty_cache() every four
	// steps over 5,000 live blocks).
	c.live = maps.Clone(v.live)
	c.sim, c.rec = v.sim.Share(), v.rec.Share()
	c.deferred = append([]deferredFree(nil), v.deferred...)
	// The cursors are copied when either moves one (setNext).
	c.nextShared, v.nextShared = true, true
	c.addrOf = maps.Clone(v.addrOf)
	c.autoCompleted = maps.Clone(v.autoCompleted)
	c.attach(v.a.Clone(&mem), &mem)
	return &c
}

func (v *replayer) diverge(at, entry int, note string) {
	if !v.rep.Diverged {
		v.rep.Diverged, v.rep.DivergeAt, v.rep.DivergeEntry = true, at, entry
		if note != "" {
			v.rep.Note = note
		}
	}
}

// divergeHere records a divergence found while replaying entry k: at the
// first segment event that differs, if the events so far already do, else
// at the first one the recording and the simulation do not share.
func (v *replayer) divergeHere(k int, note string) {
	v.compare(k)
	if v.rep.Diverged {
		if v.rep.DivergeEntry == k && v.rep.Note == "" {
			v.rep.Note = note
		}
		return
	}
	v.diverge(v.checked, k, note)
}

// compare checks the simulated events against the recorded ones so far.
func (v *replayer) compare(k int) {
	n := min(v.sim.Len(), v.rec.Len())
	for ; v.checked < n && !v.rep.Diverged; v.checked++ {
		s, r := v.sim.At(v.checked), v.rec.At(v.checked)
		if s.Action != r.Action || s.Size != r.Size {
			v.diverge(v.checked, k, "")
			return
		}
		v.rep.Compared++
	}
}

// drive replays one request of the recording. With deferCompleted, a
// free_completed is not applied: the simulation's own release path will
// complete the block (synchronize_and_free_events), as it did in reality.
func (v *replayer) drive(k int, e snapshot.TraceEntry, deferCompleted bool) error {
	switch e.Action {
	case torchlike.ActionAlloc:
		if e.Size <= 0 || e.Size > traces.MaxSize {
			return fmt.Errorf("trace entry %d: alloc of %d B: %w", k, e.Size, traces.ErrBadSize)
		}
		v.at, v.atStream, v.atSize = k, e.Stream, e.Size
		h, ok := v.a.Malloc(e.Size, e.Stream)
		if !ok {
			v.divergeHere(k, fmt.Sprintf("the simulation ran out of memory allocating %d B where the recording succeeded", e.Size))
			return nil
		}
		if _, dup := v.live[e.Addr]; dup {
			return fmt.Errorf("trace entry %d: alloc at %#x, which is already live", k, e.Addr)
		}
		v.live[e.Addr] = h
		v.addrOf[h] = e.Addr
		delete(v.autoCompleted, e.Addr)
		if v.a.Addr(h) != e.Addr {
			v.rep.AddrMismatches++
		}
	case torchlike.ActionFreeRequested, torchlike.ActionFreeCompleted, torchlike.ActionFree:
		h, ok := v.live[e.Addr]
		if !ok {
			if e.Action == torchlike.ActionFreeCompleted && v.autoCompleted[e.Addr] {
				delete(v.autoCompleted, e.Addr)
				return nil
			}
			if v.rep.Diverged {
				return nil // the simulation failed this block's allocation
			}
			return fmt.Errorf("trace entry %d: %s of %#x, which is not live", k, e.Action, e.Addr)
		}
		switch {
		case e.Action == torchlike.ActionFreeRequested && v.hasCompleted:
			if !v.a.IsPending(h) { // a repeated free_requested changes nothing
				v.a.FreeRequested(h)
			}
		case e.Action == torchlike.ActionFreeCompleted && deferCompleted:
			v.deferred = append(v.deferred, deferredFree{e.Addr, h})
		case e.Action == torchlike.ActionFreeCompleted:
			if v.a.IsPending(h) {
				v.a.FreeCompleted(h)
			}
			delete(v.live, e.Addr)
			delete(v.addrOf, h)
		default:
			if e.Action == torchlike.ActionFreeRequested || !v.a.IsPending(h) {
				v.a.Free(h)
			} else {
				v.a.FreeCompleted(h) // a legacy "free" of a block already requested
			}
			delete(v.live, e.Addr)
			delete(v.addrOf, h)
		}
	case torchlike.ActionOOM:
		if e.Size <= 0 || e.Size > traces.MaxSize {
			return fmt.Errorf("trace entry %d: oom of %d B: %w", k, e.Size, traces.ErrBadSize)
		}
		v.rec.Append(SegEvent{Action: "oom", Addr: e.DeviceFree, Size: e.Size, Entry: k})
		v.at, v.atStream, v.atSize = k, e.Stream, e.Size
		if h, ok := v.a.Malloc(e.Size, e.Stream); ok {
			v.a.Free(h)
			v.divergeHere(k, fmt.Sprintf("the simulation allocated %d B where the recording ran out of memory", e.Size))
		}
	case torchlike.ActionSnapshot, torchlike.ActionUserDefined:
	default:
		v.rep.UnknownActions[e.Action]++
	}
	return nil
}

// resolveBurst handles recorded segment frees (or unmaps) starting at
// entry k that the simulation did not produce. Three readings are tried,
// each on a copy of the state, through the next allocation (or recorded
// OOM) j; the first that reproduces the recorded segment events of
// entries k..j exactly wins:
//
//  1. the allocation at j releases the memory itself: its device malloc
//     fails on the modelled capacity (WouldRelease) — free_completed
//     entries in between were recorded by its synchronize_and_free_events
//     and are left to the model;
//  2. the program called torch.cuda.empty_cache() at k;
//  3. the device malloc at j failed because the device was fuller than
//     modelled (another process, no OOM recorded): the capacity is taken,
//     for that one allocation, as the recorded reserved bytes after the
//     releases plus the segment that followed them, which makes the first
//     attempt fail and the attempt after the same releases succeed.
//
// A program call is preferred to a failure nothing recorded, so 2 comes
// before 3 (where both fit, they leave the same layout). When none
// reproduces the recording, the second is kept and the comparison reports
// the divergence.
//
// With fromCompletions, k is a run of free_completed entries before the
// releases, and only reading 1 is tried, with those completions left to
// the model's synchronize_and_free_events; ok reports whether it
// reproduced the recording. (Reading 3 would fit a plain free followed by
// empty_cache() too, and a program's call is preferred.)
//
// When the first release's stack frames say which call released (hint,
// see burstHint), they choose instead of that order: FramesEmptyCache
// takes reading 2 alone (and completions before it are plain frees),
// FramesMalloc takes reading 1 or 3, whichever reproduces the recording,
// and records the capacity bound the failed device malloc implies. Where
// neither malloc reading reproduces it, the frames are overruled and the
// burst is inferred as without them (and counted).
func (v *replayer) resolveBurst(tr []snapshot.TraceEntry, k int, recReserved []int64, fromCompletions bool, hint snapshot.FrameClass) (_ *replayer, ok bool, _ error) {
	j := -1
	for i := k; i < len(tr) && j < 0; i++ {
		switch tr[i].Action {
		case torchlike.ActionSegmentFree, torchlike.ActionSegmentUnmap, torchlike.ActionSegmentAlloc, torchlike.ActionSegmentMap, torchlike.ActionFreeCompleted:
		case torchlike.ActionAlloc, torchlike.ActionOOM:
			j = i
		default:
			i = len(tr)
		}
	}
	// window replays entries k..j on c, the burst's releases left to the
	// model (and free_completed deferred) or, with emptyFirst, an
	// empty_cache() call first.
	window := func(c *replayer, emptyFirst, deferCompleted bool) error {
		if emptyFirst {
			c.a.EmptyCache()
			c.rep.EmptyCache++
		}
		end := j
		if end < 0 {
			end = k
		}
		for i := k; i <= end; i++ {
			e := tr[i]
			switch e.Action {
			case torchlike.ActionSegmentAlloc, torchlike.ActionSegmentFree, torchlike.ActionSegmentMap, torchlike.ActionSegmentUnmap:
				c.rec.Append(SegEvent{Action: e.Action, Addr: e.Addr, Size: e.Size, Entry: i})
				c.rep.PeakRecorded = max(c.rep.PeakRecorded, recReserved[i+1])
			default:
				if err := c.drive(i, e, deferCompleted); err != nil {
					return err
				}
			}
			if !deferCompleted {
				c.compare(i)
			}
		}
		// Blocks whose completion was left to the model: the release
		// path completed (and maybe released) them; any it did not is
		// completed now, as the recording says.
		for _, d := range c.deferred {
			// The address may already hold a new allocation: only the
			// deferred block itself, if still there, is completed (the
			// ones the release path completed have left the list, so
			// that a new block with the same handle is not taken for
			// one).
			if h, ok := c.live[d.addr]; ok && h == d.h {
				if c.a.IsPending(h) {
					c.a.FreeCompleted(h)
				}
				delete(c.live, d.addr)
				delete(c.addrOf, h)
			}
		}
		c.deferred = nil
		c.compare(end)
		c.resumeAt = end + 1
		return nil
	}
	agrees := func(c *replayer) bool { return !c.rep.Diverged && c.sim.Len() == c.rec.Len() }
	switch hint {
	case snapshot.FramesEmptyCache:
		if fromCompletions {
			return nil, false, nil // the completions are plain frees before the call
		}
		c := v.clone()
		if err := window(c, true, false); err != nil {
			return nil, false, err
		}
		c.rep.FramesRead++
		return c, agrees(c), nil
	case snapshot.FramesMalloc:
		bound, hasBound := mallocBound(tr, k, j, recReserved)
		if hasBound && v.a.WouldRelease(tr[j].Size, tr[j].Stream) {
			c := v.clone()
			if err := window(c, false, true); err == nil && agrees(c) {
				c.rep.FramesRead++
				c.rep.MallocRetries = append(slices.Clip(c.rep.MallocRetries), bound)
				return c, true, nil
			}
		}
		if hasBound && !fromCompletions {
			c := v.clone()
			saved := c.mem.Limit
			c.mem.Limit = recReserved[bound.Entry] + tr[bound.Entry].Size
			err := window(c, false, true)
			c.mem.Limit = saved
			if err == nil && agrees(c) {
				c.rep.FramesRead++
				c.rep.InferredFailures++
				c.rep.MallocRetries = append(slices.Clip(c.rep.MallocRetries), bound)
				return c, true, nil
			}
		}
		if fromCompletions {
			return nil, false, nil
		}
		v.rep.FramesOverruled++
	}
	if j >= 0 {
		if v.a.WouldRelease(tr[j].Size, tr[j].Stream) {
			c := v.clone()
			if err := window(c, false, true); err == nil && agrees(c) {
				return c, true, nil
			}
		}
	}
	var empty *replayer
	if !fromCompletions {
		empty = v.clone()
		if err := window(empty, true, false); err != nil {
			return nil, false, err
		}
		if agrees(empty) || j < 0 {
			return empty, agrees(empty), nil
		}
	}
	if j >= 0 && tr[j].Action == torchlike.ActionAlloc && !fromCompletions {
		// The segment the allocation finally got bounds the device's
		// capacity at that moment.
		for i := j - 1; i > k; i-- {
			if a := tr[i].Action; a == torchlike.ActionSegmentAlloc || a == torchlike.ActionSegmentMap {
				c := v.clone()
				saved := c.mem.Limit
				c.mem.Limit = recReserved[i] + tr[i].Size
				err := window(c, false, true)
				c.mem.Limit = saved
				if err == nil && agrees(c) {
					c.rep.InferredFailures++
					return c, true, nil
				}
				break
			}
		}
	}
	return empty, false, nil
}

// plainThenBurst replays the free_completed entries k..m-1 as plain frees
// on a copy of v, then resolves the releases at m (resolveBurst), and
// reports whether that reproduced the recording through the allocation
// after them. Why first: a free's completion recorded just before a
// release burst may be a plain free (PyTorch records free_requested and
// free_completed together when the block has no outstanding stream use)
// or one the release path completed (synchronize_and_free_events), and
// both readings can reproduce the burst. They differ in the blocks' ages,
// which garbage collection (garbage_collection_threshold) reads later: a
// snapshot membench exported with plain frees only diverged 80,000
// entries on when the release path's reading was taken first. A plain
// free is the commoner program and the simpler reading. Without garbage
// collection the two leave the same state, and the release path's is
// tried alone, as it was: this reading costs another copy of the replay,
// and each copies the model.
//
// The releases after the plain frees must be the next malloc's own
// release path: a reading of them as an empty_cache() call, a device
// failure nothing recorded or frames overruled is a program the
// completions left to the release path explain more simply (a block
// pending on record_stream, completed in the retry, whose segment the
// same retry releases), and is not taken here.
//
// With anyReading, the releases may also be read as an empty_cache() call
// or a device failure nothing recorded (not against their frames): the
// reading of the completions as plain frees that the release path's
// reading is weighed against when that one put an allocation elsewhere
// than recorded (see validateDevice's loop).
func (v *replayer) plainThenBurst(tr []snapshot.TraceEntry, k, m int, recReserved []int64, hint snapshot.FrameClass, anyReading bool) (*replayer, bool, error) {
	c := v.clone()
	for i := k; i < m; i++ {
		if err := c.drive(i, tr[i], false); err != nil {
			return nil, false, err
		}
		c.compare(i)
	}
	if c.rep.Diverged || c.sim.Len() > c.rec.Len() {
		return nil, false, nil
	}
	empty, failures, overruled := c.rep.EmptyCache, c.rep.InferredFailures, c.rep.FramesOverruled
	next, ok, err := c.resolveBurst(tr, m, recReserved, false, hint)
	if err != nil || !ok {
		return nil, false, err
	}
	if r := next.rep; r.FramesOverruled != overruled || !anyReading && (r.EmptyCache != empty || r.InferredFailures != failures) {
		return nil, false, nil
	}
	return next, true, nil
}

// burstHint is what the frames of a release (segment_free or
// segment_unmap) say of the call that made it. In PyTorch
// (c10/cuda/CUDACachingAllocator.cpp) release_block records the context
// its caller gathered, or, when the caller gathered none, the context
// the segment was allocated with: DeviceCachingAllocator::emptyCache
// gathers one only when frees are recorded with context (context="all"),
// malloc whenever allocations are. So frames naming emptyCache are
// conclusive; other frames are the releasing malloc's only when frees
// carry frames too (freeFrames), and otherwise may be the allocation's
// of the released segment: then nothing is concluded.
func (v *replayer) burstHint(e snapshot.TraceEntry) snapshot.FrameClass {
	switch {
	case e.Frames == snapshot.FramesEmptyCache:
		return snapshot.FramesEmptyCache
	case e.Frames != snapshot.FramesNone && v.freeFrames:
		return snapshot.FramesMalloc
	}
	return snapshot.FramesNone
}

// mallocBound is the capacity bound of a malloc retry whose releases
// start at entry k (or after the free_completed entries there) and whose
// allocation is entry j: the segment the retry obtained (the first
// segment_alloc or segment_map in between) is what the failed device
// malloc asked for, while the reserved bytes were those before the first
// release.
func mallocBound(tr []snapshot.TraceEntry, k, j int, recReserved []int64) (CapacityBound, bool) {
	if j < 0 || tr[j].Action != torchlike.ActionAlloc {
		return CapacityBound{}, false
	}
	first := -1
	for i := k; i < j; i++ {
		switch tr[i].Action {
		case torchlike.ActionSegmentFree, torchlike.ActionSegmentUnmap:
			if first < 0 {
				first = i
			}
		case torchlike.ActionSegmentAlloc, torchlike.ActionSegmentMap:
			if first < 0 {
				return CapacityBound{}, false
			}
			return CapacityBound{Entry: i, Reserved: recReserved[first], Segment: tr[i].Size}, true
		}
	}
	return CapacityBound{}, false
}

// expandableBase estimates where a warm-started expandable segment's
// address reservation begins, which no snapshot records: the lowest
// address known to belong to it — its first mapped run at the start
// (first), and any page the trace later maps or unmaps on the same stream
// in the same pool (known, sorted: tracePages) — provided that address
// lies a whole number of pages below the runs and no lower than floor
// (the reservation must reach the last run, and begin above the one
// before it). An allocator can have mapped nothing below it only if that
// page was never used, so this is exact whenever the trace touches the
// segment's start.
func expandableBase(known []int64, first, page, floor int64) int64 {
	i, _ := slices.BinarySearch(known, floor)
	for ; i < len(known) && known[i] < first; i++ {
		if (first-known[i])%page == 0 {
			return known[i]
		}
	}
	return first
}

// tracePages lists, for each stream and pool of runs, the addresses the
// trace maps or unmaps there (the pool told by page size: 2 MiB small,
// multiples of the large page large), sorted: one pass over the trace,
// where each reservation's base read all of it (a warm start of 8,000
// streams took 4.3 s).
func tracePages(tr []snapshot.TraceEntry, runs map[poolKey][]torchlike.SeedRun, largePage int64) map[poolKey][]int64 {
	known := map[poolKey][]int64{}
	for _, e := range tr {
		if e.Action != torchlike.ActionSegmentMap && e.Action != torchlike.ActionSegmentUnmap {
			continue
		}
		k := poolKey{e.Stream, e.Size%largePage != 0}
		if _, ok := runs[k]; ok {
			known[k] = append(known[k], e.Addr)
		}
	}
	for _, a := range known {
		slices.Sort(a)
	}
	return known
}

// reservationRuns is how many of runs, a stream's mapped runs of one pool
// in address order, one reservation of size bytes based at base can hold:
// each a whole number of pages from the first, and ending within size of
// base. PyTorch makes a stream another reservation when
// none it has can hold a request (find_expandable_block), so a stream's
// runs may lie in several; seeded into one, the runs past its end were
// refused ("not whole pages of the reservation"): 150 of 2,400 warm
// starts of a review's random recordings.
func reservationRuns(runs []torchlike.SeedRun, size, page, base int64) int {
	n := 1
	for n < len(runs) && runs[n].Addr+runs[n].Size-base <= size && (runs[n].Addr-runs[0].Addr)%page == 0 {
		n++
	}
	return n
}

// otherRuns are every stream's and pool's expandable runs in address
// order, with the bounds of each stretch of one stream and pool, for the
// nearest run of another below or above an address.
type otherRuns struct {
	runs       []keyedRun
	from, upto []int32 // the first and one past the last index of i's stretch
}

type keyedRun struct {
	start, end int64
	k          poolKey
}

func othersOf(runs map[poolKey][]torchlike.SeedRun) *otherRuns {
	o := &otherRuns{}
	for k, rs := range runs {
		for _, r := range rs {
			o.runs = append(o.runs, keyedRun{r.Addr, r.Addr + r.Size, k})
		}
	}
	slices.SortFunc(o.runs, func(x, y keyedRun) int { return cmp.Compare(x.start, y.start) })
	n := len(o.runs)
	o.from, o.upto = make([]int32, n), make([]int32, n)
	for i := range n {
		if i > 0 && o.runs[i-1].k == o.runs[i].k {
			o.from[i] = o.from[i-1]
		} else {
			o.from[i] = int32(i)
		}
	}
	for i := n - 1; i >= 0; i-- {
		if i+1 < n && o.runs[i+1].k == o.runs[i].k {
			o.upto[i] = o.upto[i+1]
		} else {
			o.upto[i] = int32(i + 1)
		}
	}
	return o
}

// startAbove is where the first run at or above addr of another stream or
// pool than k starts (MaxInt64: none).
func (o *otherRuns) startAbove(k poolKey, addr int64) int64 {
	i, _ := slices.BinarySearchFunc(o.runs, addr, func(r keyedRun, a int64) int { return cmp.Compare(r.start, a) })
	if i < len(o.runs) && o.runs[i].k == k {
		i = int(o.upto[i])
	}
	if i < len(o.runs) {
		return o.runs[i].start
	}
	return math.MaxInt64
}

// endBelow is where the last run below addr of another stream or pool
// than k ends (MinInt64: none).
func (o *otherRuns) endBelow(k poolKey, addr int64) int64 {
	i, _ := slices.BinarySearchFunc(o.runs, addr, func(r keyedRun, a int64) int { return cmp.Compare(r.start, a) })
	i--
	if i >= 0 && o.runs[i].k == k {
		i = int(o.from[i]) - 1
	}
	if i >= 0 {
		return o.runs[i].end
	}
	return math.MinInt64
}

// seed installs the reconstructed starting layout. totalKnown: the card's
// total, and with it a reservation's size, is known (an OOM, --capacity or
// --total), not taken as unlimited.
//
// It returns the expandable reservations it seeded. baseCaps lowers the
// base of a reservation named by its first run's address to at most the
// given address, the least number of pages, where that still holds its
// runs and the pages the trace maps or unmaps in its tail, and keeps
// above the run of another stream or pool below and the stream's own
// reservation below (lowerBases). Another stream's seeded tail may then
// lie under it, as it may under any seeded reservation: a tail has no
// run to bound it.
func seed(a *torchlike.Allocator, l *snapshot.Layout, tr []snapshot.TraceEntry, cfg torchlike.Config, live map[int64]strategies.Handle, totalKnown bool, baseCaps map[int64]int64) ([]seededReservation, error) {
	var seeded []seededReservation
	expandable := cfg.ExpandableSegments
	runs := map[poolKey][]torchlike.SeedRun{}
	var keys []poolKey
	for _, s := range l.Segments {
		var blocks []torchlike.SeedBlock
		for _, b := range s.Blocks {
			blocks = append(blocks, torchlike.SeedBlock{Addr: b.Address, Size: b.Size, Requested: b.RequestedSize, Pending: b.Pending})
		}
		if s.Expandable {
			if !expandable {
				return nil, fmt.Errorf("segment at %#x is expandable but the snapshot's settings say expandable_segments=False", s.Address)
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
			return nil, err
		}
		for i, h := range hs {
			live[blocks[i].Addr] = h
		}
	}
	known := tracePages(tr, runs, cfg.LargeSegmentSize)
	others := othersOf(runs)
	for _, k := range keys {
		rs := runs[k]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Addr < rs[j].Addr })
		size, page := a.ReservationSize(k.small), cfg.LargeSegmentSize
		if k.small {
			page = torchlike.SmallBuffer
		}
		floor := int64(math.MinInt64)
		for len(rs) > 0 {
			// A reservation holds no run of another stream or pool: it
			// begins above the one below its first run, and its runs
			// end before the one above. Its runs are counted from where
			// its first alone would put its base.
			lo := max(floor, others.endBelow(k, rs[0].Addr))
			b0 := expandableBase(known[k], rs[0].Addr, page, lo)
			n := reservationRuns(rs, size, page, b0)
			g := rs[:n]
			last := g[n-1].Addr + g[n-1].Size
			base := expandableBase(known[k], g[0].Addr, page, max(lo, last-size))
			// The run of another stream or pool above the first ends the
			// reservation's runs, and with the card's total known it is
			// based the least number of pages lower that ends it below
			// that run, when that holds its runs and keeps above the one
			// below; where it cannot, the run above is read as lying
			// past it, as without the bound.
			if above := others.startAbove(k, rs[0].Addr); totalKnown && base+size > above {
				m := 1
				for m < n && g[m].Addr < above {
					m++
				}
				end := g[m-1].Addr + g[m-1].Size
				if b := pagesBelow(g[0].Addr, above-size, page); b >= lo && b+size >= end {
					n, base = m, b
				}
			}
			g = rs[:n]
			end := g[n-1].Addr + g[n-1].Size
			// Nor does it hold the stream's next reservation of the
			// pool, which begins at the first run left over: with the
			// card's total known it is based lower, as below another
			// stream's run, where it can be. (Based at its first run,
			// a reservation reached over the next one's live pages,
			// and the replay mapped its tail on top of them: a
			// campaign's warm start, "memory ... overlaps a segment's
			// ending" with the model's checks on, and without them a
			// reading that agreed with the two laid over each other.)
			if n < len(rs) && totalKnown && base+size > rs[n].Addr {
				if b := pagesBelow(g[0].Addr, rs[n].Addr-size, page); b >= lo && b+size >= end {
					base = b
				}
			}
			if c, ok := baseCaps[g[0].Addr]; ok && base > c {
				// The pages the trace maps or unmaps in the tail must
				// stay in the reservation (which also keeps the
				// grouping of runs, and so the caps' keys, as seeded).
				hold := end
				for _, p := range known[k] {
					if p >= g[0].Addr && p < base+size {
						hold = max(hold, p+page)
					}
				}
				if b := pagesBelow(g[0].Addr, c, page); b >= lo && b+size >= hold {
					base = b
				}
			}
			seeded = append(seeded, seededReservation{first: g[0].Addr, base: base, size: size, end: end, page: page})
			rs = rs[n:]
			hss, err := a.SeedExpandable(base, k.stream, k.small, g)
			if err != nil {
				return nil, err
			}
			for i, hs := range hss {
				for j, h := range hs {
					live[g[i].Live[j].Addr] = h
				}
			}
			floor = base + size
		}
	}
	return seeded, nil
}

// pagesBelow is the highest base at or below limit that lies a whole
// number of pages below first, a reservation's first run: where seed
// bases a reservation lower to end it before another's run, or under a
// cap of lowerBases.
func pagesBelow(first, limit, page int64) int64 {
	return first - (first-limit+page-1)/page*page
}

// WriteReport prints a device report for people: what was compared, the
// first divergence with the events around it, and peak reserved memory.
func (r *DeviceReport) WriteReport(w io.Writer, name string) {
	fmt.Fprintf(w, "%s: device %d: %d trace entries (%s)\n", name, r.Device, r.Entries, countsString(r.Counts))
	fmt.Fprintf(w, "  start: %s\n", r.Start)
	fmt.Fprintf(w, "  settings: %s\n", r.Settings)
	fmt.Fprintf(w, "  capacity: %s\n", r.CapacityFrom)
	if r.Note != "" && !r.Diverged {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
	if r.EmptyCache > 0 {
		fmt.Fprintf(w, "  replayed %d torch.cuda.empty_cache() calls (bursts of segment frees no allocation explains)\n", r.EmptyCache)
	}
	if len(r.UnknownActions) > 0 {
		fmt.Fprintf(w, "  skipped trace entries with actions this version does not know: %s\n", countsString(r.UnknownActions))
	}
	if r.InferredFailures > 0 {
		fmt.Fprintf(w, "  replayed %d device mallocs as failed (no oom recorded, but the recorded releases before them are malloc's release path)\n", r.InferredFailures)
	}
	if r.FramesRead > 0 {
		fmt.Fprintf(w, "  stack frames read: %d bursts of segment releases, %d of them a malloc retry and %d torch.cuda.empty_cache()\n", r.FramesRead, len(r.MallocRetries), r.FramesRead-len(r.MallocRetries))
	}
	if r.FramesOverruled > 0 {
		fmt.Fprintf(w, "  note: at %d bursts the frames name malloc, but no failed device malloc reproduces the recording: inferred as without frames\n", r.FramesOverruled)
	}
	if b, ok := r.TightestBound(); ok {
		fmt.Fprintf(w, "  capacity bound: a cudaMalloc of %d B failed with %d B reserved (retried at trace entry %d), so the device could give the allocator less than %d B", b.Segment, b.Reserved, b.Entry, b.Limit())
		if n := len(r.MallocRetries); n > 1 {
			fmt.Fprintf(w, " (the tightest of %d retries)", n)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  segment events and OOMs compared: %d of %d recorded (%d simulated)\n", r.Compared, len(r.Recorded), len(r.Simulated))
	if r.Diverged {
		fmt.Fprintf(w, "  FIRST DIVERGENCE at segment event %d (found replaying trace entry %d)", r.DivergeAt, r.DivergeEntry)
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
	} else if len(r.Recorded) == 0 && len(r.Simulated) == 0 {
		// An empty sequence agrees vacuously: say what the replay did
		// show, that the cache served every allocation (and where).
		where := ""
		if r.AddrMismatches == 0 {
			where = " at their recorded addresses"
		}
		fmt.Fprintf(w, "  agree: no segment event or OOM recorded and none simulated; all %d allocations served from the cache%s\n", r.Counts[torchlike.ActionAlloc], where)
	} else {
		fmt.Fprintf(w, "  agree: every segment event and OOM matches in action, size and order\n")
	}
	if r.Diverged && r.UncertainSizes > 0 {
		fmt.Fprintf(w, "  note: %d blocks live at the start may own an unsplit remainder the trace does not show (up to %d B), seeded as owning none (and, tried too, as owning the largest): the divergence may be that reading of the starting layout's, not the model's (validate a recording that starts earlier to tell)\n", r.UncertainSizes, r.MaxTail)
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
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
	}
	return strings.Join(parts, ", ")
}

// bump hands out device addresses where the recording gives none: aligned
// to the CUDA allocation granularity (2 MiB), never reused, and started
// clear of every recorded address so that the two cannot collide.
type bump struct{ next int64 }

func (b *bump) take(size int64) int64 {
	const g = 2 << 20
	a := b.next
	b.next += (size + g - 1) / g * g
	return a
}
