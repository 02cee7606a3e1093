package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"membench/torchlike"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Layout is the allocator's state on one device just before the first
// entry of its trace, as InitialState reconstructs it.
type Layout struct {
	Device   int
	Segments []LSeg // sorted by address
	// Roles[i] says what entry i of the device's trace does to the live
	// blocks, as the reconstruction interpreted it (see Role).
	Roles []Role
	// Assumptions lists, in entry order, the entries where the trace did
	// not determine the layout and the reconstruction had to guess.
	Assumptions []Assumption

	// The numbering of the addresses (addrIndex) and each entry's slot,
	// for the replay that follows.
	index *addrIndex
	slots []int32
}

// LSeg is a segment (or, for expandable segments, one contiguous mapped
// run) at the start of the trace.
type LSeg struct {
	Address    int64
	Size       int64
	Stream     int64
	Small      bool // small pool (2 MiB segments, blocks of at most 1 MiB)
	Expandable bool
	Blocks     []LBlock // live blocks, sorted by address; the gaps are free
}

// LBlock is a block that holds memory at the start of the trace.
type LBlock struct {
	Address int64
	Size    int64 // bytes the block occupies in its segment
	// MaxSize is the largest size consistent with the trace; it exceeds
	// Size when the block may own an unsplit remainder that nothing in
	// the trace reveals: up to 1 MiB, or with max_split_size up to
	// max_non_split_rounding for a block of max_split_size or more (see
	// the package documentation).
	MaxSize       int64
	RequestedSize int64 // bytes the program asked for
	// Pending: freed by the program but not yet released by the allocator
	// (waiting for stream events); a free_completed follows in the trace.
	Pending bool
}

// Assumption is a guess the reconstruction made at one trace entry.
type Assumption struct {
	Entry int // index in the device's trace
	Note  string
}

// UncertainSizes is the number of blocks whose MaxSize exceeds their Size.
func (l *Layout) UncertainSizes() int {
	n := 0
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			if b.MaxSize > b.Size {
				n++
			}
		}
	}
	return n
}

// MaxTail is the largest remainder a block may own beyond its Size (0
// when every size is certain).
func (l *Layout) MaxTail() int64 {
	var t int64
	for _, s := range l.Segments {
		for _, b := range s.Blocks {
			t = max(t, b.MaxSize-b.Size)
		}
	}
	return t
}

// NumBlocks is the number of live blocks (allocated or pending) at start.
func (l *Layout) NumBlocks() int {
	n := 0
	for _, s := range l.Segments {
		n += len(s.Blocks)
	}
	return n
}

// AssumedEntries returns the entry indices of the assumptions, in order,
// without repeats.
func (l *Layout) AssumedEntries() []int {
	var out []int
	for _, a := range l.Assumptions {
		if len(out) == 0 || out[len(out)-1] != a.Entry {
			out = append(out, a.Entry)
		}
	}
	return out
}

// Role is what a trace entry does to the set of live blocks.
type Role uint8

const (
	// RoleNone: no effect on live blocks (segment_*, oom, snapshot,
	// user_defined and unknown actions).
	RoleNone Role = iota
	// RoleAlloc: a block becomes live (alloc).
	RoleAlloc
	// RoleFreeRequested: the program freed the block, but the allocator
	// keeps it until a later free_completed (or past the end of the trace).
	RoleFreeRequested
	// RoleFree: the block's memory returns to the allocator
	// (free_completed, legacy free, or a free_requested that no
	// free_completed follows).
	RoleFree
)

func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleAlloc:
		return "alloc"
	case RoleFreeRequested:
		return "free_requested"
	case RoleFree:
		return "free"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// ErrInconsistent is wrapped by the errors of InitialState: the trace
// contradicts the final segments (or itself).
var ErrInconsistent = errors.New("trace inconsistent with the final segments")

// ErrFreeNotLive is the EntryError cause for a free (free_requested,
// free_completed, free) of a block that is not live at that point of the
// trace: a double free, or a free of memory never allocated. It wraps
// ErrInconsistent.
var ErrFreeNotLive = fmt.Errorf("free of a block that is not live: %w", ErrInconsistent)

// EntryError is an inconsistency found at one trace entry.
type EntryError struct {
	Device int
	Entry  int // index in DeviceTraces[Device]
	Action string
	Addr   int64
	Msg    string
	Err    error // ErrFreeNotLive or ErrInconsistent
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("snapshot: device %d, entry %d (%s at %#x): %s: %v", e.Device, e.Entry, e.Action, e.Addr, e.Msg, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// Sanity bounds of the reconstruction (not upstream constants, which are
// torchlike's: MinBlockSize, SmallSize, LargeBuffer, RoundSize).
const (
	maxBytes = 1 << 56 // any size, keeps sums far from overflow
	maxAddr  = 1 << 62
)

type rblock struct {
	addr, size, req int64
	pending         bool
	est             bool // size deduced from a free entry: may still grow by a ≤ 1 MiB tail
	// whole: an est block of max_split_size or more given its whole
	// segment (undoFree), its size certain unless a block re-added
	// later cuts it (a recording the rule does not fit, noted), which
	// reads it as if the rule had not applied.
	whole  bool
	entry  int   // for est blocks: the free entry that re-added it
	minGap int64 // for est blocks: the smallest free gap seen right after it
	seg    *rseg
}

type rseg struct {
	addr, size, stream int64
	small, expandable  bool
	// loose marks a run undoUnmap made of a range whose pool nothing
	// had settled yet: a multiple of the large-pool page with no run of
	// one known pool on both sides (none, one, or one of each). Until
	// something settles it (a block freed in it, settleBy; a map or a
	// block reaching across, joinLoose) small means nothing, and it
	// holds no blocks; settle decides the runs left loose at the first
	// entry. looseAt is the earliest entry that made it, for the
	// Assumption.
	loose   bool
	looseAt int
	// blocks are the live blocks, sorted by address, as handles
	// (recon.blk): inserting and deleting in the middle moves them,
	// and the moves of a pointer slice ran a write barrier for every
	// pointer moved while the collector was marking (8% of the opt125m
	// import, more than the moves themselves).
	blocks []int32
}

func (s *rseg) end() int64 { return s.addr + s.size }

// blockIndex is the index of the first block of s at or above addr.
func (r *recon) blockIndex(s *rseg, addr int64) int {
	lo, hi := 0, len(s.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.blk(s.blocks[m]).addr < addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// blk is the block of handle h.
func (r *recon) blk(h int32) *rblock { return &r.slabs[h/slabSize][h%slabSize] }

type recon struct {
	bufs          *importBufs // the trace reader's, for the segments (loadFinal)
	device        int
	trace         rawTrace
	div           [16]int64
	legacy        bool // PyTorch < 2.4 rounding (torchlike.RoundSize)
	tails         bool // blocks take their largest sizes (LayoutOptions.Tails)
	expandableAll bool // settings say expandable_segments: no block ever keeps a tail
	// maxSplit is max_split_size (0 for none), and nonSplit
	// max_non_split_rounding: a request of maxSplit or more may take a
	// cached block whole that is less than nonSplit larger (maxSize).
	maxSplit, nonSplit int64
	// largePage is the large pool's expandable page: 20 MiB, or the
	// recorded large_segment_size_mb (allocator-spec §1.10, the table
	// of knobs); a small-pool page is 2 MiB.
	largePage int64
	segs      []*rseg
	idx       *addrIndex
	slot      []int32   // slot of each entry's address
	live      []*rblock // the live block at each slot, or nil
	assume    []Assumption
	pooled    bool     // idx, slot and the roles come from pools (reconstruct)
	slab      []rblock // blocks are allocated from slabs, not one by one
	slabs     []*[slabSize]rblock
}

// slabSize is the number of blocks in a slab. The slabs of a
// reconstruction go back to slabPool once its layout is built.
const slabSize = 256

var slabPool = sync.Pool{New: func() any { return new([slabSize]rblock) }}

// The per-entry and per-address tables of reconstructions, for the next
// one (see bufPool): each entry's slot and role, which the trace reader
// gives back at the end of its trace, and the state of roles.
var (
	slotPool  bufPool[int32]
	rolePool  bufPool[Role]
	statePool bufPool[int]
	livePool  bufPool[*rblock]
)

// putSlabs returns the slabs to the pool, cleared.
func (r *recon) putSlabs() {
	for _, sl := range r.slabs {
		*sl = [slabSize]rblock{}
		slabPool.Put(sl)
	}
	r.slabs, r.slab = nil, nil
	// The live table goes back too, cleared so that the pool does not
	// keep the slabs.
	clear(r.live[:cap(r.live)])
	livePool.put(r.live)
	r.live = nil
}

// newBlock returns a new block holding b, and its handle.
func (r *recon) newBlock(b rblock) (*rblock, int32) {
	if len(r.slab) == cap(r.slab) {
		sl := slabPool.Get().(*[slabSize]rblock)
		r.slabs = append(r.slabs, sl)
		r.slab = sl[:0]
	}
	r.slab = append(r.slab, b)
	return &r.slab[len(r.slab)-1], int32((len(r.slabs)-1)*slabSize + len(r.slab) - 1)
}

func (r *recon) note(entry int, format string, args ...any) {
	r.assume = append(r.assume, Assumption{entry, fmt.Sprintf(format, args...)})
}

func (r *recon) fail(entry int, format string, args ...any) error {
	return r.failWith(entry, ErrInconsistent, format, args...)
}

func (r *recon) failWith(entry int, cause error, format string, args ...any) error {
	e := &r.trace.ents[entry]
	return &EntryError{Device: r.device, Entry: entry, Action: r.trace.action(entry), Addr: e.Addr, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// segIndex is the index of the segment containing addr, or -1.
func (r *recon) segIndex(addr int64) int {
	i := sort.Search(len(r.segs), func(i int) bool { return r.segs[i].addr > addr }) - 1
	if i >= 0 && addr < r.segs[i].end() {
		return i
	}
	return -1
}

// overlaps reports whether [addr, addr+size) meets an existing segment.
func (r *recon) overlaps(addr, size int64) bool {
	i := sort.Search(len(r.segs), func(i int) bool { return r.segs[i].end() > addr })
	return i < len(r.segs) && r.segs[i].addr < addr+size
}

// runsMade and blocksMoved count the runs undoUnmap inserts and the
// blocks merge moves, for the tests that bound them: undoing 40,000
// unmaps of pages below a run of 40,000 blocks moved every block at each
// (9.7 s), and 200,000 unmaps of pages side by side each inserted a run
// (27 s), where a run reaching over the range does neither.
var runsMade, blocksMoved atomic.Int64

func (r *recon) insertSeg(s *rseg) {
	i := sort.Search(len(r.segs), func(i int) bool { return r.segs[i].addr > s.addr })
	r.segs = slices.Insert(r.segs, i, s)
}

func (r *recon) removeSeg(s *rseg) {
	if i := r.segIndex(s.addr); i >= 0 && r.segs[i] == s {
		r.segs = slices.Delete(r.segs, i, i+1)
	}
}

// keepsTail reports whether blocks of s can own an unsplit remainder: only
// in the large pool of non-expandable segments, where should_split needs a
// remainder of more than 1 MiB (allocator-spec.md §1.6).
func (r *recon) keepsTail(s *rseg) bool {
	return !s.small && !s.expandable && !r.expandableAll
}

// absorbTail grows an estimated block over the free gap that follows it
// when that gap is at most 1 MiB: in a large non-expandable segment every
// free block is larger than 1 MiB, so such a gap can only be the block's
// own unsplit remainder.
func (r *recon) absorbTail(b *rblock, next int64) {
	if !b.est || !r.keepsTail(b.seg) {
		return
	}
	gap := next - (b.addr + b.size)
	if gap > 0 && gap <= torchlike.SmallSize {
		b.size += gap
		gap = 0
	}
	b.minGap = min(b.minGap, gap)
}

// nextStart is where the free space after block index k-1 ends: the next
// block's address or the segment end.
func (r *recon) nextStart(s *rseg, k int) int64 {
	if k < len(s.blocks) {
		return r.blk(s.blocks[k]).addr
	}
	return s.end()
}

// InitialState reconstructs device's allocator layout just before the
// first entry of its trace, undoing the trace backwards from the final
// segments, with the current rounding. See the package documentation for
// the rules.
func (s *Snapshot) InitialState(device int) (*Layout, error) {
	return s.Reconstruct(device, LayoutOptions{})
}

// LayoutOptions are the readings of a recording that the snapshot does not
// determine and a reconstruction must be told.
type LayoutOptions struct {
	// LegacyRoundup rounds requests as PyTorch before 2.4 did (see
	// torchlike.RoundSize): the validator replays a recording both ways,
	// and the layout it starts from must be rebuilt with the same rule.
	LegacyRoundup bool
	// Tails gives every block whose size is uncertain its largest size
	// (LBlock.MaxSize), every unsplit remainder the trace allows, where
	// the reconstruction otherwise takes none: the validator's other
	// reading of a warm start that diverges.
	Tails bool
}

// Reconstruct is InitialState with the readings of opts.
func (s *Snapshot) Reconstruct(device int, opts LayoutOptions) (*Layout, error) {
	if !slices.Contains(s.Devices(), device) {
		return nil, fmt.Errorf("snapshot: device %d is not in the snapshot (devices: %s)", device, joinInts(s.Devices()))
	}
	return s.reconstruct(device, rawOf(s.Trace(device)), opts, false, nil)
}

// reconstruct is Reconstruct of tr, device's trace. With pooled, the
// layout's index, roles and slots come from pools, for a caller that
// gives them back (the trace reader: index.release, putRoles, putSlots).
//
// With bufs (the trace reader's), the layout's segments and blocks are
// in its buffers.
func (s *Snapshot) reconstruct(device int, tr rawTrace, opts LayoutOptions, pooled bool, bufs *importBufs) (*Layout, error) {
	nb := 0
	for i := range s.Segments {
		if s.Segments[i].Device == device {
			nb += len(s.Segments[i].Blocks)
		}
	}
	ents := tr.ents
	r := &recon{device: device, trace: tr, legacy: opts.LegacyRoundup, tails: opts.Tails, pooled: pooled, bufs: bufs,
		largePage: torchlike.LargeBuffer}
	defer r.putSlabs()
	if pooled {
		r.idx = newPooledAddrIndex(nb + len(ents)/4)
		r.slot = slotPool.get(len(ents))
	} else {
		r.idx = newAddrIndex(nb + len(ents)/4)
		r.slot = make([]int32, len(ents))
	}
	for i := range ents {
		r.slot[i] = r.idx.slot(ents[i].Addr)
	}
	r.live = livePool.get(int(r.idx.n) + nb)[:r.idx.n]
	clear(r.live)
	if st := s.Settings; st != nil {
		r.div = st.RoundupPower2Divisions
		r.expandableAll = st.ExpandableSegments
		if st.MaxSplitSize > 0 || st.PYTORCH_CUDA_ALLOC_CONF != "" {
			// Parsed only then, since parsing the conf string
			// allocates; settings that do not parse leave the
			// oversize rules off (max_non_split_rounding unknown)
			// and the large page at 20 MiB.
			if cfg, err := st.config(); err == nil {
				if st.MaxSplitSize > 0 {
					r.maxSplit, r.nonSplit = cfg.MaxSplitSize, cfg.MaxNonSplitRounding
				}
				r.largePage = cfg.LargeSegmentSize
			}
		}
	}
	if err := r.loadFinal(s.Segments); err != nil {
		return nil, err
	}
	roles, err := r.roles()
	if err != nil {
		return nil, err
	}
	for i := len(r.trace.ents) - 1; i >= 0; i-- {
		if err := r.undo(i, roles[i]); err != nil {
			return nil, err
		}
	}
	r.settle()
	slices.SortStableFunc(r.assume, func(a, b Assumption) int { return a.Entry - b.Entry })
	l := &Layout{Device: device, Roles: roles, Assumptions: r.assume, index: r.idx, slots: r.slot}
	nb = 0
	for _, sg := range r.segs {
		nb += len(sg.blocks)
	}
	var all []LBlock
	if bufs != nil {
		bufs.lsegs = slices.Grow(bufs.lsegs[:0], len(r.segs))[:len(r.segs)]
		bufs.lblks = slices.Grow(bufs.lblks[:0], nb)[:nb]
		l.Segments, all = bufs.lsegs, bufs.lblks
	} else {
		l.Segments, all = make([]LSeg, len(r.segs)), make([]LBlock, nb)
	}
	for i, sg := range r.segs {
		ls := LSeg{Address: sg.addr, Size: sg.size, Stream: sg.stream, Small: sg.small, Expandable: sg.expandable}
		ls.Blocks, all = all[:len(sg.blocks):len(sg.blocks)], all[len(sg.blocks):]
		for j, h := range sg.blocks {
			b := r.blk(h)
			ls.Blocks[j] = LBlock{Address: b.addr, Size: b.size, MaxSize: r.maxSize(b), RequestedSize: b.req, Pending: b.pending}
			if r.tails {
				ls.Blocks[j].Size = ls.Blocks[j].MaxSize
			}
		}
		l.Segments[i] = ls
	}
	return l, nil
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// segWhere names a final segment in an error (formatted only then).
type segWhere struct {
	i, device int
	addr      int64
}

func (w segWhere) String() string {
	return fmt.Sprintf("snapshot: segments[%d] (device %d, address %#x)", w.i, w.device, w.addr)
}

// setLive makes b the live block of slot s (nil: none).
func (r *recon) setLive(s int32, b *rblock) {
	for int(s) >= len(r.live) {
		r.live = append(r.live, nil)
	}
	r.live[s] = b
}

// liveAt is the live block of slot s, or nil.
func (r *recon) liveAt(s int32) *rblock {
	if int(s) < len(r.live) {
		return r.live[s]
	}
	return nil
}

// loadFinal builds the state at the end of the trace from the snapshot's
// segments: every block that is not inactive is live.
func (r *recon) loadFinal(segs []Segment) error {
	// One allocation for the segments and one for their block lists
	// (each capped, so that inserting into one never writes into the
	// next), instead of a few per segment.
	nseg, nblk := 0, 0
	for si := range segs {
		if segs[si].Device == r.device {
			nseg++
			nblk += len(segs[si].Blocks)
		}
	}
	var rsegs []rseg
	var ptrs []int32
	if u := r.bufs; u != nil {
		u.rsegs = slices.Grow(u.rsegs[:0], nseg)[:nseg]
		u.ptrs = slices.Grow(u.ptrs[:0], nblk)[:nblk]
		rsegs, ptrs = u.rsegs, u.ptrs
	} else {
		rsegs, ptrs = make([]rseg, nseg), make([]int32, nblk)
	}
	r.segs = slices.Grow(r.segs, nseg) // not one allocation a doubling
	for si := range segs {
		sg := &segs[si]
		if sg.Device != r.device {
			continue
		}
		where := segWhere{si, sg.Device, sg.Address}
		if sg.Address < 0 || sg.Address >= maxAddr || sg.TotalSize <= 0 || sg.TotalSize > maxBytes {
			return fmt.Errorf("%s: address or total_size %d out of range: %w", where, sg.TotalSize, ErrInconsistent)
		}
		rs := &rsegs[0]
		rsegs = rsegs[1:]
		*rs = rseg{addr: sg.Address, size: sg.TotalSize, stream: sg.Stream,
			small: sg.SegmentType == "small", expandable: sg.IsExpandable}
		rs.blocks = ptrs[:0:len(sg.Blocks)]
		ptrs = ptrs[len(sg.Blocks):]
		for bi, b := range sg.Blocks {
			switch b.State {
			case StateInactive:
				continue
			case StateActiveAllocated, StateActivePendingFree:
			default:
				return fmt.Errorf("%s: blocks[%d]: unknown state %q: %w", where, bi, b.State, ErrInconsistent)
			}
			if b.Size <= 0 || b.Size > maxBytes || b.Address < rs.addr || b.Address > rs.end()-b.Size {
				return fmt.Errorf("%s: blocks[%d] (%#x, %d bytes) does not lie inside the segment: %w",
					where, bi, b.Address, b.Size, ErrInconsistent)
			}
			_, h := r.newBlock(rblock{addr: b.Address, size: b.Size, req: b.RequestedSize,
				pending: b.State == StateActivePendingFree, seg: rs})
			rs.blocks = append(rs.blocks, h)
		}
		slices.SortFunc(rs.blocks, func(a, b int32) int { return cmp.Compare(r.blk(a).addr, r.blk(b).addr) })
		for k, h := range rs.blocks {
			b := r.blk(h)
			if k > 0 && r.blk(rs.blocks[k-1]).addr+r.blk(rs.blocks[k-1]).size > b.addr {
				return fmt.Errorf("%s: block %#x overlaps block %#x: %w", where, b.addr, r.blk(rs.blocks[k-1]).addr, ErrInconsistent)
			}
			r.setLive(r.idx.slot(b.addr), b)
		}
		r.segs = append(r.segs, rs)
	}
	slices.SortFunc(r.segs, func(a, b *rseg) int { return cmp.Compare(a.addr, b.addr) })
	for k := 1; k < len(r.segs); k++ {
		if prev := r.segs[k-1]; prev.end() > r.segs[k].addr {
			return fmt.Errorf("snapshot: device %d: segments %#x and %#x overlap: %w", r.device, prev.addr, r.segs[k].addr, ErrInconsistent)
		}
	}
	return nil
}

// roles classifies every entry. A free_requested pairs with the next
// free_completed of its address (RoleFreeRequested: the block is pending in
// between). One that no free_completed follows is still a
// RoleFreeRequested if the final segments show the block live (pending at
// the end); otherwise it is the free itself. That is the normal reading of
// a trace without any free_completed (old releases, or a trace in which
// MemoryViz fused each pair into "free"); in a trace that has
// free_completed entries it is a guess, recorded as an Assumption.
//
// roles also rejects a free of an address whose last event was already a
// free (a double free), naming the second one.
func (r *recon) roles() ([]Role, error) {
	ents := r.trace.ents
	var roles []Role
	if r.pooled {
		roles = rolePool.get(len(ents))
		clear(roles)
	} else {
		roles = make([]Role, len(ents))
	}
	hasCompleted := false
	for i := range ents {
		if r.trace.kindOf(i) == kindFreeCompleted {
			hasCompleted = true
			break
		}
	}
	// An address's last block event is at most one of: a free that
	// returned the memory (freed), or a free_requested awaiting its
	// free_completed (open, at entry j). One map holds both: -1 for
	// freed, j+1 for open.
	const freed = -1
	state := statePool.get(int(r.idx.n))
	defer statePool.put(state)
	clear(state)
	unpaired := func(j int, why string) {
		roles[j] = RoleFree
		if hasCompleted {
			r.note(j, "free_requested of %#x %s; taken as the free", ents[j].Addr, why)
		}
	}
	for i := range ents {
		k := r.trace.kindOf(i)
		sl := r.slot[i]
		st := state[sl]
		switch k {
		case kindFreeRequested, kindFreeCompleted, kindFree:
			if st == freed {
				return nil, r.failWith(i, ErrFreeNotLive, "the address was already freed and not allocated again")
			}
		}
		switch k {
		case kindAlloc:
			roles[i] = RoleAlloc
			if st > 0 {
				unpaired(st-1, "never completed before the address was allocated again")
			}
			state[sl] = 0
		case kindFreeRequested:
			if st > 0 {
				return nil, r.failWith(i, ErrFreeNotLive, "the address was already freed (free_requested) and not allocated again")
			}
			roles[i] = RoleFreeRequested
			state[sl] = i + 1
		case kindFreeCompleted, kindFree:
			roles[i] = RoleFree
			state[sl] = freed
		}
	}
	for sl, st := range state {
		if st <= 0 {
			continue
		}
		j := st - 1
		addr := ents[j].Addr
		if b := r.liveAt(int32(sl)); b != nil {
			if !b.pending {
				r.note(j, "free_requested of %#x, but the final segments show the block allocated, not pending", addr)
			}
			continue // still pending at the end of the trace
		}
		unpaired(j, "never completed and the block is gone at the end")
	}
	return roles, nil
}

func (r *recon) undo(i int, role Role) error {
	e := &r.trace.ents[i]
	switch role {
	case RoleAlloc:
		return r.undoAlloc(i, e)
	case RoleFreeRequested:
		b := r.liveAt(r.slot[i])
		if b == nil {
			return r.failWith(i, ErrFreeNotLive, "no block at this address was live to be freed")
		}
		if !b.pending {
			r.note(i, "block %#x was not pending after its free_requested", e.Addr)
		}
		b.pending = false
		return nil
	case RoleFree:
		return r.undoFree(i, e)
	}
	switch r.trace.kindOf(i) {
	case kindSegmentAlloc:
		return r.undoSegmentAlloc(i, e)
	case kindSegmentFree:
		return r.undoSegmentFree(i, e)
	case kindSegmentMap:
		return r.undoMap(i, e)
	case kindSegmentUnmap:
		return r.undoUnmap(i, e)
	}
	return nil // oom, snapshot, user_defined and unknown actions change nothing
}

// undoAlloc: the block did not exist before its alloc.
func (r *recon) undoAlloc(i int, e *entryRaw) error {
	b := r.liveAt(r.slot[i])
	if b == nil {
		return r.fail(i, "no live block at this address after the alloc (allocated twice without a free, or freed later without a free entry)")
	}
	if b.pending {
		r.note(i, "block %#x was pending-free right after its alloc", e.Addr)
	}
	if b.req != e.Size {
		r.note(i, "alloc asks %d bytes but the block records %d", e.Size, b.req)
	}
	sg := b.seg
	k := r.blockIndex(sg, b.addr)
	sg.blocks = slices.Delete(sg.blocks, k, k+1)
	r.setLive(r.slot[i], nil)
	return nil
}

// undoFree: the block was live before its free; its size is the rounded
// request, plus an unsplit remainder when one can be seen.
func (r *recon) undoFree(i int, e *entryRaw) error {
	a := e.Addr
	if e.Size < 0 || e.Size > maxBytes {
		return r.fail(i, "size %d out of range", e.Size)
	}
	if r.liveAt(r.slot[i]) != nil {
		return r.failWith(i, ErrFreeNotLive, "the block is live again right after its free (freed twice?)")
	}
	si := r.segIndex(a)
	if si < 0 {
		return r.fail(i, "the address lies in no segment")
	}
	sg := r.segs[si]
	k := r.blockIndex(sg, a)
	if k > 0 {
		prev := r.blk(sg.blocks[k-1])
		if prev.addr+prev.size > a {
			if !prev.est {
				return r.fail(i, "the address lies inside the live block %#x (%d bytes)", prev.addr, prev.size)
			}
			cut := a - prev.addr
			if prev.whole {
				// The recording does not fit the whole-segment rule
				// (max_split_size set during it, say): the block is
				// read as the rule had not applied, its rounded size
				// with the gap behind it unknown (absorbTail below),
				// not the space up to here as a certain size.
				cut = min(cut, torchlike.RoundSize(prev.req, &r.div, r.legacy))
				prev.whole, prev.minGap = false, maxBytes
			}
			r.note(i, "estimated size of block %#x cut from %d to %d bytes to make room", prev.addr, prev.size, cut)
			prev.size = cut
		}
	}
	size := torchlike.RoundSize(e.Size, &r.div, r.legacy)
	if k == len(sg.blocks) && a+size > sg.end() {
		sg = r.joinLoose(si, a+size)
	}
	pool := size <= torchlike.SmallSize // the pool a block of this size comes from (§1.2)
	limit := r.nextStart(sg, k)
	if a+size > limit {
		r.note(i, "rounded size %d runs past the next block or the segment end; cut to %d", size, limit-a)
		size = limit - a
	}
	// With max_split_size set, a block of that size or more is its whole
	// segment: no request splits one (should_split), a request below
	// max_split_size takes none (get_free_block), and no segment of
	// max_split_size or more is ever split, so that only a whole segment
	// is that large (allocator-spec §1.5–§1.6). Alone in its segment, from
	// its start, with less than max_non_split_rounding behind it, the
	// block is that segment exactly.
	whole := r.maxSplit > 0 && size >= r.maxSplit && r.keepsTail(sg) && a == sg.addr && limit == sg.end() && limit-a-size < r.nonSplit
	if whole {
		size = limit - a
	}
	// A free_completed was preceded by its free_requested: the block was
	// pending just before. If that request is in the trace, undoing it
	// clears the flag; if not, the block was pending at the start.
	b, h := r.newBlock(rblock{addr: a, size: size, req: e.Size, pending: r.trace.kindOf(i) == kindFreeCompleted,
		est: true, whole: whole, entry: i, minGap: maxBytes, seg: sg})
	r.absorbTail(b, limit)
	sg.blocks = slices.Insert(sg.blocks, k, h)
	r.setLive(r.slot[i], b)
	if k > 0 {
		r.absorbTail(r.blk(sg.blocks[k-1]), a)
	}
	if sg.loose {
		r.settleBy(sg, pool)
	}
	return nil
}

// maxSize is the largest size the block can have. An estimated block in a
// large non-expandable segment that never had at most 1 MiB of free space
// right behind it may still own an unsplit remainder r (taken as none):
// r is a multiple of 512 of at most 1 MiB, and the free block it leaves
// behind, gap - r, must exceed 1 MiB. With max_split_size set, a request
// of max_split_size or more takes a cached block whole, unsplit, if it is
// less than max_non_split_rounding larger (allocator-spec §1.5,
// get_free_block's oversize rules): its remainder may be up to that less
// 512, the whole gap behind it or leaving more than 1 MiB free.
func (r *recon) maxSize(b *rblock) int64 {
	if !b.est || b.whole || !r.keepsTail(b.seg) || b.minGap <= torchlike.SmallSize {
		return b.size
	}
	limit := torchlike.SmallSize
	if r.maxSplit > 0 && b.size >= r.maxSplit {
		limit = r.nonSplit - torchlike.MinBlockSize
		if b.minGap <= limit {
			return b.size + b.minGap
		}
	}
	tail := min(limit, b.minGap-torchlike.SmallSize-torchlike.MinBlockSize)
	tail -= tail % torchlike.MinBlockSize
	return b.size + max(0, tail)
}

// undoSegmentAlloc: the segment did not exist before it was allocated.
func (r *recon) undoSegmentAlloc(i int, e *entryRaw) error {
	si := r.segIndex(e.Addr)
	if si < 0 || r.segs[si].addr != e.Addr {
		return r.fail(i, "no segment starts at this address")
	}
	sg := r.segs[si]
	if n := len(sg.blocks); n > 0 {
		return r.fail(i, "the segment still holds %d live blocks (first at %#x) before its segment_alloc", n, r.blk(sg.blocks[0]).addr)
	}
	if sg.size != e.Size {
		r.note(i, "segment_alloc of %d bytes, but the segment has %d", e.Size, sg.size)
	}
	r.segs = slices.Delete(r.segs, si, si+1)
	return nil
}

// undoSegmentFree: the segment existed, entirely free, before its
// segment_free.
func (r *recon) undoSegmentFree(i int, e *entryRaw) error {
	if e.Size <= 0 || e.Size > maxBytes || e.Addr < 0 || e.Addr >= maxAddr {
		return r.fail(i, "address or size %d out of range", e.Size)
	}
	if r.overlaps(e.Addr, e.Size) {
		return r.fail(i, "the freed segment (%d bytes) overlaps a segment that exists at that point", e.Size)
	}
	// Small-pool segments are always kSmallBuffer (2 MiB); large-pool
	// segments are at least kMinLargeAlloc (10 MiB) (§1.4).
	r.insertSeg(&rseg{addr: e.Addr, size: e.Size, stream: e.Stream, small: e.Size == torchlike.SmallBuffer})
	return nil
}

// undoMap: the range [addr, addr+size) was unmapped before; it is cut out
// of its mapped run, which may split in two.
func (r *recon) undoMap(i int, e *entryRaw) error {
	a, n := e.Addr, e.Size
	if n <= 0 || n > maxBytes {
		return r.fail(i, "size %d out of range", n)
	}
	si := r.segIndex(a)
	if si < 0 {
		return r.fail(i, "the mapped range lies in no segment")
	}
	sg := r.segs[si]
	if !sg.expandable {
		return r.fail(i, "segment_map inside the non-expandable segment %#x", sg.addr)
	}
	if a+n > sg.end() {
		sg = r.joinLoose(si, a+n)
	}
	if a+n > sg.end() {
		return r.fail(i, "the mapped range (%d bytes) runs past its run %#x..%#x", n, sg.addr, sg.end())
	}
	k := r.blockIndex(sg, a)
	if k > 0 {
		if p := r.blk(sg.blocks[k-1]); p.addr+p.size > a {
			return r.fail(i, "live blocks remain in the range before it was mapped")
		}
	}
	if k < len(sg.blocks) && r.blk(sg.blocks[k]).addr < a+n {
		return r.fail(i, "live blocks remain in the range before it was mapped")
	}
	end := sg.end()
	var right *rseg
	if a+n < end {
		right = &rseg{addr: a + n, size: end - (a + n), stream: sg.stream, small: sg.small, expandable: true, loose: sg.loose, looseAt: sg.looseAt}
		right.blocks = slices.Clone(sg.blocks[k:])
		for _, h := range right.blocks {
			r.blk(h).seg = right
		}
	}
	if a > sg.addr {
		sg.size = a - sg.addr
		sg.blocks = sg.blocks[:k:k]
	} else {
		r.segs = slices.Delete(r.segs, si, si+1)
	}
	if right != nil {
		r.insertSeg(right)
	}
	return nil
}

// undoUnmap: the range was mapped before; it rejoins the runs it touches
// that can hold it: expandable, of its stream and of its pool.
//
// PyTorch keeps one reservation per stream and pool (find_expandable_block,
// §1.10), and reservations may be adjacent (membench's are), so the pool
// decides the join. The size tells it only when the range is not a whole
// number of large pages (then it is small-pool pages); otherwise runs of
// one pool on both sides tell it. With a run on one side only, or runs of
// both pools, the range is a loose run of its own until an earlier entry
// settles it (a map, or a block, reaching across: joinLoose) or the first
// entry does (settle). Joined at once to its one neighbour, it took the
// pool of a reservation that merely began where it ended, and an earlier
// map of the other reservation's pages ran past its run.
func (r *recon) undoUnmap(i int, e *entryRaw) error {
	a, n := e.Addr, e.Size
	if n <= 0 || n > maxBytes || a < 0 || a >= maxAddr {
		return r.fail(i, "address or size %d out of range", n)
	}
	if r.overlaps(a, n) {
		return r.fail(i, "the unmapped range is still mapped at that point")
	}
	small := n%r.largePage != 0
	// The runs beside the range that could be of its reservation:
	// expandable and of its stream.
	var left, right *rseg
	if li := r.segIndex(a - 1); li >= 0 {
		if s := r.segs[li]; s.expandable && s.end() == a && s.stream == e.Stream {
			left = s
		}
	}
	if ri := r.segIndex(a + n); ri >= 0 {
		if s := r.segs[ri]; s.expandable && s.addr == a+n && s.stream == e.Stream {
			right = s
		}
	}
	// Which of them it joins: with its size's pool, the runs of that
	// pool; with its pool open, both when they are of one known pool,
	// else only loose ones (which hold no blocks: a block freed in one
	// settles it), staying loose.
	joins := func(s *rseg) bool { return s != nil && !s.loose && s.small == small }
	loose := false
	switch {
	case small:
		left, right = cond(joins(left), left), cond(joins(right), right)
	case left != nil && right != nil && !left.loose && !right.loose && left.small == right.small:
		small = left.small
	default:
		loose = true
		left = cond(left != nil && left.loose, left)
		right = cond(right != nil && right.loose, right)
	}
	switch {
	case left != nil:
		// The range, and right's blocks if any, join left.
		left.size += n
		left.looseAt = min(left.looseAt, i)
		if right != nil {
			r.merge(left, right)
		}
	case right != nil:
		// Right reaches down over the range: no block moves.
		right.addr -= n
		right.size += n
		right.looseAt = min(right.looseAt, i)
	default:
		runsMade.Add(1)
		r.insertSeg(&rseg{addr: a, size: n, stream: e.Stream, small: small, expandable: true, loose: loose, looseAt: i})
	}
	return nil
}

// cond is s when ok, else nil.
func cond(ok bool, s *rseg) *rseg {
	if ok {
		return s
	}
	return nil
}

// merge joins right, which begins where left ends, to left. A loose run
// takes the other's pool.
func (r *recon) merge(left, right *rseg) {
	if left.loose {
		if right.loose {
			left.looseAt = min(left.looseAt, right.looseAt)
		} else {
			left.small, left.loose = right.small, false
		}
	}
	left.size += right.size
	blocksMoved.Add(int64(len(right.blocks)))
	for _, h := range right.blocks {
		r.blk(h).seg = left
	}
	left.blocks = append(left.blocks, right.blocks...)
	r.removeSeg(right)
}

// joinLoose joins to segment si the runs that follow it up to end, for a
// range an earlier entry maps, or a block it frees, across them: each must
// begin where the one before ends, be expandable and of its stream, and
// one of each pair must be loose (a range no size and no neighbour had
// placed in a pool), since runs of known pools that undoUnmap left apart
// stay apart. It returns the run at si, as joined as it could be.
func (r *recon) joinLoose(si int, end int64) *rseg {
	sg := r.segs[si]
	for sg.end() < end && si+1 < len(r.segs) {
		nx := r.segs[si+1]
		if !beside(sg, nx) || !sg.loose && !nx.loose {
			break
		}
		r.merge(sg, nx)
	}
	return sg
}

// settleBy gives the loose run sg the pool a block it holds says, and
// joins it to the runs of that pool and its stream beside it.
func (r *recon) settleBy(sg *rseg, small bool) {
	sg.small, sg.loose = small, false
	k := r.segIndex(sg.addr)
	if k+1 < len(r.segs) {
		if s := r.segs[k+1]; r.joins(sg, s) {
			r.merge(sg, s)
		}
	}
	if k > 0 {
		if s := r.segs[k-1]; r.joins(s, sg) {
			r.merge(s, sg)
		}
	}
}

// joins reports whether right, beside left, is of its run: of one known
// pool too.
func (r *recon) joins(left, right *rseg) bool {
	return beside(left, right) && !left.loose && !right.loose && left.small == right.small
}

// beside reports whether right begins where left ends, both expandable
// and of one stream: runs that may be of one reservation.
func beside(left, right *rseg) bool {
	return left.expandable && right.expandable && left.end() == right.addr && left.stream == right.stream
}

// settle decides the runs still loose at the first entry: each joins the
// runs beside it of its stream, the lower one when they are of different
// pools, and one with none is taken as large, each with an Assumption.
func (r *recon) settle() {
	for k := 0; k < len(r.segs); k++ {
		sg := r.segs[k]
		if !sg.loose {
			continue
		}
		// Loose runs side by side are one range of unknown pool.
		for k+1 < len(r.segs) && r.segs[k+1].loose && beside(sg, r.segs[k+1]) {
			r.merge(sg, r.segs[k+1])
		}
		// Its neighbours are of known pools now: one below was settled
		// before it, one above is not loose or would have joined.
		var left, right *rseg
		if k > 0 && beside(r.segs[k-1], sg) {
			left = r.segs[k-1]
		}
		if k+1 < len(r.segs) && beside(sg, r.segs[k+1]) {
			right = r.segs[k+1]
		}
		if left != nil && right != nil && left.small != right.small {
			right = nil
		}
		switch {
		case left == nil && right == nil:
			r.note(sg.looseAt, "pool of the %d-byte unmapped run is unknown; taken as large", sg.size)
			sg.small, sg.loose = false, false
			continue
		case left != nil && right != nil:
			r.note(sg.looseAt, "pool of the %d-byte unmapped run is unknown; joined to the runs on both sides", sg.size)
		case left != nil:
			r.note(sg.looseAt, "pool of the %d-byte unmapped run is unknown; joined to the run below it", sg.size)
		default:
			r.note(sg.looseAt, "pool of the %d-byte unmapped run is unknown; joined to the run above it", sg.size)
		}
		if right != nil {
			r.merge(sg, right)
		}
		if left != nil {
			r.merge(left, sg)
			k-- // sg's place is the next run's now
		}
	}
}
