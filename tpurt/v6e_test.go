package tpurt

import (
	"os"
	"testing"

	"membench/internal/sharedtraces"
	"membench/strategies"
)

// v6eRecording is the public TPU v6e profile (openxla/xprof test data;
// ../shared/traces/README.md): JAX inference on four chips, the TPU
// runtime's own MemoryAllocation and MemoryDeallocation events.
const v6eRecording = "profiler/xprof-tpu-v6e-inference.xplane.pb"

// TestV6eRecording replays each chip of the v6e recording through the
// model on the tpu-v6e preset and requires, for every allocation, the
// recorded address (as an offset below the heap's limit) and chunk size,
// and after every event the recorded bytes in use and bytes reserved. The
// recording's program reservations are not events: they are read from
// bytes_reserved and applied as one program load (or unload) before the
// allocation whose stats first show them (after the free, for a free,
// which a load may need the room of). Deallocations carry only the
// address; the model frees the buffer it placed there.
func TestV6eRecording(t *testing.T) {
	data, err := os.ReadFile(sharedtraces.Path(t, v6eRecording))
	if err != nil {
		t.Fatal(err)
	}
	events, err := readMemEvents(data)
	if err != nil {
		t.Fatalf("%s: %v", v6eRecording, err)
	}
	dev, err := strategies.ParseDevice("tpu-v6e")
	if err != nil {
		t.Fatal(err)
	}
	perChip := map[int64][]memEvent{}
	for _, e := range events {
		perChip[e.chip] = append(perChip[e.chip], e)
	}
	// The recording's per-chip allocation counts (its README: 112–117
	// pairs a chip).
	wantAllocs := map[int64]int{0: 117, 1: 112, 2: 112, 3: 112}
	if len(perChip) != len(wantAllocs) {
		t.Fatalf("%d chips in the recording, want %d", len(perChip), len(wantAllocs))
	}
	total := 0
	for chip := int64(0); chip < 4; chip++ {
		evs := perChip[chip]
		mem := strategies.NewMemory(&dev)
		a := New(Options{Defrag: true}, mem)
		limit := a.Limit()
		live := map[int64]int32{} // recorded addr → handle
		var prog Program = -1
		setReserved := func(i int, want int64) {
			if a.Reserved() == want {
				return
			}
			a.UnloadProgram(prog)
			prog = -1
			if want > 0 {
				if prog, err = a.LoadProgram(want); err != nil {
					t.Fatalf("chip %d event %d: loading %d B of programs: %v", chip, i, want, err)
				}
			}
		}
		allocs, matched := 0, 0
		for i, e := range evs {
			// The runtime's limit is the preset's capacity:
			// available + in use + reserved after every event.
			if got := e.available + e.inUse + e.reserved; got != dev.Capacity {
				t.Fatalf("chip %d event %d: the recorded limit is %d B, the tpu-v6e preset's capacity %d B", chip, i, got, dev.Capacity)
			}
			if e.alloc {
				setReserved(i, e.reserved)
				h, ok := a.Malloc(e.requested, 0)
				if !ok {
					t.Fatalf("chip %d event %d: allocation of %d B failed: %s", chip, i, e.requested, a.LastOOM().Message)
				}
				off, size := a.Block(h)
				if limit-off == dev.Capacity-e.addr && size == e.chunk {
					matched++
				} else {
					t.Errorf("chip %d event %d: %d B requested: model places %d B at limit-%d, recorded %d B at limit-%d",
						chip, i, e.requested, size, limit-off, e.chunk, dev.Capacity-e.addr)
				}
				live[e.addr] = int32(h)
				allocs++
			} else {
				h, ok := live[e.addr]
				if !ok {
					t.Fatalf("chip %d event %d: free of %d, which no recorded allocation holds", chip, i, e.addr)
				}
				delete(live, e.addr)
				a.Free(strategies.Handle(h))
				setReserved(i, e.reserved)
			}
			if a.Allocated() != e.inUse || a.Reserved() != e.reserved {
				t.Errorf("chip %d event %d: model has %d B in use, %d B reserved; recorded %d, %d", chip, i, a.Allocated(), a.Reserved(), e.inUse, e.reserved)
			}
			if err := a.Check(); err != nil {
				t.Fatalf("chip %d event %d: %v", chip, i, err)
			}
		}
		if allocs != wantAllocs[chip] {
			t.Errorf("chip %d: %d allocations replayed, want %d", chip, allocs, wantAllocs[chip])
		}
		total += matched
		t.Logf("chip %d: %d events, %d of %d allocations at the recorded offset and size", chip, len(evs), matched, allocs)
	}
	if total != 453 {
		t.Errorf("%d allocations in all at the recorded offset and size, want 453", total)
	}
}
