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
// grow past ChunkMax spills: its keys all move to a B+tree of its own,
// ordered by address (ctree.go), where the class stays until it is empty,
// so that every operation is O(log n) however many blocks share a size.
// Keys of other streams, of larger sizes or of sizes off the granule are
// the freeset.Set's. Every operation gives the answer freeset.Set would;
// binset_test.go checks that against a freeset.Set on random workloads.
//
// The spilled classes' trees (issue 15): at 10^6 live blocks the torch
// small pool holds about 38,000 free fragments in about 70 spilled
// classes. They were in the freeset.Set, and then two in three best fits,
// and most split remainders and merged neighbours, were descents of that
// tree of 32-byte keys. With a tree per class, a best fit is a bitmap
// search and a read of the class's record whether the class has spilled
// or not; the removal of a class's lowest key (a best fit's) takes it from
// the head leaf without a descent; any other removal or insertion searches
// one class's few hundred addresses, four cache lines a leaf. The
// classes' trees together take about 1 MB; under cachegrind (16 MB last
// level) their descents miss the last level less than once in 800.
//
// Measured 2026-11-24 on the shared 2-core machine, against the freeset.Set
// version (cebca31). harness BenchmarkReplayLivePaired, 6 runs each
// interleaved, medians (cpu-ns/event at 10^6 and at 10^3 live blocks):
// torch 306 → 212 (−31%, p=0.015) and 112 → 87 (−22%); torch with
// expandable segments 276 → 217 (−21%) and 108 → 91 (−15%). Both sizes
// fell (10^3 pools spill too), so x-live1k-cpu moved little: 2.53 → 2.44
// and 2.55 → 2.48. The torch model alone (torchlike BenchmarkLive under
// cachegrind, per event): 1,074 → 629 instructions at 10^6 and 964 → 763
// at 10^3; L1 data misses 7.0 → 4.6 at 10^6. gpt-generate's replay (no
// class spills there) is unchanged: x-decode-cpu 3.27 → 3.25.
//
// # Short paths
//
// Fit, Move, Put, Take and TakeFit (fast.go) are the cases of LowerBound,
// Replace, Insert and Remove that touch only class records, chunks and
// the bitmap, as leaf methods that report whether they did the work;
// torch calls them first and the general methods when they report false
// (issue 15: the torch model at most 2.5× the binary decode). Why: the
// general methods call into the chunks, the class trees and the
// freeset.Set on their other paths, so the compiler gives them a frame
// and spills their keys on entry whatever path they take; a leaf has no
// frame and keeps its keys in registers. Their tests branch once per
// question (classBits). In a torch replay of gpt-generate these cases
// are nine calls in ten: a split's remainder or a merged block moving
// from a class of one key to an empty class (55,600 of 60,000
// Replaces), a best fit in a class record (45,700 of 47,000
// LowerBounds), a second key into a chunk and back (4,700 each). The
// free chunks are a list through the chunks, so that taking or freeing
// one needs no append (and no call). TakeFit is a malloc's best fit and
// update in one call: the record read for the search is the one tested
// for the update.
//
// Measured 2026-11-24 under cachegrind, torchlike's BenchmarkModel
// (gpt-generate, the model's instructions an event, the harness's not
// counted), against 5ea6c3e: without expandable segments 312.7 → 285.6,
// of which this package and freeset.Set 110.8 → 81.8; with expandable
// segments 324.9 → 286.0 (112.6 → 83.8; torchlike's own change there is
// most of the rest). harness's BenchmarkReplayLive, torch, the model's
// instructions a timed event: 512 → 504 at 10^3 live blocks, 1,289 →
// 1,218 at 10^6 (its warm-up included), L1 misses unchanged. The
// general methods first tried the short paths themselves, which a
// caller that had (torch) paid twice when they failed: at 10^3 live
// blocks, whose classes are mostly chunks and trees, that was 554, 8%
// above the base. TakeFit against Fit and Move as two calls saved
// only 2.3 instructions an event: the bitmap search, the record's tests
// and the bitmap's updates are the work either way.
//
// Then (2026-11-24, against 9f358d2, cachegrind, harness's
// BenchmarkReplay under torch): fitClass's and TakeFit's shifts written
// below 64 (w % 64, then one more; cn / 64 % 64), where the compiler had
// added three instructions to each for a count of 64 or more, took the
// torch model's instructions an event from 243.5 to 241.3. Tried and not
// kept: TakeFit taking its best fit from a chunk as well (the first key
// leaves it; 9% of gpt-generate's mallocs) gave TakeFit a frame and
// spills, 14 instructions on every call for about 20 saved on the one
// call in ten that used it (247.6 -> 247.3 an event); torch now takes
// those by Take and Put instead (fitTried). Class primitives small
// enough to be inlined (a key's class, a record's tests, a record
// emptied or filled), which torch's Free composed into Put's and Move's
// commonest cases without a call, saved 0.5 instructions an event: the
// code in line was as long as the leaf's, and Free's spills stayed for
// its other calls.
//
// Tried and not kept (issue 15, 2026-11-25, torchlike's BenchmarkModel
// on gpt-generate, 30 runs interleaved, twice): TakeFit's class search
// without fitClass's branch on whether the class is in the request's
// word (the summary's word read every time, a zero word after the last
// so that none found reads zero, and the word chosen by a mask) ran 3%
// slower: the branch is predicted, and the summary's load joined every
// search's chain. A class of one key made with one 8-byte store of its
// block and count (the three fields were three stores) ran 1.2
// instructions an event more and no faster. The count of the class
// keys (n) found by walking the classes when asked (Len is for checks),
// not kept, saved its store on Put, Take and a whole TakeFit: 0.45
// instructions an event, no difference in time.
package binset

import (
	"math/bits"

	"membench/internal/freeset"
	"membench/internal/hugemem"
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
	next int32 // in the list of free chunks: the next's index + 1, or 0
	b    [ChunkMax]int32
	addr [ChunkMax]int64
}

// pair makes ch the chunk of a class of one key, in its record cl, and k.
func (ch *chunk) pair(cl *class, k freeset.Key) {
	ch.n = 2
	if uint64(k.Addr) < uint64(cl.addr) {
		ch.addr[0], ch.b[0], ch.addr[1], ch.b[1] = k.Addr, k.B, cl.addr, cl.b
		cl.addr, cl.b = k.Addr, k.B
	} else {
		ch.addr[0], ch.b[0], ch.addr[1], ch.b[1] = cl.addr, cl.b, k.Addr, k.B
	}
}

// insert adds k to ch, which has room, in address order.
func (ch *chunk) insert(k freeset.Key) {
	i := min(int(ch.n), ChunkMax-1)
	for i > 0 && uint64(ch.addr[i-1]) > uint64(k.Addr) {
		ch.addr[i], ch.b[i] = ch.addr[i-1], ch.b[i-1]
		i--
	}
	ch.addr[i], ch.b[i] = k.Addr, k.B
	ch.n++
}

// remove deletes k from ch and reports whether it was there.
func (ch *chunk) remove(k freeset.Key) bool {
	n := min(int(ch.n), ChunkMax)
	i := 0
	for i < n && ch.addr[i] != k.Addr {
		i++
	}
	if i == n || ch.b[i] != k.B {
		return false
	}
	for ; i < n-1; i++ {
		ch.addr[i], ch.b[i] = ch.addr[i+1], ch.b[i+1]
	}
	ch.n--
	return true
}

// freeChunk puts chunk i at the head of the list of free chunks.
func (s *Set) freeChunk(i int32) {
	ch := &s.chunks[i]
	ch.n, ch.next = 0, s.freeC
	s.freeC = i + 1
}

// class is one exact-size class. Its lowest key is kept here, so that a
// best fit reads one record after the bitmap (gpt-generate's classes
// hold one free block nine times in ten); a class of two or more keeps
// them all in a chunk as well.
type class struct {
	addr int64 // the lowest key's address, when m != 0
	b    int32 // its block
	// m is 0 for an empty class, 1 for a class of one key, i+2 for a
	// class whose keys are in chunks[i], and -(t+1) for a spilled class
	// whose keys are in trees[t] (ctree.go).
	m int32
}

// Set is the ordered set. The zero value is not usable; call New.
type Set struct {
	tree      *freeset.Set
	stream    int64 // the class stream, once hasStream
	hasStream bool
	n         int // keys in classes
	// odd counts the tree's keys on the class stream of sizes up to
	// Classes × Gran, which are no class's (off the granule, or not
	// above 0). While there are none, a class key found on the class
	// stream is the answer, as the tree's keys of that stream are all
	// larger.
	odd     int
	summary uint64
	bits    [words]uint64 // the non-empty classes, spilled or not
	cls     [Classes]class
	chunks  []chunk
	// freeC is the first free chunk's index + 1, or 0: the free chunks
	// are a list through their next fields, so that a short path
	// (fast.go) frees or takes one without append's call.
	freeC int32

	// The spilled classes' trees and their node arenas (ctree.go), and
	// the path of the last descent of one.
	trees  []ctree
	freeT  []int32
	cl     []cleaf
	freeCL []int32
	ci     []cinner
	freeCI []int32
	path   [ctHeight]int32
	idx    [ctHeight]int32
	// marked counts the leaves whose touch (touchLeaf) matched its
	// mark: a count that nothing reads, kept so that the touch's loads
	// stay.
	marked int

	// watch is the size from which an inserted key counts in
	// BigInserts (Watch); treeBig counts those inserted into the tree,
	// topIns the keys inserted into the largest class, which count when
	// watch is that class's size. Neither is reset: a count that fell
	// back could match one taken before.
	watch           int64
	treeBig, topIns uint64
}

// New returns an empty set.
func New() *Set {
	return &Set{tree: freeset.New(false)}
}

// Reset empties the set, keeping its memory for reuse.
// Only the classes in use are cleared (the 64 KiB of class records are
// most of the set, and a replay touches few of them): the non-empty ones,
// which the bitmap lists.
func (s *Set) Reset() {
	for w, word := range s.bits {
		for ; word != 0; word &= word - 1 {
			s.cls[w<<6+bits.TrailingZeros64(word)] = class{}
		}
		s.bits[w] = 0
	}
	s.tree.Reset()
	s.stream, s.hasStream, s.n, s.odd, s.summary = 0, false, 0, 0, 0
	s.chunks, s.freeC = s.chunks[:0], 0
	s.trees, s.freeT = s.trees[:0], s.freeT[:0]
	s.cl, s.freeCL = s.cl[:0], s.freeCL[:0]
	s.ci, s.freeCI = s.ci[:0], s.freeCI[:0]
}

// Len is the number of keys.
func (s *Set) Len() int { return s.n + s.tree.Len() }

// Watch makes BigInserts count the keys of size bytes or more inserted
// from now on. size must be at least the largest class's, Classes × Gran
// (it panics otherwise), so that of the classes only that one can hold
// such keys, and the short paths, which make most insertions, test one
// class index, a constant, rather than load a size.
//
// Why: torch with expandable segments releases, at each failed
// allocation, the free blocks that span one of the pool's pages, and finds
// them by a search per stream; the release can be skipped when no block of
// a page or more has entered the pool since the last one, which the
// pool's allocations and frees of smaller blocks do not tell.
func (s *Set) Watch(size int64) {
	if size < Classes*Gran {
		panic("binset: watching sizes below the largest class")
	}
	s.watch = size
}

// BigInserts counts the keys inserted (by Insert, Replace, Put or Move) of
// at least the size watched when each was (Watch; before the first, every
// key the tree took), from the set's making. It only grows, Reset
// included: two readings under the same Watch differ exactly when such a
// key was inserted between them.
func (s *Set) BigInserts() uint64 {
	n := s.treeBig
	if s.watch == Classes*Gran {
		n += s.topIns
	}
	return n
}

// exactClass is the class of size when it is one class's size.
func exactClass(size int64) (int, bool) {
	if size <= 0 || size&(Gran-1) != 0 || size > Classes*Gran {
		return 0, false
	}
	return int(size/Gran) - 1, true
}

// classOf is the class of k when k belongs to one: on the class stream
// and of a class's size.
func (s *Set) classOf(k freeset.Key) (int, bool) {
	if !s.hasStream || k.Stream != s.stream {
		return 0, false
	}
	return exactClass(k.Size)
}

// isOdd reports whether k, a key of the tree, counts in odd: on the class
// stream and no larger than the largest class (a key of the tree that is
// would be a class's if its size were on the granule and above 0).
func (s *Set) isOdd(k freeset.Key) bool {
	return k.Stream == s.stream && k.Size <= Classes*Gran
}

// toTree inserts k in the tree.
func (s *Set) toTree(k freeset.Key) {
	s.tree.Insert(k)
	if s.isOdd(k) {
		s.odd++
	}
	if k.Size >= s.watch {
		s.treeBig++
	}
}

// fromTree removes k from the tree.
func (s *Set) fromTree(k freeset.Key) {
	s.tree.Remove(k)
	if s.isOdd(k) {
		s.odd--
	}
}

// nextSet is the first non-empty class at or after c, or -1.
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

// prevSet is the last non-empty class at or before c, or -1.
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

// mk is the key of class c at addr, held by block b.
func (s *Set) mk(c int, addr int64, b int32) freeset.Key {
	return freeset.Key{Stream: s.stream, Size: int64(c+1) * Gran, Addr: addr, B: b}
}

// first is the lowest key of non-empty class c, which its record keeps.
func (s *Set) first(c int) freeset.Key {
	cl := &s.cls[c]
	return s.mk(c, cl.addr, cl.b)
}

// last is the highest key of non-empty class c.
func (s *Set) last(c int) freeset.Key {
	switch m := s.cls[c].m; {
	case m >= 2:
		ch := &s.chunks[m-2]
		return s.mk(c, ch.addr[ch.n-1], ch.b[ch.n-1])
	case m < 0:
		a, b := s.clast(&s.trees[-m-1])
		return s.mk(c, a, b)
	}
	return s.first(c)
}

// classLower is the first key of class c whose address is not below a
// (unsigned).
func (s *Set) classLower(c int, a int64) (freeset.Key, bool) {
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 1:
		if uint64(cl.addr) >= uint64(a) {
			return s.first(c), true
		}
	case m >= 2:
		ch := &s.chunks[m-2]
		for i := range int(ch.n) {
			if uint64(ch.addr[i]) >= uint64(a) {
				return s.mk(c, ch.addr[i], ch.b[i]), true
			}
		}
	case m < 0:
		if x, b, ok := s.clower(&s.trees[-m-1], a); ok {
			return s.mk(c, x, b), true
		}
	}
	return freeset.Key{}, false
}

// classAfter is the first key of class c after k, a key of c's size, as
// freeset.Set.After has it: a key equal in the order but of another block
// counts as after.
func (s *Set) classAfter(c int, k freeset.Key) (freeset.Key, bool) {
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 1:
		if uint64(cl.addr) > uint64(k.Addr) || cl.addr == k.Addr && cl.b != k.B {
			return s.first(c), true
		}
	case m >= 2:
		ch := &s.chunks[m-2]
		for i := range int(ch.n) {
			if x := ch.addr[i]; uint64(x) > uint64(k.Addr) || x == k.Addr && ch.b[i] != k.B {
				return s.mk(c, x, ch.b[i]), true
			}
		}
	case m < 0:
		if x, b, ok := s.cafter(&s.trees[-m-1], k.Addr, k.B); ok {
			return s.mk(c, x, b), true
		}
	}
	return freeset.Key{}, false
}

// classBefore is the last key of class c whose address is below a.
func (s *Set) classBefore(c int, a int64) (freeset.Key, bool) {
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 1:
		if uint64(cl.addr) < uint64(a) {
			return s.first(c), true
		}
	case m >= 2:
		ch := &s.chunks[m-2]
		for i := int(ch.n) - 1; i >= 0; i-- {
			if uint64(ch.addr[i]) < uint64(a) {
				return s.mk(c, ch.addr[i], ch.b[i]), true
			}
		}
	case m < 0:
		if x, b, ok := s.cbefore(&s.trees[-m-1], a); ok {
			return s.mk(c, x, b), true
		}
	}
	return freeset.Key{}, false
}

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
			if x, ok := s.classLower(c, k.Addr); ok {
				return x, true
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
		if x, ok := s.classAfter(c, k); ok {
			return x, true
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
		if x, ok := s.classBefore(kc, k.Addr); ok {
			return x, true
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
// nothing counted in odd, a class key found is the answer without asking
// the tree, whose keys of that stream are then all larger than any
// class's.
//
// A best-fit search — a key of the class stream with address 0 and a size
// up to the largest class's — is answered by Fit, without chunkLower's
// call: a bitmap search and one read of the class found, spilled or not.
func (s *Set) LowerBound(k freeset.Key) (freeset.Key, bool) {
	if k.Addr == 0 {
		if x, ok := s.Fit(k.Stream, k.Size); ok {
			return x, true
		}
	}
	x, ok := s.chunkLower(k)
	if ok && s.odd == 0 && k.Stream == s.stream {
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
// key, else the first of the next class.
func (s *Set) After(k freeset.Key) (freeset.Key, bool) {
	if c, ok := s.classOf(k); ok && s.odd == 0 {
		if cl := &s.cls[c]; cl.m != 0 && cl.addr == k.Addr && cl.b == k.B {
			switch {
			case cl.m >= 2:
				ch := &s.chunks[cl.m-2]
				return s.mk(c, ch.addr[1], ch.b[1]), true
			case cl.m < 0:
				if x, ok := s.classAfter(c, k); ok {
					return x, true
				}
			}
			if n := s.nextSet(c + 1); n >= 0 {
				return s.first(n), true
			}
		}
	}
	x, ok := s.chunkAfter(k)
	if ok && s.odd == 0 && k.Stream == s.stream {
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
	if !ok {
		return s.tree.Contains(k)
	}
	x, ok := s.classLower(c, k.Addr)
	return ok && x.Addr == k.Addr && x.B == k.B
}

// Insert adds k, which must not be in the set. The first key inserted
// fixes the class stream. Put is its commonest cases; Insert does not try
// Put first, so that a caller that has (torch) does not pay for it twice.
func (s *Set) Insert(k freeset.Key) {
	if !s.hasStream {
		s.stream, s.hasStream = k.Stream, true
	}
	c, ok := s.classOf(k)
	if !ok {
		s.toTree(k)
		return
	}
	s.n++
	if c == Classes-1 {
		s.topIns++
	}
	cl := &s.cls[c]
	switch m := cl.m; {
	case m == 0:
		cl.addr, cl.b, cl.m = k.Addr, k.B, 1
		s.setBit(c)
		return
	case m == 1:
		// A second key: both go to a chunk, a free one or a new one.
		if s.freeC == 0 {
			s.chunks = append(hugemem.Grow(s.chunks, len(s.chunks)+1), chunk{})
			s.freeChunk(int32(len(s.chunks) - 1))
		}
		i := s.freeC - 1
		ch := &s.chunks[i]
		s.freeC = ch.next
		ch.pair(cl, k)
		cl.m = i + 2
		return
	case m >= 2:
		ch := &s.chunks[m-2]
		if ch.n < ChunkMax {
			ch.insert(k)
			cl.addr, cl.b = ch.addr[0], ch.b[0]
			return
		}
		// The class's chunk is full and spills: its keys and k start
		// a tree.
		t := s.newTree(ch, k.Addr, k.B)
		s.freeChunk(m - 2)
		cl.m = -(t + 1)
	default:
		s.cinsert(&s.trees[-m-1], k.Addr, k.B)
	}
	if uint64(k.Addr) < uint64(cl.addr) {
		cl.addr, cl.b = k.Addr, k.B
	}
}

// Remove deletes k, which must be in the set; a key not in the set
// panics. Take is its commonest cases; Remove does not try Take first
// (see Insert).
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
		s.clearBit(c)
	case m >= 2:
		ch := &s.chunks[m-2]
		if !ch.remove(k) {
			panic("binset: removing a block that is not in its set")
		}
		cl.addr, cl.b = ch.addr[0], ch.b[0]
		if ch.n == 1 {
			// One key left: the class record holds it alone.
			s.freeChunk(m - 2)
			cl.m = 1
		}
	case m < 0:
		t := &s.trees[-m-1]
		// The class's lowest key, a best fit's, leaves the head leaf
		// without a descent (cremoveFirst) unless it is the leaf's
		// last.
		if cl.addr == k.Addr && cl.b == k.B && s.cremoveFirst(t) {
			lp := &s.cl[t.head]
			cl.addr, cl.b = lp.addr[0], lp.b[0]
			break
		}
		if !s.cremove(t, k.Addr, k.B) {
			panic("binset: removing a block that is not in its set")
		}
		if t.n == 0 {
			// The class's last key left: it is empty, and no
			// longer spilled.
			s.dropTree(-m - 1)
			*cl = class{}
			s.clearBit(c)
		} else if cl.addr == k.Addr {
			cl.addr, cl.b = s.cfirst(t)
		}
	default:
		panic("binset: removing a block that is not in its set")
	}
	s.n--
}

// Replace puts new in the place of old, which must be in the set (new
// must not be): the tree's Replace when neither belongs to a class (the
// tree's keys have a finger there), else a Remove and an Insert, each of
// which touches one class. Move is its commonest case; Replace does not
// try Move first (see Insert).
func (s *Set) Replace(old, new freeset.Key) {
	_, okOld := s.classOf(old)
	_, okNew := s.classOf(new)
	if !okOld && !okNew {
		s.tree.Replace(old, new)
		if s.isOdd(old) {
			s.odd--
		}
		if s.isOdd(new) {
			s.odd++
		}
		if new.Size >= s.watch {
			s.treeBig++
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
	add := func(k freeset.Key) {
		for i < len(tree) && s.tree.Less(tree[i], k) {
			out = append(out, tree[i])
			i++
		}
		out = append(out, k)
	}
	for c := s.nextSet(0); c >= 0; c = s.nextSet(c + 1) {
		switch m := s.cls[c].m; {
		case m == 1:
			add(s.first(c))
		case m >= 2:
			ch := &s.chunks[m-2]
			for j := range int(ch.n) {
				add(s.mk(c, ch.addr[j], ch.b[j]))
			}
		default:
			for lf := s.trees[-m-1].head; lf != nilNode; lf = s.cl[lf].next {
				lp := &s.cl[lf]
				for j := range int(lp.n) {
					add(s.mk(c, lp.addr[j], lp.b[j]))
				}
			}
		}
	}
	return append(out, tree[i:]...)
}

// Clone returns an independent copy of the set.
func (s *Set) Clone() *Set {
	c := *s
	c.tree = s.tree.Clone()
	c.chunks = append([]chunk(nil), s.chunks...)
	c.trees = append([]ctree(nil), s.trees...)
	c.freeT = append([]int32(nil), s.freeT...)
	c.cl = append([]cleaf(nil), s.cl...)
	c.freeCL = append([]int32(nil), s.freeCL...)
	c.ci = append([]cinner(nil), s.ci...)
	c.freeCI = append([]int32(nil), s.freeCI...)
	return &c
}
