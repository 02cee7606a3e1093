package binset

import (
	"math/bits"

	"membench/internal/freeset"
)

// The short paths: Fit, Move, Put and Take do the commonest cases of
// LowerBound, Replace, Insert and Remove — those that touch only class
// records, chunks and the bitmap — and report whether they did; for
// anything else they change nothing and report false, and the caller
// asks the general method. LowerBound tries Fit first; Insert, Remove and
// Replace do all their cases themselves (sharing the chunks' code, which
// is inlined), so that a caller that tried the short path, as torch
// does, does not pay for its failure twice: in the live-set benchmark
// at 10^3 blocks, whose classes are mostly chunks and trees, that made
// the torch model 8% dearer than before the short paths.
//
// Why apart: each is a leaf (it calls nothing), so the compiler gives it
// no stack frame and no stack check, and keeps the keys in the registers
// they came in; the general methods, which call into the chunks, the
// class trees and the freeset.Set, spill their arguments to a frame on
// entry whatever path they take. In a torch replay of gpt-generate these
// cases are 90% of the set's calls (the split remainder or merged block
// moving from a class of one key to an empty class: 55,600 of 60,000
// Replaces; a best fit in a class record: 45,700 of 47,000 LowerBounds).
//
// The tests are written to branch once per question: a key is a class's
// when it is on the class stream and (size − Gran) has no bit outside
// classBits (a multiple of Gran from Gran to Classes × Gran), and its
// class is then (size − Gran) / Gran.

// classBits are the bits a class key's size less Gran may have.
const classBits = Classes*Gran - Gran

// Fit is LowerBound's best fit, the first key not less than {stream,
// size, 0}, when a class holds it: the set holds a class key at or above
// size on stream and no key of the tree can come first (odd is zero).
// Otherwise it reports false and LowerBound has the answer, which may
// also be that there is none.
func (s *Set) Fit(stream, size int64) (freeset.Key, bool) {
	if stream != s.stream || uint64(size-1) >= Classes*Gran || s.odd != 0 {
		return freeset.Key{}, false
	}
	c, ok := s.fitClass(uint(size-1) / Gran)
	if !ok {
		return freeset.Key{}, false
	}
	cl := &s.cls[c]
	return freeset.Key{Stream: stream, Size: int64(c+1) * Gran, Addr: cl.addr, B: cl.b}, true
}

// fitClass is the first non-empty class at or after c (c < Classes), as
// nextSet finds it, and whether there is one; the result is below
// Classes. Small enough to be inlined into Fit and TakeFit, which then
// stay leaves without a frame.
func (s *Set) fitClass(c uint) (uint, bool) {
	w := c / 64
	m := s.bits[w%words] & (^uint64(0) << (c % 64))
	if m == 0 {
		// The words after w: a shift by w and one more, each below
		// 64, where a shift by w + 1 (up to 64) took the compiler's
		// test for a shift past the word.
		sm := s.summary & (^uint64(0) << (w % 64) << 1)
		if sm == 0 {
			return 0, false
		}
		w = uint(bits.TrailingZeros64(sm))
		m = s.bits[w%words]
	}
	return (w*64 + uint(bits.TrailingZeros64(m))) % Classes, true
}

// Move is Replace's commonest case: old is the only key of its class and
// new's class is empty (a split's remainder, a block merged with a free
// neighbour). The record moves, and Move reports true; in any other case
// it changes nothing and reports false. old must be in the set.
func (s *Set) Move(old, new freeset.Key) bool {
	st := s.stream
	xo, xn := uint64(old.Size-Gran), uint64(new.Size-Gran)
	if (old.Stream^st)|(new.Stream^st) != 0 || (xo|xn)&^classBits != 0 {
		return false
	}
	co, cn := uint(xo/Gran)%Classes, uint(xn/Gran)%Classes
	o, n := &s.cls[co], &s.cls[cn]
	if (o.m^1)|n.m != 0 || o.addr != old.Addr || o.b != old.B {
		return false // or old is not in the set: Replace panics
	}
	*o = class{}
	*n = class{addr: new.Addr, b: new.B, m: 1}
	w := co / 64
	s.bits[w] &^= 1 << (co % 64)
	if s.bits[w] == 0 {
		s.summary &^= 1 << w
	}
	w = cn / 64
	s.bits[w] |= 1 << (cn % 64)
	s.summary |= 1 << w
	if cn == Classes-1 {
		s.topIns++ // BigInserts
	}
	return true
}

// Put is Insert's cases of the class records and chunks: k is a class's
// key and its class is empty (the record takes it), or of one key (both
// go to a free chunk, if one is), or of a chunk with room (k joins it in
// address order). Put then reports true; in any other case (the class
// stream not yet fixed among them) it changes nothing and reports false.
// k must not be in the set.
func (s *Set) Put(k freeset.Key) bool {
	x := uint64(k.Size - Gran)
	if k.Stream != s.stream || x&^classBits != 0 || !s.hasStream {
		return false
	}
	c := uint(x/Gran) % Classes
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 0:
		*cl = class{addr: k.Addr, b: k.B, m: 1}
		s.bits[c/64] |= 1 << (c % 64)
		s.summary |= 1 << (c / 64)
	case m == 1:
		i := s.freeC - 1
		if i < 0 {
			return false
		}
		ch := &s.chunks[i]
		s.freeC = ch.next
		ch.pair(cl, k)
		cl.m = i + 2
	case m >= 2:
		ch := &s.chunks[m-2]
		if ch.n >= ChunkMax {
			return false
		}
		ch.insert(k)
		cl.addr, cl.b = ch.addr[0], ch.b[0]
	default:
		return false
	}
	s.n++
	if c == Classes-1 {
		s.topIns++ // BigInserts
	}
	return true
}

// Take is Remove's cases of the class records and chunks: k is the only
// key of its class (the class empties), or one of a chunk's (it leaves
// the chunk, and a chunk left with one key is freed, its key in the
// record alone). Take then reports true; in any other case it changes
// nothing and reports false. k must be in the set.
func (s *Set) Take(k freeset.Key) bool {
	x := uint64(k.Size - Gran)
	if k.Stream != s.stream || x&^classBits != 0 {
		return false
	}
	c := uint(x/Gran) % Classes
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 1:
		if cl.addr != k.Addr || cl.b != k.B {
			return false // not in the set: Remove panics
		}
		*cl = class{}
		w := c / 64
		s.bits[w] &^= 1 << (c % 64)
		if s.bits[w] == 0 {
			s.summary &^= 1 << w
		}
	case m >= 2:
		ch := &s.chunks[m-2]
		if !ch.remove(k) {
			return false
		}
		cl.addr, cl.b = ch.addr[0], ch.b[0]
		if ch.n == 1 {
			// One key left: the class record holds it alone.
			ch.n, ch.next = 0, s.freeC
			s.freeC = m - 1
			cl.m = 1
		}
	default:
		return false
	}
	s.n--
	return true
}

// TakeFit is Fit and the update a malloc then makes, in one call: the
// best fit k leaves the set whole, or, when k.Size − size is at least
// minRem (the caller's split rule), its remainder {stream, k.Size − size,
// k.Addr + size, k.B} takes its place. found reports whether Fit found
// k (else the caller asks LowerBound, and updates the set itself); done
// whether the set was updated, which it is when k was its class's only
// key and the remainder's class (of a size off the granule: none) was
// empty. When found and not done, the set is unchanged and the caller
// updates it (Replace or Remove). size must be above 0 and minRem at
// least 1.
//
// Why: a torch malloc's search and update touch the same class record;
// in one call the record read for the search is the one tested for the
// update, and the key, the remainder's class and the tests that both are
// class keys are not passed and made again (gpt-generate: 30,500 splits
// and 16,000 whole takes of 47,000 mallocs).
func (s *Set) TakeFit(stream, size, minRem int64) (k freeset.Key, found, done bool) {
	if stream != s.stream || uint64(size-1) >= Classes*Gran || s.odd != 0 {
		return freeset.Key{}, false, false
	}
	c, ok := s.fitClass(uint(size-1) / Gran)
	if !ok {
		return freeset.Key{}, false, false
	}
	cl := &s.cls[c]
	k = freeset.Key{Stream: stream, Size: int64(c+1) * Gran, Addr: cl.addr, B: cl.b}
	if cl.m != 1 {
		return k, true, false
	}
	rem := k.Size - size
	var cn uint
	var nl *class
	if rem >= minRem {
		x := uint64(rem - Gran)
		if x&^classBits != 0 {
			return k, true, false
		}
		cn = uint(x/Gran) % Classes
		nl = &s.cls[cn]
		if nl.m != 0 {
			return k, true, false
		}
	}
	*cl = class{}
	w := c / 64
	s.bits[w] &^= 1 << (c % 64)
	if s.bits[w] == 0 {
		s.summary &^= 1 << w
	}
	if nl == nil {
		s.n--
		return k, true, true
	}
	// The remainder is smaller than k, so never of the largest class:
	// nothing for BigInserts.
	*nl = class{addr: k.Addr + size, b: k.B, m: 1}
	s.bits[(cn/64)%words] |= 1 << (cn % 64)
	s.summary |= 1 << (cn / 64 % 64)
	return k, true, true
}
