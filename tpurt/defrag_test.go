package tpurt

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"membench/strategies"
)

// TestByAddrDown: the radix sort defragment orders the live buffers by
// gives the comparison sort's order, from the highest address down, for
// addresses on the granule and off it, below 2^32 and far above, and for
// few buffers and many.
func TestByAddrDown(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n           int
		limit, gran int64
	}{
		{10, 1 << 30, 128}, {63, 1 << 30, 1}, {64, 1 << 30, 128}, {1000, 1 << 34, 128},
		{5000, 1 << 40, 1}, {5000, 1 << 52, 4096}, {3000, 1 << 20, 256},
	} {
		d, _ := strategies.ParseDevice("tpu-v5e")
		a := New(Options{}, strategies.NewMemory(&d))
		a.limit = c.limit
		seen := map[int64]bool{}
		var hs []int32
		for len(hs) < c.n {
			addr := rng.Int64N(c.limit/c.gran) * c.gran
			if seen[addr] {
				continue
			}
			seen[addr] = true
			hs = append(hs, a.bufs.Put(buffer{addr: addr, req: 1}))
		}
		want := slices.Clone(hs)
		slices.SortFunc(want, func(x, y int32) int { return cmp.Compare(a.bufs.At(y).addr, a.bufs.At(x).addr) })
		if got := a.byAddrDown(hs); !slices.Equal(got, want) {
			t.Errorf("%d buffers below %d on %d B: radix order differs from the comparison sort's", c.n, c.limit, c.gran)
		}
	}
}

// defragProgram runs a random program of allocations and frees on a
// small heap with defragmentation on, and returns what it did: each
// allocation's offset or failure, each relocation, and the counters.
func defragProgram(t *testing.T, seed uint64) string {
	t.Helper()
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=64MiB")
	a := New(Options{Defrag: true}, strategies.NewMemory(&d))
	var out strings.Builder
	a.SetTracer(func(e strategies.TraceEvent) {
		if e.Action == strategies.TraceMove {
			fmt.Fprintf(&out, "move %d from %d\n", e.Addr, e.From)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 13))
	var live []strategies.Handle
	for i := range 4000 {
		if len(live) > 0 && rng.IntN(100) < 45 {
			k := rng.IntN(len(live))
			a.Free(live[k])
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			continue
		}
		n := 1 + rng.Int64N(256<<10)
		if rng.IntN(8) == 0 {
			n = 1 + rng.Int64N(4<<20)
		}
		if h, ok := a.Malloc(n, 0); ok {
			live = append(live, h)
			off, _ := a.Block(h)
			fmt.Fprintf(&out, "%d: %d at %d\n", i, n, off)
		} else {
			fmt.Fprintf(&out, "%d: %d failed\n", i, n)
		}
		if i%64 == 0 {
			if err := a.Check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
		}
	}
	st := a.Stats()
	fmt.Fprintf(&out, "defrags %d moved %d\n", st.DefragEvents, st.DefragMoved)
	return out.String()
}

// TestDefragAsAll: defragment, which sorts and slides only the buffers
// below the highest free range, relocates what it did when it took every
// live buffer (defragAll), buffer for buffer, on random programs that
// defragment often.
func TestDefragAsAll(t *testing.T) {
	var defrags int
	for seed := range uint64(8) {
		got := defragProgram(t, seed)
		defragAll = true
		want := defragProgram(t, seed)
		defragAll = false
		if got != want {
			t.Fatalf("seed %d: sliding the buffers below the highest free range did otherwise than sliding all", seed)
		}
		var n, moved int
		fmt.Sscanf(got[strings.LastIndex(got, "defrags"):], "defrags %d moved %d", &n, &moved)
		defrags += n
	}
	t.Logf("%d defragmentations", defrags)
	if defrags < 100 {
		t.Errorf("%d defragmentations in all: the programs do not reach the case", defrags)
	}
}

// TestEvictManyPrograms: a buffer that evicts thousands of loaded
// programs, the last loaded first, reads no entry of the load order to
// unload each, where each unload was a pass over it (an allocation evicting
// 40,000 programs made a 2 MB trace take 1.1 s to run and 5.2 s to search
// for its capacity, 2026-11-25); each eviction is reported as the release
// of the top program, nothing moving. A program unloaded from the middle
// still takes the pass, and the programs above it move down.
func TestEvictManyPrograms(t *testing.T) {
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=64MiB")
	a := New(Options{}, strategies.NewMemory(&d))
	var got []string
	a.SetTracer(func(e strategies.TraceEvent) {
		switch e.Action {
		case strategies.TraceRelease:
			got = append(got, fmt.Sprintf("release %d at %d", e.Size, e.Addr-a.base))
		case strategies.TraceMove:
			got = append(got, fmt.Sprintf("move %d from %d to %d", e.Size, e.From-a.base, e.Addr-a.base))
		}
	})
	const n, size = 4000, 4096
	var progs []Program
	for range n {
		p, err := a.LoadProgram(size)
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	// The middle one first: a release at its place, the ones above it
	// moved down by its size.
	mid := n / 2
	a.UnloadProgram(progs[mid])
	if a.orderRead == 0 {
		t.Fatal("unloading a program from the middle read no entry: the test does not reach the pass")
	}
	want := []string{fmt.Sprintf("release %d at %d", size, mid*size)}
	for i := mid + 1; i < n; i++ {
		want = append(want, fmt.Sprintf("move %d from %d to %d", size, i*size, (i-1)*size))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("unloading program %d of %d: %d events, want %d (first %q)", mid, n, len(got), len(want), got[0])
	}
	got, read := nil, a.orderRead
	if _, ok := a.Malloc(a.Limit(), 0); !ok {
		t.Fatal("the buffer did not fit after evicting every program")
	}
	if ev := a.Stats().Evictions; ev != n-1 {
		t.Fatalf("%d evictions, want %d", ev, n-1)
	}
	if r := a.orderRead - read; r != 0 {
		t.Errorf("%d evictions read %d entries of the load order, want none", n-1, r)
	}
	want = nil
	for i := n - 2; i >= 0; i-- {
		want = append(want, fmt.Sprintf("release %d at %d", size, i*size))
	}
	if !slices.Equal(got, want) {
		t.Errorf("evictions: %d events, want %d releases from the top", len(got), len(want))
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
