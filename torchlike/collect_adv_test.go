package torchlike

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"membench/strategies"
)

// replayAdversarial is replayRandom with the operations that reach the
// lists of whole blocks by other paths than a plain free: frees with
// pending stream uses completed later (by an empty_cache or a malloc's
// release path), a clone that takes over the run (the validator's
// competing readings), settings switched during the run (as
// pytorch_cases_test's applySettings switches them: the collection
// threshold, max_split_size and roundup), and, with seed set, a warm
// start of cudaMalloc segments, some with live blocks, and more seeded
// during the run.
func replayAdversarial(seed uint64, conf string, n int, warm bool) string {
	sp, _ := strategies.ParseSpec("torch:" + conf)
	cfg, _ := ParseConfig(sp)
	dev, _ := strategies.ParseDevice("a100-40g:capacity=1GiB")
	a := New(cfg, strategies.NewMemory(&dev))
	var out strings.Builder
	hook := func(x *Allocator) {
		x.OnTrace = func(act string, addr, size, stream int64) {
			fmt.Fprintf(&out, "%s %x %d %d\n", act, addr, size, stream)
		}
	}
	hook(a)
	r := rand.New(rand.NewPCG(seed, 11))
	var live []strategies.Handle
	addr := int64(1 << 40)
	seedSome := func(n int) string {
		for s := range n {
			// A segment with live blocks is under every
			// max_split_size the program sets: upstream splits
			// no larger one (should_split).
			size := int64(2+r.IntN(60)) << 20
			var blocks []SeedBlock
			if s%3 != 0 {
				size = int64(3+r.IntN(28)) << 20
				blocks = append(blocks, SeedBlock{Addr: addr + size/2, Size: 1 << 20, Requested: 1 << 20, Pending: s%3 == 2})
			}
			hs, err := a.SeedSegment(addr, size, int64(s%2), false, blocks)
			if err != nil {
				return err.Error()
			}
			for k, h := range hs {
				if !blocks[k].Pending {
					live = append(live, h)
				}
			}
			addr += size + 1<<30
		}
		return ""
	}
	if warm {
		if err := seedSome(12); err != "" {
			return err
		}
	}
	// The switches keep max_split_size (applySettings resets what a
	// switch does not name): lowered during a run, it makes split
	// blocks oversize, which release_available_cached_blocks frees as
	// if whole, upstream as here.
	ms := strings.TrimPrefix(regexpMS.FindString(conf), ",")
	settings := []string{
		"garbage_collection_threshold:0.5", "garbage_collection_threshold:0.9",
		"garbage_collection_threshold:0.3,roundup_power2_divisions:4", "garbage_collection_threshold:0.7",
	}
	for step := range n {
		if step%32 == 0 {
			if err := a.Check(); err != nil {
				return fmt.Sprintf("step %d: %v", step, err)
			}
		}
		x := r.IntN(1000)
		switch {
		case x < 520:
			size := int64(1 + r.IntN(1<<uint(9+r.IntN(20))))
			if h, ok := a.Malloc(size, int64(r.IntN(3))); ok {
				live = append(live, h)
			} else {
				o := a.LastOOM()
				fmt.Fprintf(&out, "oom %d %d %d\n", o.Requested, o.Rounded, o.Reserved)
			}
		case x < 800 && len(live) > 0:
			k := r.IntN(len(live))
			a.Free(live[k])
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		case x < 960 && len(live) > 0:
			// A free with stream uses outstanding: completed by the
			// next synchronization.
			k := r.IntN(len(live))
			a.FreeRequested(live[k])
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		case x < 975:
			a.EmptyCache()
		case x < 980 && warm:
			// A seed during the run (none is made now, but a seed
			// must leave the lists untrusted).
			if err := seedSome(2); err != "" {
				return err
			}
		case x < 990:
			m := *a.mem
			c := a.Clone(&m)
			// The clone frees some blocks, the original others and
			// empties its cache, then the clone takes over: the
			// original's notes, appended last, must not overwrite
			// the clone's.
			k := len(live) / 3
			for _, h := range live[:k] {
				c.Free(h)
			}
			for _, h := range live[k : 2*k] {
				a.Free(h)
			}
			a.EmptyCache()
			live = live[k:]
			a = c
			hook(a)
		case !cfg.ExpandableSegments:
			s := settings[r.IntN(len(settings))]
			if ms != "" {
				s += "," + ms
			}
			sp, _ := strategies.ParseSpec("torch:" + strings.ReplaceAll(s, ":", "="))
			c, _ := ParseConfig(sp)
			a.cfg.GCThreshold, a.cfg.MaxSplitSize, a.cfg.Divisions = c.GCThreshold, c.MaxSplitSize, c.Divisions
		}
	}
	if err := a.Check(); err != nil {
		return fmt.Sprintf("end: %v", err)
	}
	fmt.Fprintf(&out, "reserved %d\n", a.mem.Reserved())
	a.Layout(func(s strategies.Segment) { fmt.Fprintf(&out, "%+v\n", s) })
	return out.String()
}

var regexpMS = regexp.MustCompile(`,?max_split_size_mb=[0-9]+`)

// TestCollectAsScanAdversarial: the collection and release by lists
// release what the scans release, in the same order, under programs with
// pending frees, clones, settings switched mid-run and warm starts.
func TestCollectAsScanAdversarial(t *testing.T) {
	for _, conf := range []string{
		"garbage_collection_threshold=0.6,per_process_memory_fraction=0.8",
		"garbage_collection_threshold=0.3,per_process_memory_fraction=0.5,max_split_size_mb=32",
		"garbage_collection_threshold=0.5,per_process_memory_fraction=0.6,roundup_power2_divisions=8",
	} {
		for _, warm := range []bool{false, true} {
			for seed := range uint64(12) {
				got, want := scanned(func() string { return replayAdversarial(seed, conf, 4000, warm) })
				if got != want {
					t.Fatalf("%s warm=%v seed %d: the lists released otherwise than the scans:\n%s", conf, warm, seed, firstDiff(got, want))
				}
				if strings.HasPrefix(got, "step") || strings.HasPrefix(got, "end") {
					t.Fatalf("%s warm=%v seed %d: %s", conf, warm, seed, got)
				}
			}
		}
	}
}

func firstDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return fmt.Sprintf("line %d: got %q, want %q", i, x[i], y[i])
		}
	}
	return fmt.Sprintf("lengths %d, %d", len(x), len(y))
}

// TestCollectOneSegment: the collection's shortcut when no cudaMalloc
// segment exists does not skip a pool with one: a single cached segment
// above the threshold is collected before a new one is made on another
// stream (it would fit beside it: only the collection frees it).
func TestCollectOneSegment(t *testing.T) {
	run := func() string {
		a := newTorch(t, "garbage_collection_threshold=0.5,per_process_memory_fraction=0.5", "a100-40g:capacity=1GiB")
		var got []string
		a.OnTrace = func(act string, addr, size, stream int64) {
			got = append(got, fmt.Sprintf("%s %d", act, size>>20))
		}
		h, ok := a.Malloc(300<<20, 0)
		if !ok {
			t.Fatal("300 MiB did not fit")
		}
		a.Free(h)
		if _, ok := a.Malloc(200<<20, 1); !ok {
			t.Fatal("200 MiB did not fit")
		}
		return strings.Join(got, ",")
	}
	got, want := scanned(run)
	if got != want {
		t.Errorf("collected %s, the scan %s", got, want)
	}
	if want := "segment_alloc 300,segment_free 300,segment_alloc 200"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestNotesBounded: once a collection and a release have begun their
// lists, a long run with no failure (frees that leave whole blocks, which
// Free notes) keeps them within their bounds (one note per arena slot for
// the release, two for the collection) rather than growing with the run;
// and the collection and release after the lists were dropped release
// what the scans do.
func TestNotesBounded(t *testing.T) {
	run := func(empty bool) string {
		a := newTorch(t, "garbage_collection_threshold=0.3,per_process_memory_fraction=0.5", "a100-40g:capacity=1GiB")
		var out strings.Builder
		a.OnTrace = func(act string, addr, size, stream int64) {
			if act == ActionSegmentFree {
				fmt.Fprintf(&out, "%s %x %d\n", act, addr, size)
			}
		}
		var hs []strategies.Handle
		for range 30 {
			if h, ok := a.Malloc(12<<20, 0); ok {
				hs = append(hs, h)
			}
		}
		if _, ok := a.Malloc(900<<20, 0); ok {
			t.Fatal("900 MiB fitted beside 360 MiB under a 512 MiB limit")
		}
		if !scanEveryRelease && a.large.trust != trustRelease|trustGC {
			t.Fatalf("the failure began no lists (trust %b)", a.large.trust)
		}
		// A whole block noted before the lists are dropped, and not
		// noted again: only a new scan finds it. The run's allocations
		// are served from a block cached on another stream, so that
		// none collects it.
		h, ok := a.Malloc(12<<20, 1)
		if !ok {
			t.Fatal("12 MiB did not fit")
		}
		a.Free(h)
		a.Free(hs[len(hs)-1])
		hs = hs[:len(hs)-1]
		for range 20000 {
			h, ok := a.Malloc(12<<20, 1)
			if !ok {
				t.Fatal("12 MiB did not fit")
			}
			a.Free(h)
		}
		if n, m := len(a.large.wholes), len(a.large.gcWholes); n > len(a.arena) || m > 2*len(a.arena) {
			t.Errorf("20,000 frees left %d release and %d collection notes over %d slots", n, m, len(a.arena))
		}
		for _, h := range hs[:5] {
			a.Free(h)
		}
		if empty {
			a.EmptyCache()
		} else if _, ok := a.Malloc(900<<20, 0); ok {
			t.Fatal("900 MiB fitted")
		}
		return out.String()
	}
	// A failed allocation collects first (the collection's list); an
	// empty_cache only releases (the release's list).
	for _, empty := range []bool{false, true} {
		got, want := scanned(func() string { return run(empty) })
		if got != want {
			t.Errorf("after the lists were dropped, released\n%s\nthe scans\n%s", got, want)
		}
	}
}
