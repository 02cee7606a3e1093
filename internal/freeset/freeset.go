package freeset

// Key orders free blocks as PyTorch's BlockComparatorSize does
// (allocator-spec §1.3): stream, then size, then address, streams and
// addresses compared as unsigned pointers; BFC, which has no streams, uses
// stream 0 and gets its bins' (size, address) order (§2.1). B is the
// block's index in its allocator's arena and takes no part in the order
// (addresses are unique within a set).
type Key struct {
	Stream, Size, Addr int64
	B                  int32
}

// Set is an ordered set of block keys: a pool's free blocks by (stream,
// size, address), or with byAddr its unmapped expandable ranges by
// (stream, address) as BlockComparatorAddress orders them.
//
// It is a list of sorted chunks of at most chunkMax keys with a parallel
// array of each chunk's last key: a search is two binary searches, an
// insertion or deletion moves at most one chunk's keys. This replaced
// github.com/tidwall/btree here because the comparison is inlined instead
// of called through a function value, which made the replay loop about
// twice as fast (BenchmarkOrderedSet in torchlike/sets_bench_test.go); chunks are
// recycled, so a steady-state replay allocates nothing.
type Set struct {
	byAddr bool
	chunks [][]Key
	last   []Key
	n      int
	spare  [][]Key
}

const chunkMax = 128

// New returns an empty set ordered by (stream, size, address), or with
// byAddr by (stream, address).
func New(byAddr bool) *Set { return &Set{byAddr: byAddr} }

func (s *Set) Less(x, y Key) bool {
	if x.Stream != y.Stream {
		return uint64(x.Stream) < uint64(y.Stream)
	}
	if !s.byAddr && x.Size != y.Size {
		return x.Size < y.Size
	}
	return uint64(x.Addr) < uint64(y.Addr)
}

// chunkFor is the first chunk whose last key is not less than k, or
// len(chunks).
func (s *Set) chunkFor(k Key) int {
	lo, hi := 0, len(s.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.Less(s.last[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// posIn is the first index in c whose key is not less than k.
func (s *Set) posIn(c []Key, k Key) int {
	lo, hi := 0, len(c)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.Less(c[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (s *Set) Len() int { return s.n }

// lowerBound is the first key not less than k.
func (s *Set) LowerBound(k Key) (Key, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return Key{}, false
	}
	c := s.chunks[i]
	return c[s.posIn(c, k)], true
}

// after is the first key greater than k.
func (s *Set) After(k Key) (Key, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return Key{}, false
	}
	c := s.chunks[i]
	j := s.posIn(c, k)
	if j < len(c) && !s.Less(k, c[j]) { // c[j] == k
		j++
	}
	if j < len(c) {
		return c[j], true
	}
	if i+1 < len(s.chunks) {
		return s.chunks[i+1][0], true
	}
	return Key{}, false
}

// before is the last key less than k.
func (s *Set) Before(k Key) (Key, bool) {
	i := s.chunkFor(k)
	if i < len(s.chunks) {
		c := s.chunks[i]
		if j := s.posIn(c, k); j > 0 {
			return c[j-1], true
		}
	}
	if i > 0 {
		c := s.chunks[i-1]
		return c[len(c)-1], true
	}
	return Key{}, false
}

func (s *Set) Min() (Key, bool) {
	if s.n == 0 {
		return Key{}, false
	}
	return s.chunks[0][0], true
}

func (s *Set) Max() (Key, bool) {
	if s.n == 0 {
		return Key{}, false
	}
	return s.last[len(s.last)-1], true
}

// contains reports whether k (with its arena index) is in the set.
func (s *Set) Contains(k Key) bool {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return false
	}
	c := s.chunks[i]
	j := s.posIn(c, k)
	return j < len(c) && c[j] == k
}

func (s *Set) newChunk() []Key {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return c[:0]
	}
	return make([]Key, 0, chunkMax+1)
}

func (s *Set) Insert(k Key) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, append(s.newChunk(), k))
		s.last = append(s.last, k)
		return
	}
	i := min(s.chunkFor(k), len(s.chunks)-1)
	c := s.chunks[i]
	j := s.posIn(c, k)
	c = append(c, Key{})
	copy(c[j+1:], c[j:])
	c[j] = k
	s.chunks[i] = c
	s.last[i] = c[len(c)-1]
	if len(c) > chunkMax {
		// Split in two halves.
		h := len(c) / 2
		nc := append(s.newChunk(), c[h:]...)
		s.chunks[i] = c[:h]
		s.last[i] = c[h-1]
		s.chunks = append(s.chunks, nil)
		copy(s.chunks[i+2:], s.chunks[i+1:])
		s.chunks[i+1] = nc
		s.last = append(s.last, Key{})
		copy(s.last[i+2:], s.last[i+1:])
		s.last[i+1] = nc[len(nc)-1]
	}
}

func (s *Set) Remove(k Key) {
	i := s.chunkFor(k)
	var c []Key
	j := 0
	if i < len(s.chunks) {
		c = s.chunks[i]
		j = s.posIn(c, k)
	}
	if i == len(s.chunks) || j == len(c) || c[j] != k {
		panic("freeset: removing a block that is not in its set")
	}
	s.n--
	copy(c[j:], c[j+1:])
	c = c[:len(c)-1]
	if len(c) == 0 {
		s.spare = append(s.spare, s.chunks[i])
		s.chunks = append(s.chunks[:i], s.chunks[i+1:]...)
		s.last = append(s.last[:i], s.last[i+1:]...)
		return
	}
	s.chunks[i] = c
	s.last[i] = c[len(c)-1]
}

// items returns the keys in order: for the rare whole-pool passes
// (empty_cache, garbage collection), which mutate the set as they go.
func (s *Set) Items() []Key {
	out := make([]Key, 0, s.n)
	for _, c := range s.chunks {
		out = append(out, c...)
	}
	return out
}

// ascend calls fn on each key from the first not less than k, in order,
// until fn returns false. fn must not change the set.
func (s *Set) Ascend(k Key, fn func(Key) bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return
	}
	for j := s.posIn(s.chunks[i], k); i < len(s.chunks); i, j = i+1, 0 {
		for _, x := range s.chunks[i][j:] {
			if !fn(x) {
				return
			}
		}
	}
}

// Clone returns an independent copy of the set.
func (s *Set) Clone() *Set {
	c := &Set{byAddr: s.byAddr, n: s.n, last: append([]Key(nil), s.last...)}
	c.chunks = make([][]Key, len(s.chunks))
	for i, ch := range s.chunks {
		nc := make([]Key, len(ch), chunkMax+1)
		copy(nc, ch)
		c.chunks[i] = nc
	}
	return c
}
