package validate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSegLogAsSlices: logs copied (Share) and appended to in any order
// read as plain slices copied and appended to the same way: a copy never
// sees another's appends, whatever chunk they fall in.
func TestSegLogAsSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 18))
	logs := []segLog{{}}
	refs := [][]SegEvent{nil}
	for step := range 20000 {
		i := rng.IntN(len(logs))
		if rng.IntN(50) == 0 && len(logs) < 40 {
			logs = append(logs, logs[i].Share())
			refs = append(refs, slices.Clone(refs[i]))
			continue
		}
		e := SegEvent{Action: "segment_alloc", Addr: int64(step), Size: int64(rng.IntN(1000)), Entry: step}
		logs[i].Append(e)
		refs[i] = append(refs[i], e)
		if logs[i].Len() != len(refs[i]) || logs[i].At(len(refs[i])-1) != e {
			t.Fatalf("step %d: log %d reads %d events, the last %v; want %d, %v", step, i, logs[i].Len(), logs[i].At(logs[i].Len()-1), len(refs[i]), e)
		}
	}
	for i := range logs {
		if got := logs[i].Slice(); !slices.Equal(got, refs[i]) {
			t.Fatalf("log %d: %d events differ from its slice's %d", i, len(got), len(refs[i]))
		}
	}
}
