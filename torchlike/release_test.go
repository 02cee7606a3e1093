package torchlike

import (
	"testing"

	"membench/strategies"
)

// TestReleaseCloneAndOriginal: an allocator and its clone released both
// leave two distinct sets of buffers to the allocators built next, which
// then work independently (a shared arena would make each corrupt the
// other's blocks).
func TestReleaseCloneAndOriginal(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-80g")
	a := New(Config{}, strategies.NewMemory(&dev))
	for i := range 100 {
		if _, ok := a.Malloc(int64(512+i*4096), 0); !ok {
			t.Fatal("out of memory")
		}
	}
	c := a.Clone(strategies.NewMemory(&dev))
	if &c.arena[0] == &a.arena[0] {
		t.Fatal("the clone shares its original's buffers")
	}
	a.Release()
	c.Release()
	x := New(Config{}, strategies.NewMemory(&dev))
	y := New(Config{}, strategies.NewMemory(&dev))
	for i := range 200 {
		hx, ok1 := x.Malloc(int64(512+i*1000), 0)
		hy, ok2 := y.Malloc(int64(1<<20+i*3000), 0)
		if !ok1 || !ok2 {
			t.Fatal("out of memory")
		}
		if i%3 == 0 {
			x.Free(hx)
			y.Free(hy)
		}
	}
	for _, m := range []*Allocator{x, y} {
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
