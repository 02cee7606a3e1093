package tpurt

import (
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
)

// TestTouchChangesNoPlacement replays one random sequence of 30,000 live
// buffers (tens of thousands of free ranges, past touchSpans, so that
// Touch asks for the free set's leaves and the frees take the kept
// paths) through two heaps, one touched as a replay touches (each free's
// buffer two event pairs ahead, plus touches of freed, stale and absent
// handles) and one never touched: every buffer must land at the same
// offset, and the heaps must end alike and sound.
func TestTouchChangesNoPlacement(t *testing.T) {
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=8GiB")
	touched := New(Options{}, strategies.NewMemory(&d))
	plain := New(Options{}, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(3, 4))
	size := func() int64 {
		if rng.IntN(100) == 0 {
			return 1<<20 + rng.Int64N(2<<20)
		}
		return 512 + rng.Int64N(48<<10)
	}
	const live, steps = 30000, 60000
	hs := make([]strategies.Handle, live)
	for i := range hs {
		n := size()
		h1, ok1 := touched.Malloc(n, 0)
		h2, ok2 := plain.Malloc(n, 0)
		if !ok1 || !ok2 || h1 != h2 {
			t.Fatalf("warm-up %d: handles %d %v and %d %v", i, h1, ok1, h2, ok2)
		}
		hs[i] = h1
	}
	picks := make([]int, steps)
	for k := range picks {
		picks[k] = rng.IntN(live)
	}
	sawSpans := 0
	for k, v := range picks {
		if k+2 < steps {
			touched.Touch(hs[picks[k+2]])
		}
		switch rng.IntN(16) {
		case 0:
			touched.Touch(hs[rng.IntN(live)]) // a free further ahead, or none
		case 1:
			touched.Touch(strategies.Handle(touched.bufs.Len() + 5)) // no such buffer
		case 2:
			touched.Touch(-1)
		}
		sawSpans = max(sawSpans, touched.free.Len())
		touched.Free(hs[v])
		plain.Free(hs[v])
		if k%3 == 0 {
			touched.Touch(hs[v]) // freed: nothing to ask for
		}
		n := size()
		h1, ok1 := touched.Malloc(n, 0)
		h2, ok2 := plain.Malloc(n, 0)
		if !ok1 || !ok2 || h1 != h2 {
			t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
		}
		o1, s1 := touched.Block(h1)
		o2, s2 := plain.Block(h2)
		if o1 != o2 || s1 != s2 || s1 != touched.Round(n) {
			t.Fatalf("step %d: %d B placed at %d (%d B) touched, %d (%d B) not", k, n, o1, s1, o2, s2)
		}
		hs[v] = h1
		if k%10000 == 0 {
			if err := touched.Check(); err != nil {
				t.Fatalf("step %d: %v", k, err)
			}
		}
	}
	if sawSpans < touchSpans {
		t.Fatalf("the free set held at most %d ranges: Touch never asked for a leaf", sawSpans)
	}
	var l1, l2 []strategies.Segment
	touched.Layout(func(s strategies.Segment) { l1 = append(l1, s) })
	plain.Layout(func(s strategies.Segment) { l2 = append(l2, s) })
	if len(l1) != len(l2) {
		t.Fatalf("layouts of %d and %d segments", len(l1), len(l2))
	}
	for i := range l1 {
		if !slices.Equal(l1[i].Blocks, l2[i].Blocks) {
			t.Fatalf("segment %d differs", i)
		}
	}
	for _, a := range []*Allocator{touched, plain} {
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTouchAcrossDefragAndPrograms: as TestTouchChangesNoPlacement, on a
// heap tight enough that allocations defragment it (the free set is
// rebuilt, every buffer moves) and with programs loaded and unloaded at
// the bottom, so that kept paths and touched records go stale in every
// way the model allows; placements, failures and counters must match an
// untouched heap's.
func TestTouchAcrossDefragAndPrograms(t *testing.T) {
	d, _ := strategies.ParseDevice("tpu-v6e:capacity=3GiB")
	touched := New(Options{Defrag: true}, strategies.NewMemory(&d))
	plain := New(Options{Defrag: true}, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(7, 8))
	size := func() int64 {
		if rng.IntN(50) == 0 {
			return 1<<20 + rng.Int64N(3<<20)
		}
		return 512 + rng.Int64N(48<<10)
	}
	var hs []strategies.Handle
	var progs []Program
	spans := 0
	for k := 0; k < 150000; k++ {
		spans = max(spans, touched.free.Len())
		if len(hs) > 2 {
			touched.Touch(hs[rng.IntN(len(hs))])
		}
		switch r := rng.IntN(100); {
		case k%25000 == 24999:
			// Most of the free bytes at once: no range holds them,
			// so the heap defragments (or evicts) for it.
			st := touched.Stats()
			n := (st.BytesLimit - st.BytesInUse - st.BytesReserved) * 3 / 4
			h1, ok1 := touched.Malloc(n, 0)
			h2, ok2 := plain.Malloc(n, 0)
			if h1 != h2 || ok1 != ok2 {
				t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
			}
			if ok1 {
				touched.Free(h1)
				plain.Free(h2)
			}
		case k < 20000:
			r = 99 // the warm-up allocates
			fallthrough
		case r >= 3 && len(hs) == 0:
			n := size()
			h1, ok1 := touched.Malloc(n, 0)
			h2, ok2 := plain.Malloc(n, 0)
			if h1 != h2 || ok1 != ok2 {
				t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
			}
			if ok1 {
				hs = append(hs, h1)
			}
		case r < 1:
			n := 1 + rng.Int64N(32<<20)
			p1, err1 := touched.LoadProgram(n)
			p2, err2 := plain.LoadProgram(n)
			if p1 != p2 || (err1 == nil) != (err2 == nil) {
				t.Fatalf("step %d: program loads %d %v and %d %v", k, p1, err1, p2, err2)
			}
			if err1 == nil {
				progs = append(progs, p1)
			}
		case r < 2 && len(progs) > 0:
			i := rng.IntN(len(progs))
			touched.UnloadProgram(progs[i])
			plain.UnloadProgram(progs[i])
			progs = slices.Delete(progs, i, i+1)
		case r < 50 && len(hs) > 0:
			i := rng.IntN(len(hs))
			touched.Free(hs[i])
			plain.Free(hs[i])
			hs[i] = hs[len(hs)-1]
			hs = hs[:len(hs)-1]
		default:
			n := size()
			h1, ok1 := touched.Malloc(n, 0)
			h2, ok2 := plain.Malloc(n, 0)
			if h1 != h2 || ok1 != ok2 {
				t.Fatalf("step %d: handles %d %v and %d %v", k, h1, ok1, h2, ok2)
			}
			if !ok1 {
				continue
			}
			o1, _ := touched.Block(h1)
			o2, _ := plain.Block(h2)
			if o1 != o2 {
				t.Fatalf("step %d: %d B at %d touched, %d not", k, n, o1, o2)
			}
			hs = append(hs, h1)
		}
	}
	s1, s2 := touched.Stats(), plain.Stats()
	if s1 != s2 {
		t.Fatalf("counters differ:\n%+v\n%+v", s1, s2)
	}
	if s1.DefragEvents == 0 || s1.Evictions == 0 || s1.ProgramLoads < 2 || spans < touchSpans {
		t.Fatalf("the run never defragmented, evicted or loaded programs, or held only %d free ranges: %+v", spans, s1)
	}
	if err := touched.Check(); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if a, b := touched.Place(h), plain.Place(h); a != b {
			t.Fatalf("buffer %d: %+v touched, %+v not", h, a, b)
		}
	}
}
