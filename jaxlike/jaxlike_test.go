package jaxlike

import (
	"strings"
	"testing"

	"membench/bfc"
	"membench/jaxlike/jit"
	"membench/platform"
	"membench/strategies"
	"membench/tpurt"
)

func parse(spec string) (Config, error) {
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(sp)
}

func TestKnobs(t *testing.T) {
	d, _ := strategies.ParseDevice("a100-80g")
	for _, c := range []struct {
		spec        string
		growth      bool
		limit       int64
		platformish bool
	}{
		{"jax", false, 61440 << 20, false}, // 0.75 × 80 GiB of total
		{"jax:preallocate=false", true, 61440 << 20, false},
		{"jax:XLA_PYTHON_CLIENT_PREALLOCATE=0", true, 61440 << 20, false}, // jaxlib: false, False or 0
		{"jax:XLA_PYTHON_CLIENT_PREALLOCATE=no", false, 61440 << 20, false},
		{"jax:mem_fraction=0.5", false, 40960 << 20, false},
		{"jax:XLA_PYTHON_CLIENT_MEM_FRACTION=0.9", false, 73728 << 20, false},
		{"jax:XLA_CLIENT_MEM_FRACTION=0.25", false, 20480 << 20, false},
		{"jax:allocator=platform", false, 0, true},
		{"jax:XLA_PYTHON_CLIENT_ALLOCATOR=bfc", false, 61440 << 20, false},
	} {
		cfg, err := parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		a := New(cfg, strategies.NewMemory(&d))
		if c.platformish {
			if _, ok := a.(*platform.Allocator); !ok {
				t.Errorf("%s: not the platform allocator", c.spec)
			}
			continue
		}
		o := a.(*bfc.Allocator).Options()
		if o.AllowGrowth != c.growth || o.Limit != c.limit || o.GarbageCollection {
			t.Errorf("%s: %+v", c.spec, o)
		}
	}
	for spec, want := range map[string]string{
		"jax:XLA_PYTHON_CLIENT_MEM_FRACTION=0.5,XLA_CLIENT_MEM_FRACTION=0.6": "ValueError",
		"jax:mem_fraction=0":        "(0, 1]",
		"jax:allocator=cuda_malloc": "cuda_async",
		"jax:prealocate=false":      "valid keys",
		"jax:jit=sometimes":         "jit=sometimes",
	} {
		if _, err := parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestTPU: on a TPU the TPU runtime model takes the whole HBM less the
// runtime reserve (no 75 % fraction), defragments unless turned off and
// loads a program of program_bytes.
func TestTPU(t *testing.T) {
	tpu, _ := strategies.ParseDevice("tpu-v5p")
	for _, c := range []struct {
		spec    string
		defrag  bool
		program int64
	}{{"jax", true, 0}, {"jax:defrag=false", false, 0}, {"jax:mem_fraction=0.5", true, 0}, {"jax:program_bytes=1GiB", true, 1 << 30}} {
		cfg, err := parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		a := New(cfg, strategies.NewMemory(&tpu)).(*tpurt.Allocator)
		if o := a.Options(); a.Limit() != tpu.Capacity || o.Defrag != c.defrag || o.ProgramBytes != c.program || o.Granule != 128 {
			t.Errorf("%s on TPU: limit %d, %+v", c.spec, a.Limit(), o)
		}
	}
}

// TestJITKnob: jit and JAX_DISABLE_JIT (its inverse) choose the replay's
// mode; unset, the trace decides (jit.Auto).
func TestJITKnob(t *testing.T) {
	for spec, want := range map[string]jit.Mode{
		"jax": jit.Auto, "jax:jit=true": jit.On, "jax:jit=false": jit.Off,
		"jax:JAX_DISABLE_JIT=1": jit.Off, "jax:JAX_DISABLE_JIT=false": jit.On,
	} {
		cfg, err := parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if x := cfg.Execution(); x.Mode != want || x.Knob != "jit" {
			t.Errorf("%s: %+v, want mode %v", spec, x, want)
		}
		// The knob has an effect on every device and allocator: no note.
		for _, dev := range []string{"a100-80g", "tpu-v4"} {
			d, _ := strategies.ParseDevice(dev)
			if n := cfg.notes(&d); len(n) > 0 {
				t.Errorf("%s on %s: notes %q", spec, dev, n)
			}
		}
	}
}
