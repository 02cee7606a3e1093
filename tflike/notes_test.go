package tflike

import (
	"strings"
	"testing"

	"membench/strategies"
)

// TestKnobNotes: a knob that has no effect as set gets a note from the
// allocator (strategies.Noter), and one that acts gets none.
func TestKnobNotes(t *testing.T) {
	for _, c := range []struct {
		spec, device string
		want         []string // substrings, one per note, in order
	}{
		{"tf", "a100-80g", nil},
		{"tf:allow_growth=true,per_process_gpu_memory_fraction=0.5", "a100-80g", nil}, // the fraction caps growth
		{"tf:memory_limit_mb=1000,per_process_gpu_memory_fraction=0.5,gpu_system_memory_size_in_mb=100", "a100-80g",
			[]string{"per_process_gpu_memory_fraction=0.5 has no effect with memory_limit_mb", "gpu_system_memory_size_in_mb=100 has no effect with memory_limit_mb"}},
		{"tf:per_process_gpu_memory_fraction=0.5,TF_DEVICE_MIN_SYS_MEMORY_IN_MB=1000", "a100-80g",
			[]string{"per_process_gpu_memory_fraction=0.5 has no effect with gpu_system_memory_size_in_mb"}},
		{"tf:gpu_system_memory_size_in_mb=100000", "a100-40g", []string{"gpu_system_memory_size_in_mb=100000 has no effect on this device"}},
		{"tf:TF_GPU_ALLOCATOR=cuda_malloc,allow_growth=true", "a100-80g", []string{"allow_growth=true has no effect with TF_GPU_ALLOCATOR=cuda_malloc"}},
		{"tf:defrag_via_host=true", "a100-80g", []string{"defrag_via_host=true has no effect on a GPU"}},
		{"tf:TF_FORCE_GPU_ALLOW_GROWTH=true,defrag=false", "tpu-v5e", []string{"TF_FORCE_GPU_ALLOW_GROWTH=true has no effect on a TPU device"}},
	} {
		d, err := strategies.ParseDevice(c.device)
		if err != nil {
			t.Fatal(err)
		}
		a := New(cfg(t, c.spec), strategies.NewMemory(&d))
		var notes []string
		for _, n := range a.(strategies.Noter).Notes() {
			if !strings.Contains(n, "assumption") { // the TPU runtime model's own
				notes = append(notes, n)
			}
		}
		if len(notes) != len(c.want) {
			t.Errorf("%s on %s: notes %q, want %q", c.spec, c.device, notes, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(notes[i], w) {
				t.Errorf("%s on %s: note %q, want %q", c.spec, c.device, notes[i], w)
			}
		}
	}
}
