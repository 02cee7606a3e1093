package torchlike

import (
	"errors"
	"strings"
	"testing"

	"membench/strategies"
)

// TestBuildRefusesTPU: PyTorch on a TPU is PyTorch/XLA, not this model.
func TestBuildRefusesTPU(t *testing.T) {
	tpu, err := strategies.ParseDevice("tpu-v5e")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(DefaultConfig(), strategies.NewMemory(&tpu))
	var u *strategies.UnsupportedDeviceError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "PyTorch/XLA") {
		t.Errorf("Build on a TPU: %v", err)
	}
	gpu, _ := strategies.ParseDevice("a100-40g")
	if a, err := Build(DefaultConfig(), strategies.NewMemory(&gpu)); err != nil || a == nil {
		t.Errorf("Build on a GPU: %v", err)
	}
}

// TestKnobNotes: a knob that has no effect as set gets a note (Noter).
func TestKnobNotes(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []string // substrings, one per note, in order
	}{
		{"torch", nil},
		{"torch:garbage_collection_threshold=0.8,per_process_memory_fraction=0.9", nil},
		{"torch:garbage_collection_threshold=0.8", []string{"garbage_collection_threshold=0.8 has no effect without per_process_memory_fraction"}},
		{"torch:max_non_split_rounding_mb=64", []string{"max_non_split_rounding_mb=64 has no effect without max_split_size_mb"}},
		{"torch:max_non_split_rounding_mb=64,max_split_size_mb=128", nil},
		{"torch:PYTORCH_NO_CUDA_MEMORY_CACHING=1,expandable_segments=true,per_process_memory_fraction=0.5", []string{
			"expandable_segments has no effect with PYTORCH_NO_CUDA_MEMORY_CACHING=1",
			"per_process_memory_fraction has no effect with PYTORCH_NO_CUDA_MEMORY_CACHING=1"}},
		{"torch:expandable_segments:True,pinned_use_cuda_host_register:True", []string{"pinned_use_cuda_host_register=True has no effect on a replay"}},
	} {
		sp, err := strategies.ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(sp)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := strategies.ParseDevice("a100-80g")
		notes := New(cfg, strategies.NewMemory(&d)).Notes()
		if len(notes) != len(c.want) {
			t.Errorf("%s: notes %q, want %q", c.spec, notes, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(notes[i], w) {
				t.Errorf("%s: note %q, want %q", c.spec, notes[i], w)
			}
		}
	}
}
