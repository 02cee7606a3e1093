package traces

import (
	"fmt"
	"unsafe"

	"membench/internal/hugemem"
	"membench/internal/prefetch"
)

// Tracker follows which ids of a trace are live and keeps a value for
// each: the replay's allocation handle, or nothing at all for Check. It is
// where a trace's id semantics live, so that Check and the replay loop
// report the same errors: an alloc size outside 1..MaxSize (ErrBadSize), an
// alloc of a live id (ErrLiveID), a free of an id never allocated
// (ErrUnknownID) or already freed (ErrDoubleFree).
//
// Memory and speed: the values of live ids sit in pages of 512 slots that
// are recycled as soon as their last id is freed. A slot holds an id's
// value and its flags (live, donated), so that a free touches one cache
// line of its page: with 10^6 live ids, frees of old ids miss the cache,
// and each line is a miss. The live count of a page sits beside the
// page's pointer, in a flat directory indexed by page for ids below
// dirPages×512 (16 bytes per 512 ids up to the largest id seen: 1.6 MB for
// 5×10^7 ids), found with no hashing (issue 15 measured the map at 7% of a
// replay); higher ids' pages are found through a map. Every importer
// numbers allocations sequentially from 0, and memory is the directory,
// the pages that still hold a live id, and one bit per id ever allocated,
// which tells a double free from a free of an id never allocated: for the
// directory's ids in a dense array beside it (64 bytes per 512 ids, set
// by allocations of consecutive ids in one hot line), for others in a
// paged bitset whose pages (512 ids, 64 bytes) are never freed. The bits
// are not kept in the pages, whose size (8 KiB for a replay's 16-byte
// slots) is then a size class of its own: a page with a header in front
// of its slots took a larger class, and the replay with 10^6 live blocks
// a fifth more time. Ids scattered so thinly that pages would hold fewer than 8
// live ids on average make the tracker move its values to a plain map
// once and for all, bounding memory by the live set whatever the ids.
// Past 256 pages (2 MB) they come from 8 MB blocks, each on a 2 MB
// boundary with huge pages asked for, and the pages taken before move
// there (newPage): with 10^6 live ids, issue 15's live-set benchmark reads
// slots at random in 2,000-3,000 pages (16-24 MB).
//
// A live id may be donated once (Donate, format version 2): an output
// aliased to it takes its memory under jit. The id stays live until its
// own free, which a compiled replay then ignores; a second donation of it
// is an error (ErrBadDonor), as donating a buffer twice is in JAX.
type Tracker[V any] struct {
	// seen: the ids ever allocated, for ids above the directory and in
	// sparse mode; dirSeen for the directory's ids (see Tracker).
	seen    idBitset
	dir     []pageRef[V] // pages of keys below dirPages
	dirSeen [][valPageSize / 64]uint64
	// pages finds the pages of higher keys in refs; unusedRefs are
	// recycled entries of refs.
	pages         map[uint64]int32
	refs          []pageRef[V]
	unusedRefs    []int32
	npages        int
	spare         []*valPage[V]
	sparse        map[uint64]V
	sparseDonated map[uint64]bool
	live          int
	// slab is what is left of the last block of pages taken at once,
	// with huge pages asked for (newPage); blocks, whether any was.
	slab   []valPage[V]
	blocks bool
}

const valPageSize = 512

// sparseCheckPages is the page count above which Alloc checks whether
// the ids are so scattered that the values should move to a map.
const sparseCheckPages = 1024

// dirPages bounds the flat page directory: 2^20 pages, 2^29 ids, 16 MB.
const dirPages = 1 << 20

// Slot flags.
const (
	slotLive    = 1 << iota
	slotDonated // donated (Donate), while live
)

type slot[V any] struct {
	v     V
	flags uint8
}

type valPage[V any] struct {
	slots [valPageSize]slot[V]
}

// pageRef is a page and the number of its live ids.
type pageRef[V any] struct {
	p *valPage[V]
	n int32
}

// Live is the number of live ids.
func (t *Tracker[V]) Live() int { return t.live }

// ref is the reference to the page of key, nil when a key above the
// directory has none; with create, a page is taken (a spare one, or a new
// one) when there is none.
func (t *Tracker[V]) ref(key uint64, create bool) *pageRef[V] {
	var r *pageRef[V]
	switch {
	case key < uint64(len(t.dir)):
		r = &t.dir[key]
	case key < dirPages:
		if !create {
			return nil
		}
		t.dir = append(t.dir, make([]pageRef[V], int(key)+1-len(t.dir))...)
		// The capacity append gave is used, but never past dirPages:
		// recycle and Free tell a page of the map by key >= dirPages,
		// and a directory longer than that served keys the map then
		// took for its own (a 7-line trace crashed the replay).
		t.dir = t.dir[:min(cap(t.dir), dirPages)]
		t.dirSeen = append(t.dirSeen, make([][valPageSize / 64]uint64, len(t.dir)-len(t.dirSeen))...)
		r = &t.dir[key]
	default:
		i, ok := t.pages[key]
		if !ok {
			if !create {
				return nil
			}
			if n := len(t.unusedRefs); n > 0 {
				i = t.unusedRefs[n-1]
				t.unusedRefs = t.unusedRefs[:n-1]
			} else {
				t.refs = append(t.refs, pageRef[V]{})
				i = int32(len(t.refs) - 1)
			}
			if t.pages == nil {
				t.pages = make(map[uint64]int32)
			}
			t.pages[key] = i
		}
		r = &t.refs[i]
	}
	if r.p == nil && create {
		if n := len(t.spare); n > 0 {
			r.p = t.spare[n-1]
			t.spare = t.spare[:n-1]
		} else {
			r.p = t.newPage()
		}
		t.npages++
	}
	return r
}

// lookup is ref without create, a page of the directory found inline.
func (t *Tracker[V]) lookup(key uint64) *pageRef[V] {
	if key < uint64(len(t.dir)) {
		return &t.dir[key]
	}
	return t.ref(key, false)
}

// newPage returns a new, empty page. Up to slabFrom pages each is its own
// allocation; beyond, pages come from blocks of slabBytes taken at once,
// on a 2 MB boundary, whose huge pages are asked for (package hugemem):
// a large live set's frees read slots at random in tens of megabytes of
// pages, and with 4 KiB pages each read is also a miss in the processor's
// address translation cache, which in a virtual machine is a costly walk.
// A block stays allocated while any of its pages is in use, so blocks
// start only past 2 MB of pages (131,072 ids in flight; a replay of a
// corpus trace never takes one), and a tracker holds at most one block
// (10 MB with the room for its alignment) more than its pages need: a
// tracker just past 256 pages holds 10 MB where its pages took 2 MB.
// When the first block is taken, the pages taken before it move into
// blocks too (intoBlocks).
func (t *Tracker[V]) newPage() *valPage[V] {
	if t.npages < slabFrom {
		return new(valPage[V])
	}
	if !t.blocks {
		t.blocks = true
		t.intoBlocks()
	}
	return t.blockPage()
}

// blockPage returns an empty page of the block being used up, taking a new
// block when there is none: slabBytes of pages starting on a 2 MB
// boundary of a larger allocation (whose pages before it stay unused), so
// that every page of the block sits in a huge page. A block the Go heap
// placed where it happened to fall had only its three whole huge pages of
// four advised.
func (t *Tracker[V]) blockPage() *valPage[V] {
	if len(t.slab) == 0 {
		t.slab = hugemem.Make[valPage[V]](int(slabBytes / unsafe.Sizeof(valPage[V]{})))
	}
	p := &t.slab[0]
	t.slab = t.slab[1:]
	return p
}

// intoBlocks copies every page in use into blocks (blockPage) and drops
// the spares, when the tracker takes its first block. Why: the pages
// taken one by one before sit in the Go heap's 4 KiB pages, and once past
// slabFrom the tracker reads them at random as much as the pages of its
// blocks, while the pages emptied and reused as spares kept them in use
// for good. In issue 15's live-set benchmark the blocks began (at 2,048
// pages then, 16 MB) only after its warm-up, so that nearly every slot its
// frees read sat in small pages. The copy is once in a replay, amortized
// over the ids that filled the pages (2 MB of them).
func (t *Tracker[V]) intoBlocks() {
	move := func(p **valPage[V]) {
		if *p != nil {
			q := t.blockPage()
			*q = **p
			*p = q
		}
	}
	for i := range t.dir {
		move(&t.dir[i].p)
	}
	for i := range t.refs {
		move(&t.refs[i].p)
	}
	clear(t.spare)
	t.spare = t.spare[:0]
}

// Pages come from blocks of slabBytes (four huge pages)
// once slabFrom pages (2 MB of a replay's pages, 131,072 ids) are in use.
// Measured 2026-11-25 (harness.BenchmarkReplayLivePaired, six interleaved
// runs of each binary): with 2,048 pages and blocks placed where the heap
// put them, the replay through an allocator that does nothing cost
// 30.7-37.5 cpu-ns/event at 10^6 live blocks; with 256 and the earlier
// pages moved into the blocks, 25.1-27.0; with the blocks on a 2 MB
// boundary as well (five more runs), 25.0-25.5 against 25.8-27.1.
const (
	slabFrom  = 256
	slabBytes = 8 << 20
)

// recycle gives up the page of key, whose last live id r's count just
// lost, to the spares.
func (t *Tracker[V]) recycle(key uint64, r *pageRef[V]) {
	p := r.p
	r.p = nil
	if key >= dirPages {
		t.unusedRefs = append(t.unusedRefs, t.pages[key])
		delete(t.pages, key)
	}
	t.npages--
	t.spare = append(t.spare, p)
}

// markSeen records that id, whose page r is, was allocated.
func (t *Tracker[V]) markSeen(id uint64) {
	if key := id / valPageSize; key < uint64(len(t.dirSeen)) {
		t.dirSeen[key][id%valPageSize/64] |= 1 << (id % 64)
		return
	}
	sp, sw, sbit := t.seen.loc(id, true)
	sp.seen[sw] |= sbit
}

// wasSeen reports whether id was ever allocated.
func (t *Tracker[V]) wasSeen(id uint64) bool {
	if key := id / valPageSize; key < uint64(len(t.dirSeen)) {
		return t.dirSeen[key][id%valPageSize/64]&(1<<(id%64)) != 0
	}
	sp, sw, sbit := t.seen.loc(id, false)
	return sp != nil && sp.seen[sw]&sbit != 0
}

// Alloc records id as live with value v.
func (t *Tracker[V]) Alloc(id uint64, size int64, v V) error {
	if size <= 0 || size > MaxSize {
		return fmt.Errorf("%w: alloc of id %d with size %d (want 1..%d)", ErrBadSize, id, size, MaxSize)
	}
	if t.sparse != nil {
		if _, ok := t.sparse[id]; ok {
			return fmt.Errorf("%w: id %d", ErrLiveID, id)
		}
		t.sparse[id] = v
		t.markSeen(id)
	} else {
		// A page of the directory is found here, anything else by
		// ref: a call saved on nearly every allocation and free.
		key := id / valPageSize
		var r *pageRef[V]
		if key < uint64(len(t.dir)) && t.dir[key].p != nil {
			r = &t.dir[key]
		} else {
			r = t.ref(key, true)
		}
		s := &r.p.slots[id%valPageSize]
		if s.flags&slotLive != 0 {
			return fmt.Errorf("%w: id %d", ErrLiveID, id)
		}
		s.v = v
		s.flags = slotLive
		if key < uint64(len(t.dirSeen)) {
			t.dirSeen[key][id%valPageSize/64] |= 1 << (id % 64)
		} else {
			t.markSeen(id)
		}
		r.n++
	}
	t.live++
	if t.sparse == nil && t.tooScattered() {
		t.toSparse()
	}
	return nil
}

// tooScattered reports whether the pages hold so few live ids (fewer than
// 8 a page on average, past sparseCheckPages pages) that Alloc moves the
// values to a map (toSparse).
func (t *Tracker[V]) tooScattered() bool {
	return t.npages > sparseCheckPages && t.npages*8 > t.live
}

// TryAlloc is Alloc's common case alone, a short leaf function where
// Alloc, with its checks, its other modes and its errors, was a long one
// (a replay through an allocator that does nothing spent a third of its
// time in Alloc and Free): it records id as live with value v and
// reports true when id's page is in the directory, id is not live, and
// Alloc would not move the values to the map after it; otherwise it
// changes nothing and reports false, and the caller calls Alloc, which
// does the rest and reports the errors. (It once gave up above
// sparseCheckPages pages whatever the live count, so that every
// allocation of a replay with 10^6 live blocks took Alloc's way.) It
// does not check the size: the caller has (1..MaxSize), as Alloc would.
// (Inlined into the replay loop, which it would be with a few nodes less,
// it made the loop slower: the loop's values already fill the
// registers.)
func (t *Tracker[V]) TryAlloc(id uint64, v V) bool {
	key := id / valPageSize
	if key >= uint64(len(t.dir)) || t.tooScattered() {
		return false
	}
	r := &t.dir[key]
	if r.p == nil || r.p.slots[id%valPageSize].flags&slotLive != 0 {
		return false
	}
	s := &r.p.slots[id%valPageSize]
	s.v, s.flags = v, slotLive
	t.dirSeen[key][id%valPageSize/64] |= 1 << (id % 64)
	r.n++
	t.live++
	return true
}

// TryFree is Free's common case alone, as TryAlloc is Alloc's: when id
// is live in a page of the directory that holds other live ids
// too, it ends id's life and returns its value and true; otherwise it
// changes nothing and reports false, and the caller calls Free, which
// recycles a page left empty and reports the errors.
func (t *Tracker[V]) TryFree(id uint64) (v V, ok bool) {
	key := id / valPageSize
	if key >= uint64(len(t.dir)) {
		return v, false
	}
	// A page with fewer than two live ids (none: no page) is Free's.
	r := &t.dir[key]
	p := r.p
	if r.n < 2 || p == nil {
		return v, false
	}
	// p == nil cannot be true (a page with live ids exists), but the
	// test, a comparison of a register, spares the compiler's nil check
	// of p before the slot's address, which was a load of the page's
	// first byte: with a large live set a page's first line is rarely in
	// the cache, where the slot is (Touch brought it in), so every free
	// waited for memory there (at 10^6 live blocks in a steady state,
	// three fifths of the replay loop's time through an allocator that
	// does nothing, in perf).
	s := &p.slots[id%valPageSize]
	if s.flags&slotLive == 0 {
		return v, false
	}
	v = s.v
	*s = slot[V]{}
	r.n--
	t.live--
	return v, true
}

// Touch asks for the slot of id to be brought into the cache, if its page
// is in the directory, without waiting for it: a replay touches the slot
// of a free a few events before it, so that with a large live set the
// slot's cache miss overlaps the events in between instead of stalling
// the free.
func (t *Tracker[V]) Touch(id uint64) {
	if key := id / valPageSize; key < uint64(len(t.dir)) {
		if p := t.dir[key].p; p != nil {
			prefetch.Line(unsafe.Pointer(&p.slots[id%valPageSize]))
		}
	}
}

// Peek returns the value of the live id whose page is in the directory,
// and whether there is one, changing nothing: a replay reads the handle of
// a free a few events ahead, to touch the allocator's record of it.
func (t *Tracker[V]) Peek(id uint64) (V, bool) {
	if key := id / valPageSize; key < uint64(len(t.dir)) {
		if p := t.dir[key].p; p != nil {
			if s := &p.slots[id%valPageSize]; s.flags&slotLive != 0 {
				return s.v, true
			}
		}
	}
	var zero V
	return zero, false
}

// Free ends id's life and returns its value.
func (t *Tracker[V]) Free(id uint64) (V, error) {
	var zero V
	if t.sparse != nil {
		if v, ok := t.sparse[id]; ok {
			delete(t.sparse, id)
			delete(t.sparseDonated, id)
			t.live--
			return v, nil
		}
	} else if r := t.lookup(id / valPageSize); r != nil && r.p != nil {
		s := &r.p.slots[id%valPageSize]
		if s.flags&slotLive != 0 {
			v := s.v
			s.v = zero
			s.flags = 0
			t.live--
			if r.n--; r.n == 0 {
				t.recycle(id/valPageSize, r)
			}
			return v, nil
		}
	}
	if t.wasSeen(id) {
		return zero, fmt.Errorf("%w: id %d was already freed", ErrDoubleFree, id)
	}
	return zero, fmt.Errorf("%w: id %d was never allocated", ErrUnknownID, id)
}

// Donate records that the live id donor is donated (to an output that
// aliases it) and returns its value. A donor that is not live, or was
// donated before, is an error wrapping ErrBadDonor.
func (t *Tracker[V]) Donate(donor uint64) (V, error) {
	var zero V
	if t.sparse != nil {
		v, ok := t.sparse[donor]
		if ok && !t.sparseDonated[donor] {
			if t.sparseDonated == nil {
				t.sparseDonated = make(map[uint64]bool)
			}
			t.sparseDonated[donor] = true
			return v, nil
		}
		if ok {
			return zero, fmt.Errorf("%w: id %d was donated already", ErrBadDonor, donor)
		}
	} else if r := t.ref(donor/valPageSize, false); r != nil && r.p != nil {
		s := &r.p.slots[donor%valPageSize]
		if s.flags&slotLive != 0 {
			if s.flags&slotDonated != 0 {
				return zero, fmt.Errorf("%w: id %d was donated already", ErrBadDonor, donor)
			}
			s.flags |= slotDonated
			return s.v, nil
		}
	}
	return zero, fmt.Errorf("%w: id %d is not live", ErrBadDonor, donor)
}

// Set replaces the value of the live id (a replay moving a donor's memory
// to the output that reuses it); it does nothing for an id not live.
func (t *Tracker[V]) Set(id uint64, v V) {
	if t.sparse != nil {
		if _, ok := t.sparse[id]; ok {
			t.sparse[id] = v
		}
		return
	}
	if r := t.ref(id/valPageSize, false); r != nil && r.p != nil && r.p.slots[id%valPageSize].flags&slotLive != 0 {
		r.p.slots[id%valPageSize].v = v
	}
}

// toSparse moves every live value to a map: ids are too scattered for
// pages to pay.
func (t *Tracker[V]) toSparse() {
	t.sparse = make(map[uint64]V, t.live)
	for key, r := range t.dir {
		if r.p != nil {
			t.sparsePage(uint64(key), r.p)
		}
	}
	for key, i := range t.pages {
		t.sparsePage(key, t.refs[i].p)
	}
	// The directory's ever-allocated bits move to the bitset, which
	// the sparse map uses for every id.
	for key, words := range t.dirSeen {
		for w, bits := range words {
			if bits != 0 {
				sp, sw, _ := t.seen.loc(uint64(key)*valPageSize+uint64(w)*64, true)
				sp.seen[sw] |= bits
			}
		}
	}
	t.dir, t.dirSeen, t.pages, t.refs, t.unusedRefs, t.spare, t.slab, t.npages = nil, nil, nil, nil, nil, nil, nil, 0
}

// sparsePage moves the live values of the page of key to the map.
func (t *Tracker[V]) sparsePage(key uint64, p *valPage[V]) {
	for i := range uint64(valPageSize) {
		if s := &p.slots[i]; s.flags&slotLive != 0 {
			t.sparse[key*valPageSize+i] = s.v
			if s.flags&slotDonated != 0 {
				if t.sparseDonated == nil {
					t.sparseDonated = make(map[uint64]bool)
				}
				t.sparseDonated[key*valPageSize+i] = true
			}
		}
	}
}

// Reset empties t as if it were new, keeping its memory: pages still
// holding live ids are cleared and kept as spares with the others, and the
// directory keeps its length, cleared. A sweep replays many
// configurations one after another on each worker; a replay that takes a
// reset tracker instead of a new one makes no garbage for its pages, and
// the collector then competes less with the other workers (issue 15: with
// two workers, the collector's marking had no idle core left and cost a
// fifth more CPU per replay). What a large trace needed is not kept: a
// directory of more than resetKeepDir pages (ids up to about a million)
// would cost every later Reset its clearing, whatever the later traces'
// ids, and spares beyond resetKeepSpare pages would hold memory for no
// replay in sight. A tracker that went sparse gives its directory up, as
// toSparse did.
func (t *Tracker[V]) Reset() {
	for key := range t.dir {
		if p := t.dir[key].p; p != nil {
			*p = valPage[V]{}
			t.spare = append(t.spare, p)
		}
	}
	if len(t.dir) > resetKeepDir {
		t.dir, t.dirSeen = nil, nil
	} else {
		clear(t.dir)
		clear(t.dirSeen)
	}
	for _, i := range t.pages {
		if p := t.refs[i].p; p != nil {
			*p = valPage[V]{}
			t.spare = append(t.spare, p)
		}
	}
	clear(t.pages)
	t.refs, t.unusedRefs = t.refs[:0], t.unusedRefs[:0]
	keep := resetKeepSpare
	if t.blocks {
		// Any page of a block holds the whole block (8 MB): the
		// spares, freed in any order, would hold every block there
		// was (a review measured 144 MB kept after 13,000 pages).
		keep, t.blocks = 0, false
	}
	if len(t.spare) > keep {
		clear(t.spare[keep:])
		t.spare = t.spare[:keep]
	}
	t.seen = idBitset{}
	t.slab = nil
	t.sparse, t.sparseDonated = nil, nil
	t.npages, t.live = 0, 0
}

// What Reset keeps of a tracker's memory at most: a directory of 2048
// pages (32 KB, and 128 KB of ever-allocated bits, for ids below about a
// million) and 256 spare pages (a few MB), none once pages came from
// blocks (newPage).
const (
	resetKeepDir   = 2048
	resetKeepSpare = 256
)
