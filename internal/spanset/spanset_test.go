package spanset

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAgainstModel checks the set against a sorted slice through a long
// random sequence of inserts and removes of disjoint spans: every query
// (Get, Floor, HighestFit, Largest, Ascend) answers as a linear scan of
// the slice does, and the tree stays balanced with correct maxima.
func TestAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := New()
	var model []Span // sorted by Start
	// Spans live on a grid of 64 slots of 1 KiB, so that they are disjoint
	// by construction: slot i may hold a span [i KiB, i KiB + size).
	used := map[int64]bool{}
	for step := 0; step < 40000; step++ {
		if len(model) > 0 && rng.IntN(100) < 10 {
			i := rng.IntN(len(model))
			model[i].Size = 1 + rng.Int64N(1024)
			s.SetSize(model[i].Start, model[i].Size)
		} else if len(model) > 0 && rng.IntN(100) < 48 {
			sp := model[rng.IntN(len(model))]
			s.Remove(sp.Start)
			i, _ := slices.BinarySearchFunc(model, sp.Start, func(x Span, k int64) int { return cmp64(x.Start, k) })
			model = slices.Delete(model, i, i+1)
			delete(used, sp.Start>>10)
		} else {
			slot := rng.Int64N(64)
			if used[slot] {
				continue
			}
			sp := Span{Start: slot << 10, Size: 1 + rng.Int64N(1024)}
			s.Insert(sp)
			used[slot] = true
			i, _ := slices.BinarySearchFunc(model, sp.Start, func(x Span, k int64) int { return cmp64(x.Start, k) })
			model = slices.Insert(model, i, sp)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		probe := rng.Int64N(64 << 10)
		size := 1 + rng.Int64N(1100)
		var wantFloor, wantFit Span
		okFloor, okFit := false, false
		var largest int64
		for _, sp := range model {
			if sp.Start <= probe {
				wantFloor, okFloor = sp, true
			}
			if sp.Size >= size {
				wantFit, okFit = sp, true
			}
			largest = max(largest, sp.Size)
		}
		if got, ok := s.Floor(probe); ok != okFloor || got != wantFloor {
			t.Fatalf("step %d: Floor(%d) = %v %v, want %v %v", step, probe, got, ok, wantFloor, okFloor)
		}
		if got, ok := s.HighestFit(size); ok != okFit || got != wantFit {
			t.Fatalf("step %d: HighestFit(%d) = %v %v, want %v %v", step, size, got, ok, wantFit, okFit)
		}
		if s.Largest() != largest || s.Len() != len(model) {
			t.Fatalf("step %d: Largest %d Len %d, want %d %d", step, s.Largest(), s.Len(), largest, len(model))
		}
		if len(model) > 0 {
			sp := model[rng.IntN(len(model))]
			if got, ok := s.Get(sp.Start); !ok || got != sp {
				t.Fatalf("step %d: Get(%d) = %v %v", step, sp.Start, got, ok)
			}
			if _, ok := s.Get(sp.Start + 1); ok {
				t.Fatalf("step %d: Get finds a start that is not in the set", step)
			}
		}
	}
	var got []Span
	s.Ascend(func(sp Span) bool { got = append(got, sp); return true })
	if !slices.Equal(got, model) {
		t.Fatalf("Ascend gives %v, want %v", got, model)
	}
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEmptyAndPanics: an empty set finds nothing, and a caller's bug (a
// duplicate start, an empty span, removing what is absent) panics rather
// than corrupting the tree.
func TestEmptyAndPanics(t *testing.T) {
	s := New()
	if _, ok := s.HighestFit(1); ok {
		t.Error("HighestFit on an empty set found a span")
	}
	if _, ok := s.Floor(1 << 40); ok {
		t.Error("Floor on an empty set found a span")
	}
	if s.Largest() != 0 {
		t.Error("Largest of an empty set is not 0")
	}
	s.Insert(Span{0, 10})
	for name, f := range map[string]func(){
		"duplicate": func() { s.Insert(Span{0, 5}) },
		"empty":     func() { s.Insert(Span{100, 0}) },
		"absent":    func() { s.Remove(7) },
		"resize":    func() { s.SetSize(7, 1) },
		"resize0":   func() { s.SetSize(0, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestSteadyStateAllocatesNothing: once the set has grown, a remove and an
// insert reuse the recycled node (the replay loop's rule: no per-event
// heap allocation).
func TestSteadyStateAllocatesNothing(t *testing.T) {
	s := New()
	for i := int64(0); i < 1000; i++ {
		s.Insert(Span{i << 12, 1 + i})
	}
	i := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		sp, _ := s.HighestFit(500)
		s.Remove(sp.Start)
		s.Insert(sp)
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per remove+insert", allocs)
	}
}

// BenchmarkHighestFit is the placement query over 100,000 spans.
func BenchmarkHighestFit(b *testing.B) {
	s := New()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := int64(0); i < 100000; i++ {
		s.Insert(Span{i << 20, 1 + rng.Int64N(1<<20)})
	}
	for b.Loop() {
		sp, ok := s.HighestFit(1 + rng.Int64N(1<<20))
		if ok {
			s.Remove(sp.Start)
			s.Insert(sp)
		}
	}
}
