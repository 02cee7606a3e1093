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
