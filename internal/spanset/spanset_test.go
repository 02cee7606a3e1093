package spanset

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"membench/internal/hugemem"
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
		if len(model) > 0 && rng.IntN(100) < 8 {
			// Carve: the highest span that holds size shrinks by it,
			// or goes when it held exactly size.
			size := 1 + rng.Int64N(1100)
			if rng.IntN(4) == 0 {
				size = model[rng.IntN(len(model))].Size
			}
			i := len(model) - 1
			for i >= 0 && model[i].Size < size {
				i--
			}
			got, ok := s.Carve(size)
			if ok != (i >= 0) || ok && got != model[i] {
				t.Fatalf("step %d: Carve(%d) = %v %v, want %v", step, size, got, ok, i >= 0)
			}
			if ok && got.Size == size {
				model = slices.Delete(model, i, i+1)
				delete(used, got.Start>>10)
			} else if ok {
				model[i].Size -= size
			}
		} else if len(model) > 0 && rng.IntN(100) < 10 {
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

// TestDeepAgainstModel grows the set to tens of thousands of spans (three
// inner levels) and drains it again, through every operation the TPU
// model uses — Insert, Remove, SetSize, Join (half of them after a
// Prefetch of their address, some with a change of the tree's shape in
// between), and HighestFit followed by the finger's Remove or SetSize —
// and checks the tree and every query against a sorted slice.
func TestDeepAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	s := New()
	var model []Span
	at := func(x int64) int { // first span starting above x
		i, _ := slices.BinarySearchFunc(model, x+1, func(sp Span, k int64) int { return cmp64(sp.Start, k) })
		return i
	}
	// gap returns a random free range: after span i-1 and before span i.
	const top = 1 << 40
	gap := func() (lo, hi int64, i int) {
		i = rng.IntN(len(model) + 1)
		lo, hi = 0, int64(top)
		if i > 0 {
			lo = model[i-1].End()
		}
		if i < len(model) {
			hi = model[i].Start
		}
		return lo, hi, i
	}
	step := 0
	verify := func() {
		if err := s.Check(); err != nil {
			t.Fatalf("step %d (%d spans, height %d): %v", step, len(model), s.height, err)
		}
		if s.Len() != len(model) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(model))
		}
	}
	maxHeightSeen := 0
	for _, target := range []int{40000, 100, 20000, 0} {
		for len(model) != target {
			step++
			grow := len(model) < target
			switch r := rng.IntN(100); {
			case r < 30 && grow || r < 10:
				// Insert, maybe touching a neighbour (no merge).
				lo, hi, i := gap()
				if hi-lo < 2 {
					continue
				}
				a := lo + rng.Int64N((hi-lo)/2+1)
				b := a + 1 + rng.Int64N(min(hi-a, 1<<20))
				sp := Span{a, b - a}
				s.Insert(sp)
				model = slices.Insert(model, i, sp)
			case r < 55 && grow || r < 30:
				// Join a range inside a gap, often touching a side.
				lo, hi, i := gap()
				if hi-lo < 1 {
					continue
				}
				a, b := lo, hi
				if rng.IntN(3) > 0 && hi-lo > 1 {
					a = lo + rng.Int64N(hi-lo)
				}
				if rng.IntN(3) > 0 && b-a > 1 {
					b = a + 1 + rng.Int64N(b-a)
				}
				if b-a > 1<<30 {
					b = a + 1<<30
				}
				// The TPU model asks for the Join's leaf ahead
				// (Prefetch): sometimes an insert or a removal
				// elsewhere changes the tree's shape in between,
				// and the kept path must then not be taken.
				if rng.IntN(2) == 0 {
					s.Prefetch(a)
					if rng.IntN(2) == 0 && len(model) > 2 {
						if k := rng.IntN(len(model)); k != i && k != i-1 {
							s.Remove(model[k].Start)
							model = slices.Delete(model, k, k+1)
						} else if lo2, hi2, k := gap(); k != i && hi2-lo2 >= 2 {
							sp := Span{lo2 + (hi2-lo2)/2, 1}
							s.Insert(sp)
							model = slices.Insert(model, k, sp)
						}
						i = at(a)
					}
				}
				if rng.IntN(8) == 0 {
					s.Prefetch(rng.Int64N(top)) // one no Join takes
				}
				got := s.Join(a, b-a)
				want := Span{a, b - a}
				del := 0
				if i < len(model) && model[i].Start == b {
					want.Size += model[i].Size
					del++
				}
				if i > 0 && model[i-1].End() == a {
					want = Span{model[i-1].Start, want.End() - model[i-1].Start}
					i--
					del++
				}
				model = slices.Replace(model, i, i+del, want)
				if got != want {
					t.Fatalf("step %d: Join(%d, %d) = %v, want %v", step, a, b-a, got, want)
				}
			case r < 70 && len(model) > 0:
				// Place: the highest fit, then carve or take it.
				size := 1 + rng.Int64N(1<<20)
				if rng.IntN(4) == 0 {
					size = model[rng.IntN(len(model))].Size
				}
				got, ok := s.HighestFit(size)
				j := len(model) - 1
				for j >= 0 && model[j].Size < size {
					j--
				}
				if ok != (j >= 0) || ok && got != model[j] {
					t.Fatalf("step %d: HighestFit(%d) = %v %v, want %d", step, size, got, ok, j)
				}
				if !ok {
					continue
				}
				if got.Size == size || !grow && rng.IntN(2) == 0 {
					s.Remove(got.Start)
					model = slices.Delete(model, j, j+1)
				} else {
					s.SetSize(got.Start, got.Size-size)
					model[j].Size -= size
				}
			case r < 80 && len(model) > 0:
				i := rng.IntN(len(model))
				lim := int64(top) - model[i].Start
				if i+1 < len(model) {
					lim = model[i+1].Start - model[i].Start
				}
				model[i].Size = 1 + rng.Int64N(min(lim, 1<<21))
				s.SetSize(model[i].Start, model[i].Size)
			case len(model) > 0:
				i := rng.IntN(len(model))
				s.Remove(model[i].Start)
				model = slices.Delete(model, i, i+1)
			}
			maxHeightSeen = max(maxHeightSeen, s.height)
			if step%4000 == 0 {
				verify()
			}
			if step%97 == 0 && len(model) > 0 {
				probe := model[rng.IntN(len(model))].Start + rng.Int64N(3) - 1
				i := at(probe)
				got, ok := s.Floor(probe)
				if ok != (i > 0) || ok && got != model[i-1] {
					t.Fatalf("step %d: Floor(%d) = %v %v", step, probe, got, ok)
				}
				got, ok = s.Get(probe)
				if want := i > 0 && model[i-1].Start == probe; ok != want || ok && got != model[i-1] {
					t.Fatalf("step %d: Get(%d) = %v %v", step, probe, got, ok)
				}
				var largest int64
				for _, sp := range model {
					largest = max(largest, sp.Size)
				}
				if s.Largest() != largest {
					t.Fatalf("step %d: Largest %d, want %d", step, s.Largest(), largest)
				}
			}
		}
		verify()
	}
	if maxHeightSeen < 3 {
		t.Errorf("the tree reached height %d: the test should reach three levels", maxHeightSeen)
	}
	if s.height != 0 {
		t.Errorf("empty set of height %d", s.height)
	}
}

// TestReset: a reset set of several levels is empty and takes spans again
// without growing its storage.
func TestReset(t *testing.T) {
	s := New()
	for i := int64(0); i < 5000; i++ {
		s.Insert(Span{i << 12, 1 + i%4000})
	}
	leaves, inners := cap(s.leaves), cap(s.inners)
	s.Reset()
	if err := s.Check(); err != nil || s.Len() != 0 || s.Largest() != 0 {
		t.Fatalf("after Reset: %v, %d spans, largest %d", err, s.Len(), s.Largest())
	}
	for i := int64(0); i < 5000; i++ {
		s.Insert(Span{i << 12, 1 + i%4000})
	}
	if err := s.Check(); err != nil || cap(s.leaves) != leaves || cap(s.inners) != inners {
		t.Fatalf("refilled: %v, storage %d/%d leaves, %d/%d inner nodes", err, cap(s.leaves), leaves, cap(s.inners), inners)
	}
}

// TestClone: a clone holds the same spans, and each set then changes
// without the other seeing it, the clone's kept paths (a Prefetch before
// the clone) leading to its own leaves.
func TestClone(t *testing.T) {
	s := New()
	for i := int64(0); i < 5000; i++ {
		s.Insert(Span{i << 12, 1 + i%4000})
	}
	s.Prefetch(2500 << 12)
	c := s.Clone()
	spans := func(x *Set) (out []Span) {
		x.Ascend(func(sp Span) bool { out = append(out, sp); return true })
		return out
	}
	if err := c.Check(); err != nil || !slices.Equal(spans(c), spans(s)) {
		t.Fatalf("the clone: %v, %d spans against %d", err, c.Len(), s.Len())
	}
	before := spans(s)
	c.Join(2500<<12+4000, 96) // the kept path's leaf, in the clone
	for i := int64(0); i < 5000; i += 3 {
		c.Remove(i << 12)
	}
	for i := int64(5000); i < 9000; i++ {
		c.Insert(Span{i << 12, 100})
	}
	if err := s.Check(); err != nil || !slices.Equal(spans(s), before) {
		t.Fatalf("the original changed with its clone: %v", err)
	}
	if err := c.Check(); err != nil || c.Len() != 5000-1667+4000 {
		t.Fatalf("the clone after its changes: %v, %d spans", err, c.Len())
	}
	s.Insert(Span{1 << 40, 7})
	if _, ok := c.Get(1 << 40); ok {
		t.Fatal("an insert into the original shows in the clone")
	}
}

// TestPrefetchedPath: a Join takes the path its Prefetch kept while the
// tree's shape is unchanged, and descends again once a split or a Reset
// has changed it (the kept path then leads to the wrong leaf, or none).
func TestPrefetchedPath(t *testing.T) {
	s := New()
	for i := int64(0); i < 3000; i++ {
		s.Insert(Span{i << 12, 1 << 10})
	}
	if s.height < 2 {
		t.Fatalf("height %d: the test needs inner levels", s.height)
	}
	x := int64(1500<<12 + 1<<10)
	s.Prefetch(x)
	if _, _, ok := s.prefetched(x); !ok {
		t.Fatal("a Join right after Prefetch does not take its path")
	}
	if _, _, ok := s.prefetched(x); ok {
		t.Fatal("a kept path is taken twice")
	}
	// A caller asking several frees ahead, as the TPU model does: each
	// of the last aheadPaths paths is taken at its Join, in the order
	// asked, and one more Prefetch than the ring holds drops the oldest.
	for round := range 3 {
		xs := make([]int64, aheadPaths+round%2)
		for i := range xs {
			xs[i] = int64(100+round*40+i*3)<<12 + 1<<10
			s.Prefetch(xs[i])
		}
		for i, xi := range xs {
			_, _, ok := s.prefetched(xi)
			if want := i >= len(xs)-aheadPaths; ok != want {
				t.Fatalf("round %d: path %d of %d asked taken %v, want %v", round, i, len(xs), ok, want)
			}
		}
	}
	s.Prefetch(x)
	for i := int64(0); i < 40; i++ { // enough to split a leaf
		s.Insert(Span{1500<<12 + 3<<10 + i*8, 4})
	}
	if _, _, ok := s.prefetched(x); ok {
		t.Fatal("a path kept before a split is taken after it")
	}
	if got := s.Join(x, 1<<10); got != (Span{1500 << 12, 2 << 10}) {
		t.Fatalf("Join = %v", got)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	// A Reset drops the kept paths: the set that follows has other
	// nodes, though no split need come before the Join.
	s.Prefetch(x)
	s.Reset()
	s.Insert(Span{x - 1<<10, 1 << 10})
	s.Insert(Span{x + 1<<12, 8})
	if got := s.Join(x, 1<<10); got != (Span{x - 1<<10, 2 << 10}) {
		t.Fatalf("Join after Reset = %v", got)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCarveAsFitAndResize: on a set of tens of thousands of spans (a tree
// of several levels), Carve does what the TPU model did before it:
// HighestFit, then Remove or SetSize of the span found. Two sets built
// alike, one carved and one changed the old way, return the same spans
// and end alike, sound at every check.
func TestCarveAsFitAndResize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a, b := New(), New()
	for i := int64(0); i < 40000; i++ {
		sp := Span{Start: i << 20, Size: 1 + rng.Int64N(1<<20)}
		a.Insert(sp)
		b.Insert(sp)
	}
	for step := 0; step < 60000; step++ {
		size := 1 + rng.Int64N(1<<20)
		if rng.IntN(8) == 0 {
			size = rng.Int64N(64) + 1
		}
		got, ok1 := a.Carve(size)
		want, ok2 := b.HighestFit(size)
		if ok1 != ok2 || got != want {
			t.Fatalf("step %d: Carve(%d) = %v %v, HighestFit %v %v", step, size, got, ok1, want, ok2)
		}
		if ok2 {
			if want.Size == size {
				b.Remove(want.Start)
			} else {
				b.SetSize(want.Start, want.Size-size)
			}
		}
		if rng.IntN(3) == 0 {
			// Frees keep the set from emptying, as a replay's do.
			x := rng.Int64N(40000) << 20
			if sp, ok := a.Floor(x + 1<<20 - 1); !ok || sp.End() <= x+1<<20-4096 {
				a.Join(x+1<<20-4096, 4096)
				b.Join(x+1<<20-4096, 4096)
			}
		}
		if step%10000 == 0 {
			if err := a.Check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	var sa, sb []Span
	a.Ascend(func(sp Span) bool { sa = append(sa, sp); return true })
	b.Ascend(func(sp Span) bool { sb = append(sb, sp); return true })
	if !slices.Equal(sa, sb) {
		t.Fatalf("the sets differ: %d and %d spans", len(sa), len(sb))
	}
}

// TestLargeSetMapped grows a set past hugemem's Threshold, so that its
// leaves move to huge pages and then to larger ones while spans are
// carved and joined, and checks every answer against a sorted slice and
// the tree at the end.
func TestLargeSetMapped(t *testing.T) {
	if testing.Short() {
		t.Skip("grows to 300,000 spans")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	s := New()
	var model []Span
	// Spans every 64 KiB, each of 1..32 KiB: the tail of each slot is
	// not free, so that no two spans touch until a Join fills a gap.
	const slot = 64 << 10
	add := func(i int64) {
		sp := Span{i * slot, 1 + rng.Int64N(32<<10)}
		s.Insert(sp)
		model = append(model, sp)
	}
	var next int64
	for ; next < 300000; next++ {
		add(next)
		if next%50000 == 0 && next > 0 {
			// A few carves on the way, while the arena grows.
			for range 100 {
				carveBoth(t, s, &model, 1+rng.Int64N(32<<10))
			}
		}
	}
	if !hugemem.Huge(s.leaves) {
		t.Fatalf("%d leaves of %d B: not on a huge page", len(s.leaves), unsafe.Sizeof(leaf{}))
	}
	for step := range 20000 {
		switch rng.IntN(3) {
		case 0:
			carveBoth(t, s, &model, 1+rng.Int64N(40<<10))
		case 1:
			// Join the free tail of a random slot's span: it merges
			// with the span below.
			i := rng.IntN(len(model))
			sp := model[i]
			lim := int64(slot) - sp.Start%slot - sp.Size
			if i+1 < len(model) {
				lim = min(lim, model[i+1].Start-sp.End()-1) // no merge above
			}
			if lim < 1 {
				continue
			}
			n := 1 + rng.Int64N(lim)
			got := s.Join(sp.End(), n)
			model[i].Size += n
			if got != model[i] {
				t.Fatalf("step %d: Join(%d, %d) = %v, want %v", step, sp.End(), n, got, model[i])
			}
		default:
			add(next)
			next++
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	i := 0
	s.Ascend(func(sp Span) bool {
		if sp != model[i] {
			t.Fatalf("span %d: %v, want %v", i, sp, model[i])
		}
		i++
		return true
	})
}

// carveBoth carves size from s and from the sorted slice model, and fails
// when they differ.
func carveBoth(t *testing.T, s *Set, model *[]Span, size int64) {
	t.Helper()
	m := *model
	j := len(m) - 1
	for j >= 0 && m[j].Size < size {
		j--
	}
	got, ok := s.Carve(size)
	if ok != (j >= 0) || ok && got != m[j] {
		t.Fatalf("Carve(%d) = %v %v, want %d", size, got, ok, j)
	}
	if !ok {
		return
	}
	if got.Size == size {
		*model = slices.Delete(m, j, j+1)
	} else {
		m[j].Size -= size
	}
}

// TestLastFit checks lastFit against its definition, the index of the
// last size of at least size, on a table of edge cases.
func TestLastFit(t *testing.T) {
	for _, c := range []struct {
		sizes []int64
		size  int64
		want  int
	}{
		{nil, 1, -1},
		{[]int64{5}, 5, 0},
		{[]int64{5}, 6, -1},
		{[]int64{9, 1, 1}, 2, 0},
		{[]int64{1, 9, 9, 1}, 9, 2},
		{[]int64{3, 1, 2}, 2, 2},
		{[]int64{3, 1, 2}, 1, 2},
		{[]int64{3, 1, 2}, 4, -1},
	} {
		if got := lastFit(c.sizes, c.size); got != c.want {
			t.Errorf("lastFit(%v, %d) = %d, want %d", c.sizes, c.size, got, c.want)
		}
	}
}

// TestNodesOnLines: a node's header fills one cache line and a node is a
// whole number of lines, so that each group of eight sizes or maxima is
// one line of an arena that starts on a line.
func TestNodesOnLines(t *testing.T) {
	var lp leaf
	var in inner
	for _, c := range []struct {
		what       string
		size, head uintptr
	}{
		{"leaf", unsafe.Sizeof(lp), unsafe.Offsetof(lp.start)},
		{"inner", unsafe.Sizeof(in), unsafe.Offsetof(in.sep)},
	} {
		if c.size%64 != 0 || c.head != 64 {
			t.Errorf("%s: %d B with a header of %d B, want lines of 64 and a header of one", c.what, c.size, c.head)
		}
	}
}

// TestCheckFindsBadGroups: Check reports a group maximum that is not its
// group's largest size, and a slot past a node's count that is not
// empty (size 0, start or separator the largest int64: lastFitBy,
// groupMax and rank read whole groups, so such a slot would be taken for
// a span or a child), in leaves and in inner nodes, and an inner node's
// separator 0 that is not the smallest int64.
func TestCheckFindsBadGroups(t *testing.T) {
	build := func() *Set {
		s := New()
		for i := range int64(2000) {
			s.Insert(Span{i << 10, 1 + i%700})
		}
		if s.height < 2 {
			t.Fatalf("height %d, want two inner levels", s.height)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The first leaf and the first inner node, in storage order, that
	// are not full: sequential inserts leave the nodes behind the last
	// split half full.
	notFull := func(s *Set) (*leaf, *inner) {
		var lp *leaf
		var in *inner
		for i := range s.leaves {
			if lp == nil && s.leaves[i].n < nodeMax {
				lp = &s.leaves[i]
			}
		}
		for i := range s.inners {
			if in == nil && s.inners[i].n < nodeMax {
				in = &s.inners[i]
			}
		}
		if lp == nil || in == nil {
			t.Fatal("every node is full")
		}
		return lp, in
	}
	for _, c := range []struct {
		what    string
		corrupt func(s *Set)
	}{
		{"leaf group", func(s *Set) { lp, _ := notFull(s); lp.gmax[0]++ }},
		// A tail slot that its group's maximum admits: only the
		// slot's own check can find it.
		{"leaf tail", func(s *Set) {
			lp, _ := notFull(s)
			lp.size[nodeMax-1], lp.gmax[groups-1] = 1, max(lp.gmax[groups-1], 1)
		}},
		{"inner group", func(s *Set) { _, in := notFull(s); in.gmax[0]++ }},
		{"leaf start tail", func(s *Set) { lp, _ := notFull(s); lp.start[nodeMax-1]-- }},
		{"inner separator tail", func(s *Set) { _, in := notFull(s); in.sep[nodeMax-1]-- }},
		{"inner separator 0", func(s *Set) { _, in := notFull(s); in.sep[0]++ }},
		{"inner tail", func(s *Set) {
			_, in := notFull(s)
			in.max[nodeMax-1], in.gmax[groups-1] = 1, max(in.gmax[groups-1], 1)
		}},
	} {
		s := build()
		c.corrupt(s)
		if err := s.Check(); err == nil {
			t.Errorf("%s broken: Check finds nothing", c.what)
		}
	}
}

// TestExtremeAddresses: a descent by the largest or the smallest int64
// finds the last span or none, in a set of several levels: the slots
// past a node's count hold the largest int64, which such an address
// must not count.
func TestExtremeAddresses(t *testing.T) {
	s := New()
	for i := range int64(3000) {
		s.Insert(Span{i << 10, 1 + i%700})
	}
	if s.height < 2 {
		t.Fatalf("height %d, want two inner levels", s.height)
	}
	last := Span{2999 << 10, 1 + 2999%700}
	if got, ok := s.Floor(maxInt); !ok || got != last {
		t.Errorf("Floor(max) = %v %v, want %v", got, ok, last)
	}
	if got, ok := s.Get(maxInt); ok {
		t.Errorf("Get(max) = %v, want none", got)
	}
	if got, ok := s.Floor(minInt); ok {
		t.Errorf("Floor(min) = %v, want none", got)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestChildAt checks the branch-free descent by address against its
// definition, the last child whose separator is not above x, on random
// inner nodes of every count (separator 0 the smallest int64, the slots
// past the count the largest, as the tree keeps them) and addresses on,
// between and beyond the separators, the extremes included.
func TestChildAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 25))
	for trial := range 20000 {
		n := 1 + trial%nodeMax
		var sep [nodeMax]int64
		fill(sep[:], maxInt)
		sep[0] = minInt
		x := int64(rng.IntN(1000)) - 500
		for i := 1; i < n; i++ {
			x += 1 + int64(rng.IntN(3))
			sep[i] = x
		}
		for _, q := range []int64{minInt, minInt + 1, maxInt - 1, sep[rng.IntN(n)], sep[rng.IntN(n)] - 1, int64(rng.IntN(1200)) - 600} {
			if q == maxInt {
				continue
			}
			want := 0
			for i := range n {
				if sep[i] <= q {
					want = i
				}
			}
			if got := childAt(&sep, q); got != want {
				t.Fatalf("childAt(%v of %d, %d) = %d, want %d", sep[:n], n, q, got, want)
			}
		}
	}
}

// TestRankAll checks the branch-free rank of a leaf against rank on
// random leaves of every count (the slots past the count holding the
// largest int64, as the tree keeps them), with addresses before, on,
// between and after the starts, the extremes included.
func TestRankAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 25))
	for trial := range 20000 {
		n := trial % (nodeMax + 1)
		var lp leaf
		fill(lp.start[:], maxInt)
		lp.n = int32(n)
		x := int64(rng.IntN(1000)) - 500
		for i := range n {
			x += 1 + int64(rng.IntN(3))
			lp.start[i] = x
		}
		qs := []int64{minInt, minInt + 1, maxInt - 1, maxInt, int64(rng.IntN(1200)) - 600}
		if n > 0 {
			qs = append(qs, lp.start[rng.IntN(n)], lp.start[rng.IntN(n)]-1, lp.start[0]-1, lp.start[n-1])
		}
		for _, q := range qs {
			want := 0
			for i := range n {
				if lp.start[i] <= q {
					want = i + 1
				}
			}
			if got := lp.rankAll(q); got != want {
				t.Fatalf("rankAll(%v, %d) = %d, want %d", lp.start[:n], q, got, want)
			}
			if got := lp.rank(q); got != want {
				t.Fatalf("rank(%v, %d) = %d, want %d", lp.start[:n], q, got, want)
			}
		}
	}
}

// TestLastFitBy checks HighestFit's choice in a node against its
// definition, the last of the sizes that is at least size (negative for
// none), on random nodes of every count, as the tree keeps them (group
// maxima exact, 0 past the count), whose sizes are often equal to the
// request or next to it.
func TestLastFitBy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 25))
	for trial := range 50000 {
		n := trial % (nodeMax + 1)
		size := 1 + rng.Int64N(1<<uint(1+rng.IntN(40)))
		var xs [nodeMax]int64
		var gm [groups]int64
		for i := range n {
			switch rng.IntN(4) {
			case 0:
				xs[i] = max(1, size+rng.Int64N(5)-2)
			case 1:
				xs[i] = 1 + rng.Int64N(1<<uint(rng.IntN(42)))
			case 2:
				xs[i] = size
			default:
				xs[i] = maxInt - rng.Int64N(3)
			}
		}
		regroup(&gm, &xs, 0, nodeMax)
		want := -1
		for i := range n {
			if xs[i] >= size {
				want = i
			}
		}
		if got := lastFitBy(&gm, &xs, size); got != want && (want >= 0 || got >= 0) {
			t.Fatalf("lastFitBy(%v, %d) = %d, want %d", xs[:n], size, got, want)
		}
	}
}

// TestHighestFitAnySize: a request of no bytes or fewer (0, negative,
// the smallest int64) is held by every span, so HighestFit returns the
// highest span, and the largest int64 by none but a span that large; at
// every height, as the root leaf's scan (lastFit) and the inner nodes'
// masks (lastFitBy, whose empty slots and groups hold 0 and so "hold"
// a request of 0) must agree. Carve refuses such sizes; HighestFit is
// the set's own query and answered them until lastFitBy (2026-11-25)
// chose an empty slot past the root's last child for them.
func TestHighestFitAnySize(t *testing.T) {
	for _, n := range []int64{1, 5, 31, 32, 33, 200, 3000} {
		s := New()
		for i := range n {
			s.Insert(Span{i << 10, 1 + i%700})
		}
		last := Span{(n - 1) << 10, 1 + (n-1)%700}
		for _, size := range []int64{0, -1, -1 << 40, minInt} {
			if got, ok := s.HighestFit(size); !ok || got != last {
				t.Errorf("%d spans (height %d): HighestFit(%d) = %v %v, want %v", n, s.height, size, got, ok, last)
			}
		}
		if got, ok := s.HighestFit(maxInt); ok {
			t.Errorf("%d spans: HighestFit(max) = %v, want none", n, got)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShape checks Set.Shape, which BenchmarkLiveShape and the package
// doc's figures read, against the tree found another way: one root, a
// level per inner level and one for the leaves, as many leaves as the
// chain from head links, each level no fewer nodes than the one above
// and at most nodeMax times as many.
func TestShape(t *testing.T) {
	for _, n := range []int64{0, 1, 32, 33, 3000, 40000} {
		s := New()
		for i := range n {
			s.Insert(Span{i << 10, 1 + i%700})
		}
		shape := s.Shape()
		if len(shape) != s.height+1 || shape[0] != 1 {
			t.Fatalf("%d spans (height %d): shape %v", n, s.height, shape)
		}
		leaves, spans := 0, 0
		for lf := s.head; lf != nilNode; lf = s.leaves[lf].next {
			leaves++
			spans += int(s.leaves[lf].n)
		}
		if shape[s.height] != leaves || spans != s.Len() {
			t.Errorf("%d spans: shape %v, the chain links %d leaves of %d spans", n, shape, leaves, spans)
		}
		for l := 1; l < len(shape); l++ {
			if shape[l] < shape[l-1] || shape[l] > nodeMax*shape[l-1] {
				t.Errorf("%d spans: shape %v: level %d", n, shape, l)
			}
		}
	}
}
