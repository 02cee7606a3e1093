package torchlike

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"membench/strategies"
)

// TestReleaseCloneAndOriginal: an allocator and its clone released both
// leave two distinct sets of buffers to the allocators built next, which
// then work independently (a shared arena would make each corrupt the
// other's blocks).
func TestReleaseCloneAndOriginal(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-80g")
	a := New(Config{}, strategies.NewMemory(&dev))
	for i := range 100 {
		if _, ok := a.Malloc(int64(512+i*4096), 0); !ok {
			t.Fatal("out of memory")
		}
	}
	c := a.Clone(strategies.NewMemory(&dev))
	if &c.arena[0] == &a.arena[0] {
		t.Fatal("the clone shares its original's buffers")
	}
	a.Release()
	c.Release()
	x := New(Config{}, strategies.NewMemory(&dev))
	y := New(Config{}, strategies.NewMemory(&dev))
	for i := range 200 {
		hx, ok1 := x.Malloc(int64(512+i*1000), 0)
		hy, ok2 := y.Malloc(int64(1<<20+i*3000), 0)
		if !ok1 || !ok2 {
			t.Fatal("out of memory")
		}
		if i%3 == 0 {
			x.Free(hx)
			y.Free(hy)
		}
	}
	for _, m := range []*Allocator{x, y} {
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClonePagesApart: with expandable segments, an allocator and its
// clones share their segments' page maps until one maps or unmaps a page
// (ownPages), and each then goes on as an allocator that never shared:
// random programs run on the original and on clones taken at random
// moments end in the layout of the same program run on an allocator of
// its own, page maps included (a write to a shared map would show as a
// page mapped or unmapped in the other).
func TestClonePagesApart(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-40g:capacity=1GiB")
	cfg := Config{ExpandableSegments: true, MaxSplitSize: unlimited, MaxNonSplitRounding: LargeBuffer, LargeSegmentSize: LargeBuffer}
	type op struct {
		free   bool
		k      int // the live allocation freed
		size   int64
		stream int64
	}
	prog := func(seed uint64, n int) []op {
		rng := rand.New(rand.NewPCG(seed, 29))
		var ops []op
		for range n {
			switch {
			case rng.IntN(3) == 0:
				ops = append(ops, op{free: true, k: rng.IntN(1 << 20)})
			case rng.IntN(40) == 0:
				ops = append(ops, op{size: -1}) // empty_cache
			default:
				ops = append(ops, op{size: 512 + rng.Int64N(30<<20), stream: rng.Int64N(3)})
			}
		}
		return ops
	}
	type run struct {
		a    *Allocator
		live []strategies.Handle
	}
	step := func(r *run, o op) {
		switch {
		case o.size == -1:
			r.a.EmptyCache()
		case o.free:
			if len(r.live) > 0 {
				k := o.k % len(r.live)
				r.a.Free(r.live[k])
				r.live = append(r.live[:k], r.live[k+1:]...)
			}
		default:
			if h, ok := r.a.Malloc(o.size, o.stream); ok {
				r.live = append(r.live, h)
			}
		}
	}
	layout := func(a *Allocator) string {
		var b strings.Builder
		a.Layout(func(s strategies.Segment) { fmt.Fprintf(&b, "%+v\n", s) })
		for i, es := range a.exp {
			fmt.Fprintf(&b, "segment %d live %v pages %v\n", i, es.live, es.mapped)
		}
		return b.String()
	}
	for seed := range uint64(10) {
		head, tails := prog(seed, 400), [3][]op{prog(seed+100, 300), prog(seed+200, 300), prog(seed+300, 300)}
		orig := &run{a: New(cfg, strategies.NewMemory(&dev))}
		for _, o := range head {
			step(orig, o)
		}
		var runs [3]*run
		runs[0] = orig
		for i := 1; i < 3; i++ {
			mem := *orig.a.mem // the device as the original has it, as validate copies it
			runs[i] = &run{a: orig.a.Clone(&mem), live: slices.Clone(orig.live)}
		}
		shared := 0
		for i := range orig.a.exp {
			if len(orig.a.exp[i].mapped) > 0 && &orig.a.exp[i].mapped[0] == &runs[1].a.exp[i].mapped[0] {
				shared++
			}
		}
		if shared == 0 {
			t.Fatalf("seed %d: the clones share no page map: the test tests nothing", seed)
		}
		// The three go on in turns, each with its own program.
		for j := range 300 {
			for i := range 3 {
				step(runs[i], tails[i][j])
			}
		}
		for i := range 3 {
			ref := &run{a: New(cfg, strategies.NewMemory(&dev))}
			for _, o := range head {
				step(ref, o)
			}
			for _, o := range tails[i] {
				step(ref, o)
			}
			if got, want := layout(runs[i].a), layout(ref.a); got != want {
				t.Fatalf("seed %d, run %d: the layout after sharing page maps differs from a run of its own:\n%s\nwant\n%s", seed, i, got, want)
			}
			if err := runs[i].a.Check(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
