package traces

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTrackerAgainstModel drives a Tracker and a map through the same
// random allocations, frees, donations and mistakes, with ids dense,
// scattered over many pages (which turns the tracker sparse), and above
// the flat directory, and checks every value and every error's kind.
func TestTrackerAgainstModel(t *testing.T) {
	for _, mode := range []string{"dense", "scattered", "high"} {
		t.Run(mode, func(t *testing.T) {
			trackerAgainstModel(t, new(Tracker[int64]), mode)
		})
	}
}

// TestTrackerReset checks that a reset tracker is as good as new: one
// left with live and donated ids in every mode (dense pages, sparse map,
// pages above the directory), and last either with a few dense ids or
// with a directory longer than Reset keeps, is reset and must then pass
// the model test of each mode, its values, its errors and its live count.
func TestTrackerReset(t *testing.T) {
	for _, mode := range []string{"dense", "scattered", "high"} {
		for _, last := range []string{"dense", "long"} {
			t.Run(mode+"/after-"+last, func(t *testing.T) {
				var tr Tracker[int64]
				for _, dirty := range []string{"high", "scattered", last} {
					dirtyTracker(t, &tr, dirty)
					tr.Reset()
					if tr.Live() != 0 {
						t.Fatalf("%d live after Reset", tr.Live())
					}
					// Nothing is known of the ids before the reset.
					if _, err := tr.Free(5); !errors.Is(err, ErrUnknownID) {
						t.Fatalf("free of an id allocated before the reset: %v, want ErrUnknownID", err)
					}
				}
				if last == "long" && tr.dir != nil {
					t.Errorf("Reset kept a directory of %d pages", len(tr.dir))
				}
				trackerAgainstModel(t, &tr, mode)
			})
		}
	}
}

// dirtyTracker leaves ids live and donated in tr, placed as mode says, or
// (long) allocates and frees ids one by one past resetKeepDir pages.
func dirtyTracker(t *testing.T, tr *Tracker[int64], mode string) {
	if mode == "long" {
		for id := range uint64(resetKeepDir+2) * valPageSize {
			if err := tr.Alloc(id, 1, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Free(id); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 3000 {
		id := uint64(i)
		switch mode {
		case "high":
			id += 1 << 40
		case "scattered":
			id = uint64(i) * 3 * valPageSize
		}
		if err := tr.Alloc(id, 1, int64(i)); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(4) == 0 {
			if _, err := tr.Donate(id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func trackerAgainstModel(t *testing.T, tr *Tracker[int64], mode string) {
	rng := rand.New(rand.NewPCG(7, 8))
	live := map[uint64]int64{}
	donated := map[uint64]bool{}
	seen := map[uint64]bool{}
	var ids []uint64 // ever allocated, in order
	next := uint64(0)
	// tries counts the allocations and frees that TryAlloc and TryFree
	// did, called instead of Alloc and Free half the time (and Alloc or
	// Free after them when they decline).
	tries := 0
	newID := func() uint64 {
		switch mode {
		case "scattered":
			next += 1 + uint64(rng.IntN(3))*valPageSize
		case "high":
			next++
			return 1<<40 + next*uint64(1+rng.IntN(2))
		default:
			next++
		}
		return next
	}
	for step := range 60000 {
		switch r := rng.IntN(100); {
		case r < 45 || len(live) == 0:
			id := newID()
			if seen[id] {
				continue
			}
			v := int64(step)
			if rng.IntN(2) == 0 && tr.TryAlloc(id, v) {
				tries++
			} else if err := tr.Alloc(id, 1, v); err != nil {
				t.Fatalf("step %d: alloc %d: %v", step, id, err)
			}
			live[id], seen[id] = v, true
			ids = append(ids, id)
		case r < 85:
			// Free a live id, preferring old ones.
			id := ids[rng.IntN(len(ids))]
			v, ok := int64(0), false
			if rng.IntN(2) == 0 {
				v, ok = tr.TryFree(id)
			}
			var err error
			if ok {
				tries++
			} else {
				v, err = tr.Free(id)
			}
			want, ok := live[id]
			switch {
			case ok && (err != nil || v != want):
				t.Fatalf("step %d: free %d = %d %v, want %d", step, id, v, err, want)
			case !ok && !errors.Is(err, ErrDoubleFree):
				t.Fatalf("step %d: second free of %d: %v, want ErrDoubleFree", step, id, err)
			}
			delete(live, id)
			delete(donated, id)
		case r < 90:
			id := newID() + 1<<20
			if _, err := tr.Free(id); !seen[id] && !errors.Is(err, ErrUnknownID) {
				t.Fatalf("step %d: free of unknown %d: %v", step, id, err)
			}
		case r < 95:
			id := ids[rng.IntN(len(ids))]
			if _, ok := live[id]; ok && tr.TryAlloc(id, 0) {
				t.Fatalf("step %d: TryAlloc of live %d succeeded", step, id)
			}
			err := tr.Alloc(id, 1, 0)
			if _, ok := live[id]; ok != errors.Is(err, ErrLiveID) {
				t.Fatalf("step %d: realloc of %d (live %v): %v", step, id, ok, err)
			}
			if err == nil {
				live[id] = 0
			}
		default:
			id := ids[rng.IntN(len(ids))]
			v, err := tr.Donate(id)
			want, ok := live[id]
			switch {
			case ok && !donated[id] && (err != nil || v != want):
				t.Fatalf("step %d: donate %d = %d %v", step, id, v, err)
			case (!ok || donated[id]) && !errors.Is(err, ErrBadDonor):
				t.Fatalf("step %d: bad donation of %d: %v", step, id, err)
			}
			if ok {
				donated[id] = true
			}
		}
		if tr.Live() != len(live) {
			t.Fatalf("step %d: %d live, want %d", step, tr.Live(), len(live))
		}
	}
	// Drain: every page empties and is recycled; its ids
	// must still be known as freed, and taken again.
	for _, id := range ids {
		v, err := tr.Free(id)
		want, ok := live[id]
		if ok && (err != nil || v != want) || !ok && !errors.Is(err, ErrDoubleFree) {
			t.Fatalf("drain: free %d = %d %v (live %v)", id, v, err, ok)
		}
		delete(live, id)
	}
	if tr.Live() != 0 {
		t.Fatalf("%d live after the drain", tr.Live())
	}
	for _, id := range ids[:100] {
		if err := tr.Alloc(id, 1, 5); err != nil {
			t.Fatalf("alloc of %d after the drain: %v", id, err)
		}
		if v, err := tr.Free(id); v != 5 || err != nil {
			t.Fatalf("free of %d after the drain: %d %v", id, v, err)
		}
		if _, err := tr.Free(id); !errors.Is(err, ErrDoubleFree) {
			t.Fatalf("second free of %d after the drain: %v", id, err)
		}
	}
	// Dense ids are the common case the Try methods are for; scattered
	// ones turn the tracker sparse early, and ids above the directory
	// have no page in it, so there they decline nearly always.
	if mode == "dense" && tries < 10000 {
		t.Errorf("TryAlloc and TryFree did %d operations, want most of their half", tries)
	}
	if mode == "scattered" && tr.sparse == nil {
		t.Error("scattered ids did not turn the tracker sparse")
	}
	if mode == "dense" && tr.sparse != nil {
		t.Error("dense ids turned the tracker sparse")
	}
}

// TestTrackerDirectoryEndsAtDirPages: the directory grows by append's
// capacity but never past dirPages, whose keys belong to the map. A
// directory that did served a key in that gap; when its page emptied,
// recycle took it for a page of the map and gave the map's next page a
// ref that was not its own (found by review: a 7-line trace panicked
// with index out of range).
func TestTrackerDirectoryEndsAtDirPages(t *testing.T) {
	var tr Tracker[int]
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tr.Alloc(900000*valPageSize, 1, 1))
	must(tr.Alloc((dirPages-1)*valPageSize, 1, 2))
	if len(tr.dir) > dirPages {
		t.Fatalf("directory of %d pages, more than %d", len(tr.dir), dirPages)
	}
	gap := uint64(dirPages+10) * valPageSize
	must(tr.Alloc(gap, 1, 3))
	if v, err := tr.Free(gap); err != nil || v != 3 {
		t.Fatalf("free of %d: %v, %v", gap, v, err)
	}
	hi := uint64(50_000_000) * valPageSize
	must(tr.Alloc(hi, 1, 4))
	must(tr.Alloc(hi+valPageSize, 1, 5))
	for id, want := range map[uint64]int{hi: 4, hi + valPageSize: 5, 900000 * valPageSize: 1, (dirPages - 1) * valPageSize: 2} {
		if v, err := tr.Free(id); err != nil || v != want {
			t.Errorf("free of %d: %v, %v; want %d", id, v, err, want)
		}
	}
	if tr.Live() != 0 {
		t.Errorf("%d live after freeing all", tr.Live())
	}
}

// TestTryAllocAsAlloc checks that TryAlloc takes an allocation only where
// Alloc would end in the same state: above sparseCheckPages pages it must
// still take allocations while the pages are full enough (a replay with
// 10^6 live blocks has about 13,000 of them), and decline where Alloc
// would move the values to the map.
func TestTryAllocAsAlloc(t *testing.T) {
	const pages = sparseCheckPages + 100
	for _, perPage := range []int{2, 7, 8, 9, 20} {
		t.Run(fmt.Sprint("live-per-page=", perPage), func(t *testing.T) {
			var try, plain Tracker[int64]
			both := func(id uint64) {
				t.Helper()
				tried := try.TryAlloc(id, int64(id))
				if !tried {
					if err := try.Alloc(id, 1, int64(id)); err != nil {
						t.Fatal(err)
					}
				}
				if err := plain.Alloc(id, 1, int64(id)); err != nil {
					t.Fatal(err)
				}
				if (try.sparse != nil) != (plain.sparse != nil) || try.Live() != plain.Live() {
					t.Fatalf("alloc of %d (TryAlloc took it: %v): sparse %v, live %d; Alloc alone: sparse %v, live %d",
						id, tried, try.sparse != nil, try.Live(), plain.sparse != nil, plain.Live())
				}
			}
			// 20 live ids in each page, then all but perPage freed: pages
			// stay, the live count falls.
			for p := range uint64(pages) {
				for k := range uint64(20) {
					both(p*valPageSize + k)
				}
			}
			for p := range uint64(pages) {
				for k := uint64(perPage); k < 20; k++ {
					if _, err := try.Free(p*valPageSize + k); err != nil {
						t.Fatal(err)
					}
					if _, err := plain.Free(p*valPageSize + k); err != nil {
						t.Fatal(err)
					}
				}
			}
			took := 0
			for p := range uint64(pages) {
				id := p*valPageSize + 30
				if try.sparse == nil && try.TryAlloc(id, int64(id)) {
					took++
					if err := plain.Alloc(id, 1, int64(id)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				both(id)
			}
			if perPage >= 8 && plain.sparse != nil {
				t.Errorf("%d live ids a page turned the tracker sparse", perPage)
			}
			if perPage >= 8 && took != pages {
				t.Errorf("TryAlloc took %d of %d allocations into full enough pages", took, pages)
			}
			if perPage < 8 && (took != 0 || plain.sparse == nil) {
				t.Errorf("pages with %d live ids: TryAlloc took %d, sparse %v; want Alloc to move them to the map", perPage, took, plain.sparse != nil)
			}
		})
	}
}

// TestSlabPages runs a tracker past slabFrom pages, where its pages come
// from blocks (newPage), and checks every value through allocation, free,
// recycling into the spares, Reset and reuse: a page handed out twice, or
// one block's pages overlapping, would show as a wrong value.
func TestSlabPages(t *testing.T) {
	var tr Tracker[uint64]
	const pages = slabFrom + 700
	const perPage = 9 // at least 8, so that the tracker stays dense
	for round := range 2 {
		for p := range uint64(pages) {
			for k := range uint64(perPage) {
				id := p*valPageSize + k*37
				if err := tr.Alloc(id, 1, id^uint64(round)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if tr.sparse != nil || tr.npages != pages {
			t.Fatalf("round %d: sparse %v, %d pages, want dense with %d", round, tr.sparse != nil, tr.npages, pages)
		}
		// Free every other page whole (recycled, then taken again from
		// the spares), then everything.
		for p := uint64(0); p < pages; p += 2 {
			for k := range uint64(perPage) {
				id := p*valPageSize + k*37
				if v, err := tr.Free(id); err != nil || v != id^uint64(round) {
					t.Fatalf("round %d: free %d = %d, %v", round, id, v, err)
				}
			}
		}
		for p := uint64(0); p < pages; p += 2 {
			id := p*valPageSize + 500
			if err := tr.Alloc(id, 1, id+7); err != nil {
				t.Fatal(err)
			}
		}
		for p := range uint64(pages) {
			for k := range uint64(perPage) {
				id := p*valPageSize + k*37
				v, err := tr.Free(id)
				if p%2 == 0 {
					if !errors.Is(err, ErrDoubleFree) {
						t.Fatalf("round %d: second free of %d: %v", round, id, err)
					}
					continue
				}
				if err != nil || v != id^uint64(round) {
					t.Fatalf("round %d: free %d = %d, %v", round, id, v, err)
				}
			}
			if p%2 == 0 {
				id := p*valPageSize + 500
				if v, err := tr.Free(id); err != nil || v != id+7 {
					t.Fatalf("round %d: free %d = %d, %v", round, id, v, err)
				}
			}
		}
		if tr.Live() != 0 || tr.npages != 0 {
			t.Fatalf("round %d: %d live, %d pages after freeing all", round, tr.Live(), tr.npages)
		}
		tr.Reset()
	}
}

// TestResetDropsBlocks: a tracker whose pages came from blocks keeps no
// spare page through Reset, since one page would hold its whole block,
// while one that never took a block keeps its usual spares.
func TestResetDropsBlocks(t *testing.T) {
	for _, pages := range []int{slabFrom / 2, slabFrom + 300} {
		var tr Tracker[uint64]
		var ids []uint64
		for p := range uint64(pages) {
			for k := range uint64(9) {
				id := p*valPageSize + k
				if err := tr.Alloc(id, 1, id); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
		}
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, id := range ids[:len(ids)/2] {
			if _, err := tr.Free(id); err != nil {
				t.Fatal(err)
			}
		}
		tr.Reset()
		want := min(pages, resetKeepSpare)
		if pages > slabFrom {
			want = 0
		}
		if len(tr.spare) != want || tr.blocks || tr.slab != nil {
			t.Errorf("%d pages: %d spares after Reset (want %d), blocks %v", pages, len(tr.spare), want, tr.blocks)
		}
		for _, id := range ids[:100] {
			if err := tr.Alloc(id, 1, id+1); err != nil {
				t.Fatal(err)
			}
			if v, err := tr.Free(id); err != nil || v != id+1 {
				t.Fatalf("after Reset: free %d = %d, %v", id, v, err)
			}
		}
	}
}

// TestPagesMoveIntoBlocks: when a tracker takes its first block (past
// slabFrom pages), the pages it took one by one before move into blocks
// (intoBlocks), with their values, and the spares go: none of the pages
// in use afterwards is one of the earlier ones, and every value is read
// back.
func TestPagesMoveIntoBlocks(t *testing.T) {
	var tr Tracker[uint64]
	before := map[*valPage[uint64]]bool{}
	const perPage = 9
	alloc := func(p uint64) {
		for k := range uint64(perPage) {
			id := p*valPageSize + k*41
			if err := tr.Alloc(id, 1, id*3); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range uint64(slabFrom) {
		alloc(p)
	}
	// A page emptied, to the spares.
	for k := range uint64(perPage) {
		if _, err := tr.Free(7*valPageSize + k*41); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range tr.dir {
		if r.p != nil {
			before[r.p] = true
		}
	}
	for _, p := range tr.spare {
		before[p] = true
	}
	if tr.blocks || len(tr.spare) != 1 {
		t.Fatalf("at %d pages: blocks %v, %d spares", tr.npages, tr.blocks, len(tr.spare))
	}
	alloc(slabFrom)
	alloc(slabFrom + 1)
	if !tr.blocks {
		t.Fatalf("at %d pages no block taken", tr.npages)
	}
	for key, r := range tr.dir {
		if r.p != nil && before[r.p] {
			t.Fatalf("page %d is still the one taken before the first block", key)
		}
	}
	if len(tr.spare) != 0 {
		t.Errorf("%d spares kept past the first block", len(tr.spare))
	}
	for p := range uint64(slabFrom + 2) {
		if p == 7 {
			continue
		}
		for k := range uint64(perPage) {
			id := p*valPageSize + k*41
			if v, err := tr.Free(id); err != nil || v != id*3 {
				t.Fatalf("free %d = %d, %v", id, v, err)
			}
		}
	}
}
