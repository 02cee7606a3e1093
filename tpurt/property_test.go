package tpurt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"membench/internal/spanset"
	"membench/strategies"
)

// TestRandomOpsKeepTheRules drives the model through long random
// sequences of allocations, frees, program loads and unloads, with and
// without defragmentation, and checks after every step: the invariants
// (Check); every placement against a naive reading of the layout (the
// top of the highest free range that holds the rounded size, when one
// does); every failure is justified (no free range held it, and with
// defragmentation the free bytes could not either, once no program was
// left to evict); and the same seed gives the same run.
//
// It is a randomized campaign: by default two seeds for each mode (each
// reaches every path: OOMs, evictions and, with defragmentation,
// defragmentations); MEMBENCH_LONG=1 runs four.
func TestRandomOpsKeepTheRules(t *testing.T) {
	seeds := uint64(2)
	if os.Getenv("MEMBENCH_LONG") != "" {
		seeds = 4
	}
	var seen Stats // summed, so that the test is known to reach every path
	for _, defrag := range []bool{false, true} {
		for seed := uint64(1); seed <= seeds; seed++ {
			a, st := randomRun(t, seed, defrag)
			b, _ := randomRun(t, seed, defrag)
			if a != b {
				t.Errorf("seed %d defrag %v: two runs differ:\n%s\n%s", seed, defrag, a, b)
			}
			seen.NumOOMs += st.NumOOMs
			seen.DefragEvents += st.DefragEvents
			seen.Evictions += st.Evictions
		}
	}
	if seen.NumOOMs == 0 || seen.DefragEvents == 0 || seen.Evictions == 0 {
		t.Errorf("the random runs never reached a path: %d OOMs, %d defragmentations, %d evictions", seen.NumOOMs, seen.DefragEvents, seen.Evictions)
	}
}

// randomRun replays one random sequence and returns a digest of it and
// the model's counters.
func randomRun(t *testing.T, seed uint64, defrag bool) (string, Stats) {
	t.Helper()
	d, err := strategies.ParseDevice("tpu-v6e:capacity=16MiB")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Defrag: defrag}, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(seed, 99))
	var live []strategies.Handle
	var progs []Program
	fails := 0
	for step := 0; step < 4000; step++ {
		switch x := rng.IntN(100); {
		case x < 3:
			p, err := a.LoadProgram(1 + rng.Int64N(2<<20))
			if err == nil {
				progs = append(progs, p)
			}
		case x < 5 && len(progs) > 0:
			i := rng.IntN(len(progs))
			a.UnloadProgram(progs[i])
			progs = append(progs[:i], progs[i+1:]...)
		case x < 58 || len(live) == 0:
			n := 1 + rng.Int64N(1<<rng.IntN(21))
			r := a.Round(n)
			want, fits := highestFit(a, r)
			before := a.Stats()
			h, ok := a.Malloc(n, 0)
			after := a.Stats()
			if !ok {
				fails++
				if fits {
					t.Fatalf("step %d: %d B failed although a free range held %d B", step, n, r)
				}
				if after.BytesReserved != 0 {
					t.Fatalf("step %d: %d B failed with %d B of programs still loaded", step, n, after.BytesReserved)
				}
				if defrag && a.freeBytes >= r {
					t.Fatalf("step %d: %d B failed with defragmentation and %d B free", step, n, a.freeBytes)
				}
				break
			}
			live = append(live, h)
			off, size := a.Block(h)
			if size != r || size%128 != 0 || size-n >= 128 {
				t.Fatalf("step %d: %d B requested, %d B given", step, n, size)
			}
			if fits && (after.DefragEvents != before.DefragEvents || after.Evictions != before.Evictions || off != want) {
				t.Fatalf("step %d: %d B placed at %d, the highest free range that holds it ends at %d", step, r, off, want+r)
			}
		default:
			i := rng.IntN(len(live))
			a.Free(live[i])
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	st := a.Stats()
	var layout string
	a.Layout(func(s strategies.Segment) { layout += fmt.Sprint(s) })
	return fmt.Sprintf("%+v %d %s", st, fails, layout), st
}

// highestFit reads the layout naively: the offset at which the top of
// the highest free range of at least r bytes would place them.
func highestFit(a *Allocator, r int64) (off int64, ok bool) {
	var best spanset.Span
	a.Layout(func(s strategies.Segment) {
		for _, b := range s.Blocks {
			if b.State == strategies.BlockFree && b.Size >= r {
				best, ok = spanset.Span{Start: b.Addr - a.base, Size: b.Size}, true
			}
		}
	})
	return best.End() - r, ok
}

// TestSteadyStateAllocatesNothing: a malloc and a free of a warm heap
// allocate no Go memory (the replay loop's rule).
func TestSteadyStateAllocatesNothing(t *testing.T) {
	d, _ := strategies.ParseDevice("tpu-v6e")
	a := New(Options{Defrag: true}, strategies.NewMemory(&d))
	var hs []strategies.Handle
	for i := range 2000 {
		h, _ := a.Malloc(int64(1+i%7)*4096, 0)
		hs = append(hs, h)
	}
	for i := 0; i < len(hs); i += 2 {
		a.Free(hs[i])
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		h, ok := a.Malloc(int64(1+i%5)*4096, 0)
		if ok {
			a.Free(h)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per malloc and free", allocs)
	}
}

// BenchmarkMallocFree is one allocation and one free on a heap holding
// 10,000 buffers and as many holes.
func BenchmarkMallocFree(b *testing.B) {
	d, _ := strategies.ParseDevice("tpu-v6e")
	a := New(Options{Defrag: true}, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(1, 2))
	var hs []strategies.Handle
	for range 20000 {
		h, _ := a.Malloc(1+rng.Int64N(1<<20), 0)
		hs = append(hs, h)
	}
	for i := 0; i < len(hs); i += 2 {
		a.Free(hs[i])
	}
	for b.Loop() {
		h, ok := a.Malloc(1+rng.Int64N(1<<20), 0)
		if ok {
			a.Free(h)
		}
	}
}
