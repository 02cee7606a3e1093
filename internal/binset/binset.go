// Package binset is an ordered set of free-block keys in the order of
// freeset.Set — (stream, size, address), streams and addresses compared
// as unsigned — that keeps the keys of one stream and of small sizes in
// exact-size classes found through a bitmap, in front of a freeset.Set
// that holds the rest.
//
// Why: PyTorch's small pool holds few free blocks (gpt-generate's about
// 13), so each operation of the B+tree costs its constant overhead — a
// scan of 32-byte keys compared field by field, shifts of a leaf's keys
// through memmove, a descent to find a merged neighbour — and that was a
// third of the torch model's time. Here a best-fit search is a bitmap
// search for the first non-empty class at or above the request and a read
// of that class's lowest address; removing a neighbour or inserting a
// remainder touches only its own class.
//
// A class holds the keys of one size (a multiple of Gran up to Classes ×
// Gran) on the set's class stream, the stream of the first key inserted:
// its lowest key in its record, and when it has two or more, all of them
// in a chunk of up to ChunkMax keys sorted by address. A class that would
// grow past ChunkMax spills: its keys all move to the tree, where the
// class stays until it is empty, so that every operation is O(log n)
// however many blocks share a size. Keys of other streams, of
// larger sizes or of sizes off the granule are the tree's. Every
// operation gives the answer freeset.Set would; binset_test.go checks that
// against a freeset.Set on random workloads.
package binset

import (
	"math/bits"

	"membench/internal/freeset"
)

const (
	// Gran is the class granule: PyTorch's kMinBlockSize, of which
	// every block size is a multiple (allocator-spec §1.2, §1.6).
	Gran = 512
	// Classes is the number of exact-size classes, sizes Gran to
	// Classes × Gran (2 MiB, PyTorch's small segment: every block of
	// the small pool).
	Classes = 4096
	// ChunkMax is the most keys a class keeps in its chunk before it
	// spills to the tree.
	ChunkMax = 8
	words    = Classes / 64
)

// chunk is the keys of a class of two or more, sorted by address
// (unsigned).
type chunk struct {
	n    int32
	b    [ChunkMax]int32
	addr [ChunkMax]int64
}

// class is one exact-size class. Its lowest key is kept here, so that a
// best fit reads one record after the bitmap (gpt-generate's classes
// hold one free block nine times in ten); a class of two or more keeps
// them all in a chunk as well.
type class struct {
	addr int64 // the lowest key's address, when m > 0
	b    int32 // its block
	// m is 0 for an empty class, 1 for a class of one key, i+2 for a
	// class whose keys are in chunks[i], and -n for a spilled class of
	// n keys, all in the tree.
	m int32
}

// Set is the ordered set. The zero value is not usable; call New.
type Set struct {
	tree      *freeset.Set
	stream    int64 // the class stream, once hasStream
	hasStream bool
	n         int // keys in classes (not spilled)
	// low counts the tree's keys on the class stream of sizes up to
	// Classes × Gran: spilled classes' keys and sizes off the granule.
	// While there are none, a class key found on the class stream is
	// the answer, as the tree's keys of that stream are all larger.
	low int
	// odd counts the keys of low whose size is no class's (off the
	// granule): with none, every key of low is a spilled class's, and
	// the spilled bitmap says which sizes those are.
	odd     int
	summary uint64
	bits    [words]uint64 // the non-empty classes that are not spilled
	// spilled and spillSum are the bitmap and its summary of the
	// spilled classes: a best fit whose class is found before the first
	// spilled class at or above the request needs no look at the tree
	// (LowerBound), where low alone sent every search there once any
	// class had spilled (10^6 live blocks leave tens of thousands of
	// 512 B to 3.5 KiB fragments, spilled, in the torch small pool).
	spillSum uint64
	spilled  [words]uint64
	cls      [Classes]class
	chunks   []chunk
	freeC    []int32
}

// New returns an empty set.
func New() *Set {
	return &Set{tree: freeset.New(false)}
}

// Reset empties the set, keeping its memory for reuse.
// Only the classes in use are cleared (the 64 KiB of class records are
// most of the set, and a replay touches few of them): the non-empty ones,
// which the bitmap lists, and the spilled ones, whose keys are the tree's.
func (s *Set) Reset() {
	for w, word := range s.bits {
		for ; word != 0; word &= word - 1 {
			s.cls[w<<6+bits.TrailingZeros64(word)] = class{}
		}
		s.bits[w] = 0
	}
	if s.low > 0 {
		for _, k := range s.tree.Items() {
			if c, ok := s.classOf(k); ok {
				s.cls[c] = class{}
			}
		}
	}
	s.tree.Reset()
	s.stream, s.hasStream, s.n, s.low, s.odd, s.summary = 0, false, 0, 0, 0, 0
	s.spilled, s.spillSum = [words]uint64{}, 0
	s.chunks, s.freeC = s.chunks[:0], s.freeC[:0]
}

// Len is the number of keys.
func (s *Set) Len() int { return s.n + s.tree.Len() }

// exactClass is the class of size when it is one class's size.
func exactClass(size int64) (int, bool) {
	if size <= 0 || size&(Gran-1) != 0 || size > Classes*Gran {
		return 0, false
	}
	return int(size/Gran) - 1, true
}

// classOf is the class of k when k belongs to one: on the class stream
// and of a class's size. Its keys are in a chunk unless it has spilled.
func (s *Set) classOf(k freeset.Key) (int, bool) {
	if !s.hasStream || k.Stream != s.stream {
		return 0, false
	}
	return exactClass(k.Size)
}

// isLow reports whether k, a key of the tree, counts in low.
func (s *Set) isLow(k freeset.Key) bool {
	return k.Stream == s.stream && k.Size <= Classes*Gran
}

// isOdd reports whether k, a key of the tree that counts in low, counts
// in odd: its size is no class's.
func isOdd(k freeset.Key) bool {
	_, ok := exactClass(k.Size)
	return !ok
}

// toTree inserts k in the tree.
func (s *Set) toTree(k freeset.Key) {
	s.tree.Insert(k)
	if s.isLow(k) {
		s.low++
		if isOdd(k) {
			s.odd++
		}
	}
}

// fromTree removes k from the tree.
func (s *Set) fromTree(k freeset.Key) {
	s.tree.Remove(k)
	if s.isLow(k) {
		s.low--
		if isOdd(k) {
			s.odd--
		}
	}
}

// nextSet is the first class at or after c held in a chunk, or -1.
func (s *Set) nextSet(c int) int {
	if c >= Classes {
		return -1
	}
	w := c >> 6
	if m := s.bits[w] & (^uint64(0) << (c & 63)); m != 0 {
		return w<<6 + bits.TrailingZeros64(m)
	}
	sm := s.summary & (^uint64(0) << (w + 1))
	if sm == 0 {
		return -1
	}
	w = bits.TrailingZeros64(sm)
	return w<<6 + bits.TrailingZeros64(s.bits[w])
}

// prevSet is the last class at or before c held in a chunk, or -1.
func (s *Set) prevSet(c int) int {
	if c < 0 {
		return -1
	}
	w := c >> 6
	if m := s.bits[w] & (^uint64(0) >> (63 - c&63)); m != 0 {
		return w<<6 + 63 - bits.LeadingZeros64(m)
	}
	sm := s.summary & (uint64(1)<<w - 1)
	if sm == 0 {
		return -1
	}
	w = 63 - bits.LeadingZeros64(sm)
	return w<<6 + 63 - bits.LeadingZeros64(s.bits[w])
}

// nextSpilled is the first spilled class at or after c, or -1.
func (s *Set) nextSpilled(c int) int {
	if c >= Classes {
		return -1
	}
	w := c >> 6
	if m := s.spilled[w] & (^uint64(0) << (c & 63)); m != 0 {
		return w<<6 + bits.TrailingZeros64(m)
	}
	sm := s.spillSum & (^uint64(0) << (w + 1))
	if sm == 0 {
		return -1
	}
	w = bits.TrailingZeros64(sm)
	return w<<6 + bits.TrailingZeros64(s.spilled[w])
}

// classFirst reports whether non-spilled class c, found at or after
// class c0, holds the first key at or after the lowest key of c0's size:
// with no odd key in the tree, the tree's keys of the class stream below
// the largest class's size are the spilled classes', so c's lowest key
// is that key unless a spilled class lies between c0 and c.
//
// The callers test low first, so that without spilled classes (a torch
// replay of gpt-generate) the search makes no call.
func (s *Set) classFirst(c0, c int) bool {
	sc := s.nextSpilled(c0)
	return sc < 0 || c < sc
}

func (s *Set) setBit(c int) {
	s.bits[c>>6] |= 1 << (c & 63)
	s.summary |= 1 << (c >> 6)
}

func (s *Set) clearBit(c int) {
	w := c >> 6
	s.bits[w] &^= 1 << (c & 63)
	if s.bits[w] == 0 {
		s.summary &^= 1 << w
	}
}

// count is the number of keys class c holds (0 if spilled).
func (s *Set) count(c int) int {
	switch m := s.cls[c].m; {
	case m == 1:
		return 1
	case m >= 2:
		return int(s.chunks[m-2].n)
	}
	return 0
}

// key is the i-th key of class c, which holds at least i+1.
func (s *Set) key(c, i int) freeset.Key {
	cl := &s.cls[c]
	if cl.m == 1 {
		return freeset.Key{Stream: s.stream, Size: int64(c+1) * Gran, Addr: cl.addr, B: cl.b}
	}
	ch := &s.chunks[cl.m-2]
	return freeset.Key{Stream: s.stream, Size: int64(c+1) * Gran, Addr: ch.addr[i], B: ch.b[i]}
}

// first is the lowest key of non-empty class c.
func (s *Set) first(c int) freeset.Key {
	cl := &s.cls[c]
	return freeset.Key{Stream: s.stream, Size: int64(c+1) * Gran, Addr: cl.addr, B: cl.b}
}

// last is the highest key of non-empty class c.
func (s *Set) last(c int) freeset.Key { return s.key(c, s.count(c)-1) }

// chunkLower is the first class key not less than k.
func (s *Set) chunkLower(k freeset.Key) (freeset.Key, bool) {
	if !s.hasStream || s.n == 0 {
		return freeset.Key{}, false
	}
	if k.Stream != s.stream {
		if uint64(k.Stream) < uint64(s.stream) {
			return s.chunkMin()
		}
		return freeset.Key{}, false
	}
	var c int
	if k.Size <= 0 {
		c = 0
	} else {
		c = int((k.Size+Gran-1)/Gran) - 1
		if c >= Classes {
			return freeset.Key{}, false
		}
		if k.Size&(Gran-1) == 0 && uint64(k.Addr) > 0 {
			// Within k's own class, the keys from k.Addr on.
			for i := range s.count(c) {
				if x := s.key(c, i); uint64(x.Addr) >= uint64(k.Addr) {
					return x, true
				}
			}
			c++
		}
	}
	if c = s.nextSet(c); c < 0 {
		return freeset.Key{}, false
	}
	return s.first(c), true
}

// chunkAfter is the first class key greater than k.
func (s *Set) chunkAfter(k freeset.Key) (freeset.Key, bool) {
	if !s.hasStream || s.n == 0 {
		return freeset.Key{}, false
	}
	if k.Stream != s.stream {
		if uint64(k.Stream) < uint64(s.stream) {
			return s.chunkMin()
		}
		return freeset.Key{}, false
	}
	if k.Size <= 0 {
		return s.chunkLower(freeset.Key{Stream: k.Stream})
	}
	c := int((k.Size+Gran-1)/Gran) - 1
	if c >= Classes {
		return freeset.Key{}, false
	}
	if k.Size&(Gran-1) == 0 {
		for i := range s.count(c) {
			// As freeset.Set.After: a key equal in the order but
			// of another block counts as after.
			if x := s.key(c, i); uint64(x.Addr) > uint64(k.Addr) || x.Addr == k.Addr && x.B != k.B {
				return x, true
			}
		}
		c++
	}
	if c = s.nextSet(c); c < 0 {
		return freeset.Key{}, false
	}
	return s.first(c), true
}

// chunkBefore is the last class key less than k: on the class stream,
// the keys of the classes below k's size, and those of its own size below
// its address.
func (s *Set) chunkBefore(k freeset.Key) (freeset.Key, bool) {
	if !s.hasStream || s.n == 0 {
		return freeset.Key{}, false
	}
	if k.Stream != s.stream {
		if uint64(k.Stream) > uint64(s.stream) {
			return s.chunkMax()
		}
		return freeset.Key{}, false
	}
	if k.Size <= 0 {
		return freeset.Key{}, false
	}
	if kc, ok := exactClass(k.Size); ok {
		for i := s.count(kc) - 1; i >= 0; i-- {
			if x := s.key(kc, i); uint64(x.Addr) < uint64(k.Addr) {
				return x, true
			}
		}
	}
	// The classes of sizes below k.Size: (k.Size-1)/Gran of them.
	below := min((k.Size-1)/Gran, Classes)
	c := s.prevSet(int(below) - 1)
	if c < 0 {
		return freeset.Key{}, false
	}
	return s.last(c), true
}

func (s *Set) chunkMin() (freeset.Key, bool) {
	if s.n == 0 {
		return freeset.Key{}, false
	}
	return s.first(s.nextSet(0)), true
}

func (s *Set) chunkMax() (freeset.Key, bool) {
	if s.n == 0 {
		return freeset.Key{}, false
	}
	return s.last(s.prevSet(Classes - 1)), true
}

// lower returns the lesser of two candidates, in the tree's order (the
// set's).
func (s *Set) lower(a freeset.Key, aok bool, b freeset.Key, bok bool) (freeset.Key, bool) {
	if !aok {
		return b, bok
	}
	if !bok || s.tree.Less(a, b) {
		return a, true
	}
	return b, true
}

// higher returns the greater of two candidates.
func (s *Set) higher(a freeset.Key, aok bool, b freeset.Key, bok bool) (freeset.Key, bool) {
	if !aok {
		return b, bok
	}
	if !bok || s.tree.Less(b, a) {
		return a, true
	}
	return b, true
}

// LowerBound is the first key not less than k. On the class stream with
// nothing counted in low, a class key found is the answer without asking
// the tree, whose keys of that stream are then all larger than any
// class's.
//
// A best-fit search — a key of the class stream with address 0 and a size
// up to the largest class's — is answered here, without chunkLower's call:
// a bitmap search and one read of the class found, when no spilled class
// lies before it and the tree holds no odd key (classFirst).
func (s *Set) LowerBound(k freeset.Key) (freeset.Key, bool) {
	if k.Stream == s.stream && k.Addr == 0 && uint64(k.Size-1) < Classes*Gran {
		// low first: with nothing in low there is nothing odd, and
		// a torch replay of gpt-generate spills no class.
		c0 := int((k.Size+Gran-1)/Gran) - 1
		if s.low == 0 {
			if c := s.nextSet(c0); c >= 0 {
				return s.first(c), true
			}
		} else if s.odd == 0 {
			if c := s.nextSet(c0); c >= 0 && s.classFirst(c0, c) {
				return s.first(c), true
			}
		}
	}
	x, ok := s.chunkLower(k)
	if ok && s.low == 0 && k.Stream == s.stream {
		return x, true
	}
	if s.tree.Len() == 0 {
		return x, ok
	}
	y, yok := s.tree.LowerBound(k)
	return s.lower(x, ok, y, yok)
}

// After is the first key greater than k. From the lowest key of a class
// (expandable segments' best fit steps on from the key LowerBound found)
// it is answered here when the tree holds no odd key: the class's next
// key, else the first of the next class unless a spilled class lies
// before it (classFirst).
func (s *Set) After(k freeset.Key) (freeset.Key, bool) {
	if c, ok := s.classOf(k); ok && s.odd == 0 {
		if cl := &s.cls[c]; cl.m > 0 && cl.addr == k.Addr && cl.b == k.B {
			if cl.m >= 2 {
				return s.key(c, 1), true
			}
			if n := s.nextSet(c + 1); n >= 0 && (s.low == 0 || s.classFirst(c+1, n)) {
				return s.first(n), true
			}
		}
	}
	x, ok := s.chunkAfter(k)
	if ok && s.low == 0 && k.Stream == s.stream {
		return x, true
	}
	if s.tree.Len() == 0 {
		return x, ok
	}
	y, yok := s.tree.After(k)
	return s.lower(x, ok, y, yok)
}

// Before is the last key less than k.
func (s *Set) Before(k freeset.Key) (freeset.Key, bool) {
	x, ok := s.chunkBefore(k)
	if s.tree.Len() == 0 {
		return x, ok
	}
	y, yok := s.tree.Before(k)
	return s.higher(x, ok, y, yok)
}

// Min is the first key.
func (s *Set) Min() (freeset.Key, bool) {
	x, ok := s.chunkMin()
	y, yok := s.tree.Min()
	return s.lower(x, ok, y, yok)
}

// Max is the last key.
func (s *Set) Max() (freeset.Key, bool) {
	x, ok := s.chunkMax()
	y, yok := s.tree.Max()
	return s.higher(x, ok, y, yok)
}

// Contains reports whether k (with its arena index) is in the set.
func (s *Set) Contains(k freeset.Key) bool {
	c, ok := s.classOf(k)
	if !ok || s.cls[c].m < 0 {
		return s.tree.Contains(k)
	}
	for i := range s.count(c) {
		if x := s.key(c, i); x.Addr == k.Addr {
			return x.B == k.B
		}
	}
	return false
}

// Insert adds k, which must not be in the set. The first key inserted
// fixes the class stream.
func (s *Set) Insert(k freeset.Key) {
	if !s.hasStream {
		s.stream, s.hasStream = k.Stream, true
	}
	c, ok := s.classOf(k)
	if !ok {
		s.toTree(k)
		return
	}
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 0:
		cl.addr, cl.b, cl.m = k.Addr, k.B, 1
		s.setBit(c)
		s.n++
	case m == 1:
		// A second key: both go to a chunk.
		var i int32
		if n := len(s.freeC); n > 0 {
			i = s.freeC[n-1]
			s.freeC = s.freeC[:n-1]
		} else {
			s.chunks = append(s.chunks, chunk{})
			i = int32(len(s.chunks) - 1)
		}
		ch := &s.chunks[i]
		ch.n = 2
		if uint64(k.Addr) < uint64(cl.addr) {
			ch.addr[0], ch.b[0], ch.addr[1], ch.b[1] = k.Addr, k.B, cl.addr, cl.b
			cl.addr, cl.b = k.Addr, k.B
		} else {
			ch.addr[0], ch.b[0], ch.addr[1], ch.b[1] = cl.addr, cl.b, k.Addr, k.B
		}
		cl.m = i + 2
		s.n++
	case m >= 2:
		ch := &s.chunks[m-2]
		n := int(ch.n)
		if n == ChunkMax {
			s.spill(c, k)
			return
		}
		i := n
		for i > 0 && uint64(ch.addr[i-1]) > uint64(k.Addr) {
			ch.addr[i], ch.b[i] = ch.addr[i-1], ch.b[i-1]
			i--
		}
		ch.addr[i], ch.b[i] = k.Addr, k.B
		ch.n++
		cl.addr, cl.b = ch.addr[0], ch.b[0]
		s.n++
	default:
		s.toTree(k)
		cl.m--
	}
}

// spill moves class c, whose chunk is full, and k, a new key of it, to
// the tree.
func (s *Set) spill(c int, k freeset.Key) {
	cl := &s.cls[c]
	ch := &s.chunks[cl.m-2]
	for i := range int(ch.n) {
		s.toTree(freeset.Key{Stream: s.stream, Size: k.Size, Addr: ch.addr[i], B: ch.b[i]})
	}
	s.toTree(k)
	s.n -= int(ch.n)
	s.freeC = append(s.freeC, cl.m-2)
	*cl = class{m: -(ch.n + 1)}
	ch.n = 0
	s.clearBit(c)
	s.spilled[c>>6] |= 1 << (c & 63)
	s.spillSum |= 1 << (c >> 6)
}

// Remove deletes k, which must be in the set.
func (s *Set) Remove(k freeset.Key) {
	c, ok := s.classOf(k)
	if !ok {
		s.fromTree(k)
		return
	}
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 1:
		if cl.addr != k.Addr || cl.b != k.B {
			panic("binset: removing a block that is not in its set")
		}
		*cl = class{}
		s.n--
		s.clearBit(c)
	case m >= 2:
		ch := &s.chunks[m-2]
		n := int(ch.n)
		i := 0
		for i < n && ch.addr[i] != k.Addr {
			i++
		}
		if i == n || ch.b[i] != k.B {
			panic("binset: removing a block that is not in its set")
		}
		for ; i < n-1; i++ {
			ch.addr[i], ch.b[i] = ch.addr[i+1], ch.b[i+1]
		}
		ch.n--
		s.n--
		cl.addr, cl.b = ch.addr[0], ch.b[0]
		if ch.n == 1 {
			// One key left: the class record holds it alone.
			ch.n = 0
			s.freeC = append(s.freeC, m-2)
			cl.m = 1
		}
	case m < 0:
		s.fromTree(k)
		if cl.m++; cl.m == 0 {
			// The class's last key left the tree: it is empty,
			// and no longer spilled.
			w := c >> 6
			if s.spilled[w] &^= 1 << (c & 63); s.spilled[w] == 0 {
				s.spillSum &^= 1 << w
			}
		}
	default:
		panic("binset: removing a block that is not in its set")
	}
}

// Replace puts new in the place of old, which must be in the set (new
// must not be): the tree's Replace when neither belongs to a class (the
// tree's keys have a finger there), else a Remove and an Insert, each of
// which touches one class.
//
// The commonest case, old alone in its class and new's class empty (a
// split's remainder, a block merged with its neighbour), moves the record.
func (s *Set) Replace(old, new freeset.Key) {
	// Both keys of a class (classOf, for the two at once: on the class
	// stream, sizes 1 to Classes granules, both multiples of Gran), with
	// one test each for the sizes' ranges and one for both granules: the
	// fast path below is one in two events of a torch replay, and
	// classOf's tests twice over were about half of it.
	if s.hasStream && old.Stream == s.stream && new.Stream == s.stream &&
		uint64(old.Size-1) < Classes*Gran && uint64(new.Size-1) < Classes*Gran && (old.Size|new.Size)&(Gran-1) == 0 {
		co, cn := int(old.Size/Gran-1)&(Classes-1), int(new.Size/Gran-1)&(Classes-1)
		if o, n := &s.cls[co], &s.cls[cn]; o.m == 1 && n.m == 0 && o.addr == old.Addr && o.b == old.B {
			*o = class{}
			*n = class{addr: new.Addr, b: new.B, m: 1}
			s.clearBit(co)
			s.setBit(cn)
			return
		}
	}
	_, okOld := s.classOf(old)
	_, okNew := s.classOf(new)
	if !okOld && !okNew {
		s.tree.Replace(old, new)
		if s.isLow(old) {
			s.low--
			if isOdd(old) {
				s.odd--
			}
		}
		if s.isLow(new) {
			s.low++
			if isOdd(new) {
				s.odd++
			}
		}
		return
	}
	s.Remove(old)
	s.Insert(new)
}

// Items returns the keys in order: for the rare whole-pool passes
// (empty_cache, garbage collection), which mutate the set as they go.
func (s *Set) Items() []freeset.Key {
	tree := s.tree.Items()
	if s.n == 0 {
		return tree
	}
	out := make([]freeset.Key, 0, s.Len())
	i := 0
	for c := s.nextSet(0); c >= 0; c = s.nextSet(c + 1) {
		for j := range s.count(c) {
			k := s.key(c, j)
			for i < len(tree) && s.tree.Less(tree[i], k) {
				out = append(out, tree[i])
				i++
			}
			out = append(out, k)
		}
	}
	return append(out, tree[i:]...)
}

// Clone returns an independent copy of the set.
func (s *Set) Clone() *Set {
	c := *s
	c.tree = s.tree.Clone()
	c.chunks = append([]chunk(nil), s.chunks...)
	c.freeC = append([]int32(nil), s.freeC...)
	return &c
}
