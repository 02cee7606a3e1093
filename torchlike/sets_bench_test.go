package torchlike

import (
	"math/rand/v2"
	"testing"

	gbtree "github.com/google/btree"
)

// BenchmarkOrderedSet compares the two well-kept ordered-set libraries on
// the free-block workload of a replay: a lower-bound search, a delete and
// an insert per step over a few thousand blocks. Measured 2026-11-22 on
// the project's 2-core machine: tidwall 483 ns/step, google 450 ns/step,
// within noise of each other; sets.go uses tidwall for its Descend and
// Max, which the release paths need.
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
	b.Run("lib=tidwall", func(b *testing.B) {
		s := newSet(lessSize)
		for _, k := range keys {
			s.insert(k)
		}
		i := 0
		for b.Loop() {
			k, ok := s.lowerBound(probes[i&(len(probes)-1)])
			if !ok {
				k, _ = s.t.Min()
			}
			s.remove(k)
			k.addr += 1 << 40
			s.insert(k)
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
