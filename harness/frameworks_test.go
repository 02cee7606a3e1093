package harness

import (
	"testing"

	"membench/bfc"
	"membench/internal/sharedtraces"
	"membench/tflike"
	"membench/traces"
	"membench/traces/corpus"
)

// TestFrameworkDefaults checks the figures issue #3 fixes for every corpus
// trace on every GPU preset: JAX preallocates 75 % of total memory in one
// device allocation, TensorFlow its whole limit in one, their growth modes
// hold less than that but more than is live, and JAX's platform allocator
// makes one device allocation per successful allocation.
func TestFrameworkDefaults(t *testing.T) {
	for _, name := range corpus.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			frameworkDefaultsOnTrace(t, name)
		})
	}
}

// frameworkDefaultsOnTrace is TestFrameworkDefaults on one trace.
func frameworkDefaultsOnTrace(t *testing.T, name string) {
	evs := loadCorpus(t, name)
	for _, devName := range []string{"a100-40g", "a100-80g", "h100-80g", "h200-141g"} {
		dev := device(t, devName)
		replay := func(spec string) *Result {
			t.Helper()
			opts := DefaultOptions
			if devName == "a100-80g" {
				opts = checked(len(evs))
			}
			res, err := Replay(name, &traces.SliceReader{Events: evs}, spec, dev, opts)
			if err != nil {
				t.Fatalf("%s %s %s: %v", name, devName, spec, err)
			}
			if res.OOMCount != 0 {
				t.Fatalf("%s %s %s: %d OOMs", name, devName, spec, res.OOMCount)
			}
			return res
		}
		jax := replay("jax")
		if want := bfc.RoundedBytes(int64(0.75*float64(dev.Total))) &^ 255; jax.PeakReserved != want || jax.DeviceMallocs != 1 || jax.DeviceFrees != 0 {
			t.Errorf("%s/%s jax: reserved %d (want %d), %d mallocs %d frees", name, devName, jax.PeakReserved, want, jax.DeviceMallocs, jax.DeviceFrees)
		}
		tf := replay("tf")
		limit := tflike.Config{}.MemoryLimit(&dev)
		if tf.PeakReserved != limit&^255 || tf.DeviceMallocs != 1 {
			t.Errorf("%s/%s tf: reserved %d (want %d), %d mallocs", name, devName, tf.PeakReserved, limit, tf.DeviceMallocs)
		}
		for _, spec := range []string{"tf:allow_growth=true", "jax:preallocate=false"} {
			g := replay(spec)
			if !(g.PeakReserved > g.PeakLive && g.PeakReserved < jax.PeakReserved) {
				t.Errorf("%s/%s %s: reserved %d, live %d", name, devName, spec, g.PeakReserved, g.PeakLive)
			}
		}
		plat := replay("jax:allocator=platform")
		if plat.DeviceMallocs != plat.Allocs || plat.DeviceFrees != plat.Frees {
			t.Errorf("%s/%s jax platform: %d mallocs for %d allocations, %d frees for %d", name, devName, plat.DeviceMallocs, plat.Allocs, plat.DeviceFrees, plat.Frees)
		}
	}
}

// fragmentingTrace fills memory with 1 MiB buffers, frees every other one,
// then asks for one buffer larger than any hole: free memory would hold it
// many times over, but no contiguous chunk does. This is the pattern of
// jax-ml/jax#9064 (many small live outputs interleaved with freed temps).
func fragmentingTrace(n int) []traces.Event {
	var evs []traces.Event
	for i := 1; i <= n; i++ {
		evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: uint64(i), Size: 1 << 20})
	}
	for i := 2; i <= n; i += 2 {
		evs = append(evs, traces.Event{Op: traces.OpFree, ID: uint64(i)})
	}
	evs = append(evs, traces.Event{Op: traces.OpAlloc, ID: uint64(n + 1), Size: 64 << 20})
	return evs
}

// TestDefragmentation answers the seed question with a measurement: the GPU
// allocators (no relocation) run out of memory on a fragmented heap at a
// capacity where the TPU runtime model succeeds by defragmenting, and the
// TPU model with defrag=false fails too.
func TestDefragmentation(t *testing.T) {
	evs := fragmentingTrace(200) // 200 MiB live at most, 100 MiB free in holes, then 64 MiB
	gpu := "gpu:capacity=210MiB"
	tpu := "tpu-v5e:capacity=210MiB"
	run := func(spec, dev string) *Result {
		t.Helper()
		res, err := Replay("frag", &traces.SliceReader{Events: evs}, spec, device(t, dev), Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, spec := range []string{"jax:mem_fraction=1", "tf:per_process_gpu_memory_fraction=1", "tf:allow_growth=true,per_process_gpu_memory_fraction=1", "jax:preallocate=false,mem_fraction=1"} {
		if r := run(spec, gpu); r.OOMCount != 1 {
			t.Errorf("%s on %s: %d OOMs, want 1 (no defragmentation on GPU)", spec, gpu, r.OOMCount)
		}
	}
	for _, spec := range []string{"jax", "tf"} {
		r := run(spec, tpu)
		if r.OOMCount != 0 || r.DefragEvents == 0 || r.DefragMoved == 0 {
			t.Errorf("%s on %s: %d OOMs, %d defrag events moving %d B; want the TPU path to defragment", spec, tpu, r.OOMCount, r.DefragEvents, r.DefragMoved)
		}
		off := run(spec+":defrag=false", tpu)
		if off.OOMCount != 1 || off.DefragEvents != 0 {
			t.Errorf("%s:defrag=false on %s: %d OOMs, %d defrag events", spec, tpu, off.OOMCount, off.DefragEvents)
		}
	}
	// The what-if of jax-ml/jax#9064: defragmentation on a GPU, through host memory.
	r := run("jax:mem_fraction=1,defrag=true", gpu)
	if r.OOMCount != 0 || r.DefragEvents != 1 {
		t.Errorf("jax defrag on GPU: %d OOMs, %d defrag events", r.OOMCount, r.DefragEvents)
	}
	tpuRun := run("jax", tpu)
	if !(r.ModeledSec > tpuRun.ModeledSec) {
		t.Errorf("relocation through the host (%v s) should cost more than on-device (%v s)", r.ModeledSec, tpuRun.ModeledSec)
	}
}

// TestDefragmentationRealTrace: the same answer on a real recording. The
// CS336 Transformer probe peaks at 3.25 GB live; on 3300 MiB the GPU BFC
// strategies (and PyTorch without expandable segments) run out of memory,
// the TPU model fits by relocating live buffers once, and fails without.
func TestDefragmentationRealTrace(t *testing.T) {
	evs := loadFile(t, sharedtraces.Path(t, "pytorch-snapshots/cs336-lm-peak-probe.pickle"))
	run := func(spec, dev string) *Result {
		t.Helper()
		res, err := Replay("cs336", &traces.SliceReader{Events: evs}, spec, device(t, dev), Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, spec := range []string{"jax:mem_fraction=1", "tf:per_process_gpu_memory_fraction=1", "torch"} {
		if r := run(spec, "gpu:capacity=3300MiB"); r.OOMCount == 0 {
			t.Errorf("%s fits on a 3300 MiB GPU", spec)
		}
	}
	if r := run("torch:expandable_segments=true", "gpu:capacity=3300MiB"); r.OOMCount != 0 {
		t.Errorf("torch with expandable segments: %d OOMs on 3300 MiB", r.OOMCount)
	}
	for _, spec := range []string{"jax", "tf"} {
		r := run(spec, "tpu-v5e:capacity=3300MiB")
		if r.OOMCount != 0 || r.DefragEvents != 1 || r.DefragMoved == 0 {
			t.Errorf("%s on the TPU model: %d OOMs, %d defrag events moving %d B", spec, r.OOMCount, r.DefragEvents, r.DefragMoved)
		}
		if off := run(spec+":defrag=false", "tpu-v5e:capacity=3300MiB"); off.OOMCount == 0 {
			t.Errorf("%s:defrag=false fits on the TPU model", spec)
		}
	}
}
