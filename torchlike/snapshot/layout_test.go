package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"membench/torchlike"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fwd is an independent forward replay of a non-expandable trace from an
// empty allocator: segments by address, live blocks by address, and block
// sizes from the split rule applied at allocation time (§1.6): the block
// takes the front of the free block that starts at its address, and keeps
// the whole free block when the remainder would be at most 1 MiB (large
// pool only).
type fwd struct {
	segs map[int64]int64 // address → size
	live map[int64]*LBlock
	div  [16]int64
}

func newFwd() *fwd { return &fwd{segs: map[int64]int64{}, live: map[int64]*LBlock{}} }

func (f *fwd) segOf(a int64) (int64, int64, bool) {
	for s, n := range f.segs {
		if a >= s && a < s+n {
			return s, n, true
		}
	}
	return 0, 0, false
}

func (f *fwd) apply(t *testing.T, i int, e TraceEntry, hasCompleted bool) {
	switch e.Action {
	case torchlike.ActionSegmentAlloc:
		f.segs[e.Addr] = e.Size
	case torchlike.ActionSegmentFree:
		delete(f.segs, e.Addr)
	case torchlike.ActionAlloc:
		s, n, ok := f.segOf(e.Addr)
		if !ok {
			t.Fatalf("forward: entry %d: alloc outside segments", i)
		}
		next := s + n
		for _, b := range f.live {
			if b.Address > e.Addr && b.Address < next {
				next = b.Address
			}
		}
		size := roundSize(e.Size, &f.div)
		if n != smallBuffer && next-e.Addr-size <= smallSize {
			size = next - e.Addr
		}
		f.live[e.Addr] = &LBlock{Address: e.Addr, Size: size, RequestedSize: e.Size}
	case torchlike.ActionFreeRequested:
		if hasCompleted {
			f.live[e.Addr].Pending = true
		} else {
			delete(f.live, e.Addr)
		}
	case torchlike.ActionFreeCompleted, torchlike.ActionFree:
		delete(f.live, e.Addr)
	}
}

func forward(t *testing.T, trace []TraceEntry) *fwd {
	f := newFwd()
	has := slices.ContainsFunc(trace, func(e TraceEntry) bool { return e.Action == torchlike.ActionFreeCompleted })
	for i, e := range trace {
		f.apply(t, i, e, has)
	}
	return f
}

// flatten lists a layout's segments and blocks in a comparable form.
func flatten(l *Layout) (map[int64]int64, map[int64]LBlock) {
	segs := map[int64]int64{}
	blocks := map[int64]LBlock{}
	for _, s := range l.Segments {
		segs[s.Address] = s.Size
		for _, b := range s.Blocks {
			blocks[b.Address] = b
		}
	}
	return segs, blocks
}

func compareForward(t *testing.T, what string, l *Layout, f *fwd) (sizeDiffs int) {
	t.Helper()
	segs, blocks := flatten(l)
	if !maps.Equal(segs, f.segs) {
		t.Fatalf("%s: segments differ: reconstructed %d, forward %d", what, len(segs), len(f.segs))
	}
	if len(blocks) != len(f.live) {
		t.Fatalf("%s: %d live blocks reconstructed, %d forward", what, len(blocks), len(f.live))
	}
	for a, fb := range f.live {
		b, ok := blocks[a]
		if !ok {
			t.Fatalf("%s: block %#x missing", what, a)
		}
		if b.RequestedSize != fb.RequestedSize || b.Pending != fb.Pending {
			t.Fatalf("%s: block %#x: got %+v, forward %+v", what, a, b, *fb)
		}
		if b.Size != fb.Size {
			sizeDiffs++
		}
		if fb.Size < b.Size || fb.Size > b.MaxSize {
			t.Fatalf("%s: block %#x: size %d outside the reconstructed range [%d, %d]", what, a, fb.Size, b.Size, b.MaxSize)
		}
	}
	return sizeDiffs
}

func TestColdStartReal(t *testing.T) {
	for _, rf := range realFiles {
		s := loadSnap(t, rf.name)
		l, err := s.InitialState(0)
		if err != nil {
			t.Fatalf("%s: %v", rf.name, err)
		}
		if len(l.Segments) != 0 || l.NumBlocks() != 0 || len(l.Assumptions) != 0 {
			t.Errorf("%s: cold start reconstructed as %d segments, %d blocks, assumptions %v",
				rf.name, len(l.Segments), l.NumBlocks(), l.Assumptions)
		}
		if len(l.Roles) != rf.entries {
			t.Fatalf("%s: %d roles", rf.name, len(l.Roles))
		}
		n := map[Role]int{}
		for _, r := range l.Roles {
			n[r]++
		}
		want := map[Role]int{RoleAlloc: rf.actions["alloc"], RoleFreeRequested: rf.actions["free_requested"],
			RoleFree: rf.actions["free_completed"], RoleNone: rf.actions["segment_alloc"]}
		if !maps.Equal(n, want) {
			t.Errorf("%s: roles %v, want %v", rf.name, n, want)
		}
	}
}

// The forward replay of the whole trace must end where the snapshot ends:
// this checks the replay (and the split rule it uses) against PyTorch.
func TestForwardReachesFinal(t *testing.T) {
	for _, rf := range realFiles {
		s := loadSnap(t, rf.name)
		f := forward(t, s.DeviceTraces[0])
		final := &Layout{}
		for _, sg := range s.Segments {
			ls := LSeg{Address: sg.Address, Size: sg.TotalSize}
			for _, b := range sg.Blocks {
				if b.State != StateInactive {
					ls.Blocks = append(ls.Blocks, LBlock{Address: b.Address, Size: b.Size, MaxSize: b.Size,
						RequestedSize: b.RequestedSize, Pending: b.State == StateActivePendingFree})
				}
			}
			final.Segments = append(final.Segments, ls)
		}
		if d := compareForward(t, rf.name, final, f); d != 0 {
			t.Errorf("%s: %d block sizes differ between forward replay and snapshot", rf.name, d)
		}
	}
}

// Cutting the first K entries off a real cold-start trace makes a warm
// start whose true initial layout is the forward replay of those K
// entries.
func TestWarmCutsReal(t *testing.T) {
	for _, rf := range realFiles {
		s := loadSnap(t, rf.name)
		tr := s.DeviceTraces[0]
		var cuts []int
		step := max(1, len(tr)/60)
		for k := 0; k <= len(tr); k += step {
			cuts = append(cuts, k)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			cuts = append(cuts, rng.IntN(len(tr)+1))
		}
		// Cuts between a free_requested and its free_completed leave a
		// pending block at the start.
		for i, e := range tr {
			if e.Action == torchlike.ActionFreeRequested && len(cuts) < 120 && i%7 == 0 {
				cuts = append(cuts, i+1)
			}
		}
		cuts = append(cuts, len(tr)-1, len(tr))
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)

		f := newFwd()
		applied := 0
		totalDiffs, totalBlocks, pendingSeen, uncertain := 0, 0, 0, 0
		for _, k := range cuts {
			for ; applied < k; applied++ {
				f.apply(t, applied, tr[applied], true)
			}
			cut := &Snapshot{Segments: s.Segments, DeviceTraces: [][]TraceEntry{tr[k:]}, Settings: s.Settings}
			l, err := cut.InitialState(0)
			if err != nil {
				t.Fatalf("%s cut at %d: %v", rf.name, k, err)
			}
			what := fmt.Sprintf("%s cut at %d", rf.name, k)
			totalDiffs += compareForward(t, what, l, f)
			totalBlocks += l.NumBlocks()
			uncertain += l.UncertainSizes()
			for _, sg := range l.Segments {
				for _, b := range sg.Blocks {
					if b.Pending {
						pendingSeen++
					}
				}
			}
			if k > 0 && len(l.Assumptions) != 0 {
				t.Errorf("%s: assumptions %v", what, l.Assumptions)
			}
		}
		t.Logf("%s: %d cuts, %d live blocks compared, %d pending, %d with an uncertain size, %d sizes differ from the forward replay",
			rf.name, len(cuts), totalBlocks, pendingSeen, uncertain, totalDiffs)
		if pendingSeen == 0 {
			t.Errorf("%s: no cut produced a pending block", rf.name)
		}
		if totalDiffs != 0 {
			t.Errorf("%s: %d block sizes differ", rf.name, totalDiffs)
		}
	}
}

const (
	m = int64(1 << 20)
	E = int64(0x7f0000000000)
)

func ent(action string, addr, size int64) TraceEntry {
	return TraceEntry{Action: action, Addr: addr, Size: size}
}

// checkLayout compares a layout with the expected segments; an expected
// block's MaxSize of 0 means "not checked".
func checkLayout(t *testing.T, what string, l *Layout, want []LSeg) {
	t.Helper()
	if len(want) == 0 && len(l.Segments) == 0 {
		return
	}
	got := slices.Clone(l.Segments)
	for i := range got {
		got[i].Blocks = slices.Clone(got[i].Blocks)
		for j := range got[i].Blocks {
			if i < len(want) && j < len(want[i].Blocks) && want[i].Blocks[j].MaxSize == 0 {
				got[i].Blocks[j].MaxSize = 0
			}
		}
	}
	if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func TestSegmentFreeAndWarmBlock(t *testing.T) {
	S1, S2 := int64(0x10000000), int64(0x20000000)
	s := &Snapshot{
		Segments: []Segment{{Address: S1, TotalSize: 20 * m, SegmentType: "large", Blocks: []Block{
			{Address: S1, Size: 4 * m, RequestedSize: 4 * m, State: StateActiveAllocated},
			{Address: S1 + 4*m, Size: 16 * m, State: StateInactive}}}},
		DeviceTraces: [][]TraceEntry{{
			ent("free_requested", S2, 3*m),
			ent("free_completed", S2, 3*m),
			ent("segment_free", S2, 20*m),
			ent("segment_alloc", S1, 20*m),
			ent("alloc", S1, 4*m),
			ent("oom", 0, 100*m),
			ent("snapshot", 0, 4*m),
		}},
	}
	l, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	// 17 MiB free behind the block: it may own up to 1 MiB more.
	checkLayout(t, "segment_free", l, []LSeg{{Address: S2, Size: 20 * m, Blocks: []LBlock{
		{Address: S2, Size: 3 * m, MaxSize: 4 * m, RequestedSize: 3 * m}}}})
	if l.NumBlocks() != 1 || len(l.Assumptions) != 0 {
		t.Errorf("blocks %d, assumptions %v", l.NumBlocks(), l.Assumptions)
	}
	// A small segment freed: pool from its size.
	s.DeviceTraces[0][2].Size = 2 * m
	s.DeviceTraces[0][0].Size, s.DeviceTraces[0][1].Size = 1000, 1000
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "small segment_free", l, []LSeg{{Address: S2, Size: 2 * m, Small: true, Blocks: []LBlock{
		{Address: S2, Size: 1024, RequestedSize: 1000}}}})
}

func TestPendingFrees(t *testing.T) {
	S := int64(0x40000000)
	P, Q, Y, Z := S, S+2*m, S+4*m, S+6*m
	s := &Snapshot{
		Segments: []Segment{{Address: S, TotalSize: 20 * m, SegmentType: "large", Blocks: []Block{
			{Address: P, Size: 2 * m, RequestedSize: 2 * m, State: StateActivePendingFree},
			{Address: Q, Size: 18 * m, State: StateInactive}}}},
		DeviceTraces: [][]TraceEntry{{
			ent("free_completed", Y, 2*m), // its request fell off the ring buffer
			ent("alloc", Z, 2*m),
			ent("free_requested", Z, 2*m),
			ent("free_completed", Z, 2*m),
			ent("free_requested", P, 2*m), // still pending at the end
		}},
	}
	l, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "pending", l, []LSeg{{Address: S, Size: 20 * m, Blocks: []LBlock{
		{Address: P, Size: 2 * m, RequestedSize: 2 * m},
		{Address: Y, Size: 2 * m, RequestedSize: 2 * m, Pending: true}}}})
	if want := []Role{RoleFree, RoleAlloc, RoleFreeRequested, RoleFree, RoleFreeRequested}; !slices.Equal(l.Roles, want) {
		t.Errorf("roles %v, want %v", l.Roles, want)
	}
	if len(l.Assumptions) != 0 {
		t.Errorf("assumptions %v", l.Assumptions)
	}

	// Without any free_completed, free_requested is the free.
	s.Segments[0].Blocks[0].State = StateInactive
	s.DeviceTraces[0] = []TraceEntry{ent("free_requested", Y, 2*m), ent("alloc", Z, 2*m), ent("free", Z, 2*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "no free_completed", l, []LSeg{{Address: S, Size: 20 * m, Blocks: []LBlock{
		{Address: Y, Size: 2 * m, RequestedSize: 2 * m}}}})

	// A free_requested that never completes although others do: taken as
	// the free, with an assumption.
	s.DeviceTraces[0] = []TraceEntry{ent("free_requested", Y, 2*m), ent("alloc", Z, 2*m),
		ent("free_requested", Z, 2*m), ent("free_completed", Z, 2*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	if l.NumBlocks() != 1 || !slices.Equal(l.AssumedEntries(), []int{0}) {
		t.Errorf("unpaired request: %d blocks, assumptions %v", l.NumBlocks(), l.Assumptions)
	}
}

func TestTailAbsorption(t *testing.T) {
	S := int64(0x40000000)
	empty := []Segment{{Address: S, TotalSize: 20 * m, SegmentType: "large",
		Blocks: []Block{{Address: S, Size: 20 * m, State: StateInactive}}}}
	// A block whose rounded size leaves less than 1 MiB of its segment:
	// the remainder was never split off.
	req := 20*m - 700000
	s := &Snapshot{Segments: empty, DeviceTraces: [][]TraceEntry{{
		ent("free_requested", S, req), ent("free_completed", S, req)}}}
	l, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	if b := l.Segments[0].Blocks[0]; b.Size != 20*m || b.MaxSize != 20*m || b.RequestedSize != req {
		t.Errorf("tail not absorbed: %+v", b)
	}
	// A is re-added first with a large gap behind it; C, re-added later
	// (freed earlier), reveals A's 512 KiB tail.
	A, C := S, S+5*m+m/2
	s.DeviceTraces[0] = []TraceEntry{
		ent("free_requested", C, 4*m), ent("free_completed", C, 4*m),
		ent("free_requested", A, 5*m), ent("free_completed", A, 5*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "late evidence", l, []LSeg{{Address: S, Size: 20 * m, Blocks: []LBlock{
		{Address: A, Size: 5*m + m/2, MaxSize: 5*m + m/2, RequestedSize: 5 * m},
		{Address: C, Size: 4 * m, MaxSize: 5 * m, RequestedSize: 4 * m}}}})
	// The same in the small pool: no tail is ever kept.
	s.Segments = []Segment{{Address: S, TotalSize: 2 * m, SegmentType: "small"}}
	s.DeviceTraces[0] = []TraceEntry{ent("free_completed", S, 1000), ent("free_completed", S+1536, 100)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "small", l, []LSeg{{Address: S, Size: 2 * m, Small: true, Blocks: []LBlock{
		{Address: S, Size: 1024, RequestedSize: 1000, Pending: true},
		{Address: S + 1536, Size: 512, RequestedSize: 100, Pending: true}}}})
}

func TestExpandable(t *testing.T) {
	settings := &Settings{MaxSplitSize: -1, ExpandableSegments: true}
	A, B, C := E, E+20*m, E+40*m
	full := []TraceEntry{
		ent("segment_map", E, 40*m),
		ent("alloc", A, 20*m),
		ent("alloc", B, 20*m),
		ent("free_requested", A, 20*m),
		ent("free_completed", A, 20*m),
		ent("segment_unmap", E, 20*m),
		ent("segment_map", E+40*m, 20*m),
		ent("alloc", C, 20*m),
	}
	final := []Segment{{Address: E + 20*m, TotalSize: 40 * m, SegmentType: "large", IsExpandable: true, Blocks: []Block{
		{Address: B, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated},
		{Address: C, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated}}}}
	s := &Snapshot{Segments: final, DeviceTraces: [][]TraceEntry{full}, Settings: settings}
	l, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "expandable cold", l, nil)
	if len(l.Segments) != 0 {
		t.Errorf("cold start: %+v", l.Segments)
	}
	// Warm: cut before A's free. The run is [E, E+40 MiB) with A and B.
	s.DeviceTraces[0] = full[3:]
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "expandable warm", l, []LSeg{{Address: E, Size: 40 * m, Expandable: true, Blocks: []LBlock{
		{Address: A, Size: 20 * m, RequestedSize: 20 * m}, {Address: B, Size: 20 * m, RequestedSize: 20 * m}}}})

	// Undoing a map in the middle of a run splits it in two.
	X, Y, Z := E, E+40*m, E+20*m
	s.Segments = []Segment{{Address: E, TotalSize: 60 * m, SegmentType: "large", IsExpandable: true, Blocks: []Block{
		{Address: X, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated},
		{Address: Z, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated},
		{Address: Y, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated}}}}
	s.DeviceTraces[0] = []TraceEntry{ent("segment_map", Z, 20*m), ent("alloc", Z, 20*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "map split", l, []LSeg{
		{Address: E, Size: 20 * m, Expandable: true, Blocks: []LBlock{{Address: X, Size: 20 * m, RequestedSize: 20 * m}}},
		{Address: E + 40*m, Size: 20 * m, Expandable: true, Blocks: []LBlock{{Address: Y, Size: 20 * m, RequestedSize: 20 * m}}}})

	// Undoing an unmap between two runs joins them.
	s.Segments = []Segment{
		{Address: E, TotalSize: 20 * m, SegmentType: "large", IsExpandable: true, Blocks: []Block{
			{Address: X, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated}}},
		{Address: E + 40*m, TotalSize: 20 * m, SegmentType: "large", IsExpandable: true, Blocks: []Block{
			{Address: Y, Size: 20 * m, RequestedSize: 20 * m, State: StateActiveAllocated}}}}
	s.DeviceTraces[0] = []TraceEntry{ent("free_requested", Z, 10*m), ent("free_completed", Z, 10*m), ent("segment_unmap", Z, 20*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "unmap join", l, []LSeg{{Address: E, Size: 60 * m, Expandable: true, Blocks: []LBlock{
		{Address: X, Size: 20 * m, RequestedSize: 20 * m}, {Address: Z, Size: 10 * m, RequestedSize: 10 * m},
		{Address: Y, Size: 20 * m, RequestedSize: 20 * m}}}})

	// An unmapped run with no neighbour: 2 MiB pages mean the small pool.
	s.Segments = nil
	s.DeviceTraces[0] = []TraceEntry{ent("segment_unmap", E, 4*m), ent("segment_unmap", E+100*m, 20*m)}
	l, err = s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "lone unmap", l, []LSeg{{Address: E, Size: 4 * m, Small: true, Expandable: true, Blocks: []LBlock{}},
		{Address: E + 100*m, Size: 20 * m, Expandable: true, Blocks: []LBlock{}}})
	if !slices.Equal(l.AssumedEntries(), []int{1}) {
		t.Errorf("assumptions %v", l.Assumptions)
	}
}

func TestSeveralDevices(t *testing.T) {
	S0, S2 := int64(0x10000000), int64(0x90000000)
	s := &Snapshot{
		Segments: []Segment{
			{Device: 0, Address: S0, TotalSize: 2 * m, SegmentType: "small", Blocks: []Block{
				{Address: S0, Size: 512, RequestedSize: 8, State: StateActiveAllocated}}},
			{Device: 2, Address: S2, TotalSize: 20 * m, SegmentType: "large", Blocks: []Block{
				{Address: S2, Size: 20 * m, State: StateInactive}}},
		},
		DeviceTraces: [][]TraceEntry{
			{ent("alloc", S0, 8)},
			{},
			{ent("free_requested", S2, 5*m), ent("free_completed", S2, 5*m)},
		},
	}
	if !slices.Equal(s.Devices(), []int{0, 2}) {
		t.Errorf("devices %v", s.Devices())
	}
	l0, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "device 0", l0, []LSeg{{Address: S0, Size: 2 * m, Small: true, Blocks: []LBlock{}}})
	l2, err := s.InitialState(2)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "device 2", l2, []LSeg{{Address: S2, Size: 20 * m, Blocks: []LBlock{
		{Address: S2, Size: 5 * m, RequestedSize: 5 * m}}}})
	if _, err := s.InitialState(1); err == nil || !strings.Contains(err.Error(), "devices: 0, 2") {
		t.Errorf("device 1: %v", err)
	}
}

func TestInconsistent(t *testing.T) {
	S := int64(0x40000000)
	seg := func(blocks ...Block) []Segment {
		return []Segment{{Address: S, TotalSize: 20 * m, SegmentType: "large", Blocks: blocks}}
	}
	live := Block{Address: S, Size: 2 * m, RequestedSize: 2 * m, State: StateActiveAllocated}
	for _, c := range []struct {
		name  string
		segs  []Segment
		trace []TraceEntry
		entry int
		want  string
	}{
		{"alloc never freed", seg(), []TraceEntry{ent("segment_alloc", S, 20*m), ent("alloc", S, 2*m)}, 1, "no live block"},
		{"double alloc", seg(live), []TraceEntry{ent("alloc", S, 2*m), ent("alloc", S, 2*m)}, 0, "no live block"},
		{"segment with blocks", seg(live), []TraceEntry{ent("segment_alloc", S, 20*m)}, 0, "still holds 1 live blocks"},
		{"segment_alloc unknown", seg(), []TraceEntry{ent("segment_alloc", S+m, 20*m)}, 0, "no segment starts"},
		{"free of live", seg(live), []TraceEntry{ent("free_completed", S, 2*m)}, 0, "freed twice"},
		{"double free", seg(), []TraceEntry{ent("alloc", S, 2*m), ent("free_completed", S, 2*m), ent("free_completed", S, 2*m)}, 2, "already freed"},
		{"double request", seg(), []TraceEntry{ent("alloc", S, 2*m), ent("free_requested", S, 2*m), ent("free_requested", S, 2*m)}, 2, "already freed"},
		{"free outside", seg(), []TraceEntry{ent("free_completed", S+40*m, 2*m)}, 0, "in no segment"},
		{"free inside block", seg(live), []TraceEntry{ent("free_completed", S+m, 512)}, 0, "inside the live block"},
		{"segment_free overlap", seg(), []TraceEntry{ent("segment_free", S+2*m, 20*m)}, 0, "overlaps"},
		{"map non-expandable", seg(), []TraceEntry{ent("segment_map", S, 20*m)}, 0, "non-expandable"},
		{"negative size", seg(), []TraceEntry{ent("free_completed", S, -5)}, 0, "out of range"},
	} {
		s := &Snapshot{Segments: c.segs, DeviceTraces: [][]TraceEntry{c.trace}}
		_, err := s.InitialState(0)
		var ee *EntryError
		if (c.want == "freed twice" || c.want == "already freed") && !errors.Is(err, ErrFreeNotLive) {
			t.Errorf("%s: %v is not ErrFreeNotLive", c.name, err)
		}
		if !errors.As(err, &ee) || ee.Entry != c.entry || !errors.Is(err, ErrInconsistent) ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want entry %d error containing %q", c.name, err, c.entry, c.want)
		}
	}
	// Final-state errors.
	for _, segs := range [][]Segment{
		{{Address: S, TotalSize: 20 * m, Blocks: []Block{{Address: S + 19*m, Size: 2 * m, State: StateActiveAllocated}}}},
		{{Address: S, TotalSize: 20 * m}, {Address: S + 10*m, TotalSize: 20 * m}},
		{{Address: S, TotalSize: 20 * m, Blocks: []Block{{Address: S, Size: 2 * m, State: "weird"}}}},
		{{Address: S, TotalSize: 0}},
		{{Address: S, TotalSize: 20 * m, Blocks: []Block{live, live}}},
	} {
		s := &Snapshot{Segments: segs}
		if _, err := s.InitialState(0); !errors.Is(err, ErrInconsistent) {
			t.Errorf("final %+v: %v", segs, err)
		}
	}
}

// Random consistent traces: a toy forward allocator (first fit, the
// split rule of §1.6, segments created and released) generates a trace
// and its final snapshot; every cut's reconstruction must equal the toy's
// own state at that point.
func TestRandomTraces(t *testing.T) {
	blocks, uncertain, guessedWrong := 0, 0, 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		trace, snaps := toyRun(rng, 400)
		final := snaps[len(snaps)-1]
		for k := 0; k <= len(trace); k += 1 + rng.IntN(25) {
			s := &Snapshot{Segments: final, DeviceTraces: [][]TraceEntry{trace[k:]}}
			l, err := s.InitialState(0)
			if err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, k, err)
			}
			want := liveOnly(snaps[k])
			if len(l.Segments) != len(want) {
				t.Fatalf("seed %d cut %d: %d segments, want %d", seed, k, len(l.Segments), len(want))
			}
			for i, sg := range l.Segments {
				w := want[i]
				if sg.Address != w.Address || sg.Size != w.TotalSize || len(sg.Blocks) != len(w.Blocks) {
					t.Fatalf("seed %d cut %d: segment %d: got %+v, want %+v", seed, k, i, sg, w)
				}
				for j, b := range sg.Blocks {
					wb := w.Blocks[j]
					if b.Address != wb.Address || b.RequestedSize != wb.RequestedSize ||
						b.Pending != (wb.State == StateActivePendingFree) || wb.Size < b.Size || wb.Size > b.MaxSize {
						t.Fatalf("seed %d cut %d: block got %+v, want %+v", seed, k, b, wb)
					}
					blocks++
					if b.Size != wb.Size {
						guessedWrong++
					}
					if b.MaxSize > b.Size {
						uncertain++
					}
				}
			}
		}
	}
	t.Logf("%d blocks compared, %d with an uncertain size, %d of those guessed wrong", blocks, uncertain, guessedWrong)
}

func liveOnly(segs []Segment) []Segment {
	var out []Segment
	for _, s := range segs {
		sg := Segment{Address: s.Address, TotalSize: s.TotalSize}
		for _, b := range s.Blocks {
			if b.State != StateInactive {
				sg.Blocks = append(sg.Blocks, b)
			}
		}
		out = append(out, sg)
	}
	return out
}

// toyRun drives a small caching allocator and returns its trace and its
// snapshot (segments with every block) before each entry and at the end.
func toyRun(rng *rand.Rand, steps int) ([]TraceEntry, [][]Segment) {
	type blk struct {
		addr, size, req int64
		state           string
	}
	type seg struct {
		addr, size int64
		blocks     []*blk
	}
	var segs []*seg
	nextAddr := int64(0x100000000)
	var trace []TraceEntry
	var snaps [][]Segment
	snapshot := func() []Segment {
		out := []Segment{}
		sort.Slice(segs, func(i, j int) bool { return segs[i].addr < segs[j].addr })
		for _, s := range segs {
			typ := "large"
			if s.size == smallBuffer {
				typ = "small"
			}
			sg := Segment{Address: s.addr, TotalSize: s.size, SegmentType: typ}
			for _, b := range s.blocks {
				sg.Blocks = append(sg.Blocks, Block{b.addr, b.size, b.req, b.state})
			}
			out = append(out, sg)
		}
		return out
	}
	emit := func(e TraceEntry) {
		snaps = append(snaps, snapshot())
		trace = append(trace, e)
	}
	var pending []*blk // freed, awaiting free_completed
	merge := func(s *seg) {
		for i := 0; i+1 < len(s.blocks); {
			if s.blocks[i].state == StateInactive && s.blocks[i+1].state == StateInactive {
				s.blocks[i].size += s.blocks[i+1].size
				s.blocks = slices.Delete(s.blocks, i+1, i+2)
			} else {
				i++
			}
		}
	}
	complete := func(b *blk) {
		emit(ent("free_completed", b.addr, b.req))
		b.state = StateInactive
		for _, s := range segs {
			merge(s)
		}
	}
	for range steps {
		switch r := rng.IntN(10); {
		case r < 5: // alloc
			var req int64
			if rng.IntN(2) == 0 {
				req = 1 + rng.Int64N(1<<20)
			} else {
				req = (1 << 20) + rng.Int64N(30<<20)
			}
			size := roundSize(req, &[16]int64{})
			small := size <= smallSize
			var found *blk
			var fseg *seg
			for _, s := range segs {
				if (s.size == smallBuffer) != small {
					continue
				}
				for _, b := range s.blocks {
					if b.state == StateInactive && b.size >= size && (found == nil || b.size < found.size) {
						found, fseg = b, s
					}
				}
			}
			if found == nil {
				asz := int64(smallBuffer)
				switch {
				case !small && size < 10<<20:
					asz = 20 << 20
				case !small:
					asz = ceilTo(size, 2<<20)
				}
				s := &seg{addr: nextAddr, size: asz, blocks: []*blk{{nextAddr, asz, 0, StateInactive}}}
				nextAddr += asz + int64(rng.IntN(3))*(2<<20)
				emit(ent("segment_alloc", s.addr, asz))
				segs = append(segs, s)
				found, fseg = s.blocks[0], s
			}
			rem := found.size - size
			if (small && rem >= 512) || (!small && rem > smallSize) {
				i := slices.Index(fseg.blocks, found)
				fseg.blocks = slices.Insert(fseg.blocks, i+1, &blk{found.addr + size, rem, 0, StateInactive})
				found.size = size
			}
			emit(ent("alloc", found.addr, req))
			found.req, found.state = req, StateActiveAllocated
		case r < 8: // free, sometimes deferred
			var live []*blk
			for _, s := range segs {
				for _, b := range s.blocks {
					if b.state == StateActiveAllocated {
						live = append(live, b)
					}
				}
			}
			if len(live) == 0 {
				continue
			}
			b := live[rng.IntN(len(live))]
			emit(ent("free_requested", b.addr, b.req))
			b.state = StateActivePendingFree
			if rng.IntN(4) == 0 {
				pending = append(pending, b)
			} else {
				complete(b)
			}
		case r < 9: // complete deferred frees
			for _, b := range pending {
				complete(b)
			}
			pending = nil
		default: // empty_cache: release whole free segments
			for i := 0; i < len(segs); {
				s := segs[i]
				if len(s.blocks) == 1 && s.blocks[0].state == StateInactive {
					emit(ent("segment_free", s.addr, s.size))
					segs = slices.Delete(segs, i, i+1)
				} else {
					i++
				}
			}
		}
	}
	snaps = append(snaps, snapshot())
	return trace, snaps
}

// actionIndex and knownActions must agree with torchlike.KnownAction.
func TestActionIndex(t *testing.T) {
	for i, a := range knownActions {
		if actionIndex(a) != i || !torchlike.KnownAction(a) {
			t.Errorf("%q: index %d, want %d", a, actionIndex(a), i)
		}
	}
	if actionIndex("defragment") != len(knownActions) {
		t.Error("an unknown action has an index")
	}
}

// TestOversizeTail: with max_split_size set, a block of that size or
// more is its whole segment (no request splits one, a smaller request
// takes none, no segment that large is split), so one alone at its
// segment's start with less than max_non_split_rounding behind it is the
// segment, its size certain. Elsewhere its unseen remainder may be up to
// max_non_split_rounding less 512 B (a request of max_split_size or more
// takes a cached block whole when it is less than that larger): the whole
// gap behind it when the gap is no larger, else as much as leaves more
// than 1 MiB free. Without max_split_size, or for a smaller block, it is
// at most 1 MiB. LayoutOptions.Tails gives every block its largest size.
func TestOversizeTail(t *testing.T) {
	S := int64(0x20000000)
	snap := func(seg, at, block int64, ms int64) *Snapshot {
		return &Snapshot{
			Settings: &Settings{MaxSplitSize: ms},
			DeviceTraces: [][]TraceEntry{{
				ent("free_requested", S+at, block),
				ent("free_completed", S+at, block),
				ent("segment_free", S, seg),
			}},
		}
	}
	for _, c := range []struct {
		name                     string
		seg, at, block, ms       int64
		size, maxSize, tailsSize int64
	}{
		{"oversize, its segment", 65 * m, 0, 50 * m, 40 * m, 65 * m, 65 * m, 65 * m},
		{"oversize, 50 MiB behind", 100 * m, 0, 50 * m, 40 * m, 50 * m, 70*m - 512, 70*m - 512},
		{"oversize, not at the start, 15 MiB behind", 67 * m, 2 * m, 50 * m, 40 * m, 50 * m, 65 * m, 65 * m},
		{"below max_split_size", 100 * m, 0, 30 * m, 40 * m, 30 * m, 31 * m, 31 * m},
		{"no max_split_size", 65 * m, 0, 50 * m, -1, 50 * m, 51 * m, 51 * m},
	} {
		for _, tails := range []bool{false, true} {
			l, err := snap(c.seg, c.at, c.block, c.ms).Reconstruct(0, LayoutOptions{Tails: tails})
			if err != nil {
				t.Fatal(err)
			}
			b := l.Segments[0].Blocks[0]
			want := c.size
			if tails {
				want = c.tailsSize
			}
			if b.Size != want || b.MaxSize != c.maxSize {
				t.Errorf("%s, tails %v: size %d, max %d; want %d, %d", c.name, tails, b.Size, b.MaxSize, want, c.maxSize)
			}
		}
	}
}

// TestOversizeWholeCut: a recording the whole-segment rule does not fit
// (a block freed earlier sat in the segment of a block of max_split_size
// or more, as when max_split_size was set during the recording) is read
// with a note, not refused as blocks overlapping. The oversize block is
// then read as if the rule had not applied: its rounded size, grown over
// a gap of at most 1 MiB behind it, and otherwise uncertain up to the
// next block; it does not keep the space up to that block as a certain
// size (which it did: 55 MiB, Size == MaxSize).
func TestOversizeWholeCut(t *testing.T) {
	S := int64(0x20000000)
	for _, c := range []struct {
		next          int64 // where the block freed earlier is
		size, maxSize int64
	}{
		{55 * m, 50 * m, 55 * m},
		{50*m + m/2, 50*m + m/2, 50*m + m/2},
		{50 * m, 50 * m, 50 * m},
		{45 * m, 45 * m, 45 * m},
	} {
		s := &Snapshot{
			Settings: &Settings{MaxSplitSize: 40 * m},
			DeviceTraces: [][]TraceEntry{{
				ent("free_requested", S+c.next, 5*m),
				ent("free_completed", S+c.next, 5*m),
				ent("free_requested", S, 50*m),
				ent("free_completed", S, 50*m),
				ent("segment_free", S, 65*m),
			}},
		}
		l, err := s.InitialState(0)
		if err != nil {
			t.Fatal(err)
		}
		bs := l.Segments[0].Blocks
		if len(bs) != 2 || bs[0].Size != c.size || bs[0].MaxSize != c.maxSize || bs[1].Address != S+c.next || len(l.Assumptions) == 0 {
			t.Errorf("next block at +%d: blocks %+v, assumptions %v: want the 50 MiB block %d..%d B, noted", c.next, bs, l.Assumptions, c.size, c.maxSize)
		}
	}
}

// TestExpandablePools undoes unmaps whose pool the size leaves open
// (whole large pages) beside runs of either pool. Reservations of two
// pools may be adjacent, and a range joined at once to its one neighbour
// took the pool of a reservation that merely began where it ended: the
// first two rows are the reproducers of an export-validate campaign
// (membench's own exports failed "the mapped range ... runs past its
// run"), the others the ways the pool gets settled.
func TestExpandablePools(t *testing.T) {
	live := func(addr, size int64) Block {
		return Block{Address: addr, Size: size, RequestedSize: size, State: StateActiveAllocated}
	}
	lb := func(addr, size int64) LBlock { return LBlock{Address: addr, Size: size, RequestedSize: size} }
	large := func(addr, size int64, bs ...Block) Segment {
		return Segment{Address: addr, TotalSize: size, SegmentType: "large", IsExpandable: true, Blocks: bs}
	}
	small := func(addr, size int64, bs ...Block) Segment {
		return Segment{Address: addr, TotalSize: size, SegmentType: "small", IsExpandable: true, Blocks: bs}
	}
	rows := []struct {
		name    string
		conf    string
		final   []Segment
		trace   []TraceEntry
		from    int    // the entry the recording starts at
		want    []LSeg // the layout at entry from
		assumed []int
	}{{
		// The large pool's reservation [E, E+60 MiB) ends where the small
		// pool's begins. Its last page, unmapped beside the small run
		// after the page below it, is not the small pool's: the block
		// freed across both pages and the first map say so.
		name:  "two pools side by side",
		final: []Segment{large(E, 20*m, live(E, 20*m)), small(E+60*m, 2*m, live(E+60*m, m))},
		trace: []TraceEntry{
			ent("segment_map", E, 60*m), ent("alloc", E, 20*m), ent("alloc", E+20*m, 40*m),
			ent("segment_map", E+60*m, 2*m), ent("alloc", E+60*m, m),
			ent("free_requested", E+20*m, 40*m), ent("free_completed", E+20*m, 40*m),
			ent("segment_unmap", E+20*m, 20*m), ent("segment_unmap", E+40*m, 20*m)},
		from: 5,
		// Cut there, the 40 MiB block (a large-pool size) says whose the
		// pages between are.
		want: []LSeg{{Address: E, Size: 60 * m, Expandable: true, Blocks: []LBlock{lb(E, 20*m), lb(E+20*m, 40*m)}},
			{Address: E + 60*m, Size: 2 * m, Small: true, Expandable: true, Blocks: []LBlock{lb(E+60*m, m)}}},
	}, {
		// 64 MiB large pages: a lone 64 MiB unmap is not 2 MiB pages
		// for being no multiple of 20 MiB.
		name:  "large_segment_size_mb",
		conf:  "expandable_segments:true,large_segment_size_mb:64",
		final: []Segment{large(E+192*m, 64*m, live(E+192*m, 64*m))},
		trace: []TraceEntry{
			ent("segment_map", E, 256*m), ent("alloc", E, 64*m), ent("alloc", E+64*m, 128*m), ent("alloc", E+192*m, 64*m),
			ent("free_requested", E+64*m, 128*m), ent("free_completed", E+64*m, 128*m), ent("segment_unmap", E+64*m, 128*m),
			ent("free_requested", E, 64*m), ent("free_completed", E, 64*m), ent("segment_unmap", E, 64*m)},
		from: 4,
		want: []LSeg{{Address: E, Size: 256 * m, Expandable: true, Blocks: []LBlock{
			lb(E, 64*m), lb(E+64*m, 128*m), lb(E+192*m, 64*m)}}},
	}, {
		// A block freed across the end of its run reaches into the
		// loose run beyond and joins it.
		name:  "block across a loose run",
		final: []Segment{large(E, 20*m, live(E, 10*m))},
		trace: []TraceEntry{ent("free_requested", E+10*m, 20*m), ent("free_completed", E+10*m, 20*m),
			ent("segment_unmap", E+20*m, 20*m)},
		want: []LSeg{{Address: E, Size: 40 * m, Expandable: true, Blocks: []LBlock{lb(E, 10*m), lb(E+10*m, 20*m)}}},
	}, {
		// Two loose runs side by side, which a map covers: joined for
		// it; cut before the map, joined and taken as large.
		name:    "map across loose runs",
		trace:   []TraceEntry{ent("segment_map", E, 40*m), ent("segment_unmap", E+20*m, 20*m), ent("segment_unmap", E, 20*m)},
		from:    1,
		want:    []LSeg{{Address: E, Size: 40 * m, Expandable: true, Blocks: []LBlock{}}},
		assumed: []int{0},
	}, {
		// A block of a small-pool size settles the loose run beside the
		// large run as the small pool's.
		name:  "a small block settles the pool",
		final: []Segment{large(E, 20*m, live(E, 20*m)), small(E+40*m, 2*m, live(E+40*m, m))},
		trace: []TraceEntry{ent("free_requested", E+39*m, m/2), ent("free_completed", E+39*m, m/2),
			ent("segment_unmap", E+20*m, 20*m)},
		want: []LSeg{{Address: E, Size: 20 * m, Expandable: true, Blocks: []LBlock{lb(E, 20*m)}},
			{Address: E + 20*m, Size: 22 * m, Small: true, Expandable: true, Blocks: []LBlock{lb(E+39*m, m/2), lb(E+40*m, m)}}},
	}, {
		name:    "one neighbour, at the first entry",
		final:   []Segment{small(E+20*m, 2*m, live(E+20*m, m))},
		trace:   []TraceEntry{ent("segment_unmap", E, 20*m)},
		want:    []LSeg{{Address: E, Size: 22 * m, Small: true, Expandable: true, Blocks: []LBlock{lb(E+20*m, m)}}},
		assumed: []int{0},
	}, {
		name:  "2 MiB pages join their pool only",
		final: []Segment{large(E, 20*m, live(E, 20*m)), small(E+24*m, 2*m, live(E+24*m, m))},
		trace: []TraceEntry{ent("segment_unmap", E+20*m, 4*m)},
		want: []LSeg{{Address: E, Size: 20 * m, Expandable: true, Blocks: []LBlock{lb(E, 20*m)}},
			{Address: E + 20*m, Size: 6 * m, Small: true, Expandable: true, Blocks: []LBlock{lb(E+24*m, m)}}},
	}, {
		name:  "between two pools, at the first entry",
		final: []Segment{large(E, 20*m, live(E, 20*m)), small(E+40*m, 2*m, live(E+40*m, m))},
		trace: []TraceEntry{ent("segment_unmap", E+20*m, 20*m)},
		want: []LSeg{{Address: E, Size: 40 * m, Expandable: true, Blocks: []LBlock{lb(E, 20*m)}},
			{Address: E + 40*m, Size: 2 * m, Small: true, Expandable: true, Blocks: []LBlock{lb(E+40*m, m)}}},
		assumed: []int{0},
	}}
	for _, row := range rows {
		settings := &Settings{MaxSplitSize: -1, ExpandableSegments: true, PYTORCH_CUDA_ALLOC_CONF: row.conf}
		s := &Snapshot{Segments: row.final, DeviceTraces: [][]TraceEntry{row.trace}, Settings: settings}
		// The whole trace: a cold start, which every row's is.
		l, err := s.InitialState(0)
		if err != nil {
			t.Errorf("%s: whole trace: %v", row.name, err)
		} else if row.from > 0 && len(l.Segments) != 0 {
			t.Errorf("%s: whole trace: not a cold start: %+v", row.name, l.Segments)
		}
		if row.from == 0 {
			checkLayout(t, row.name, l, row.want)
		} else {
			s.DeviceTraces[0] = row.trace[row.from:]
			if l, err = s.InitialState(0); err != nil {
				t.Errorf("%s: from entry %d: %v", row.name, row.from, err)
				continue
			}
			checkLayout(t, row.name, l, row.want)
		}
		if got := l.AssumedEntries(); !slices.Equal(got, row.assumed) && len(got)+len(row.assumed) > 0 {
			t.Errorf("%s: assumptions at %v, want %v: %+v", row.name, got, row.assumed, l.Assumptions)
		}
	}
}

// TestUnmapStormsBounded undoes long runs of unmaps: pages unmapped one
// at a time below a run that holds many blocks, and pages of whole large
// pages side by side with no run beside them, whose pool stays open. The
// first reaches the run down over each range, moving no block; the
// second grows one loose run, inserting no other (each unmap had moved
// every block of the run above it, and each made a run of its own that
// settle then joined).
func TestUnmapStormsBounded(t *testing.T) {
	const n = 4000
	settings := &Settings{MaxSplitSize: -1, ExpandableSegments: true}
	top := E + 2*m*n
	var blocks []Block
	for k := range int64(n) {
		blocks = append(blocks, Block{Address: top + k*m/2, Size: m / 2, RequestedSize: m / 2, State: StateActiveAllocated})
	}
	var below, beside []TraceEntry
	for k := range int64(n) {
		below = append(below, ent("segment_unmap", top-2*m*(n-k), 2*m)) // undone from the run down
		beside = append(beside, ent("segment_unmap", E+20*m*k, 20*m))
	}
	s := &Snapshot{Segments: []Segment{{Address: top, TotalSize: n * m / 2, SegmentType: "small", IsExpandable: true, Blocks: blocks}},
		DeviceTraces: [][]TraceEntry{below}, Settings: settings}
	moved0, made0 := blocksMoved.Load(), runsMade.Load()
	l, err := s.InitialState(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Segments) != 1 || l.Segments[0].Address != E || len(l.Segments[0].Blocks) != n || !l.Segments[0].Small {
		t.Errorf("pages below a run: %d segments, the first at %#x", len(l.Segments), l.Segments[0].Address)
	}
	if moved, made := blocksMoved.Load()-moved0, runsMade.Load()-made0; moved != 0 || made != 0 {
		t.Errorf("pages below a run: %d blocks moved, %d runs made, want none", moved, made)
	}
	s.Segments, s.DeviceTraces[0] = nil, beside
	moved0, made0 = blocksMoved.Load(), runsMade.Load()
	if l, err = s.InitialState(0); err != nil {
		t.Fatal(err)
	}
	if len(l.Segments) != 1 || l.Segments[0].Size != 20*m*n || l.Segments[0].Small {
		t.Errorf("pages side by side: %+v", l.Segments)
	}
	if made := runsMade.Load() - made0; made != 1 {
		t.Errorf("pages side by side: %d runs made, want 1", made)
	}
	if got := l.AssumedEntries(); !slices.Equal(got, []int{0}) {
		t.Errorf("pages side by side: assumptions at %v, want [0]", got)
	}
}
