package binset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"membench/internal/freeset"
)

// TestAsTorchCallsIt drives a Set and a freeset.Set with torch's own call
// patterns (best fit, the After chain of expandable segments, a split's
// Replace or a take's Remove, frees merging one or both neighbours, the
// Before chain of releaseAvailableCachedBlocks, Items passes that delete
// as they go, Reset and reuse with another first stream, a Clone changed
// while the original must not) under adversarial distributions (one to
// three sizes so that classes spill into the tree and come back, sizes at
// every class boundary, up to five streams including -1 and -2^63,
// addresses with the high bit set), and compares every answer after every
// step. It came from the review of the package (which ran it 11 minutes,
// 339 million steps); here it runs a fixed set of seeds.

type rvCfg struct {
	streams []int64
	sizes   func(r *rand.Rand) int64
	nAddr   int64 // address pool size
	hiAddr  bool
	target  int
}

var rvBoundary = []int64{1, 2, 511, 512, 513, 1023, 1024, 1025, Classes*Gran - 512, Classes*Gran - 511, Classes*Gran - 1, Classes * Gran, Classes*Gran + 1, Classes*Gran + 511, Classes*Gran + 512, Classes*Gran + 1024, 4 << 20, 1 << 40}

func rvConfigs() []rvCfg {
	return []rvCfg{
		// few sizes: classes spill and return
		{[]int64{0}, func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(3)) }, 1 << 8, false, 40},
		{[]int64{0}, func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(2)) }, 1 << 8, true, 12},
		// boundaries
		{[]int64{0, 1}, func(r *rand.Rand) int64 { return rvBoundary[r.IntN(len(rvBoundary))] }, 1 << 10, false, 60},
		{[]int64{-1, 0, 1 << 62, -1 << 63}, func(r *rand.Rand) int64 {
			if r.IntN(2) == 0 {
				return rvBoundary[r.IntN(len(rvBoundary))]
			}
			return Gran * (1 + r.Int64N(4))
		}, 1 << 10, true, 60},
		// many streams, equal sizes
		{[]int64{3, 0, -5, 7, 1 << 63 >> 1}, func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(5)) }, 1 << 9, true, 80},
		// all classes, plus off granule
		{[]int64{0}, func(r *rand.Rand) int64 {
			if r.IntN(4) == 0 {
				return 1 + r.Int64N(Classes*Gran+2*Gran)
			}
			return Gran * (1 + r.Int64N(Classes+2))
		}, 1 << 12, false, 200},
		// the torch-like small pool: few free, 1 stream
		{[]int64{0}, func(r *rand.Rand) int64 { return Gran * (1 + r.Int64N(64)) }, 1 << 12, false, 14},
	}
}

type rvState struct {
	t    *testing.T
	r    *rand.Rand
	c    rvCfg
	s    *Set
	ref  *freeset.Set
	in   []freeset.Key
	used map[int64]bool // addresses in use (unique per pool, as torch's)
	step int
	b    int32
}

func (st *rvState) addr() int64 {
	a := Gran * st.r.Int64N(st.c.nAddr)
	if st.c.hiAddr && st.r.IntN(2) == 0 {
		a = -a - Gran // high bit set
		if st.r.IntN(4) == 0 {
			a = -1 << 63
		}
	}
	return a
}

func (st *rvState) fresh() (freeset.Key, bool) {
	for range 50 {
		a := st.addr()
		if st.used[a] {
			continue
		}
		st.b++
		return freeset.Key{Stream: st.c.streams[st.r.IntN(len(st.c.streams))], Size: st.c.sizes(st.r), Addr: a, B: st.b}, true
	}
	return freeset.Key{}, false
}

func (st *rvState) fail(format string, args ...any) {
	st.t.Helper()
	st.t.Fatalf("step %d: %s", st.step, fmt.Sprintf(format, args...))
}

func (st *rvState) insert(k freeset.Key) {
	st.s.Insert(k)
	st.ref.Insert(k)
	st.in = append(st.in, k)
	st.used[k.Addr] = true
}

func (st *rvState) removeAt(j int) {
	k := st.in[j]
	st.s.Remove(k)
	st.ref.Remove(k)
	st.in[j] = st.in[len(st.in)-1]
	st.in = st.in[:len(st.in)-1]
	delete(st.used, k.Addr)
}

func (st *rvState) idx(k freeset.Key) int {
	for j, x := range st.in {
		if x == k {
			return j
		}
	}
	st.fail("key %v not tracked", k)
	return -1
}

func (st *rvState) replaceAt(j int, nk freeset.Key) {
	old := st.in[j]
	st.s.Replace(old, nk)
	st.ref.Replace(old, nk)
	delete(st.used, old.Addr)
	st.used[nk.Addr] = true
	st.in[j] = nk
}

func same(a freeset.Key, aok bool, b freeset.Key, bok bool) bool {
	return aok == bok && (!aok || a == b)
}

func (st *rvState) probe() freeset.Key {
	r := st.r
	var k freeset.Key
	if len(st.in) > 0 && r.IntN(2) == 0 {
		k = st.in[r.IntN(len(st.in))]
		switch r.IntN(7) {
		case 0:
			k.Addr, k.B = 0, 0
		case 1:
			k.Addr += Gran
		case 2:
			k.Addr -= Gran
		case 3:
			k.B++
		case 4:
			k.Size += int64(r.IntN(3) - 1)
		case 5:
			k.Stream += int64(r.IntN(3) - 1)
		}
		return k
	}
	k = freeset.Key{Stream: st.c.streams[r.IntN(len(st.c.streams))], Size: st.c.sizes(r), Addr: st.addr(), B: r.Int32N(4)}
	switch r.IntN(6) {
	case 0:
		k.Addr = 0
	case 1:
		k.Size = rvBoundary[r.IntN(len(rvBoundary))]
	case 2:
		k.Size = int64(r.IntN(3)) - 1
	}
	return k
}

func (st *rvState) agree() {
	st.t.Helper()
	s, ref := st.s, st.ref
	if s.Len() != ref.Len() || s.Len() != len(st.in) {
		st.fail("Len %d ref %d tracked %d", s.Len(), ref.Len(), len(st.in))
	}
	if g, gok := s.Min(); true {
		w, wok := ref.Min()
		if !same(g, gok, w, wok) {
			st.fail("Min %v", g)
		}
	}
	if g, gok := s.Max(); true {
		w, wok := ref.Max()
		if !same(g, gok, w, wok) {
			st.fail("Max %v", g)
		}
	}
	for range 6 {
		k := st.probe()
		if s.Contains(k) != ref.Contains(k) {
			st.fail("Contains(%v) %v", k, s.Contains(k))
		}
		g, gok := s.LowerBound(k)
		w, wok := ref.LowerBound(k)
		if !same(g, gok, w, wok) {
			st.fail("LowerBound(%v) = %v %v, want %v %v", k, g, gok, w, wok)
		}
		g, gok = s.After(k)
		w, wok = ref.After(k)
		if !same(g, gok, w, wok) {
			st.fail("After(%v) = %v %v, want %v %v", k, g, gok, w, wok)
		}
		g, gok = s.Before(k)
		w, wok = ref.Before(k)
		if !same(g, gok, w, wok) {
			st.fail("Before(%v) = %v %v, want %v %v", k, g, gok, w, wok)
		}
	}
	if st.step%16 == 0 {
		if g, w := s.Items(), ref.Items(); !slices.Equal(g, w) {
			st.fail("Items\n got %v\nwant %v", g, w)
		}
		// full walks, both ways
		k, ok := s.Min()
		n := 0
		for ok {
			n++
			nk, nok := s.After(k)
			wk, wok := ref.After(k)
			if !same(nk, nok, wk, wok) {
				st.fail("walk After(%v) = %v %v, want %v %v", k, nk, nok, wk, wok)
			}
			k, ok = nk, nok
		}
		if n != len(st.in) {
			st.fail("walk saw %d of %d", n, len(st.in))
		}
		k, ok = s.Max()
		for ok {
			nk, nok := s.Before(k)
			wk, wok := ref.Before(k)
			if !same(nk, nok, wk, wok) {
				st.fail("walk Before(%v) = %v %v, want %v %v", k, nk, nok, wk, wok)
			}
			k, ok = nk, nok
		}
	}
}

// op performs one allocator-shaped operation.
func (st *rvState) op() {
	r := st.r
	c := st.c
	switch x := r.IntN(20); {
	case len(st.in) == 0 || x < 6 && len(st.in) < c.target:
		if k, ok := st.fresh(); ok {
			st.insert(k)
		}
	case x < 9:
		// best fit then split (Replace by remainder) or take (Remove),
		// with the After chain of expandable segments.
		stream := c.streams[r.IntN(len(c.streams))]
		size := c.sizes(r)
		if r.IntN(4) == 0 {
			size = rvBoundary[r.IntN(len(rvBoundary))]
		}
		q := freeset.Key{Stream: stream, Size: size}
		k, ok := st.s.LowerBound(q)
		w, wok := st.ref.LowerBound(q)
		if !same(k, ok, w, wok) {
			st.fail("bestfit LowerBound(%v) = %v %v, want %v %v", q, k, ok, w, wok)
		}
		if !ok || k.Stream != stream {
			return
		}
		for steps := r.IntN(4); steps > 0; steps-- {
			nk, nok := st.s.After(k)
			wk, wok := st.ref.After(k)
			if !same(nk, nok, wk, wok) {
				st.fail("chain After(%v) = %v %v, want %v %v", k, nk, nok, wk, wok)
			}
			if !nok || nk.Stream != stream {
				break
			}
			k = nk
		}
		j := st.idx(k)
		if k.Size > size && r.IntN(3) != 0 {
			st.b++
			rem := freeset.Key{Stream: k.Stream, Size: k.Size - size, Addr: k.Addr + size, B: st.b}
			if size <= 0 || st.used[rem.Addr] {
				st.removeAt(j)
				return
			}
			st.replaceAt(j, rem)
		} else {
			st.removeAt(j)
		}
	case x < 12:
		// free with merge: a free key absorbs a neighbour (gone) and
		// the merged block replaces it; or two neighbours.
		if len(st.in) < 2 || r.IntN(3) == 0 {
			if k, ok := st.fresh(); ok {
				st.insert(k)
			}
			return
		}
		j := r.IntN(len(st.in))
		old := st.in[j]
		st.b++
		nk := freeset.Key{Stream: old.Stream, Size: old.Size + c.sizes(r), Addr: old.Addr, B: st.b}
		if r.IntN(2) == 0 {
			nk.Addr = old.Addr - Gran*int64(1+r.IntN(3))
			if st.used[nk.Addr] {
				nk.Addr = old.Addr
			}
		}
		if r.IntN(3) == 0 {
			// both neighbours: Remove one, Replace the other.
			j2 := r.IntN(len(st.in))
			if j2 != j {
				st.removeAt(j2)
				j = st.idx(old)
			}
		}
		delete(st.used, old.Addr)
		if st.used[nk.Addr] {
			st.used[old.Addr] = true
			return
		}
		st.used[old.Addr] = true
		st.replaceAt(j, nk)
	case x < 15:
		st.removeAt(r.IntN(len(st.in)))
	case x < 17:
		// Replace into a class of arbitrary occupancy (same stream or not)
		j := r.IntN(len(st.in))
		nk, ok := st.fresh()
		if !ok {
			return
		}
		if r.IntN(2) == 0 {
			nk.Stream = st.in[j].Stream
		}
		if r.IntN(3) == 0 {
			// a size of an existing key: a class of many
			nk.Size = st.in[r.IntN(len(st.in))].Size
		}
		st.replaceAt(j, nk)
	case x < 18:
		// releaseAvailableCachedBlocks: Before chain from a LowerBound or Max
		stream := c.streams[r.IntN(len(c.streams))]
		q := freeset.Key{Stream: stream, Size: c.sizes(r)}
		k, ok := st.s.LowerBound(q)
		var cur freeset.Key
		if ok {
			cur, ok = st.s.Before(k)
			w, wok := st.ref.Before(k)
			if !same(cur, ok, w, wok) {
				st.fail("Before(%v)", k)
			}
		} else {
			cur, ok = st.s.Max()
		}
		for n := 0; ok && cur.Stream == stream && n < 3; n++ {
			prev, more := st.s.Before(cur)
			w, wok := st.ref.Before(cur)
			if !same(prev, more, w, wok) {
				st.fail("chain Before(%v) = %v %v, want %v %v", cur, prev, more, w, wok)
			}
			if r.IntN(2) == 0 {
				st.removeAt(st.idx(cur))
			}
			cur, ok = prev, more
		}
	case x < 19:
		// a whole-pool pass over Items that mutates as it goes
		for _, k := range st.s.Items() {
			if r.IntN(3) == 0 {
				st.removeAt(st.idx(k))
			}
		}
	default:
		switch r.IntN(40) {
		case 0:
			st.s.Reset()
			st.ref = freeset.New(false)
			st.in = st.in[:0]
			clear(st.used)
		case 1:
			// continue on the clone; check the original is unchanged
			// after more work on the clone.
			cl, clr := st.s.Clone(), st.ref.Clone()
			orig := st.s.Items()
			saved := st.s
			st.s, st.ref = cl, clr
			for range 50 {
				st.op()
			}
			if got := saved.Items(); !slices.Equal(got, orig) {
				st.fail("clone shares with original")
			}
		}
	}
}

func TestAsTorchCallsIt(t *testing.T) {
	cfgs := rvConfigs()
	total := 0
	for seed := uint64(1); seed <= uint64(3*len(cfgs)); seed++ {
		c := cfgs[seed%uint64(len(cfgs))]
		r := rand.New(rand.NewPCG(seed, 0xbeef))
		st := &rvState{t: t, r: r, c: c, s: New(), ref: freeset.New(false), used: map[int64]bool{}}
		// Occasionally the first key inserted is of a non-default stream
		// or off granule: it fixes the class stream.
		steps := 2000 + r.IntN(8000)
		for st.step = 0; st.step < steps; st.step++ {
			st.op()
			st.agree()
		}
		total += steps
		// drain, checking all along
		for len(st.in) > 0 {
			st.removeAt(r.IntN(len(st.in)))
			st.agree()
		}
		// Reuse after Reset with a different class stream
		st.s.Reset()
		st.ref = freeset.New(false)
		clear(st.used)
		for range 300 {
			st.op()
			st.agree()
			st.step++
		}
	}
	if total == 0 {
		t.Fatal("no steps")
	}
}
