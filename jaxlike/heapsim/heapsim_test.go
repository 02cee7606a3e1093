package heapsim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"membench/internal/radix"
)

// randomBuffers draws n buffers: sizes spread over six orders of
// magnitude, lifetimes from one tick to most of the run, and, when share
// is set, about one buffer in eight sharing an earlier buffer's chunk.
func randomBuffers(r *rand.Rand, n int, share bool) []Buffer {
	bufs := make([]Buffer, n)
	horizon := int64(2 * n)
	for i := range bufs {
		start := r.Int64N(horizon)
		life := int64(1 + r.ExpFloat64()*float64(horizon)/20)
		bufs[i] = Buffer{
			ID:    r.Int64N(int64(n)), // duplicates too: ties fall back to the index
			Size:  int64(math.Exp(r.Float64()*14)) + r.Int64N(2),
			Start: start,
			End:   min(start+life, horizon+horizon/4),
		}
		if share && i > 0 && r.IntN(8) == 0 {
			bufs[i].ShareWith = 1 + r.IntN(i)
		}
	}
	return bufs
}

// checkPacking asserts what every packing must satisfy: no two buffers of
// different chunks that are live at the same time share a byte; buffers
// sharing a chunk have the same one, as large as the largest of them;
// offsets are aligned; the heap is the largest chunk end and at least the
// peak live bytes.
func checkPacking(t *testing.T, bufs []Buffer, align int64, r Result) {
	t.Helper()
	g, err := newGroups(bufs)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for i, b := range bufs {
		c := r.Chunks[i]
		if b.Size == 0 {
			if c != (Chunk{}) {
				t.Fatalf("buffer %d of size 0 at %+v", i, c)
			}
			continue
		}
		root := g.root[i]
		if c != r.Chunks[root] || c.Size != g.size[root] || c.Size < b.Size {
			t.Fatalf("buffer %d: chunk %+v, root %d's %+v, group size %d", i, c, root, r.Chunks[root], g.size[root])
		}
		if c.Offset < 0 || c.Offset%align != 0 {
			t.Fatalf("buffer %d at offset %d (alignment %d)", i, c.Offset, align)
		}
		end = max(end, c.End())
	}
	if r.HeapSize != end {
		t.Fatalf("heap size %d, largest chunk end %d", r.HeapSize, end)
	}
	peak, err := PeakLive(bufs)
	if err != nil {
		t.Fatal(err)
	}
	if r.HeapSize < peak {
		t.Fatalf("heap %d below peak live %d", r.HeapSize, peak)
	}
	// Sweep over time: at each start, the buffers live then (an ordered
	// set by offset would be faster; the quadratic check is the simple
	// one to trust).
	type ev struct {
		i     int
		start bool
		t     int64
	}
	var evs []ev
	for i, b := range bufs {
		if b.Size > 0 {
			evs = append(evs, ev{i, true, b.Start}, ev{i, false, b.End})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		// Starts before ends at the same time: inclusive intervals.
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.start != b.start {
			if a.start {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	})
	live := map[int]bool{}
	for _, e := range evs {
		if !e.start {
			delete(live, e.i)
			continue
		}
		c := r.Chunks[e.i]
		for j := range live {
			if g.root[j] == g.root[e.i] {
				continue
			}
			d := r.Chunks[j]
			if c.Offset < d.End() && d.Offset < c.End() {
				t.Fatalf("buffers %d %+v [%d, %d] and %d %+v [%d, %d] overlap in time and space",
					e.i, c, bufs[e.i].Start, bufs[e.i].End, j, d, bufs[j].Start, bufs[j].End)
			}
		}
		live[e.i] = true
	}
}

// naivePack is the same algorithm with the overlap query done the plain
// way, scanning every committed buffer: the reference the index must
// agree with exactly.
func naivePack(bufs []Buffer, align int64, o Order) Result {
	p, err := newPacker(bufs, align)
	if err != nil {
		panic(err)
	}
	res := Result{Chunks: make([]Chunk, len(bufs)), Order: o}
	var placed []int32 // every committed buffer, members included
	for _, r := range p.sorted(o) {
		group := append([]int32{r}, p.members(r)...)
		var used []Chunk
		for _, q := range group {
			for _, j := range placed {
				if bufs[j].Start <= bufs[q].End && bufs[q].Start <= bufs[j].End {
					used = append(used, res.Chunks[j])
				}
			}
		}
		slices.SortFunc(used, func(a, b Chunk) int { return cmp.Compare(a.Offset, b.Offset) })
		free := freePieces(nil, used, bufs[r].Size, align)
		c := Chunk{Offset: choose(free, p.size[r], align, -1), Size: p.size[r]}
		for _, q := range group {
			res.Chunks[q] = c
			placed = append(placed, q)
		}
		res.HeapSize = max(res.HeapSize, c.End())
	}
	return res
}

func TestPackProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for trial := range 60 {
		n := 1 + r.IntN(300)
		share := trial%2 == 1
		bufs := randomBuffers(r, n, share)
		for _, align := range []int64{1, 16, 256, 24} {
			for _, o := range []Order{Spatial, Temporal, Best} {
				res, err := Pack(bufs, Options{Alignment: align, Order: o})
				if err != nil {
					t.Fatal(err)
				}
				checkPacking(t, bufs, align, res)
				if o == Best {
					s, _ := Pack(bufs, Options{Alignment: align, Order: Spatial})
					tm, _ := Pack(bufs, Options{Alignment: align, Order: Temporal})
					if want := min(s.HeapSize, tm.HeapSize); res.HeapSize != want {
						t.Fatalf("best %d, spatial %d, temporal %d", res.HeapSize, s.HeapSize, tm.HeapSize)
					}
					if s.HeapSize <= tm.HeapSize && res.Order != Spatial {
						t.Fatalf("a tie or a smaller spatial heap must keep spatial, got %v", res.Order)
					}
					continue
				}
				if ref := naivePack(bufs, align, o); !slices.Equal(ref.Chunks, res.Chunks) || ref.HeapSize != res.HeapSize {
					t.Fatalf("trial %d, %v, alignment %d: the index's packing differs from the plain scan's", trial, o, align)
				}
				again, _ := Pack(slices.Clone(bufs), Options{Alignment: align, Order: o})
				if !slices.Equal(again.Chunks, res.Chunks) {
					t.Fatal("the same input packed twice differs")
				}
			}
		}
	}
}

// Cases where a perfect packing exists and the heap simulator finds it:
// the heap is the peak live bytes.
func TestPackPerfect(t *testing.T) {
	cases := []struct {
		name string
		bufs []Buffer
	}{
		{"all live at once", []Buffer{{0, 10, 0, 9, 0}, {1, 20, 1, 8, 0}, {2, 30, 2, 7, 0}}},
		{"one after another", []Buffer{{0, 10, 0, 1, 0}, {1, 20, 2, 3, 0}, {2, 30, 4, 5, 0}}},
		{"a stack (last in, first out)", []Buffer{{0, 64, 0, 9, 0}, {1, 32, 1, 8, 0}, {2, 16, 2, 7, 0}, {3, 48, 10, 12, 0}, {4, 64, 11, 13, 0}}},
		{"equal sizes, staggered", []Buffer{{0, 8, 0, 3, 0}, {1, 8, 2, 5, 0}, {2, 8, 4, 7, 0}, {3, 8, 6, 9, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			peak, _ := PeakLive(c.bufs)
			r, err := Pack(c.bufs, Options{Alignment: 1})
			if err != nil {
				t.Fatal(err)
			}
			checkPacking(t, c.bufs, 1, r)
			if r.HeapSize != peak {
				t.Errorf("heap %d, peak live %d", r.HeapSize, peak)
			}
		})
	}
}

func TestPackRejects(t *testing.T) {
	cases := []struct {
		name string
		bufs []Buffer
		opt  Options
		want string
	}{
		{"negative size", []Buffer{{Size: -1}}, Options{}, "negative size"},
		{"ends before it starts", []Buffer{{Size: 1, Start: 3, End: 2}}, Options{}, "ends before it starts"},
		{"shares with itself", []Buffer{{Size: 1, ShareWith: 1}}, Options{}, "earlier buffer"},
		{"shares with a later buffer", []Buffer{{Size: 1, ShareWith: 2}, {Size: 1}}, Options{}, "earlier buffer"},
		{"shares with an empty buffer", []Buffer{{Size: 0}, {Size: 1, ShareWith: 1}}, Options{}, "size is 0"},
		{"negative alignment", []Buffer{{Size: 1}}, Options{Alignment: -16}, "negative"},
		{"too large", []Buffer{{Size: 1 << 60}, {Size: 1 << 60}}, Options{}, "add up to more"},
		{"unknown order", []Buffer{{Size: 1}}, Options{Order: 7}, "unknown order"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Pack(c.bufs, c.opt)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestParseOrder(t *testing.T) {
	for _, o := range []Order{Best, Spatial, Temporal} {
		if p, err := ParseOrder(o.String()); err != nil || p != o {
			t.Errorf("%v: %v, %v", o, p, err)
		}
	}
	if _, err := ParseOrder("lifo"); err == nil {
		t.Error("unknown order accepted")
	}
}

// BenchmarkPack measures the packing (both orders, as Best runs) per
// buffer on random lifetimes.
func BenchmarkPack(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		bufs := randomBuffers(rand.New(rand.NewPCG(1, uint64(n))), n, false)
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var heap int64
			for b.Loop() {
				r, err := Pack(bufs, Options{Alignment: 256})
				if err != nil {
					b.Fatal(err)
				}
				heap = r.HeapSize
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/buffer")
			b.ReportMetric(float64(heap), "heap-B")
		})
	}
}

// The radix sort orders by offset as a comparison sort does, and keeps
// chunks of equal offset in their order.
func TestSortByOffset(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var spare []Chunk
	var keyed [2][]radix.Keyed
	for _, n := range []int{0, 1, 255, 256, 3000, 10000} {
		for _, top := range []int64{1, 1 << 11, 1 << 40, math.MaxInt64} {
			c := make([]Chunk, n)
			for i := range c {
				c[i] = Chunk{Offset: r.Int64N(top), Size: int64(i)}
			}
			want := slices.Clone(c)
			slices.SortStableFunc(want, func(a, b Chunk) int { return cmp.Compare(a.Offset, b.Offset) })
			var got []Chunk
			got, spare = sortByOffset(c, spare, &keyed)
			if n >= radixMin && !slices.Equal(got, want) || !slices.IsSortedFunc(got, func(a, b Chunk) int { return cmp.Compare(a.Offset, b.Offset) }) {
				t.Fatalf("n %d, offsets below %d: not sorted", n, top)
			}
		}
	}
}
