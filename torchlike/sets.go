package torchlike

// fkey orders the free blocks of a pool as PyTorch's BlockComparatorSize
// does (allocator-spec §1.3): stream, then size, then address, streams and
// addresses compared as unsigned pointers. b is the block's arena index and
// takes no part in the order (addresses are unique within a pool).
type fkey struct {
	stream, size, addr int64
	b                  int32
}

// set is an ordered set of block keys: a pool's free blocks by (stream,
// size, address), or with byAddr its unmapped expandable ranges by
// (stream, address) as BlockComparatorAddress orders them.
//
// It is a list of sorted chunks of at most chunkMax keys with a parallel
// array of each chunk's last key: a search is two binary searches, an
// insertion or deletion moves at most one chunk's keys. This replaced
// github.com/tidwall/btree here because the comparison is inlined instead
// of called through a function value, which made the replay loop about
// twice as fast (BenchmarkOrderedSet in sets_bench_test.go); chunks are
// recycled, so a steady-state replay allocates nothing.
type set struct {
	byAddr bool
	chunks [][]fkey
	last   []fkey
	n      int
	spare  [][]fkey
}

const chunkMax = 128

func newSet(byAddr bool) *set { return &set{byAddr: byAddr} }

func (s *set) less(x, y fkey) bool {
	if x.stream != y.stream {
		return uint64(x.stream) < uint64(y.stream)
	}
	if !s.byAddr && x.size != y.size {
		return x.size < y.size
	}
	return uint64(x.addr) < uint64(y.addr)
}

// chunkFor is the first chunk whose last key is not less than k, or
// len(chunks).
func (s *set) chunkFor(k fkey) int {
	lo, hi := 0, len(s.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.less(s.last[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// posIn is the first index in c whose key is not less than k.
func (s *set) posIn(c []fkey, k fkey) int {
	lo, hi := 0, len(c)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.less(c[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (s *set) len() int { return s.n }

// lowerBound is the first key not less than k.
func (s *set) lowerBound(k fkey) (fkey, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return fkey{}, false
	}
	c := s.chunks[i]
	return c[s.posIn(c, k)], true
}

// after is the first key greater than k.
func (s *set) after(k fkey) (fkey, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return fkey{}, false
	}
	c := s.chunks[i]
	j := s.posIn(c, k)
	if j < len(c) && !s.less(k, c[j]) { // c[j] == k
		j++
	}
	if j < len(c) {
		return c[j], true
	}
	if i+1 < len(s.chunks) {
		return s.chunks[i+1][0], true
	}
	return fkey{}, false
}

// before is the last key less than k.
func (s *set) before(k fkey) (fkey, bool) {
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
	return fkey{}, false
}

func (s *set) min() (fkey, bool) {
	if s.n == 0 {
		return fkey{}, false
	}
	return s.chunks[0][0], true
}

func (s *set) max() (fkey, bool) {
	if s.n == 0 {
		return fkey{}, false
	}
	return s.last[len(s.last)-1], true
}

// contains reports whether k (with its arena index) is in the set.
func (s *set) contains(k fkey) bool {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return false
	}
	c := s.chunks[i]
	j := s.posIn(c, k)
	return j < len(c) && c[j] == k
}

func (s *set) newChunk() []fkey {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return c[:0]
	}
	return make([]fkey, 0, chunkMax+1)
}

func (s *set) insert(k fkey) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, append(s.newChunk(), k))
		s.last = append(s.last, k)
		return
	}
	i := min(s.chunkFor(k), len(s.chunks)-1)
	c := s.chunks[i]
	j := s.posIn(c, k)
	c = append(c, fkey{})
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
		s.last = append(s.last, fkey{})
		copy(s.last[i+2:], s.last[i+1:])
		s.last[i+1] = nc[len(nc)-1]
	}
}

func (s *set) remove(k fkey) {
	i := s.chunkFor(k)
	var c []fkey
	j := 0
	if i < len(s.chunks) {
		c = s.chunks[i]
		j = s.posIn(c, k)
	}
	if i == len(s.chunks) || j == len(c) || c[j] != k {
		panic("torchlike: removing a block that is not in its set")
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
func (s *set) items() []fkey {
	out := make([]fkey, 0, s.n)
	for _, c := range s.chunks {
		out = append(out, c...)
	}
	return out
}

// ascend calls fn on each key from the first not less than k, in order,
// until fn returns false. fn must not change the set.
func (s *set) ascend(k fkey, fn func(fkey) bool) {
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
