package spanset

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeptPathsAgainstModel: the TPU model asks for a free's leaf several
// frees ahead (Prefetch), so that up to aheadPaths paths wait while the
// set changes under them: inserts and removals elsewhere (which may
// split or remove nodes), other Joins, carves, and now and then a Reset.
// Every Join, whether or not its path was kept and whether or not that
// path is still right, must give what a sorted slice gives, and the
// tree must stay valid. Joins are asked for 1 to 12 operations ahead,
// more than the ring holds, so that paths are also dropped unused.
func TestKeptPathsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	s := New()
	var model []Span
	const top = 1 << 36
	at := func(x int64) int { // first span starting above x
		i, _ := slices.BinarySearchFunc(model, x+1, func(sp Span, k int64) int { return cmp64(sp.Start, k) })
		return i
	}
	// free reports whether [a, b) overlaps no span.
	free := func(a, b int64) bool {
		i := at(a)
		return (i == 0 || model[i-1].End() <= a) && (i == len(model) || model[i].Start >= b)
	}
	// gapRange is a random range inside a free gap, often touching a
	// side of it.
	gapRange := func() (a, b int64, ok bool) {
		i := rng.IntN(len(model) + 1)
		lo, hi := int64(0), int64(top)
		if i > 0 {
			lo = model[i-1].End()
		}
		if i < len(model) {
			hi = model[i].Start
		}
		if hi-lo < 2 {
			return 0, 0, false
		}
		a, b = lo, hi
		if rng.IntN(3) > 0 {
			a = lo + rng.Int64N(hi-lo-1)
		}
		if rng.IntN(3) > 0 {
			b = a + 1 + rng.Int64N(b-a)
		}
		return a, min(b, a+1<<24), true
	}
	type pending struct{ a, b int64 }
	var queue []pending
	lead, target := 4, 20000
	for step := range 400000 {
		if len(model) >= target {
			target = 1000
		} else if len(model) <= target && target == 1000 {
			target = 20000
		}
		if len(queue) > 0 && (len(queue) >= lead || rng.IntN(4) == 0) {
			p := queue[0]
			queue = queue[1:]
			if free(p.a, p.b) {
				got := s.Join(p.a, p.b-p.a)
				i := at(p.a)
				want, del := Span{p.a, p.b - p.a}, 0
				if i < len(model) && model[i].Start == p.b {
					want.Size += model[i].Size
					del++
				}
				if i > 0 && model[i-1].End() == p.a {
					want = Span{model[i-1].Start, want.End() - model[i-1].Start}
					i--
					del++
				}
				model = slices.Replace(model, i, i+del, want)
				if got != want {
					t.Fatalf("step %d: Join(%d, %d) = %v, want %v", step, p.a, p.b-p.a, got, want)
				}
			}
			continue
		}
		if rng.IntN(64) == 0 {
			lead = 1 + rng.IntN(12)
		}
		grow := len(model) < target
		switch r := rng.IntN(100); {
		case r < 40:
			if a, b, ok := gapRange(); ok {
				s.Prefetch(a)
				queue = append(queue, pending{a, b})
			}
		case r < 80 && grow || r < 45:
			// An insert that touches no span (Insert does not merge).
			if a, b, ok := gapRange(); ok && b-a >= 3 {
				sp := Span{a + 1, max(1, (b-a)/2-1)}
				s.Insert(sp)
				model = slices.Insert(model, at(sp.Start-1), sp)
			}
		case r < 88 && len(model) > 0:
			k := rng.IntN(len(model))
			s.Remove(model[k].Start)
			model = slices.Delete(model, k, k+1)
		case r < 99 && len(model) > 0:
			size := model[rng.IntN(len(model))].Size
			got, ok := s.Carve(size)
			if !ok {
				t.Fatalf("step %d: Carve(%d) found nothing", step, size)
			}
			k := slices.Index(model, got)
			if k < 0 {
				t.Fatalf("step %d: Carve(%d) gave %v, not in the set", step, size, got)
			}
			if got.Size == size {
				model = slices.Delete(model, k, k+1)
			} else {
				model[k].Size -= size
			}
		}
		if step%50000 == 49999 {
			// A Reset with paths kept: none may be taken after it.
			s.Reset()
			model = model[:0]
		}
		if step%5000 == 0 {
			if err := s.Check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if s.Len() != len(model) {
				t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(model))
			}
			var i int
			s.Ascend(func(sp Span) bool {
				if i >= len(model) || sp != model[i] {
					t.Fatalf("step %d: span %d is %v, want %v", step, i, sp, model[min(i, len(model)-1)])
				}
				i++
				return true
			})
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
