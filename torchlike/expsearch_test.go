package torchlike

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"membench/strategies"
)

// replayExpandable replays a random program through an allocator with
// expandable segments on a 1 GiB card and returns what it did (the
// segment actions, each failed allocation, the final layout) and the
// allocator. Besides single allocations (a few of most of a segment, and
// a few larger than any segment, which make segments of their own) and
// frees it fragments: a run of page-sized blocks, every other one freed,
// then an empty_cache, which leaves unmapped ranges a page long between
// allocated pages for the searches to pass over. Some frees go through
// FreeRequested and FreeCompleted, a block pending in between (unless a
// release has completed it, as a replay does). Check runs every 16 steps,
// and with it the check of what the searches learnt
// (checkExpandableMemo).
func replayExpandable(t *testing.T, seed uint64, knobs string, n int) (string, *Allocator) {
	cfg := parseTorch(t, knobs)
	a, out := tracedOn1GiB(cfg)
	r := rand.New(rand.NewPCG(seed, 21))
	page := cfg.LargeSegmentSize
	var live, pending []strategies.Handle
	malloc := func(size, stream int64) {
		if h, ok := a.Malloc(size, stream); ok {
			live = append(live, h)
		} else {
			o := a.LastOOM()
			fmt.Fprintf(out, "oom %d %d %d %d\n", o.Requested, o.Rounded, o.Reserved, o.LargestFree)
		}
	}
	free := func(k int) {
		h := live[k]
		live[k] = live[len(live)-1]
		live = live[:len(live)-1]
		if r.IntN(8) == 0 {
			a.FreeRequested(h)
			pending = append(pending, h)
		} else {
			a.Free(h)
		}
	}
	for step := range n {
		if step%16 == 0 {
			if err := a.Check(); err != nil {
				t.Fatalf("%s seed %d step %d: %v", knobs, seed, step, err)
			}
		}
		stream := int64(r.IntN(2))
		switch x := r.IntN(100); {
		case x < 40:
			var size int64
			switch r.IntN(16) {
			case 0, 1, 2, 3, 4:
				size = int64(1 + r.IntN(1<<20)) // the small pool
			case 5, 6, 7, 8, 9:
				size = int64(1+r.IntN(4)) * page
			case 10:
				// Larger than any segment of the card: a segment of
				// its own, whose map fails.
				size = 2<<30 + int64(r.IntN(9))*page
			case 11:
				size = int64(300+r.IntN(700)) << 20 // most of a segment
			default:
				size = int64(1 + r.IntN(int(3*page)))
			}
			malloc(size, stream)
		case x < 80 && len(live) > 0:
			free(r.IntN(len(live)))
		case x < 85 && len(pending) > 0:
			k := r.IntN(len(pending))
			if a.IsPending(pending[k]) { // else a release completed it
				a.FreeCompleted(pending[k])
			}
			pending[k] = pending[len(pending)-1]
			pending = pending[:len(pending)-1]
		case x < 92:
			first := len(live)
			for range 2 + r.IntN(12) {
				malloc(page, stream)
			}
			for k := len(live) - 1; k >= first; k -= 2 {
				free(k)
			}
		default:
			a.EmptyCache()
		}
	}
	if err := a.Check(); err != nil {
		t.Fatalf("%s seed %d at the end: %v", knobs, seed, err)
	}
	fmt.Fprintf(out, "reserved %d\n", a.mem.Reserved())
	a.Layout(func(s strategies.Segment) { fmt.Fprintf(out, "%+v\n", s) })
	return out.String(), a
}

// expandableKnobs are the configurations the random programs of
// replayExpandable run under.
var expandableKnobs = []string{
	"expandable_segments=true",
	"expandable_segments=true,large_segment_size_mb=11",
	"expandable_segments=true,large_segment_size_mb=12,garbage_collection_threshold=0.5,per_process_memory_fraction=0.6",
	"expandable_segments=true,large_segment_size_mb=16,max_split_size_mb=40",
}

// asReference runs replayExpandable's random programs under every
// configuration, with a shortcut of the model and with *off set, which
// takes it away (the reference), and fails at the first difference in
// what the allocator did; work counts what each did of the work the
// shortcut saves. It fails too when the shortcut did as much work as the
// reference on every seed of a configuration, or more on one: the test
// would then test nothing.
func asReference(t *testing.T, off *bool, what string, work func(*Allocator) int64) {
	t.Helper()
	for _, knobs := range expandableKnobs {
		var done, doneRef int64
		for seed := range uint64(10) {
			got, a := replayExpandable(t, seed, knobs, 1500)
			*off = true
			want, ref := replayExpandable(t, seed, knobs, 1500)
			*off = false
			if got != want {
				t.Fatalf("%s seed %d: %s did otherwise than the reference:\n%s", knobs, seed, what, firstDiff(got, want))
			}
			w, wRef := work(a), work(ref)
			if w > wRef {
				t.Errorf("%s seed %d: %s worked %d, the reference %d", knobs, seed, what, w, wRef)
			}
			done, doneRef = done+w, doneRef+wRef
		}
		if done >= doneRef {
			t.Errorf("%s: %s worked %d, the reference %d: nothing saved", knobs, what, done, doneRef)
		}
	}
}

// TestExpandableSearchAsWalk: find_expandable_block's search, started
// where the last one stopped, finds what upstream's walk from the lowest
// address finds (walkFromStart), event for event, on random programs that
// fragment expandable segments, fail allocations, leave blocks pending and
// empty the cache, and it looks at fewer ranges.
func TestExpandableSearchAsWalk(t *testing.T) {
	asReference(t, &walkFromStart, "the search that resumes", func(a *Allocator) int64 { return a.expWalked })
}

// TestExpandableStormLinear: with a thousand unmapped ranges a page long
// between allocated pages, allocations of two pages that fail look at a
// bounded number of ranges each, where the walk from the lowest address
// looked at all of them every time (1,000 ranges and 100,000 failed
// allocations took 1.0 s in a replay, 2026-11-25). It also covers the
// card with one page left, where each failure maps a page and the release
// unmaps it again, a new range each time (unmapBlock's part).
func TestExpandableStormLinear(t *testing.T) {
	for _, c := range []struct {
		name    string
		spare   int64 // pages left free on the card
		streams int64 // the requests turn through streams 0..streams-1
		sizes   bool  // the requests alternate two pages and a little less
	}{
		{"one size and stream", 0, 1, false},
		{"a page spare", 1, 1, false},
		{"alternating sizes", 0, 1, true},
		{"alternating streams", 0, 2, false},
		{"both", 0, 2, true},
	} {
		cfg := parseTorch(t, "expandable_segments=true")
		page := cfg.LargeSegmentSize
		dev, _ := strategies.ParseDevice("a100-40g:capacity=40GiB")
		a := New(cfg, strategies.NewMemory(&dev))
		// Pages two by two on each stream in turn, so that freeing
		// every other page leaves every stream's segment a page free,
		// a page allocated.
		var hs []strategies.Handle
		for k := 0; ; k++ {
			h, ok := a.Malloc(page, int64(k/2)%c.streams)
			if !ok {
				break
			}
			hs = append(hs, h)
		}
		for i := 0; i < len(hs); i += 2 {
			a.Free(hs[i])
		}
		a.EmptyCache()
		if a.large.unmapped.Len() < 900 {
			t.Fatalf("%s: %d unmapped ranges: the test does not reach the storm", c.name, a.large.unmapped.Len())
		}
		// Fill the card with two-page blocks, then leave spare pages.
		for s := range c.streams {
			for {
				if _, ok := a.Malloc(2*page, s); !ok {
					break
				}
			}
		}
		if c.spare > 0 {
			// Free one page: the card has room for one page, not two.
			a.Free(hs[1])
			a.EmptyCache()
		}
		before := a.expWalked
		const tries = 20000
		for k := range tries {
			size := 2 * page
			if c.sizes && k%4 >= 2 {
				size -= 4096
			}
			if _, ok := a.Malloc(size, int64(k)%c.streams); ok {
				t.Fatalf("%s: two pages fitted on a full card", c.name)
			}
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if w := a.expWalked - before; w > 3*tries {
			t.Errorf("%s: %d failed allocations over %d unmapped ranges looked at %d ranges", c.name, tries, a.large.unmapped.Len(), w)
		}
	}
}

// TestExpandableSearchAfterFree: a free that joins two unmapped ranges
// a page long into a run of three pages makes the lowest of them the
// candidate for two pages again, though the search before it, which
// found none there, started the next one above them. The free is a plain
// one, or the completion of a block left pending by FreeRequested before
// that search (the pool's frees are counted apart then: poolFrees).
func TestExpandableSearchAfterFree(t *testing.T) {
	for _, pending := range []bool{false, true} {
		a := newTorch(t, "expandable_segments=true", "a100-40g")
		page := a.cfg.LargeSegmentSize
		p, base := pages(t, a, 8)
		for k, h := range p {
			if a.arena[h].addr != base+int64(k)*page {
				t.Fatalf("page %d at %#x, not %#x", k, a.arena[h].addr, base+int64(k)*page)
			}
		}
		a.Free(p[1])
		a.Free(p[3])
		a.EmptyCache() // p[1] and p[3] unmapped, p[2] between them
		if pending {
			a.FreeRequested(p[2])
		}
		h, ok := a.Malloc(2*page, 0)
		if !ok || a.arena[h].addr != base+8*page {
			t.Fatalf("pending %v: two pages at %#x (%v), want the top at %#x", pending, a.arena[h].addr, ok, base+8*page)
		}
		if pending {
			a.FreeCompleted(p[2])
		} else {
			a.Free(p[2])
		}
		h, ok = a.Malloc(2*page, 0)
		if !ok || a.arena[h].addr != base+page {
			t.Errorf("pending %v: two pages at %#x (%v), want page 1 at %#x", pending, a.arena[h].addr, ok, base+page)
		}
		if err := a.Check(); err != nil {
			t.Error(err)
		}
	}
}

// pages allocates n blocks of a page each on stream 0 and returns them
// with the address of the first.
func pages(t *testing.T, a *Allocator, n int) ([]strategies.Handle, int64) {
	t.Helper()
	var p []strategies.Handle
	for range n {
		h, ok := a.Malloc(a.cfg.LargeSegmentSize, 0)
		if !ok {
			t.Fatal("a page did not fit")
		}
		p = append(p, h)
	}
	return p, a.arena[p[0]].addr
}

// TestExpandableSearchAfterUnmap: the release on an allocation's failed
// mapping unmaps a free page that stood before the unmapped top of the
// segment, so the range the failed search found (at the top) now starts a
// page lower, below where the search stopped, with no free in between;
// the retry must find it there, as upstream's walk does, not pass over it
// to a new segment. This is why unmapBlock lowers the lessons' starts (Allocator.lower). Five
// pages fill a card of five; pages 1 and 4 are freed (page 4 next to the
// unmapped top); two pages fit no free block, the search takes page 4 and
// the range above it, and mapping a sixth page fails; empty_cache's part
// of the retry unmaps pages 1 and 4, and two pages then fit from page 4.
func TestExpandableSearchAfterUnmap(t *testing.T) {
	for _, walk := range []bool{false, true} {
		walkFromStart = walk
		a := newTorch(t, "expandable_segments=true", "a100-40g:capacity=100MiB")
		page := a.cfg.LargeSegmentSize
		if 5*page != a.mem.Dev.Total {
			t.Fatalf("page %d: the card is not five pages", page)
		}
		p, base := pages(t, a, 5)
		a.Free(p[1])
		a.Free(p[4])
		h, ok := a.Malloc(2*page, 0)
		walkFromStart = false
		if !ok || a.arena[h].addr != base+4*page {
			t.Errorf("walk %v: two pages at %#x (%v), want page 4 at %#x", walk, a.arena[h].addr, ok, base+4*page)
		}
		if a.stats.NumAllocRetries != 1 {
			t.Errorf("walk %v: %d retries, want the one after the release", walk, a.stats.NumAllocRetries)
		}
		if err := a.Check(); err != nil {
			t.Error(err)
		}
	}
}

// TestExpandableSearchAfterSeed: a segment seeded (SeedExpandable) after
// a search has learnt where to start brings unmapped ranges that no free
// and no unmap made, here below where the search stopped; the next search
// must see them, as upstream's walk from the lowest address does. The
// validator seeds before its first allocation, but the seeds are the
// package's API and Check would call the layout broken.
func TestExpandableSearchAfterSeed(t *testing.T) {
	for _, walk := range []bool{false, true} {
		walkFromStart = walk
		a := newTorch(t, "expandable_segments=true", "a100-40g")
		page := a.cfg.LargeSegmentSize
		h, ok := a.Malloc(page, 0)
		if !ok {
			t.Fatal("a page did not fit")
		}
		top := a.arena[h].addr
		low := top - 1<<40 // a reservation far below the first
		if _, err := a.SeedExpandable(low, 0, false, []SeedRun{{Addr: low, Size: page}}); err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Errorf("walk %v: after the seed: %v", walk, err)
		}
		h, ok = a.Malloc(2*page, 0)
		walkFromStart = false
		if !ok || a.arena[h].addr != low {
			t.Errorf("walk %v: two pages at %#x (%v), want the seeded reservation's free page and the range after it at %#x", walk, a.arena[h].addr, ok, low)
		}
	}
}

// TestCloneKeepsLessons: a clone's lessons of the expandable search are
// its own. The original and its clone each free one page (so that their
// pools' free counts agree); the clone's search then learns that nothing
// below the top holds two pages, where in the original the freed page
// joined two unmapped ranges into three pages that do. Shared lessons
// would send the original's search past them.
func TestCloneKeepsLessons(t *testing.T) {
	a := newTorch(t, "expandable_segments=true", "a100-40g")
	page := a.cfg.LargeSegmentSize
	p, base := pages(t, a, 8)
	a.Free(p[1])
	a.Free(p[3])
	a.EmptyCache() // p[1] and p[3] unmapped, p[2] between them
	if h, ok := a.Malloc(2*page, 0); !ok || a.arena[h].addr != base+8*page {
		t.Fatalf("two pages at %#x (%v), want the top at %#x", a.arena[h].addr, ok, base+8*page)
	}
	mem := *a.mem
	c := a.Clone(&mem)
	c.Free(p[5])
	if h, ok := c.Malloc(2*page, 0); !ok || c.arena[h].addr != base+10*page {
		t.Fatalf("clone: two pages at %#x (%v), want the top at %#x", c.arena[h].addr, ok, base+10*page)
	}
	a.Free(p[2])
	if h, ok := a.Malloc(2*page, 0); !ok || a.arena[h].addr != base+page {
		t.Errorf("two pages at %#x (%v), want page 1 at %#x", a.arena[h].addr, ok, base+page)
	}
	for _, x := range []*Allocator{a, c} {
		if err := x.Check(); err != nil {
			t.Error(err)
		}
	}
}

// TestReleaseSkippedAsDone: a release of the paged blocks that finds its
// pool as the last one left it is skipped (releasedAlready), and the
// allocator does what it does when every release searches
// (releaseEveryTime), event for event, on random programs that fragment
// expandable segments, fail allocations, leave blocks pending and empty
// the cache, and it searches less.
func TestReleaseSkippedAsDone(t *testing.T) {
	asReference(t, &releaseEveryTime, "skipping the releases that would change nothing", func(a *Allocator) int64 { return a.pagedSearched })
}

// TestReleaseStormStreams: with a small block live on each of many
// streams (the rest of each stream's page cached, under a page),
// allocations that fail search for the paged blocks a bounded number of
// times in all, where each failure searched once for every stream (6,250
// streams and 18,750 failures took 5.6 s in a replay, 2026-11-25). A free
// that leaves a page free between two failures makes the next release
// search again, and the searches after it are skipped again; an
// allocation and a free of a smaller block between every two failures
// do not (12,500 streams and 12,500 such failures took 8.4 s).
func TestReleaseStormStreams(t *testing.T) {
	const streams, fails = 2000, 2000
	a := newTorch(t, "expandable_segments=true", "a100-40g:capacity=8GiB") // a 2 MiB page a stream
	var live []strategies.Handle
	for s := range int64(streams) {
		h, ok := a.Malloc(512, s)
		if !ok {
			t.Fatalf("stream %d: 512 B did not fit", s)
		}
		live = append(live, h)
	}
	storm := func() {
		for range fails {
			if _, ok := a.Malloc(100<<30, 0); ok {
				t.Fatal("100 GiB fit on an 8 GiB card")
			}
		}
	}
	storm()
	if a.pagedSearched > 2*streams {
		t.Errorf("%d failed allocations over %d streams searched %d times", fails, streams, a.pagedSearched)
	}
	a.Free(live[0])
	before := a.pagedSearched
	storm()
	if n := a.pagedSearched - before; n == 0 || n > 2*streams {
		t.Errorf("after a free, %d failed allocations over %d streams searched %d times", fails, streams, n)
	}
	// An allocation and a free of a block under a page between every
	// two failures, which change the pool but bring it no paged block.
	before = a.pagedSearched
	for i := range fails {
		if _, ok := a.Malloc(100<<30, 0); ok {
			t.Fatal("100 GiB fit on an 8 GiB card")
		}
		h, ok := a.Malloc(1024, int64(i%streams))
		if !ok {
			t.Fatal("1 KiB did not fit")
		}
		a.Free(h)
	}
	if n := a.pagedSearched - before; n > 2*streams {
		t.Errorf("with an allocation and a free between them, %d failed allocations over %d streams searched %d times", fails, streams, n)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	releaseEveryTime = true
	defer func() { releaseEveryTime = false }()
	before = a.pagedSearched
	storm()
	if n := a.pagedSearched - before; n < fails*(streams-1) {
		t.Errorf("releasing every time searched %d times, want %d or more: the storm does not reach the search", n, fails*(streams-1))
	}
}

// TestExpandableBeyondSegments: allocations larger than any expandable
// segment of the card, which fail, look at no unmapped range, where each
// walked every range the ones before had left: a segment of its own for
// each, whose map fails (100,000 failed allocations of nine sizes above 2
// GiB on a 1 GiB card took 5.3 s in a replay, 2026-11-25). Each still
// makes its segment, as upstream's find_expandable_block does.
func TestExpandableBeyondSegments(t *testing.T) {
	a := newTorch(t, "expandable_segments=true", "a100-40g:capacity=1GiB")
	const fails = 2000
	for i := range int64(fails) {
		if _, ok := a.Malloc(2<<30+i%9*(2<<20), 0); ok {
			t.Fatal("2 GiB fit on a 1 GiB card")
		}
	}
	if a.expWalked != 0 || len(a.exp) < fails {
		t.Errorf("%d failed allocations looked at %d ranges and made %d segments, want none and %d or more", fails, a.expWalked, len(a.exp), fails)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
