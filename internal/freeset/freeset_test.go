package freeset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"
)

func lessSize(x, y Key) bool { return (&Set{}).Less(x, y) }

// BenchmarkOrderedSet compares ordered sets on the free-block workload of
// a replay: a lower-bound search, a delete and an insert per step over a
// few thousand blocks. Two well-kept libraries against Set, whose
// inlined comparison decided the choice.
func BenchmarkOrderedSet(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{Stream: 0, Size: 512 * (1 + rng.Int64N(1<<16)), Addr: int64(i) << 21, B: int32(i)}
	}
	probes := make([]Key, 1<<16)
	for i := range probes {
		probes[i] = Key{Size: 512 * (1 + rng.Int64N(1<<16))}
	}
	b.Run("lib=chunked", func(b *testing.B) {
		s := New(false)
		for _, k := range keys {
			s.Insert(k)
		}
		i := 0
		for b.Loop() {
			k, ok := s.LowerBound(probes[i&(len(probes)-1)])
			if !ok {
				k, _ = s.Min()
			}
			s.Remove(k)
			k.Addr += 1 << 40
			s.Insert(k)
			i++
		}
	})
	b.Run("lib=tidwall", func(b *testing.B) {
		t := tbtree.NewBTreeGOptions(lessSize, tbtree.Options{NoLocks: true})
		for _, k := range keys {
			t.Set(k)
		}
		var found Key
		var ok bool
		visit := func(k Key) bool { found, ok = k, true; return false }
		i := 0
		for b.Loop() {
			ok = false
			t.Ascend(probes[i&(len(probes)-1)], visit)
			if !ok {
				found, _ = t.Min()
			}
			t.Delete(found)
			found.Addr += 1 << 40
			t.Set(found)
			i++
		}
	})
	b.Run("lib=google", func(b *testing.B) {
		t := gbtree.NewG(32, lessSize)
		for _, k := range keys {
			t.ReplaceOrInsert(k)
		}
		var found Key
		var ok bool
		visit := func(k Key) bool { found, ok = k, true; return false }
		i := 0
		for b.Loop() {
			ok = false
			t.AscendGreaterOrEqual(probes[i&(len(probes)-1)], visit)
			if !ok {
				found, _ = t.Min()
			}
			t.Delete(found)
			found.Addr += 1 << 40
			t.ReplaceOrInsert(found)
			i++
		}
	})
}

// TestSetAgainstModel checks set against a sorted-slice model through a
// long random sequence of inserts and removes, including chunk splits and
// emptied chunks.
func TestSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, byAddr := range []bool{false, true} {
		s := New(byAddr)
		var model []Key
		lessK := s.Less
		pos := func(k Key) int {
			i := 0
			for i < len(model) && lessK(model[i], k) {
				i++
			}
			return i
		}
		for step := 0; step < 20000; step++ {
			if r := rng.IntN(100); len(model) > 0 && r < 45 {
				k := model[rng.IntN(len(model))]
				s.Remove(k)
				p := pos(k)
				model = append(model[:p], model[p+1:]...)
			} else if len(model) > 0 && r < 60 {
				// Replace, sometimes at the old address (a block
				// resized in place), sometimes right after a search
				// found the old key (the finger's case).
				k := model[rng.IntN(len(model))]
				if rng.IntN(2) == 0 {
					k, _ = s.LowerBound(k)
				}
				nk := Key{Stream: k.Stream, Size: 512 * (1 + rng.Int64N(64)), Addr: k.Addr, B: int32(step)}
				if rng.IntN(2) == 0 {
					nk.Stream, nk.Addr = int64(rng.IntN(3)), int64(step)<<12|1
				}
				s.Replace(k, nk)
				p := pos(k)
				model = append(model[:p], model[p+1:]...)
				p = pos(nk)
				model = slices.Insert(model, p, nk)
			} else {
				k := Key{Stream: int64(rng.IntN(3)), Size: 512 * (1 + rng.Int64N(64)), Addr: int64(step) << 12, B: int32(step)}
				s.Insert(k)
				p := pos(k)
				model = append(model, Key{})
				copy(model[p+1:], model[p:])
				model[p] = k
			}
			probe := Key{Stream: int64(rng.IntN(3)), Size: 512 * (1 + rng.Int64N(64)), Addr: rng.Int64N(int64(step+1) << 12)}
			p := pos(probe)
			got, ok := s.LowerBound(probe)
			if ok != (p < len(model)) || (ok && got != model[p]) {
				t.Fatalf("step %d: lowerBound(%v) = %v %v, model %d of %d", step, probe, got, ok, p, len(model))
			}
			// Walk on from the key found, as expandable segments'
			// best fit does (After from the finger, and from the key
			// after it).
			for q := p; ok && q+1 < len(model)+1 && rng.IntN(4) > 0; q++ {
				next, more := s.After(got)
				if more != (q+1 < len(model)) || (more && next != model[q+1]) {
					t.Fatalf("step %d: After(%v) = %v %v, want index %d of %d", step, got, next, more, q+1, len(model))
				}
				got, ok = next, more
			}
			got, ok = s.Before(probe)
			if ok != (p > 0) || (ok && got != model[p-1]) {
				t.Fatalf("step %d: before wrong", step)
			}
			if len(model) > 0 {
				k := model[rng.IntN(len(model))]
				q := pos(k)
				got, ok = s.After(k)
				if ok != (q+1 < len(model)) || (ok && got != model[q+1]) {
					t.Fatalf("step %d: after wrong", step)
				}
				if !s.Contains(k) {
					t.Fatalf("step %d: contains lost %v", step, k)
				}
			}
			if s.Len() != len(model) {
				t.Fatalf("len %d want %d", s.Len(), len(model))
			}
		}
		items := s.Items()
		for i := range items {
			if items[i] != model[i] {
				t.Fatal("items differ from the model")
			}
		}
	}
}

// check verifies the tree's structure: sorted leaves linked in order,
// every inner maximum the largest key under its child, no empty node but
// an empty root leaf, and the count.
func (s *Set) check() error {
	var keys []Key
	var walk func(node int32, h int) (Key, error)
	walk = func(node int32, h int) (Key, error) {
		if h == s.height {
			lp := &s.leaves[node]
			if lp.n == 0 && s.height > 0 {
				return Key{}, fmt.Errorf("empty leaf %d", node)
			}
			keys = append(keys, lp.keys[:lp.n]...)
			if lp.n == 0 {
				return Key{}, nil
			}
			return lp.keys[lp.n-1], nil
		}
		in := &s.inners[node]
		if in.n == 0 || (node == s.root && in.n < 2) {
			return Key{}, fmt.Errorf("inner %d has %d children", node, in.n)
		}
		for i := range in.n {
			m, err := walk(in.child[i], h+1)
			if err != nil {
				return m, err
			}
			if m != in.max[i] {
				return m, fmt.Errorf("inner %d child %d: max %v, largest key %v", node, i, in.max[i], m)
			}
		}
		return in.max[in.n-1], nil
	}
	if _, err := walk(s.root, 0); err != nil {
		return err
	}
	for i := 1; i < len(keys); i++ {
		if !s.Less(keys[i-1], keys[i]) {
			return fmt.Errorf("keys out of order at %d", i)
		}
	}
	if len(keys) != s.n {
		return fmt.Errorf("%d keys, n %d", len(keys), s.n)
	}
	if lo, ok := s.Min(); ok != (len(keys) > 0) || (ok && lo != keys[0]) {
		return fmt.Errorf("Min %v %v", lo, ok)
	}
	if hi, ok := s.Max(); ok != (len(keys) > 0) || (ok && hi != keys[len(keys)-1]) {
		return fmt.Errorf("Max %v %v", hi, ok)
	}
	items := s.Items()
	if len(items) != len(keys) {
		return fmt.Errorf("leaf links reach %d keys of %d", len(items), len(keys))
	}
	for i := range items {
		if items[i] != keys[i] {
			return fmt.Errorf("leaf links out of order at %d", i)
		}
	}
	return nil
}

// TestTreeGrowsAndDrains fills a set to a height of several levels and
// empties it again in random order, mixing in the finger's sequence
// (LowerBound, Remove, Insert of a smaller key), and checks the structure
// and the order against a sorted model throughout.
func TestTreeGrowsAndDrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := New(false)
	var model []Key
	find := func(k Key) int {
		return sort.Search(len(model), func(i int) bool { return !s.Less(model[i], k) })
	}
	ins := func(k Key) {
		s.Insert(k)
		p := find(k)
		model = slices.Insert(model, p, k)
	}
	del := func(k Key) {
		s.Remove(k)
		p := find(k)
		model = slices.Delete(model, p, p+1)
	}
	addr := int64(0)
	step := 0
	verify := func() {
		if err := s.check(); err != nil {
			t.Fatalf("step %d (%d keys, height %d): %v", step, len(model), s.height, err)
		}
		for i := range model {
			if i%97 == 0 && !s.Contains(model[i]) {
				t.Fatalf("step %d: lost %v", step, model[i])
			}
		}
	}
	for phase, target := range []int{40000, 0, 5000, 0} {
		for len(model) != target {
			step++
			grow := len(model) < target
			switch r := rng.IntN(10); {
			case r < 3 && len(model) > 0:
				// Best fit and split: the finger's sequence.
				probe := Key{Stream: int64(rng.IntN(2)), Size: 512 * (1 + rng.Int64N(4096))}
				k, ok := s.LowerBound(probe)
				p := find(probe)
				if ok != (p < len(model)) || (ok && k != model[p]) {
					t.Fatalf("step %d: LowerBound(%v) = %v %v", step, probe, k, ok)
				}
				if !ok {
					continue
				}
				if k.Size > probe.Size && (grow || rng.IntN(2) == 0) {
					addr++
					rem := Key{Stream: k.Stream, Size: k.Size - probe.Size, Addr: k.Addr + 1, B: int32(addr)}
					if rng.IntN(2) == 0 {
						del(k)
						ins(rem)
					} else {
						s.Replace(k, rem)
						model = slices.Delete(model, p, p+1)
						model = slices.Insert(model, find(rem), rem)
					}
				} else {
					del(k)
				}
			case r < 4 && len(model) > 0:
				// Merge: a key grows (a freed neighbour's bytes join
				// it), found by a search or not.
				k := model[rng.IntN(len(model))]
				nk := k
				nk.Size += 512 * (1 + rng.Int64N(1024))
				s.Replace(k, nk)
				p := find(k)
				model = slices.Delete(model, p, p+1)
				model = slices.Insert(model, find(nk), nk)
			case grow:
				addr += 4
				ins(Key{Stream: int64(rng.IntN(2)), Size: 512 * (1 + rng.Int64N(4096)), Addr: addr << 8, B: int32(addr)})
			default:
				del(model[rng.IntN(len(model))])
			}
			if step%5000 == 0 {
				verify()
			}
		}
		verify()
		if phase == 0 && s.height < 3 {
			t.Fatalf("height %d at %d keys: the test should reach three levels", s.height, len(model))
		}
	}
	if s.height != 0 {
		t.Errorf("empty set of height %d", s.height)
	}
}
