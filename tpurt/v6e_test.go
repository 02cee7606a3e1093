package tpurt

import (
	"os"
	"testing"

	"membench/internal/sharedtraces"
	"membench/strategies"
	"membench/xprof"
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
	fh, err := os.Open(sharedtraces.Path(t, v6eRecording))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	prof, err := xprof.Read(fh, xprof.DefaultLimits)
	if err != nil {
		t.Fatalf("%s: %v", v6eRecording, err)
	}
	dev, err := strategies.ParseDevice("tpu-v6e")
	if err != nil {
		t.Fatal(err)
	}
	// The recording's per-chip allocation counts (its README: 112–117
	// pairs a chip).
	wantAllocs := map[int]int{0: 117, 1: 112, 2: 112, 3: 112}
	if len(prof.Allocators) != len(wantAllocs) {
		t.Fatalf("allocators %v in the recording, want the 4 TPU chips", prof.Names())
	}
	total := 0
	for chip := 0; chip < 4; chip++ {
		ra := prof.Device(chip)
		if ra == nil || !ra.TPU() {
			t.Fatalf("no TPU chip %d in the recording (%v)", chip, prof.Names())
		}
		evs := ra.Records
		mem := strategies.NewMemory(&dev)
		a := New(Options{Defrag: true}, mem)
		limit := a.Limit()
		live := map[uint64]strategies.Handle{} // recorded addr → handle
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
			if got := e.Limit(); got != dev.Capacity {
				t.Fatalf("chip %d event %d: the recorded limit is %d B, the tpu-v6e preset's capacity %d B", chip, i, got, dev.Capacity)
			}
			if e.Alloc {
				setReserved(i, e.Reserved)
				h, ok := a.Malloc(e.Requested, 0)
				if !ok {
					t.Fatalf("chip %d event %d: allocation of %d B failed: %s", chip, i, e.Requested, a.LastOOM().Message)
				}
				off, size := a.Block(h)
				if limit-off == dev.Capacity-int64(e.Addr) && size == e.Chunk {
					matched++
				} else {
					t.Errorf("chip %d event %d: %d B requested: model places %d B at limit-%d, recorded %d B at limit-%d",
						chip, i, e.Requested, size, limit-off, e.Chunk, dev.Capacity-int64(e.Addr))
				}
				live[e.Addr] = h
				allocs++
			} else {
				h, ok := live[e.Addr]
				if !ok {
					t.Fatalf("chip %d event %d: free of %d, which no recorded allocation holds", chip, i, e.Addr)
				}
				delete(live, e.Addr)
				a.Free(h)
				setReserved(i, e.Reserved)
			}
			if a.Allocated() != e.InUse || a.Reserved() != e.Reserved {
				t.Errorf("chip %d event %d: model has %d B in use, %d B reserved; recorded %d, %d", chip, i, a.Allocated(), a.Reserved(), e.InUse, e.Reserved)
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
