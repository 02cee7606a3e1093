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
