package validate

import (
	"os"
	"testing"

	"membench/harness"
	"membench/torchlike/snapshot/snaptest"
	"membench/traces"
)

// TestResolveTraceDevice checks harness's FILE#device=N selection on a
// two-device snapshot the torch model recorded (it lives here, beside the
// recorder that writes such snapshots).
func TestResolveTraceDevice(t *testing.T) {
	r := newRecorder(t, "torch", 1<<40, 0)
	r1 := newRecorder(t, "torch", 1<<40, 1)
	workload(r, 2, 200, 0)
	workload(r1, 3, 300, 0)
	path := t.TempDir() + "/two.pickle"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := snaptest.EncodePickle(f, snapshotOf(settingsFor(false), r, r1)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	count := func(arg string) int64 {
		src, err := harness.ResolveTrace(arg)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := src.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		s, err := traces.Summarize(src.Name, rd)
		if err != nil {
			t.Fatal(err)
		}
		return s.Allocs
	}
	a0, a1 := count(path), count(path+"#device=1")
	if a0 == a1 || a0 != count(path+"#device=0") {
		t.Errorf("device 0 has %d allocations, device 1 %d", a0, a1)
	}
	if _, err := harness.ResolveTrace(path + "#device=x"); err == nil {
		t.Error("bad device index accepted")
	}
	src, _ := harness.ResolveTrace(path + "#device=7")
	if _, err := src.Open(); err == nil {
		t.Error("absent device accepted")
	}
}
