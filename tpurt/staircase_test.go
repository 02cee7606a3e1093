package tpurt

import (
	"math/rand/v2"
	"testing"

	"membench/internal/livebench"
	"membench/internal/spanset"
	"membench/strategies"
)

// BenchmarkStaircase measures, on internal/livebench's workload at 10^6
// live buffers, the "staircase" of the free set that a placement could be
// answered from without the tree: the spans that are larger than every
// span above them, scanning down from the top (the highest fit of any
// size is one of them). It reports the staircase's length, the rank of
// the placement's answer in it, and how many spans join or leave it per
// placement: each one that joins would have to be found by a search of
// the tree below the carved span, which is what the staircase was to
// save. It runs b.N placements (and as many frees) after three million
// events of warming up, and looks at one in 64: run it with a fixed
// count, -benchtime 12800x. The figures and what they rule out are in
// docs/spanset-notes.md.
func BenchmarkStaircase(b *testing.B) {
	d, _ := strategies.ParseDevice("tpu-v5e:capacity=64GiB")
	a := New(Options{}, strategies.NewMemory(&d))
	const live = 1000000
	rng := rand.New(rand.NewPCG(15, live))
	size := func() int64 { return livebench.Size(rng) }
	hs := make([]strategies.Handle, live)
	for i := range hs {
		hs[i], _ = a.Malloc(size(), 0)
	}
	// Reach the steady state's free set first.
	for range 2 * live {
		v := rng.IntN(live)
		a.Free(hs[v])
		hs[v], _ = a.Malloc(size(), 0)
	}
	stairs := func() []spanset.Span {
		var all []spanset.Span
		a.free.Ascend(func(sp spanset.Span) bool { all = append(all, sp); return true })
		var st []spanset.Span
		var best int64
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Size > best {
				best = all[i].Size
				st = append(st, all[i])
			}
		}
		return st
	}
	var looked, length, rank, joined, left float64
	b.ResetTimer()
	for k := range b.N {
		v := rng.IntN(live)
		a.Free(hs[v])
		n := size()
		if k%64 != 0 {
			hs[v], _ = a.Malloc(n, 0)
			continue
		}
		before := stairs()
		hs[v], _ = a.Malloc(n, 0)
		after := stairs()
		r := a.Round(n)
		for i, sp := range before {
			if sp.Size >= r {
				rank += float64(i + 1)
				break
			}
		}
		in := map[spanset.Span]bool{}
		for _, sp := range before {
			in[sp] = true
		}
		for _, sp := range after {
			if !in[sp] {
				joined++
			}
			delete(in, sp)
		}
		left += float64(len(in))
		length += float64(len(before))
		looked++
	}
	b.ReportMetric(length/looked, "stairs")
	b.ReportMetric(rank/looked, "rank")
	b.ReportMetric(joined/looked, "joined/placement")
	b.ReportMetric(left/looked, "left/placement")
}
