package traces

import "fmt"

// Tracker follows which ids of a trace are live and keeps a value for
// each: the replay's allocation handle, or nothing at all for Check. It is
// where a trace's id semantics live, so that Check and the replay loop
// report the same errors: an alloc size outside 1..MaxSize (ErrBadSize), an
// alloc of a live id (ErrLiveID), a free of an id never allocated
// (ErrUnknownID) or already freed (ErrDoubleFree).
//
// Memory and speed: the values of live ids sit in pages of 512 slots that
// are recycled as soon as their last id is freed. Pages of ids below
// dirPages×512 are found in a flat directory indexed by page, which costs
// 8 bytes per 512 ids up to the largest id seen (800 KB for 5×10^7 ids)
// and no hashing: a free of an old id is one indexed load (issue 15
// measured the map at 7% of a replay). Higher ids' pages sit in a map,
// with the last page used cached. Every importer numbers allocations
// sequentially from 0, and memory is the directory, the pages that still
// hold a live id, and one bit per id ever allocated: "ever allocated"
// (which tells a double free from a free of an id never allocated) is
// kept in the id's page while the page lives, beside its live bits, so
// that an allocation touches one page, and is moved to a paged bitset
// whose pages (512 ids, 64 bytes) are never freed when the page is
// recycled. Ids scattered so thinly that pages would hold fewer than 8
// live ids on average make the tracker move its values to a plain map
// once and for all, bounding memory by the live set whatever the ids.
//
// A live id may be donated once (Donate, format version 2): an output
// aliased to it takes its memory under jit. The id stays live until its
// own free, which a compiled replay then ignores; a second donation of it
// is an error (ErrBadDonor), as donating a buffer twice is in JAX.
type Tracker[V any] struct {
	seen          idBitset
	dir           []*valPage[V] // pages of keys below dirPages
	pages         map[uint64]*valPage[V]
	npages        int
	lastKey       uint64
	last          *valPage[V]
	spare         []*valPage[V]
	sparse        map[uint64]V
	sparseDonated map[uint64]bool
	live          int
}

const valPageSize = 512

// dirPages bounds the flat page directory: 2^20 pages, 2^29 ids, 8 MB.
const dirPages = 1 << 20

type valPage[V any] struct {
	live    [valPageSize / 64]uint64
	donated [valPageSize / 64]uint64
	// seen: ids of the page allocated since the page was taken, moved
	// to Tracker.seen when it is recycled (see Tracker).
	seen [valPageSize / 64]uint64
	n    int
	vals [valPageSize]V
}

// Live is the number of live ids.
func (t *Tracker[V]) Live() int { return t.live }

// lookup is the page of id's key, nil when there is none.
func (t *Tracker[V]) lookup(key uint64) *valPage[V] {
	if key < uint64(len(t.dir)) {
		return t.dir[key]
	}
	if key < dirPages {
		return nil
	}
	if t.last != nil && t.lastKey == key {
		return t.last
	}
	p := t.pages[key]
	if p != nil {
		t.last, t.lastKey = p, key
	}
	return p
}

// page is the page of id, taken (a spare one, or a new one) when there is
// none.
func (t *Tracker[V]) page(id uint64) *valPage[V] {
	key := id / valPageSize
	if p := t.lookup(key); p != nil {
		return p
	}
	var p *valPage[V]
	if n := len(t.spare); n > 0 {
		p = t.spare[n-1]
		t.spare = t.spare[:n-1]
	} else {
		p = new(valPage[V])
	}
	t.setPage(key, p)
	t.npages++
	return p
}

// setPage files p (nil to remove) under key.
func (t *Tracker[V]) setPage(key uint64, p *valPage[V]) {
	switch {
	case key < uint64(len(t.dir)):
		t.dir[key] = p
	case key < dirPages:
		if p != nil {
			t.dir = append(t.dir, make([]*valPage[V], int(key)+1-len(t.dir))...)
			t.dir = t.dir[:cap(t.dir)]
			t.dir[key] = p
		}
	case p != nil:
		if t.pages == nil {
			t.pages = make(map[uint64]*valPage[V])
		}
		t.pages[key] = p
	default:
		delete(t.pages, key)
		if t.lastKey == key {
			t.last = nil
		}
	}
}

// flushSeen moves the seen bits of p, the page of key, to the tracker's
// bitset.
func (t *Tracker[V]) flushSeen(key uint64, p *valPage[V]) {
	for w, bits := range p.seen {
		if bits != 0 {
			sp, sw, _ := t.seen.loc(key*valPageSize+uint64(w)*64, true)
			sp.seen[sw] |= bits
		}
	}
	p.seen = [valPageSize / 64]uint64{}
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
		sp, sw, sbit := t.seen.loc(id, true)
		sp.seen[sw] |= sbit
	} else {
		p := t.page(id)
		w, bit := id%valPageSize/64, uint64(1)<<(id%64)
		if p.live[w]&bit != 0 {
			return fmt.Errorf("%w: id %d", ErrLiveID, id)
		}
		p.live[w] |= bit
		p.seen[w] |= bit
		p.n++
		p.vals[id%valPageSize] = v
	}
	t.live++
	if t.sparse == nil && t.npages > 1024 && t.npages*8 > t.live {
		t.toSparse()
	}
	return nil
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
	} else if p := t.lookup(id / valPageSize); p != nil {
		w, bit := id%valPageSize/64, uint64(1)<<(id%64)
		if p.live[w]&bit != 0 {
			p.live[w] &^= bit
			p.donated[w] &^= bit
			p.n--
			v := p.vals[id%valPageSize]
			p.vals[id%valPageSize] = zero
			t.live--
			if p.n == 0 {
				t.flushSeen(id/valPageSize, p)
				t.setPage(id/valPageSize, nil)
				t.npages--
				t.spare = append(t.spare, p)
			}
			return v, nil
		}
		if p.seen[w]&bit != 0 {
			return zero, fmt.Errorf("%w: id %d was already freed", ErrDoubleFree, id)
		}
	}
	if sp, sw, sbit := t.seen.loc(id, false); sp != nil && sp.seen[sw]&sbit != 0 {
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
	} else if p := t.lookup(donor / valPageSize); p != nil {
		w, bit := donor%valPageSize/64, uint64(1)<<(donor%64)
		if p.live[w]&bit != 0 {
			if p.donated[w]&bit != 0 {
				return zero, fmt.Errorf("%w: id %d was donated already", ErrBadDonor, donor)
			}
			p.donated[w] |= bit
			return p.vals[donor%valPageSize], nil
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
	if p := t.lookup(id / valPageSize); p != nil && p.live[id%valPageSize/64]&(1<<(id%64)) != 0 {
		p.vals[id%valPageSize] = v
	}
}

// toSparse moves every live value to a map: ids are too scattered for
// pages to pay.
func (t *Tracker[V]) toSparse() {
	t.sparse = make(map[uint64]V, t.live)
	for key, p := range t.dir {
		if p != nil {
			t.sparsePage(uint64(key), p)
		}
	}
	for key, p := range t.pages {
		t.sparsePage(key, p)
	}
	t.dir, t.pages, t.last, t.spare, t.npages = nil, nil, nil, nil, 0
}

// sparsePage moves the live values of the page of key to the map, and
// its seen bits to the bitset.
func (t *Tracker[V]) sparsePage(key uint64, p *valPage[V]) {
	t.flushSeen(key, p)
	for i := range uint64(valPageSize) {
		if p.live[i/64]&(1<<(i%64)) != 0 {
			t.sparse[key*valPageSize+i] = p.vals[i]
			if p.donated[i/64]&(1<<(i%64)) != 0 {
				if t.sparseDonated == nil {
					t.sparseDonated = make(map[uint64]bool)
				}
				t.sparseDonated[key*valPageSize+i] = true
			}
		}
	}
}
