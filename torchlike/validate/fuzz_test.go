package validate

import (
	"testing"

	"membench/internal/fuzzbound"
	"membench/internal/sharedtraces"
	"membench/torchlike/snapshot"
)

// FuzzValidate mutates a real recording (drops, duplicates, changes the
// action, size or address of entries) and requires Validate to return a
// report or an error, never to panic: a damaged or hand-edited snapshot
// must not crash the command. (Valid recordings are replayed with the
// model's invariant checker on in every other validate test.)
func FuzzValidate(f *testing.F) {
	real := loadSnapshot(f, sharedtraces.Path(f, "pytorch-snapshots/cs336-lm-peak-probe.pickle"))
	// A recording with expandable segments, empty_cache calls and OOMs.
	r := newRecorder(f, "torch:expandable_segments=true", 1<<30, 0)
	workload(r, 9, 300, 41)
	synthetic := snapshotOf(settingsFor(true), r)
	f.Add(false, []byte{0, 5, 1, 1, 7, 2})
	f.Add(true, []byte{3, 40, 9, 2, 12, 0, 1, 60, 3})
	// "teleport" stands for an action this version does not know.
	actions := []string{"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom", "snapshot", "free", "teleport"}
	f.Fuzz(func(t *testing.T, useSynthetic bool, ops []byte) {
		base := real
		if useSynthetic {
			base = synthetic
		}
		tr := append([]snapshot.TraceEntry(nil), base.DeviceTraces[0]...)
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
		s.DeviceTraces = [][]snapshot.TraceEntry{tr}
		// A damaged recording may lead the model anywhere (even to
		// overlapping segments, when a mutation hides the OOM that sized
		// the device); what must hold is that Validate returns.
		// Each input within 1 s of CPU and 256 MiB of allocation.
		// A cut a third of the way in is a warm start: its layout is
		// reconstructed, and with expandable segments its reservations
		// grouped and based, from the damaged trace.
		fuzzbound.Check(t, func() {
			Validate(&s, Options{})
			Validate(&s, Options{Capacity: 4 << 30})
			Validate(cut(&s, len(tr)/3), Options{Capacity: 1 << 30})
		})
	})
}
