package tpurt

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"membench/internal/hugemem"
	"membench/internal/livebench"
	"membench/internal/livepair"
	"membench/strategies"
)

// BenchmarkLive is harness.BenchmarkReplayLive on the model alone
// (internal/livebench), on a 64 GiB heap. ns/op is per event;
// cpu-ns/event is the CPU time per event, which on a shared machine is
// steadier.
func BenchmarkLive(b *testing.B) {
	livebench.Sizes(b, func() livebench.Model {
		d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
		a := New(Options{}, strategies.NewMemory(&d))
		return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
	})
}

// BenchmarkLiveHugePages times the model with its free set's arenas in
// huge pages (internal/hugemem) against one without, in one process in
// alternate stretches (internal/livepair): cpu-ns/event-small and -huge,
// and their ratio.
func BenchmarkLiveHugePages(b *testing.B) {
	for _, live := range []int{1000, 1000000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			defer func() { hugemem.Off = false }()
			livepair.Run(b, live, [2]string{"small", "huge"}, func(k int) { hugemem.Off = k == 0 }, func(int) livebench.Model {
				d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
				a := New(Options{}, strategies.NewMemory(&d))
				return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
			})
		})
	}
}

// TestHugePagesPlaceAlike: with 10^6 live buffers, where the records and
// the free set's nodes sit in huge pages (internal/hugemem), the model
// places every buffer where it does with ordinary arrays.
func TestHugePagesPlaceAlike(t *testing.T) {
	// A campaign of 10^6 live buffers, twice (2.5 s): .ci/run runs it
	// (README, Tests).
	if os.Getenv("MEMBENCH_LONG") == "" {
		t.Skip("10^6 live buffers, twice: runs with MEMBENCH_LONG=1")
	}
	place := func(off bool) []int64 {
		hugemem.Off = off
		defer func() { hugemem.Off = false }()
		d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
		a := New(Options{}, strategies.NewMemory(&d))
		rng := rand.New(rand.NewPCG(7, 8))
		size := func() int64 { return 512 + rng.Int64N(48<<10) }
		hs := make([]strategies.Handle, 1000000)
		var at []int64
		for i := range hs {
			hs[i], _ = a.Malloc(size(), 0)
		}
		for range 400000 {
			v := rng.IntN(len(hs))
			a.Free(hs[v])
			var ok bool
			if hs[v], ok = a.Malloc(size(), 0); !ok {
				t.Fatal("out of memory")
			}
			off, _ := a.Block(hs[v])
			at = append(at, off)
		}
		if huge := hugemem.Huge(a.bufs.All()) && a.free.HugePages(); huge == off {
			t.Fatalf("hugemem.Off %v: records and leaves in huge pages %v", off, huge)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		return at
	}
	small, huge := place(true), place(false)
	for i := range small {
		if small[i] != huge[i] {
			t.Fatalf("placement %d: at %d in huge pages, %d without", i, huge[i], small[i])
		}
	}
}

// BenchmarkLiveShape runs BenchmarkLive's events at 10^6 live buffers
// and reports the shape of the free set after them (spanset's Set.Shape):
// its inner levels, the nodes of the two levels above the leaves, the
// leaves and their average count of spans. docs/spanset-notes.md
// quotes it (-test.benchtime 2000000x: 10^6 event pairs).
func BenchmarkLiveShape(b *testing.B) {
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
	a := New(Options{}, strategies.NewMemory(&d))
	livebench.Run(b, 1000000, a.Malloc, a.Free, a.Touch)
	shape := a.free.Shape()
	h := len(shape) - 1
	b.ReportMetric(float64(h), "inner-levels")
	for l := range h {
		b.ReportMetric(float64(shape[l]), "nodes-level"+strconv.Itoa(l))
	}
	b.ReportMetric(float64(shape[h]), "leaves")
	b.ReportMetric(float64(a.free.Len())/float64(shape[h]), "spans/leaf")
}
