package heapsim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
)

// lifetimesOf are the lifetimes a planner is given for bufs (their ids,
// sharing and order dropped, as the harness never sets them).
func lifetimesOf(bufs []Buffer) []strategies.Lifetime {
	ls := make([]strategies.Lifetime, len(bufs))
	for i, b := range bufs {
		ls[i] = strategies.Lifetime{Size: b.Size, Start: b.Start, End: b.End}
	}
	return ls
}

// packDirect is Pack of ls with opts, past the planners' memo: the
// reference every Plan must agree with.
func packDirect(t *testing.T, ls []strategies.Lifetime, opts Options) Result {
	t.Helper()
	bufs := make([]Buffer, len(ls))
	for i, l := range ls {
		bufs[i] = Buffer{ID: int64(i), Size: l.Size, Start: l.Start, End: l.End}
	}
	r, err := Pack(bufs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// planOf plans ls with opts on a fresh planner and returns its plan.
func planOf(t *testing.T, ls []strategies.Lifetime, opts Options) *Planner {
	t.Helper()
	d, err := strategies.ParseDevice("gpu:capacity=1024GiB")
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlanner(PlannerConfig{opts}, strategies.NewMemory(&d))
	if err := p.Plan(ls); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanMemo: a planner given the lifetimes and options of a recent
// plan takes that plan (a capacity search replays one trace a dozen
// times), and every plan, taken or made, is the packing Pack gives for
// its own input: inputs that differ in one lifetime, in the order or in
// the alignment, more of them than the memo holds, interleaved, and
// lifetimes changed in place by the caller after they were planned.
func TestPlanMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	base := lifetimesOf(randomBuffers(rng, 300, false))
	other := slices.Clone(base)
	other[len(other)/2].Size++ // one byte in one lifetime
	later := slices.Clone(base)
	later[7].End++ // one event in one lifetime
	inputs := [][]strategies.Lifetime{base, other, later, base[:len(base)-1]}
	optss := []Options{{Alignment: 256}, {Alignment: 256, Order: Spatial}, {Alignment: 256, Order: Temporal}, {Alignment: 16}}
	for round := range 3 {
		for i, ls := range inputs {
			for j, o := range optss {
				want := packDirect(t, ls, o)
				first := planOf(t, ls, o)
				again := planOf(t, ls, o)
				for k, p := range []*Planner{first, again} {
					if p.heap != want.HeapSize || p.order != want.Order || !slices.Equal(p.chunks, want.Chunks) {
						t.Fatalf("round %d input %d options %d, plan %d: heap %d order %v, Pack's %d %v (chunks equal %v)",
							round, i, j, k, p.heap, p.order, want.HeapSize, want.Order, slices.Equal(p.chunks, want.Chunks))
					}
				}
				if &again.chunks[0] != &first.chunks[0] {
					t.Fatalf("round %d input %d options %d: the plan just made was made again", round, i, j)
				}
			}
		}
	}
	// The memo keeps its own copy: lifetimes changed in place after
	// their plan are new lifetimes.
	ls := slices.Clone(base)
	planOf(t, ls, optss[0])
	ls[0].Size += 4096
	if p, want := planOf(t, ls, optss[0]), packDirect(t, ls, optss[0]); p.heap != want.HeapSize || !slices.Equal(p.chunks, want.Chunks) {
		t.Fatalf("lifetimes changed in place: heap %d, Pack's %d", p.heap, want.HeapSize)
	}
}

// TestPlanMemoBounded: a trace of more than memoMax allocations is
// planned every time, not kept.
func TestPlanMemoBounded(t *testing.T) {
	ls := make([]strategies.Lifetime, memoMax+1)
	for i := range ls {
		ls[i] = strategies.Lifetime{Size: 1, Start: int64(i), End: int64(i)}
	}
	remember(ls, Options{Alignment: 1}, Result{HeapSize: 1})
	if _, ok := recall(ls, Options{Alignment: 1}); ok {
		t.Fatalf("a plan of %d allocations was kept (memoMax %d)", len(ls), memoMax)
	}
}

// forgetPlans empties the planners' memo, for a benchmark that times a
// capacity search from cold (export_test.go).
func forgetPlans() {
	plans.Lock()
	defer plans.Unlock()
	plans.memo, plans.next = [len(plans.memo)]plan{}, 0
}
