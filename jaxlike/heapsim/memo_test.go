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
	r, err := Pack(buffersOf(ls), opts)
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
	// their plan are new lifetimes (ones never planned before, so that
	// the memo does not hold them already).
	ls := lifetimesOf(randomBuffers(rng, 200, false))
	planOf(t, ls, optss[0])
	ls[0].Size += 4096
	if p, want := planOf(t, ls, optss[0]), packDirect(t, ls, optss[0]); p.heap != want.HeapSize || !slices.Equal(p.chunks, want.Chunks) {
		t.Fatalf("lifetimes changed in place: heap %d, Pack's %d", p.heap, want.HeapSize)
	}
}

// TestPlanMemoBounded: the memo keeps no plan of more than memoMax
// allocations, no more than memoEntries plans and no more than memoMax
// allocations in all, the least recently asked for leaving first.
func TestPlanMemoBounded(t *testing.T) {
	defer forgetPlans()
	forgetPlans()
	long := func(n int) []strategies.Lifetime {
		ls := make([]strategies.Lifetime, n)
		for i := range ls {
			ls[i] = strategies.Lifetime{Size: 1, Start: int64(i), End: int64(i)}
		}
		return ls
	}
	one := Options{Alignment: 1}
	huge := long(memoMax + 1)
	remember(huge, one, Result{HeapSize: 1})
	if _, ok := recall(huge, one); ok {
		t.Fatalf("a plan of %d allocations was kept (memoMax %d)", len(huge), memoMax)
	}
	// By count: memoEntries+1 small plans push the first out, unless it
	// was asked for again in between.
	small := make([][]strategies.Lifetime, memoEntries+2)
	for i := range small {
		small[i] = []strategies.Lifetime{{Size: int64(i + 1), Start: 0, End: 1}}
	}
	for i := range memoEntries {
		remember(small[i], one, Result{HeapSize: int64(i)})
	}
	if _, ok := recall(small[0], one); !ok { // now the most recently asked for
		t.Fatal("a plan kept was not recalled")
	}
	remember(small[memoEntries], one, Result{})
	if _, ok := recall(small[1], one); ok {
		t.Fatal("the least recently asked for plan stayed past memoEntries")
	}
	if r, ok := recall(small[0], one); !ok || r.HeapSize != 0 {
		t.Fatalf("the plan asked for again left first (%v) or changed (%d)", ok, r.HeapSize)
	}
	// By size: two plans of more than half memoMax allocations do not
	// fit together.
	a, b := long(memoMax/2+1), long(memoMax/2+2)
	remember(a, one, Result{HeapSize: 2})
	remember(b, one, Result{HeapSize: 3})
	if _, ok := recall(a, one); ok {
		t.Fatal("plans of more than memoMax allocations in all were kept")
	}
	if r, ok := recall(b, one); !ok || r.HeapSize != 3 {
		t.Fatal("the plan just kept was not recalled")
	}
	if held() > memoMax || len(plans.memo) > memoEntries {
		t.Fatalf("the memo holds %d plans of %d allocations", len(plans.memo), held())
	}
}

// forgetPlans empties the planners' memo, for a benchmark that times a
// capacity search from cold (export_test.go) and for the tests.
func forgetPlans() {
	plans.Lock()
	defer plans.Unlock()
	plans.memo = nil
}
