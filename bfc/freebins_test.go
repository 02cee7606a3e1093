package bfc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"membench/internal/freeset"
	"membench/strategies"
)

// TestFreeBinsAgainstSet checks freeBins against one freeset.Set in
// (size, address) order, the set it stands for, through a long random
// sequence of inserts, removes and replacements of chunks in the bins and
// in the big set, asking both for best fits, the largest chunk and
// membership throughout.
func TestFreeBinsAgainstSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bins, ref := newFreeBins(), freeset.New(false)
	var keys []freeset.Key
	size := func() int64 {
		switch rng.IntN(4) {
		case 0: // around the boundary of the big set
			return bigSize + MinAllocationSize*(rng.Int64N(9)-4)
		case 1:
			return MinAllocationSize * (1 + rng.Int64N(2*numBins))
		default: // few sizes: many chunks to a bin
			return MinAllocationSize * (1 + rng.Int64N(8))
		}
	}
	for step := range 50000 {
		switch r := rng.IntN(10); {
		case r < 4 || len(keys) == 0:
			k := freeset.Key{Size: size(), Addr: rng.Int64N(1<<40) &^ 255, B: int32(step)}
			if ref.Contains(k) {
				continue
			}
			bins.Insert(k)
			ref.Insert(k)
			keys = append(keys, k)
		case r < 7:
			i := rng.IntN(len(keys))
			bins.Remove(keys[i])
			ref.Remove(keys[i])
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
		default:
			i := rng.IntN(len(keys))
			nk := freeset.Key{Size: size(), Addr: keys[i].Addr, B: int32(step)}
			if rng.IntN(2) == 0 {
				nk.Size = keys[i].Size
				nk.Addr = rng.Int64N(1<<40) &^ 255
			}
			if ref.Contains(nk) {
				continue
			}
			bins.Replace(keys[i], nk)
			ref.Replace(keys[i], nk)
			keys[i] = nk
		}
		sameAnswers(t, step, bins, ref, freeset.Key{Size: size()}, keys, rng)
	}
	// Drained, every bin empties and the bitmap with it.
	for len(keys) > 0 {
		i := rng.IntN(len(keys))
		bins.Remove(keys[i])
		ref.Remove(keys[i])
		keys[i] = keys[len(keys)-1]
		keys = keys[:len(keys)-1]
		probe := freeset.Key{Size: size()}
		got, ok := bins.LowerBound(probe)
		want, wok := ref.LowerBound(probe)
		g2, ok2 := bins.Max()
		w2, wok2 := ref.Max()
		if got != want || ok != wok || g2 != w2 || ok2 != wok2 {
			t.Fatalf("%d chunks left: best fit %+v %v, want %+v %v; largest %+v %v, want %+v %v", len(keys), got, ok, want, wok, g2, ok2, w2, wok2)
		}
	}
	if bins.summary != 0 || bins.Len() != 0 {
		t.Errorf("drained, the bitmap's summary is %#x and %d chunks are left", bins.summary, bins.Len())
	}
}

// TestBinsPlaceAsOneSet replays the same random workload, by the sizes of
// harness.BenchmarkReplayLive and with GPU regions that grow, through an
// allocator whose free chunks are in the bins from the first and one
// whose free chunks stay in one set, and expects the same chunk for every
// allocation and sound invariants throughout: the replays of real traces
// keep few chunks free, never enough for the bins.
func TestBinsPlaceAsOneSet(t *testing.T) {
	for _, growth := range []bool{false, true} {
		opts := Options{Limit: 16 << 30, AllowGrowth: growth, GarbageCollection: growth}
		var as [2]*Allocator
		for i := range as {
			d, _ := strategies.ParseDevice("a100-80g")
			as[i] = New(opts, strategies.NewMemory(&d))
		}
		// Both skip the sorted array of few free chunks (smallSet),
		// which TestFewPlaceAsOneSet covers.
		as[0].free.toOne()
		as[1].free.toOne()
		as[0].free.at, as[1].free.at = 0, 1<<62
		// Neither goes back to the array: a reference that did would
		// compare the array with itself (found by review).
		as[0].free.backAt, as[1].free.backAt = -1, -1
		rng := rand.New(rand.NewPCG(9, 10))
		size := func() int64 {
			if rng.IntN(100) == 0 {
				return (1 + rng.Int64N(2<<20)) + 1<<20
			}
			return 1 + rng.Int64N(48<<10)
		}
		var live [][2]strategies.Handle
		mostFree := 0
		for step := range 200000 {
			mostFree = max(mostFree, as[1].free.Len())
			// 100,000 allocations first, then a free of a random live
			// one before each allocation, as the live benchmark does.
			if step >= 100000 && step%2 == 0 && len(live) > 0 {
				i := rng.IntN(len(live))
				for j, a := range as {
					a.Free(live[i][j])
				}
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			} else {
				n := size()
				var hs [2]strategies.Handle
				var oks [2]bool
				for j, a := range as {
					hs[j], oks[j] = a.Malloc(n, 0)
				}
				if oks[0] != oks[1] {
					t.Fatalf("growth %v, step %d: %d B fit one allocator and not the other", growth, step, n)
				}
				if oks[0] {
					p0, s0 := as[0].Chunk(hs[0])
					p1, s1 := as[1].Chunk(hs[1])
					if p0 != p1 || s0 != s1 {
						t.Fatalf("growth %v, step %d: %d B at %#x (%d B) in the bins, at %#x (%d B) in one set", growth, step, n, p0, s0, p1, s1)
					}
					live = append(live, hs)
				}
			}
			if step%20000 == 0 {
				for _, a := range as {
					if err := a.Check(); err != nil {
						t.Fatalf("growth %v, step %d: %v", growth, step, err)
					}
				}
			}
		}
		if as[0].free.one != nil || as[1].free.one == nil {
			t.Fatalf("growth %v: the allocators did not keep their free chunks as set up", growth)
		}
		if mostFree <= binAt {
			t.Errorf("growth %v: at most %d chunks free, too few for the bins", growth, mostFree)
		}
		if *as[0].Stats() != *as[1].Stats() {
			t.Errorf("growth %v: stats %+v in the bins, %+v in one set", growth, *as[0].Stats(), *as[1].Stats())
		}
	}
}

// TestSmallSetMatchesFreeset checks the sorted array of few free chunks
// (smallSet, through freeBins while it holds them) against a freeset.Set
// in (size, address) order, step by step: random inserts, removes and
// replacements that move a key up or down the order, among many chunks of
// one size (ties broken by address, compared unsigned as freeset does),
// with the best fit, the largest chunk, membership and the count compared
// after each, and the array's contents against the set's in order.
func TestSmallSetMatchesFreeset(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	bins, ref := newFreeBins(), freeset.New(false)
	var keys []freeset.Key
	// taken: the (size, address) pairs in the set, unique as a free
	// chunk's are (freeset.Key).
	taken := map[[2]int64]bool{}
	has := func(k freeset.Key) bool { return taken[[2]int64{k.Size, k.Addr}] }
	put := func(k freeset.Key, in bool) { taken[[2]int64{k.Size, k.Addr}] = in }
	size := func() int64 { return MinAllocationSize * (1 + rng.Int64N(6)) }
	addr := func() int64 {
		if rng.IntN(8) == 0 {
			return -rng.Int64N(1<<40) &^ 255 // the high bit set: above every other
		}
		return rng.Int64N(1<<20) &^ 255
	}
	for step := range 200000 {
		switch r := rng.IntN(10); {
		case (r < 4 || len(keys) == 0) && len(keys) < smallMax:
			k := freeset.Key{Size: size(), Addr: addr(), B: int32(step)}
			if has(k) {
				continue
			}
			bins.Insert(k)
			ref.Insert(k)
			put(k, true)
			keys = append(keys, k)
		case r < 7 && len(keys) > 0:
			i := rng.IntN(len(keys))
			bins.Remove(keys[i])
			ref.Remove(keys[i])
			put(keys[i], false)
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
		case len(keys) > 0:
			i := rng.IntN(len(keys))
			nk := freeset.Key{Size: size(), Addr: keys[i].Addr, B: int32(step)}
			if rng.IntN(2) == 0 {
				nk.Size = keys[i].Size
				nk.Addr = addr()
			}
			if has(nk) {
				continue
			}
			bins.Replace(keys[i], nk)
			ref.Replace(keys[i], nk)
			put(keys[i], false)
			put(nk, true)
			keys[i] = nk
		}
		if !bins.inFew {
			t.Fatalf("step %d: %d chunks left the sorted array", step, len(keys))
		}
		sameAnswers(t, step, bins, ref, freeset.Key{Size: size() + MinAllocationSize*(rng.Int64N(3)-1)}, keys, rng)
		if step%1000 == 0 {
			// The array is largest first, the set smallest first.
			items := ref.Items()
			few := bins.few.items()
			if len(few) != len(items) {
				t.Fatalf("step %d: %d entries, the set %d", step, len(few), len(items))
			}
			for i, k := range few {
				if k.key() != items[len(items)-1-i] {
					t.Fatalf("step %d: entry %d is %+v, the set's %+v", step, i, k.key(), items[len(items)-1-i])
				}
			}
		}
	}
	// One more than the array holds moves them all to one set, in order.
	for len(keys) <= smallMax {
		k := freeset.Key{Size: size(), Addr: addr(), B: int32(len(keys))}
		if has(k) {
			continue
		}
		bins.Insert(k)
		ref.Insert(k)
		put(k, true)
		keys = append(keys, k)
	}
	if bins.inFew || bins.one == nil || !slices.Equal(bins.one.Items(), ref.Items()) {
		t.Errorf("past %d chunks: still in the array %v, or one set unlike the reference", smallMax, bins.inFew)
	}
}

// TestFewPlaceAsOneSet replays random workloads that keep a few dozen
// chunks free, around smallMax, through an allocator whose free chunks
// start in the sorted array (smallSet) and one whose free chunks are in
// one set from the first, under both growth policies, and expects the same
// chunk for every allocation, the same stats, and sound invariants
// throughout; a workload whose free chunks pass smallMax and fall back
// checks the moves to one set and back (backToFew) on the way.
func TestFewPlaceAsOneSet(t *testing.T) {
	for _, growth := range []bool{false, true} {
		// liveN 0: phases of 800 live allocations and of 10, whose
		// free chunks pass smallMax and fall back far.
		for _, liveN := range []int{20, 60, 400, 0} {
			opts := Options{Limit: 1 << 30, AllowGrowth: growth, GarbageCollection: growth}
			var as [2]*Allocator
			for i := range as {
				d, _ := strategies.ParseDevice("a100-80g")
				as[i] = New(opts, strategies.NewMemory(&d))
			}
			as[1].free.toOne()
			as[1].free.at = 1 << 62
			as[1].free.backAt = -1 // one set for good
			rng := rand.New(rand.NewPCG(13, uint64(liveN)))
			size := func() int64 {
				if rng.IntN(50) == 0 {
					return 1 + rng.Int64N(8<<20)
				}
				return 1 + rng.Int64N(64<<10)
			}
			var live [][2]strategies.Handle
			mostFree := 0
			// spills and returns count the moves of the free chunks
			// from few to one and back.
			spills, returns, inFew := 0, 0, true
			for step := range 60000 {
				if as[1].free.inFew {
					t.Fatalf("step %d: the reference went back to the sorted array", step)
				}
				mostFree = max(mostFree, as[1].free.Len())
				if now := as[0].free.inFew; now != inFew {
					if now {
						returns++
					} else {
						spills++
					}
					inFew = now
				}
				target := liveN
				if liveN == 0 {
					target = 800
					if step/5000%2 == 1 {
						target = 10
					}
				}
				if len(live) > 0 && (len(live) >= target || rng.IntN(3) == 0) {
					i := rng.IntN(len(live))
					for j, a := range as {
						a.Free(live[i][j])
					}
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
				} else {
					n := size()
					var hs [2]strategies.Handle
					var oks [2]bool
					for j, a := range as {
						hs[j], oks[j] = a.Malloc(n, 0)
					}
					if oks[0] != oks[1] {
						t.Fatalf("growth %v, live %d, step %d: %d B fit one allocator and not the other", growth, liveN, step, n)
					}
					if oks[0] {
						p0, s0 := as[0].Chunk(hs[0])
						p1, s1 := as[1].Chunk(hs[1])
						if p0 != p1 || s0 != s1 {
							t.Fatalf("growth %v, live %d, step %d: %d B at %#x (%d B) from few, at %#x (%d B) from one set", growth, liveN, step, n, p0, s0, p1, s1)
						}
						live = append(live, hs)
					}
				}
				if step%500 == 0 {
					for _, a := range as {
						if err := a.Check(); err != nil {
							t.Fatalf("growth %v, live %d, step %d: %v", growth, liveN, step, err)
						}
					}
				}
			}
			if *as[0].Stats() != *as[1].Stats() {
				t.Errorf("growth %v, live %d: stats %+v from few, %+v from one set", growth, liveN, *as[0].Stats(), *as[1].Stats())
			}
			// The sorted array gives its chunks to one set only past
			// smallMax, and takes them back when they fall (these
			// workloads' free chunks fall back after each pass).
			if (mostFree > smallMax) != (spills > 0) || spills > 0 && returns == 0 {
				t.Errorf("growth %v, live %d: at most %d chunks free, moved to one set %d times and back %d", growth, liveN, mostFree, spills, returns)
			}
			t.Logf("growth %v, live %d: at most %d chunks free, moved to one set %d times and back %d", growth, liveN, mostFree, spills, returns)
		}
	}
}

// sameAnswers fails t unless bins answers as ref, the one ordered set it
// stands for: the best fit for probe, the largest chunk, the count, and
// the membership of a key it holds and of one it does not.
func sameAnswers(t *testing.T, step int, bins *freeBins, ref *freeset.Set, probe freeset.Key, keys []freeset.Key, rng *rand.Rand) {
	t.Helper()
	got, ok := bins.LowerBound(probe)
	want, wok := ref.LowerBound(probe)
	if got != want || ok != wok {
		t.Fatalf("step %d: best fit for %d B: %+v %v, want %+v %v", step, probe.Size, got, ok, want, wok)
	}
	got, ok = bins.Max()
	want, wok = ref.Max()
	if got != want || ok != wok {
		t.Fatalf("step %d: largest %+v %v, want %+v %v", step, got, ok, want, wok)
	}
	if bins.Len() != ref.Len() {
		t.Fatalf("step %d: %d chunks, want %d", step, bins.Len(), ref.Len())
	}
	if len(keys) > 0 {
		k := keys[rng.IntN(len(keys))]
		if !bins.Contains(k) {
			t.Fatalf("step %d: lost %+v", step, k)
		}
		k.B = -1
		if bins.Contains(k) {
			t.Fatalf("step %d: holds %+v", step, k)
		}
	}
}
