package traces

import (
	"fmt"
	"io"
)

// Check wraps r with the id checks that readers leave to the replay: an
// alloc of an id that is live fails with ErrLiveID, a free of an id never
// allocated with ErrUnknownID, a free of an id already freed with
// ErrDoubleFree, and an alloc size outside 1..MaxSize with ErrBadSize. Each
// is a *PosError with the event index and, when r reports them (the text
// readers of this package do), the file name and the line. After an error,
// Next keeps returning it. An id may be allocated again once freed.
//
// Memory and speed: every id ever allocated has two bits, "allocated once"
// and "live", in a paged bitset: pages of 512 ids (128 bytes) allocated when
// an id of their range first appears, kept in a map by id/512, with the last
// page used cached. Sequential ids, as every importer of this package
// produces, cost two bits each (24 MiB for 10^8 allocations) and almost no
// map look-ups; scattered ids cost up to a page (plus a map entry) each. No
// event allocates except one that opens a page. (The live set could be a
// map beside a one-bit "allocated once" set; keeping both bits in the page
// costs no more memory for sequential ids and checks 2.5 times as fast.)
//
// Close closes r.
func Check(r Reader) Reader {
	return &checker{r: r}
}

type checker struct {
	r   Reader
	ids idBitset
	n   int
	err error
}

func (c *checker) Meta() Meta   { return c.r.Meta() }
func (c *checker) Close() error { return c.r.Close() }

// Name and Line pass the wrapped reader's position on, so that Check of
// Check, or a replay using them, still reports lines.
func (c *checker) Name() string {
	if n, ok := c.r.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

func (c *checker) Line() int {
	if l, ok := c.r.(interface{ Line() int }); ok {
		return l.Line()
	}
	return 0
}

func (c *checker) Next() (Event, error) {
	if c.err != nil {
		return Event{}, c.err
	}
	ev, err := c.r.Next()
	if err != nil {
		if err != io.EOF {
			c.err = err
		}
		return ev, err
	}
	switch ev.Op {
	case OpAlloc:
		if ev.Size <= 0 || ev.Size > MaxSize {
			return Event{}, c.fail(fmt.Errorf("%w: alloc of id %d with size %d (want 1..%d)", ErrBadSize, ev.ID, ev.Size, MaxSize))
		}
		p, w, bit := c.ids.loc(ev.ID, true)
		if p.live[w]&bit != 0 {
			return Event{}, c.fail(fmt.Errorf("%w: id %d", ErrLiveID, ev.ID))
		}
		p.live[w] |= bit
		p.seen[w] |= bit
	case OpFree:
		p, w, bit := c.ids.loc(ev.ID, false)
		switch {
		case p != nil && p.live[w]&bit != 0:
			p.live[w] &^= bit
		case p != nil && p.seen[w]&bit != 0:
			return Event{}, c.fail(fmt.Errorf("%w: id %d was already freed", ErrDoubleFree, ev.ID))
		default:
			return Event{}, c.fail(fmt.Errorf("%w: id %d was never allocated", ErrUnknownID, ev.ID))
		}
	case OpMark:
	default:
		return Event{}, c.fail(fmt.Errorf("unknown op %v", ev.Op))
	}
	c.n++
	return ev, nil
}

func (c *checker) fail(err error) error {
	c.err = &PosError{File: c.Name(), Line: c.Line(), Event: c.n, Err: err}
	return c.err
}

// idBitset records, for uint64 ids, whether each was ever allocated and
// whether it is live, in lazily allocated pages of idPageBits ids. The last
// page used is cached: consecutive ids hit it without a map look-up.
type idBitset struct {
	pages   map[uint64]*idPage
	lastKey uint64
	last    *idPage
}

const idPageBits = 512

type idPage struct {
	seen, live [idPageBits / 64]uint64
}

// loc returns the page of id (creating it if create is set; nil if absent
// otherwise), the index of id's word in it and id's bit in that word.
func (s *idBitset) loc(id uint64, create bool) (p *idPage, word int, bit uint64) {
	key := id / idPageBits
	word, bit = int(id%idPageBits/64), 1<<(id%64)
	if s.last != nil && s.lastKey == key {
		return s.last, word, bit
	}
	p = s.pages[key]
	if p == nil {
		if !create {
			return nil, word, bit
		}
		if s.pages == nil {
			s.pages = make(map[uint64]*idPage)
		}
		p = new(idPage)
		s.pages[key] = p
	}
	s.last, s.lastKey = p, key
	return p, word, bit
}
