package harness

import (
	"testing"

	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// TestPeaksReadOnceChangeNothing replays every corpus trace under
// models that keep their peaks where the replay reads them without a call
// (strategies.AllocatedPeaker, strategies.FootprintWatcher), and again
// with those hidden (plainOf), where the replay asks after every
// allocation, and checks that the peak allocated bytes, the peak
// footprint and the event it was reached at, and every metric agree. The
// specs cover torch with caching disabled (no statistics: the replay must
// ask), growing and preallocated BFC regions, the TPU runtime model with
// defragmentation and program loads, and devices small enough for
// allocations to fail.
func TestPeaksReadOnceChangeNothing(t *testing.T) {
	specs := []struct{ spec, dev string }{
		{"torch", "a100-80g"},
		{"torch:expandable_segments=true", "a100-80g"},
		{"torch:PYTORCH_NO_CUDA_MEMORY_CACHING=1", "a100-80g"},
		{"tf", "a100-80g"},
		{"tf:allow_growth=true", "a100-80g"},
		{"jax", "a100-80g"},
		{"torch", "a100-80g:capacity=96MiB"},
		{"tf:allow_growth=true", "a100-80g:capacity=96MiB"},
		{"jax", "tpu-v5e"},
		{"jax:defrag=true", "tpu-v5e:capacity=96MiB"},
		{"tf:program_bytes=64MiB", "tpu-v5e:capacity=160MiB"},
	}
	read := 0
	for _, name := range corpus.Names() {
		evs := loadCorpus(t, name)
		for _, sd := range specs {
			dev := device(t, sd.dev)
			once, _, err := NewAllocator(sd.spec, strategies.NewMemory(&dev))
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := once.(strategies.AllocatedPeaker); ok {
				if _, ok := p.PeakAllocated(); ok {
					read++
				}
			}
			every, _, err := NewAllocator(sd.spec, strategies.NewMemory(&dev))
			if err != nil {
				t.Fatal(err)
			}
			x, err := ReplayWith(name, &traces.SliceReader{Events: evs}, once, sd.spec, DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			y, err := ReplayWith(name, &traces.SliceReader{Events: evs}, plainOf(every), sd.spec, DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			how := name + " " + sd.spec + " on " + sd.dev
			if x.PeakAllocated != y.PeakAllocated || x.PeakFootprint != y.PeakFootprint || x.PeakFootprintEvent != y.PeakFootprintEvent {
				t.Errorf("%s: peak allocated %d, footprint %d at event %d; asked after every allocation %d, %d at %d",
					how, x.PeakAllocated, x.PeakFootprint, x.PeakFootprintEvent, y.PeakAllocated, y.PeakFootprint, y.PeakFootprintEvent)
			}
			sameOutcome(t, how, x, "peaks read once", y, "asked every allocation")
		}
	}
	if read == 0 {
		t.Error("no model kept its peak of allocated bytes: the test compared nothing")
	}
}
