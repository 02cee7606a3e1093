package platform

import (
	"testing"

	"membench/strategies"
)

func TestPerBufferDeviceCalls(t *testing.T) {
	d, _ := strategies.ParseDevice("gpu:capacity=1MiB")
	mem := strategies.NewMemory(&d)
	a := New(mem, "test")
	h1, ok := a.Malloc(1000, 0) // rounded to 1024 (256-byte alignment)
	if !ok {
		t.Fatal("malloc failed")
	}
	h2, ok := a.Malloc(512<<10, 0)
	if !ok || a.Allocated() != 1024+512<<10 || mem.Reserved() != a.Allocated() {
		t.Fatalf("allocated %d reserved %d", a.Allocated(), mem.Reserved())
	}
	if _, ok := a.Malloc(600<<10, 0); ok {
		t.Error("allocation beyond the device succeeded")
	}
	if a.LastOOM().Requested != 600<<10 {
		t.Errorf("OOM %+v", a.LastOOM())
	}
	a.Free(h1)
	a.Free(h2)
	if mem.Mallocs() != 2 || mem.Frees() != 2 || mem.Reserved() != 0 {
		t.Errorf("mallocs %d frees %d reserved %d", mem.Mallocs(), mem.Frees(), mem.Reserved())
	}
	if err := a.Check(); err != nil {
		t.Error(err)
	}
	h3, _ := a.Malloc(256, 0)
	a.inUse++ // corrupt: Check must notice
	if err := a.Check(); err == nil {
		t.Error("corruption not detected")
	}
	_ = h3
}
