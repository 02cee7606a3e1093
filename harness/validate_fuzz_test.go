package harness

import (
	"strings"
	"testing"

	"membench/traces/torchsnap"
)

// FuzzValidate mutates a real recording (drops, duplicates, changes the
// action, size or address of entries) and requires Validate to return a
// report or an error, never to panic: a damaged or hand-edited snapshot
// must not crash the command.
func FuzzValidate(f *testing.F) {
	base := loadSnapshot(f, "../testdata/pytorch-snapshots/cs336-lm-peak-probe.pickle")
	f.Add([]byte{0, 5, 1, 1, 7, 2})
	f.Add([]byte{3, 40, 9, 2, 12, 0, 1, 60, 3})
	actions := []string{"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom", "snapshot", "free"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		tr := append([]torchsnap.TraceEntry(nil), base.DeviceTraces[0]...)
		for i := 0; i+2 < len(ops) && len(tr) > 0; i += 3 {
			k := int(ops[i+1]) % len(tr)
			switch ops[i] % 5 {
			case 0: // drop
				tr = append(tr[:k], tr[k+1:]...)
			case 1: // duplicate
				tr = append(tr[:k+1], tr[k:]...)
			case 2: // change the action
				tr[k].Action = actions[int(ops[i+2])%len(actions)]
			case 3: // change the size
				tr[k].Size = int64(ops[i+2]) << 20
			case 4: // move to another entry's address
				tr[k].Addr = tr[int(ops[i+2])%len(tr)].Addr
			}
		}
		s := *base
		s.DeviceTraces = [][]torchsnap.TraceEntry{tr}
		for _, o := range []ValidateOptions{{Check: true}, {Capacity: 4 << 30, Check: true}} {
			if _, err := Validate(&s, o); err != nil && strings.Contains(err.Error(), "invariant") {
				t.Fatal(err)
			}
		}
	})
}
