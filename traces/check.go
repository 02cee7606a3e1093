package traces

import (
	"fmt"
	"io"
)

// Check wraps r with the id checks that readers leave to the replay: an
// alloc of an id that is live fails with ErrLiveID, a free of an id never
// allocated with ErrUnknownID, a free of an id already freed with
// ErrDoubleFree, and an alloc size outside 1..MaxSize with ErrBadSize; in
// a trace of format version 2, a donor that is not live or was donated
// before with ErrBadDonor, and launches out of order (Launches) with
// ErrLaunch, a launch left open at the end included. Each
// is a *PosError with the event index and the file name and line of r's Pos
// (a format without lines gives no line). After an error, Next keeps
// returning it. An id may be allocated again once freed.
//
// The checks are Tracker's, shared with the replay loop, which uses a
// Tracker directly to keep its handles.
//
// Close closes r.
func Check(r Reader) Reader {
	return &checker{r: r}
}

type checker struct {
	r        Reader
	ids      Tracker[struct{}]
	launches Launches
	n        int
	err      error
}

// FormatVersion passes the wrapped reader's on.
func (c *checker) FormatVersion() int { return FormatVersion(c.r) }

func (c *checker) Meta() Meta   { return c.r.Meta() }
func (c *checker) Close() error { return c.r.Close() }

// Pos passes the wrapped reader's position on, so that Check of Check, or
// a replay using it, still reports lines.
func (c *checker) Pos() Pos { return c.r.Pos() }

func (c *checker) Next() (Event, error) {
	if c.err != nil {
		return Event{}, c.err
	}
	ev, err := c.r.Next()
	if err != nil {
		if err == io.EOF {
			if lerr := c.launches.End(); lerr != nil {
				return Event{}, c.fail(lerr)
			}
		} else {
			c.err = err
		}
		return ev, err
	}
	if err := c.launches.Event(&ev, int64(c.n)); err != nil {
		return Event{}, c.fail(err)
	}
	switch ev.Op {
	case OpAlloc:
		if ev.Donated {
			if _, err := c.ids.Donate(ev.Donor); err != nil {
				return Event{}, c.fail(fmt.Errorf("output %d: %w", ev.ID, err))
			}
		}
		if err := c.ids.Alloc(ev.ID, ev.Size, struct{}{}); err != nil {
			return Event{}, c.fail(err)
		}
	case OpFree:
		if _, err := c.ids.Free(ev.ID); err != nil {
			return Event{}, c.fail(err)
		}
	case OpMark, OpLaunch, OpLaunchEnd:
	default:
		return Event{}, c.fail(fmt.Errorf("unknown op %v", ev.Op))
	}
	c.n++
	return ev, nil
}

// fail latches err at the event just read: the wrapped reader's file and
// line, and the index of the event among those the checker has seen.
func (c *checker) fail(err error) error {
	p := c.r.Pos()
	c.err = &PosError{File: p.File, Line: p.Line, Event: c.n, Err: err}
	return c.err
}

// idBitset records, for uint64 ids, whether each was ever allocated, in
// lazily allocated pages of idPageBits ids. The last
// page used is cached: consecutive ids hit it without a map look-up.
type idBitset struct {
	pages   map[uint64]*idPage
	lastKey uint64
	last    *idPage
}

const idPageBits = 512

type idPage struct {
	seen [idPageBits / 64]uint64
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
