package jaxlike

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
		{"jax", "a100-80g", nil},
		{"jax:preallocate=false,mem_fraction=0.5", "a100-80g", nil}, // the fraction caps growth
		{"jax:defrag=true", "a100-80g", nil},
		{"jax:defrag_via_host=true", "a100-80g", []string{"defrag_via_host=true has no effect on a GPU"}},
		{"jax:XLA_PYTHON_CLIENT_ALLOCATOR=platform,XLA_PYTHON_CLIENT_MEM_FRACTION=0.9,preallocate=false", "a100-80g",
			[]string{"XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 has no effect with the platform allocator", "preallocate=false has no effect with the platform allocator"}},
		{"jax:mem_fraction=0.5,preallocate=false,defrag=true", "tpu-v4",
			[]string{"mem_fraction=0.5 has no effect on a TPU device", "preallocate=false has no effect on a TPU device"}},
		{"jax:defrag=false,defrag_via_host=true", "tpu-v4", []string{"defrag_via_host=true has no effect with defrag=false"}},
		{"jax:defrag_via_host=true", "tpu-v4", nil},
	} {
		cfg, err := parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := strategies.ParseDevice(c.device)
		if err != nil {
			t.Fatal(err)
		}
		a := New(cfg, strategies.NewMemory(&d))
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
