package torchlike

import (
	"fmt"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
	"membench/strategies"
)

// expDiffKnobs are the configurations the differential program starts
// from: expandable segments with the default and odd page sizes, with
// garbage collection under a memory fraction, with max_split_size, with
// roundup divisions, and off (switched on later by a settings step).
var expDiffKnobs = []string{
	"expandable_segments=true",
	"expandable_segments=true,large_segment_size_mb=11",
	"expandable_segments=true,large_segment_size_mb=12,garbage_collection_threshold=0.5,per_process_memory_fraction=0.6",
	"expandable_segments=true,large_segment_size_mb=16,max_split_size_mb=40",
	"expandable_segments=true,roundup_power2_divisions=4,per_process_memory_fraction=0.9",
	"expandable_segments=false,garbage_collection_threshold=0.7,per_process_memory_fraction=0.8",
}

// expDiffSettings are the switches a settings step applies, as
// pytorch_cases_test's applySettings does (what is not given returns to
// its default).
var expDiffSettings = []string{
	"expandable_segments=true",
	"expandable_segments=false",
	"expandable_segments=true,max_split_size_mb=40",
	"expandable_segments=true,garbage_collection_threshold=0.5",
	"expandable_segments=true,roundup_power2_divisions=4",
	"max_non_split_rounding_mb=64",
}

// expSide is one allocator of the differential replay and what the
// program holds of it.
type expSide struct {
	a             *Allocator
	mem           *strategies.Memory
	out           strings.Builder
	live, pending []strategies.Handle
}

func (s *expSide) attach(a *Allocator, mem *strategies.Memory) {
	s.a, s.mem = a, mem
	a.OnTrace = func(act string, addr, size, stream int64) {
		fmt.Fprintf(&s.out, "%s %x %d %d\n", act, addr, size, stream)
	}
}

// runExpDiff decodes data into a program of the allocator's public
// operations and runs it on two allocators, one whose find_expandable_block
// resumes where its last search stopped and one that walks from the lowest
// address as upstream does (walkFromStart), step by step: their segment
// actions, failures and answers (Malloc's success, LastOOM, WouldRelease,
// IsPending, a warm start's seed) must agree after every step, and Check, with its check of
// what the searches learnt, must pass on both.
func runExpDiff(t *testing.T, data []byte) {
	if len(data) < 2 {
		return
	}
	data = data[:min(len(data), 3000)]
	defer func() { walkFromStart = false }()
	knobs := expDiffKnobs[int(data[0])%len(expDiffKnobs)]
	capacity := []string{"256MiB", "1GiB", "100MiB", "4GiB"}[int(data[1])%4]
	cfg := parseTorch(t, knobs)
	var sides [2]*expSide
	for k := range sides {
		dev, err := strategies.ParseDevice("a100-40g:capacity=" + capacity)
		if err != nil {
			t.Fatal(err)
		}
		mem := strategies.NewMemory(&dev)
		sides[k] = &expSide{}
		sides[k].attach(New(cfg, mem), mem)
	}
	pos := 2
	next := func() int {
		if pos >= len(data) {
			return 0
		}
		pos++
		return int(data[pos-1])
	}
	// do runs op on both sides, the memo first, the walk second, each
	// with its own held handles; op returns what it answered.
	var log [2]strings.Builder
	do := func(name string, op func(s *expSide) string) {
		for k, s := range sides {
			walkFromStart = k == 1
			fmt.Fprintf(&log[k], "%s: %s\n", name, op(s))
		}
		walkFromStart = false
		if got, want := sides[0].out.String()+log[0].String(), sides[1].out.String()+log[1].String(); got != want {
			t.Fatalf("%s %s: the search that resumes did otherwise than the walk from the start at step %q:\n%s", knobs, capacity, name, firstDiff(got, want))
		}
		// Equal so far: only the next step's output is compared.
		for k, s := range sides {
			s.out.Reset()
			log[k].Reset()
		}
	}
	page := cfg.LargeSegmentSize
	sizeOf := func() int64 {
		x, y := next(), next()
		switch x % 8 {
		case 0:
			return 0
		case 1, 2:
			return int64(1 + y*4099) // the small pool
		case 3:
			return int64(1+y%5) * page
		case 4:
			return int64(1 + y*(3*int(page)/256))
		case 5:
			return int64(y%3+1) * SmallBuffer
		case 6:
			return int64(y+1) << 24 // up to 4 GiB: past small cards
		default:
			return int64(y%5+1)*page - int64(y)
		}
	}
	malloc := func(s *expSide, size, stream int64) string {
		h, ok := s.a.Malloc(size, stream)
		if ok {
			// The address too: a search that finds a free block
			// long enough maps nothing, so the trace would not tell.
			s.live = append(s.live, h)
			return fmt.Sprintf("ok %#x", s.a.Addr(h))
		}
		o := s.a.LastOOM()
		return fmt.Sprintf("oom %d %d %d %d", o.Requested, o.Rounded, o.Reserved, o.LargestFree)
	}
	// take removes the handle at k (modulo the list's length) from hs,
	// false when hs is empty.
	take := func(hs *[]strategies.Handle, k int) (strategies.Handle, bool) {
		if len(*hs) == 0 {
			return 0, false
		}
		k %= len(*hs)
		h := (*hs)[k]
		(*hs)[k] = (*hs)[len(*hs)-1]
		*hs = (*hs)[:len(*hs)-1]
		return h, true
	}
	seeds, clones := 0, 0
	for step := 0; pos < len(data); step++ {
		switch op := next() % 13; op {
		case 0, 1, 2:
			size, stream := sizeOf(), int64(next()%3)
			do(fmt.Sprintf("malloc %d %d", size, stream), func(s *expSide) string { return malloc(s, size, stream) })
		case 3, 4:
			k := next()
			do("free", func(s *expSide) string {
				h, ok := take(&s.live, k)
				if !ok {
					return "none"
				}
				s.a.Free(h)
				return "done"
			})
		case 5:
			k := next()
			do("free_requested", func(s *expSide) string {
				h, ok := take(&s.live, k)
				if !ok {
					return "none"
				}
				s.a.FreeRequested(h)
				s.pending = append(s.pending, h)
				return "done"
			})
		case 6:
			k := next()
			do("free_completed", func(s *expSide) string {
				h, ok := take(&s.pending, k)
				if !ok {
					return "none"
				}
				if !s.a.IsPending(h) { // a release completed it
					return "completed already"
				}
				s.a.FreeCompleted(h)
				return "done"
			})
		case 7:
			do("empty_cache", func(s *expSide) string { s.a.EmptyCache(); return "" })
		case 8:
			// Fragment: pages on one stream, every other one freed.
			n, stream := 2+next()%12, int64(next()%3)
			do(fmt.Sprintf("fragment %d %d", n, stream), func(s *expSide) string {
				var r strings.Builder
				first := len(s.live)
				for range n {
					r.WriteString(malloc(s, page, stream) + ";")
				}
				for k := len(s.live) - 1; k >= first; k -= 2 {
					h, _ := take(&s.live, k)
					s.a.Free(h)
				}
				return r.String()
			})
		case 9:
			conf := expDiffSettings[next()%len(expDiffSettings)]
			do("settings "+conf, func(s *expSide) string {
				if strings.Contains(conf, "max_split_size_mb") && s.a.stats.current(sSegment, All) > 0 {
					// A cudaMalloc segment split while max_split_size
					// was unlimited may hold a free block above the new
					// limit, which a failed allocation would cudaFree as
					// if it were a segment: a CUDA error upstream, and
					// refused by ParseConfig for the segments it makes
					// (not modelled; the model's release then panics).
					return "refused"
				}
				if err := applySettings(s.a, conf); err != nil {
					t.Fatal(err)
				}
				return ""
			})
		case 10:
			size, stream := sizeOf(), int64(next()%3)
			do(fmt.Sprintf("would_release %d %d", size, stream), func(s *expSide) string {
				return fmt.Sprint(s.a.WouldRelease(size, stream))
			})
		case 11:
			// A warm start's seed (SeedExpandable), far below the
			// reservations the model makes: a few mapped runs, each
			// with a live or pending block at its start.
			x, y := next(), next()
			if seeds == 16 { // 16 TiB apart, below the model's own
				break
			}
			stream, small := int64(x%3), x&4 != 0
			pg := page
			if small {
				pg = SmallBuffer
			}
			base := int64(0x2000_0000_0000) + int64(seeds)<<40
			seeds++
			var runs []SeedRun
			for j := range 1 + y%4 {
				at := base + int64(2*j+y%2)*pg
				runs = append(runs, SeedRun{Addr: at, Size: int64(1+(y>>j)%2) * pg,
					Live: []SeedBlock{{Addr: at, Size: pg / 2, Requested: pg / 2, Pending: (y>>(j+4))%2 == 1}}})
			}
			do(fmt.Sprintf("seed %d %v %x", stream, small, y), func(s *expSide) string {
				rs := append([]SeedRun(nil), runs...)
				hss, err := s.a.SeedExpandable(base, stream, small, rs)
				if err != nil {
					return err.Error()
				}
				for j, hs := range hss {
					if rs[j].Live[0].Pending {
						s.pending = append(s.pending, hs...)
					} else {
						s.live = append(s.live, hs...)
					}
				}
				return "seeded"
			})
		default:
			// The validator's competing readings replay on clones. A
			// clone copies the free sets whole (some 150 KiB even when
			// empty), so a program makes a few: the validator makes
			// one for each reading it tries.
			if clones == 32 {
				break
			}
			clones++
			do("clone", func(s *expSide) string {
				mem := *s.mem
				s.attach(s.a.Clone(&mem), &mem)
				return ""
			})
		}
		if step%8 == 0 {
			for k, s := range sides {
				if err := s.a.Check(); err != nil {
					t.Fatalf("%s %s side %d step %d: %v", knobs, capacity, k, step, err)
				}
			}
		}
	}
	for k, s := range sides {
		if err := s.a.Check(); err != nil {
			t.Fatalf("%s %s side %d at the end: %v", knobs, capacity, k, err)
		}
	}
	do("layout", func(s *expSide) string {
		var r strings.Builder
		fmt.Fprintf(&r, "reserved %d\n", s.a.mem.Reserved())
		s.a.Layout(func(sg strategies.Segment) { fmt.Fprintf(&r, "%+v\n", sg) })
		return r.String()
	})
}

// FuzzExpandableSearch compares find_expandable_block's search that
// resumes where the last one stopped with upstream's walk from the lowest
// address, step by step, on programs decoded from the fuzzer's bytes
// (runExpDiff), each under fuzzbound's time and memory bound.
func FuzzExpandableSearch(f *testing.F) {
	f.Add([]byte{0, 1, 8, 12, 0, 7, 0, 3, 5, 0, 3, 3, 0, 0, 3, 2, 0, 3, 4, 0})
	f.Add([]byte{2, 2, 8, 10, 1, 5, 1, 8, 6, 0, 7, 0, 3, 2, 0, 0, 3, 3, 0, 0, 11, 0, 3, 4, 0})
	f.Add([]byte{3, 0, 0, 6, 200, 0, 8, 13, 0, 4, 9, 7, 0, 3, 2, 1, 0, 3, 2, 1, 10, 3, 2, 1})
	f.Add([]byte{5, 1, 9, 0, 8, 9, 1, 9, 2, 0, 3, 1, 0, 7, 0, 3, 3, 1, 9, 1, 0, 3, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() { runExpDiff(t, data) })
	})
}
