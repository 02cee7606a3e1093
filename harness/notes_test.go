package harness

import (
	"strings"
	"testing"

	"membench/strategies"
	"membench/traces/corpus"
)

// TestAllocatorNotes: a Result carries the notes its allocator gives of
// its own assumptions (strategies.Noter): the TPU runtime model's for jax
// and tf on a TPU, none for a model that rests on published behaviour.
func TestAllocatorNotes(t *testing.T) {
	for _, c := range []struct {
		spec, device string
		want         bool
	}{
		{"jax", "tpu-v4", true},
		{"tf:defrag=false", "tpu-v5e", true},
		{"torch", "a100-40g", false},
		{"jax", "a100-40g", false},
		{"tf", "a100-40g", false},
	} {
		dev, err := strategies.ParseDevice(c.device)
		if err != nil {
			t.Fatal(err)
		}
		r, err := corpus.Open("gpt-generate")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Replay("gpt-generate", r, c.spec, dev, DefaultOptions)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := len(res.Notes) > 0
		if got != c.want {
			t.Errorf("%s on %s: notes %q, want some: %t", c.spec, c.device, res.Notes, c.want)
		}
		for _, n := range res.Notes {
			if !strings.Contains(n, "assumption") || !strings.Contains(n, "TPU runtime") {
				t.Errorf("%s on %s: note %q does not say it is the TPU runtime model's assumption", c.spec, c.device, n)
			}
		}
	}
}
