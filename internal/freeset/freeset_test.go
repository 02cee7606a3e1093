package freeset

import (
	"math/rand/v2"
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
			if len(model) > 0 && rng.IntN(100) < 45 {
				k := model[rng.IntN(len(model))]
				s.Remove(k)
				p := pos(k)
				model = append(model[:p], model[p+1:]...)
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
