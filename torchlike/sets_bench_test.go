package torchlike

import (
	"math/rand/v2"
	"testing"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"
)

func lessSize(x, y fkey) bool { return (&set{}).less(x, y) }

// BenchmarkOrderedSet compares ordered sets on the free-block workload of
// a replay: a lower-bound search, a delete and an insert per step over a
// few thousand blocks. Two well-kept libraries against set (sets.go), whose
// inlined comparison decided the choice.
func BenchmarkOrderedSet(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]fkey, n)
	for i := range keys {
		keys[i] = fkey{stream: 0, size: 512 * (1 + rng.Int64N(1<<16)), addr: int64(i) << 21, b: int32(i)}
	}
	probes := make([]fkey, 1<<16)
	for i := range probes {
		probes[i] = fkey{size: 512 * (1 + rng.Int64N(1<<16))}
	}
	b.Run("lib=chunked", func(b *testing.B) {
		s := newSet(false)
		for _, k := range keys {
			s.insert(k)
		}
		i := 0
		for b.Loop() {
			k, ok := s.lowerBound(probes[i&(len(probes)-1)])
			if !ok {
				k, _ = s.min()
			}
			s.remove(k)
			k.addr += 1 << 40
			s.insert(k)
			i++
		}
	})
	b.Run("lib=tidwall", func(b *testing.B) {
		t := tbtree.NewBTreeGOptions(lessSize, tbtree.Options{NoLocks: true})
		for _, k := range keys {
			t.Set(k)
		}
		var found fkey
		var ok bool
		visit := func(k fkey) bool { found, ok = k, true; return false }
		i := 0
		for b.Loop() {
			ok = false
			t.Ascend(probes[i&(len(probes)-1)], visit)
			if !ok {
				found, _ = t.Min()
			}
			t.Delete(found)
			found.addr += 1 << 40
			t.Set(found)
			i++
		}
	})
	b.Run("lib=google", func(b *testing.B) {
		t := gbtree.NewG(32, lessSize)
		for _, k := range keys {
			t.ReplaceOrInsert(k)
		}
		var found fkey
		var ok bool
		visit := func(k fkey) bool { found, ok = k, true; return false }
		i := 0
		for b.Loop() {
			ok = false
			t.AscendGreaterOrEqual(probes[i&(len(probes)-1)], visit)
			if !ok {
				found, _ = t.Min()
			}
			t.Delete(found)
			found.addr += 1 << 40
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
		s := newSet(byAddr)
		var model []fkey
		lessK := s.less
		pos := func(k fkey) int {
			i := 0
			for i < len(model) && lessK(model[i], k) {
				i++
			}
			return i
		}
		for step := 0; step < 20000; step++ {
			if len(model) > 0 && rng.IntN(100) < 45 {
				k := model[rng.IntN(len(model))]
				s.remove(k)
				p := pos(k)
				model = append(model[:p], model[p+1:]...)
			} else {
				k := fkey{stream: int64(rng.IntN(3)), size: 512 * (1 + rng.Int64N(64)), addr: int64(step) << 12, b: int32(step)}
				s.insert(k)
				p := pos(k)
				model = append(model, fkey{})
				copy(model[p+1:], model[p:])
				model[p] = k
			}
			probe := fkey{stream: int64(rng.IntN(3)), size: 512 * (1 + rng.Int64N(64)), addr: rng.Int64N(int64(step+1) << 12)}
			p := pos(probe)
			got, ok := s.lowerBound(probe)
			if ok != (p < len(model)) || (ok && got != model[p]) {
				t.Fatalf("step %d: lowerBound(%v) = %v %v, model %d of %d", step, probe, got, ok, p, len(model))
			}
			got, ok = s.before(probe)
			if ok != (p > 0) || (ok && got != model[p-1]) {
				t.Fatalf("step %d: before wrong", step)
			}
			if len(model) > 0 {
				k := model[rng.IntN(len(model))]
				q := pos(k)
				got, ok = s.after(k)
				if ok != (q+1 < len(model)) || (ok && got != model[q+1]) {
					t.Fatalf("step %d: after wrong", step)
				}
				if !s.contains(k) {
					t.Fatalf("step %d: contains lost %v", step, k)
				}
			}
			if s.len() != len(model) {
				t.Fatalf("len %d want %d", s.len(), len(model))
			}
		}
		items := s.items()
		for i := range items {
			if items[i] != model[i] {
				t.Fatal("items differ from the model")
			}
		}
	}
}
