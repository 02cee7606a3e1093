package torchlike

import (
	"testing"
	"time"

	"membench/internal/cpuclock"
	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// replayOp is one event of a corpus trace with its id made dense, so that
// BenchmarkModel measures the allocator alone: no id map, no harness.
type replayOp struct {
	alloc        bool
	id           int32
	size, stream int64
}

// loadOps reads a corpus trace as replayOps, with the number of ids.
func loadOps(tb testing.TB, name string) ([]replayOp, int) {
	tb.Helper()
	r, err := corpus.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	evs, err := traces.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	ids := map[uint64]int32{}
	var ops []replayOp
	for _, e := range evs {
		switch e.Op {
		case traces.OpAlloc:
			ids[e.ID] = int32(len(ids))
			ops = append(ops, replayOp{alloc: true, id: ids[e.ID], size: e.Size, stream: e.Stream})
		case traces.OpFree:
			if id, ok := ids[e.ID]; ok {
				ops = append(ops, replayOp{id: id})
			}
		}
	}
	return ops, len(ids)
}

// BenchmarkModel replays gpt-generate through the allocator alone, in
// both segment modes, and reports cpu-ns/event: the model's own cost per
// event, which the harness's BenchmarkReplay adds its replay loop to.
func BenchmarkModel(b *testing.B) {
	ops, nids := loadOps(b, "gpt-generate")
	dev, err := strategies.ParseDevice(strategies.DefaultDevice)
	if err != nil {
		b.Fatal(err)
	}
	for _, exp := range []bool{false, true} {
		name := "segments=plain"
		if exp {
			name = "segments=expandable"
		}
		b.Run(name, func(b *testing.B) {
			hs := make([]strategies.Handle, nids)
			live := make([]bool, nids)
			var cpu time.Duration
			for b.Loop() {
				a := New(Config{ExpandableSegments: exp}, strategies.NewMemory(&dev))
				t0 := cpuclock.Now()
				for _, o := range ops {
					if o.alloc {
						h, ok := a.Malloc(o.size, o.stream)
						hs[o.id], live[o.id] = h, ok
					} else if live[o.id] {
						a.Free(hs[o.id])
						live[o.id] = false
					}
				}
				cpu += cpuclock.Now() - t0
				a.Release()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(len(ops)), "cpu-ns/event")
		})
	}
}
