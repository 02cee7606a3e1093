package slab

import "testing"

func TestSlab(t *testing.T) {
	var s Slab[int]
	a, b := s.Put(10), s.Put(20)
	if a != 0 || b != 1 || *s.At(b) != 20 {
		t.Fatalf("handles %d %d", a, b)
	}
	s.Release(a)
	if c := s.Put(30); c != a || *s.At(c) != 30 || s.Len() != 2 {
		t.Errorf("freed slot not reused: %d, len %d", c, s.Len())
	}
	*s.At(b) = 21
	if s.All()[1] != 21 {
		t.Errorf("At does not change in place")
	}
	s.Release(b)
	if n := testing.AllocsPerRun(100, func() { s.Release(s.Put(1)) }); n != 0 {
		t.Errorf("%v allocations per Put/Release", n)
	}
}

// TestClear: a cleared slab is empty and hands out handles from 0 again,
// without a slot freed before the clear, and keeps its memory.
func TestClear(t *testing.T) {
	var s Slab[*int]
	v := 7
	for range 100 {
		s.Put(&v)
	}
	s.Release(40)
	c := cap(s.All())
	s.Clear()
	if s.Len() != 0 {
		t.Fatalf("%d slots after Clear", s.Len())
	}
	if h := s.Put(nil); h != 0 || s.Len() != 1 {
		t.Errorf("first Put after Clear: handle %d, %d slots", h, s.Len())
	}
	if cap(s.All()) != c {
		t.Errorf("capacity %d after Clear, was %d", cap(s.All()), c)
	}
	if all := s.All()[:c]; all[50] != nil {
		t.Errorf("a cleared slot still holds its value")
	}
}

// TestGrowHuge checks Full and GrowHuge as the TPU model calls them: a
// Put when Full would grow by append, so the caller grows first, and the
// values and handles survive the growth past hugemem's threshold.
func TestGrowHuge(t *testing.T) {
	type rec struct{ a, b int64 }
	var s Slab[rec]
	n := 0
	for n < 400000 { // 6.4 MB of records: past hugemem.Threshold
		if s.Full() != (len(s.unused) == 0 && s.Len() == cap(s.items)) {
			t.Fatalf("Full = %v at len %d cap %d", s.Full(), s.Len(), cap(s.items))
		}
		if s.Full() {
			c := cap(s.items)
			s.GrowHuge()
			if cap(s.items) <= c || s.Full() {
				t.Fatalf("GrowHuge left cap %d (was %d)", cap(s.items), c)
			}
		}
		c := cap(s.items)
		if h := s.Put(rec{int64(n), -int64(n)}); int(h) != n || cap(s.items) != c {
			t.Fatalf("Put %d gave handle %d, cap %d → %d", n, h, c, cap(s.items))
		}
		n++
	}
	s.Release(7)
	if s.Full() {
		t.Fatal("Full with a released slot to reuse")
	}
	for i, r := range s.All() {
		if r.a != int64(i) || r.b != -int64(i) {
			t.Fatalf("record %d = %v after growth", i, r)
		}
	}
}
