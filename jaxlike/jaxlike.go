package jaxlike

import (
	"fmt"
	"strconv"

	"membench/asyncpool"
	"membench/bfc"
	"membench/jaxlike/jit"
	"membench/platform"
	"membench/strategies"
	"membench/tpurt"
)

// Config is GpuAllocatorConfig as JAX's environment variables set it.
type Config struct {
	Preallocate bool    // XLA_PYTHON_CLIENT_PREALLOCATE, default true
	Fraction    float64 // XLA_PYTHON_CLIENT_MEM_FRACTION / XLA_CLIENT_MEM_FRACTION, default 0.75
	Platform    bool    // XLA_PYTHON_CLIENT_ALLOCATOR=platform
	Async       bool    // XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async: CUDA's stream-ordered pool
	tpurt.Knobs         // defrag, defrag_via_host, program_bytes
	// JIT is how a replay runs the trace's executable launches: jit=true
	// compiled, jit=false (or JAX_DISABLE_JIT=1) op by op, unset
	// compiled when the trace has launches (package jit).
	JIT jit.Mode
	// given are the knobs set, as key=value in the order given, by
	// what they configure (see notes).
	given []setting
}

// setting is one knob as the spec gave it.
type setting struct {
	knob string // preallocate, mem_fraction, allocator, defrag, defrag_via_host, program_bytes
	text string // key=value as written
}

// Keys are the knobs a jax strategy spec accepts; the environment
// variables' names are aliases.
var Keys = append([]string{
	"preallocate", "XLA_PYTHON_CLIENT_PREALLOCATE",
	"mem_fraction", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION",
	"allocator", "XLA_PYTHON_CLIENT_ALLOCATOR",
	"jit", "JAX_DISABLE_JIT",
}, tpurt.KnobKeys...)

// ParseConfig reads a jax strategy spec.
func ParseConfig(sp strategies.Spec) (Config, error) {
	c := Config{Preallocate: true, Fraction: 0.75}
	if err := sp.CheckKeys(Keys...); err != nil {
		return c, err
	}
	fractionKey := ""
	for _, p := range sp.Params {
		var err error
		c.given = append(c.given, setting{knobOf[p.Key], p.Key + "=" + p.Value})
		switch p.Key {
		case "preallocate", "XLA_PYTHON_CLIENT_PREALLOCATE":
			// jaxlib: false iff the value is one of false, False, 0.
			c.Preallocate = !(p.Value == "false" || p.Value == "False" || p.Value == "0")
		case "mem_fraction", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION":
			if fractionKey != "" && fractionKey != p.Key {
				err = fmt.Errorf("also set as %s (jaxlib raises ValueError when both are set)", fractionKey)
				break
			}
			fractionKey = p.Key
			c.Fraction, err = strconv.ParseFloat(p.Value, 64)
			if err == nil && !(c.Fraction > 0 && c.Fraction <= 1) {
				err = fmt.Errorf("must be in (0, 1]")
			}
		case "allocator", "XLA_PYTHON_CLIENT_ALLOCATOR":
			switch p.Value {
			case "default", "bfc":
				c.Platform, c.Async = false, false
			case "platform":
				c.Platform, c.Async = true, false
			case "cuda_async":
				c.Platform, c.Async = false, true
			default:
				err = fmt.Errorf("valid values: default, bfc, platform, cuda_async")
			}
		case "jit", "JAX_DISABLE_JIT":
			var on bool
			if on, err = strategies.ParseBool(p.Value); err == nil {
				if p.Key == "JAX_DISABLE_JIT" {
					on = !on
				}
				c.JIT = jit.Off
				if on {
					c.JIT = jit.On
				}
			}
		default:
			_, err = c.Knobs.Parse(p.Key, p.Value)
		}
		if err != nil {
			return c, fmt.Errorf("jax: %s=%s: %w", p.Key, p.Value, err)
		}
	}
	return c, nil
}

// Execution is how a replay runs the trace's executable launches for
// this configuration (package jit decides what a compiled launch
// allocates; the harness applies it).
func (c Config) Execution() jit.Execution {
	return jit.Execution{Strategy: "jax", Knob: "jit", Mode: c.JIT}
}

// MemoryLimit is CreateBFCAllocator's limit: the fraction of the device's
// total memory (not its free memory; allocator-spec §3).
func (c Config) MemoryLimit(d *strategies.Device) int64 {
	return int64(float64(d.Total) * c.Fraction)
}

// knobOf maps each key and alias to the knob it sets.
var knobOf = map[string]string{
	"preallocate": "preallocate", "XLA_PYTHON_CLIENT_PREALLOCATE": "preallocate",
	"mem_fraction": "mem_fraction", "XLA_PYTHON_CLIENT_MEM_FRACTION": "mem_fraction", "XLA_CLIENT_MEM_FRACTION": "mem_fraction",
	"allocator": "allocator", "XLA_PYTHON_CLIENT_ALLOCATOR": "allocator",
	"defrag": "defrag", "defrag_via_host": "defrag_via_host", "program_bytes": "program_bytes",
	"jit": "jit", "JAX_DISABLE_JIT": "jit",
}

// New builds JAX's allocator for device memory mem. Its Notes
// (strategies.Noter) name the knobs that have no effect as set.
func New(c Config, mem *strategies.Memory) strategies.Allocator {
	d := mem.Dev
	notes := c.notes(d)
	if d.Kind == strategies.TPU {
		return c.Knobs.New(mem, notes...)
	}
	if c.Platform {
		a := platform.New(mem, "XLA platform allocator")
		a.KnobNotes = notes
		return a
	}
	if c.Async {
		// allocator-spec §6.3: cuda_async reserves the fraction of the
		// card up front when preallocating (reserve_memory =
		// preallocate), keeps its pool (release threshold = pool size)
		// and has no hard cap.
		o := asyncpool.Options{ReleaseThreshold: asyncpool.Keep, Name: "cuda_async", Framework: "jax", Notes: notes}
		if c.Preallocate {
			o.Reserve = c.MemoryLimit(d)
		}
		return asyncpool.New(o, mem)
	}
	return bfc.New(bfc.Options{
		Limit:         c.MemoryLimit(d),
		AllowGrowth:   !c.Preallocate,
		Defrag:        c.Defrag,
		DefragViaHost: true, // a GPU has no in-place relocation: through host memory (jax-ml/jax#9064)
		Name:          "GPU_0_bfc",
		Notes:         notes,
	}, mem)
}

// notes says which of the knobs given have no effect on device d: on a
// TPU, the GPU client's settings (XLA_PYTHON_CLIENT_*: the TPU runtime
// model takes the whole HBM less the runtime reserve); with the platform
// allocator, the BFC's limit, preallocation and relocation; on a GPU,
// defrag_via_host (relocation there always goes through host memory) and
// program_bytes (the TPU runtime's); and defrag_via_host with defrag off.
func (c Config) notes(d *strategies.Device) []string {
	var out []string
	for _, g := range c.given {
		why := ""
		switch {
		case g.knob == "jit":
			// It chooses the replay's mode, whatever the allocator;
			// the replay says which mode ran (package jit).
		case d.Kind == strategies.TPU && (g.knob == "preallocate" || g.knob == "mem_fraction" || g.knob == "allocator"):
			why = "on a TPU device: it configures JAX's GPU allocator; the TPU runtime model uses the whole HBM less the runtime reserve"
		case d.Kind != strategies.TPU && c.Platform && g.knob != "allocator":
			why = "with the platform allocator: every buffer is its own device allocation, with no BFC limit, preallocation or relocation"
		case d.Kind != strategies.TPU && c.Async && (g.knob == "defrag" || g.knob == "defrag_via_host"):
			why = "with cuda_async: the driver's pool remaps virtual ranges and is not relocated by this model"
		case d.Kind != strategies.TPU && c.Async && !c.Preallocate && g.knob == "mem_fraction":
			why = "with cuda_async and preallocate=false: the fraction sizes only the pool's up-front reserve, and the pool has no hard cap (allocator-spec §6.3)"
		default:
			why = c.Knobs.NoEffect(g.knob, d.Kind)
		}
		if why != "" {
			out = append(out, g.text+" has no effect "+why)
		}
	}
	return out
}

// fractionKeys are the spellings of the memory fraction.
var fractionKeys = []string{"mem_fraction", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION"}

// Adviser is JAX's reservation policy on a GPU (allocator-spec §3): the
// BFC's limit is a fraction of the card (75 % by default), preallocated.
// Placement alone is the fraction at 1; the knobs worth measuring are the
// largest fraction the smallest card allows and growth on demand.
var Adviser = strategies.Adviser{
	Placement: func(sp strategies.Spec, dev strategies.Device) (strategies.Spec, bool) {
		c, err := ParseConfig(sp)
		if err != nil || dev.Kind == strategies.TPU || c.Platform {
			return sp, false
		}
		return sp.With(strategies.KV{Key: "mem_fraction", Value: "1"}, fractionKeys...), true
	},
	Knobs: func(sp strategies.Spec, dev strategies.Device, limit int64) []strategies.Knob {
		c, err := ParseConfig(sp)
		if err != nil || dev.Kind == strategies.TPU || c.Platform {
			return nil
		}
		f := strategies.FractionForCard(dev, limit)
		knobs := []strategies.Knob{{
			Spec: sp.With(strategies.KV{Key: "mem_fraction", Value: f}, fractionKeys...),
			Line: "XLA_PYTHON_CLIENT_MEM_FRACTION=" + f,
		}}
		if c.Preallocate {
			knobs = append(knobs, strategies.Knob{
				Spec: sp.With(strategies.KV{Key: "preallocate", Value: "false"}, "XLA_PYTHON_CLIENT_PREALLOCATE"),
				Line: "XLA_PYTHON_CLIENT_PREALLOCATE=false",
			})
		}
		return knobs
	},
	Tune: func(dev strategies.Device) []strategies.Knob {
		if dev.Kind == strategies.TPU {
			return tpurt.TuneKnobs("jax")
		}
		knob := func(line string, kvs ...strategies.KV) strategies.Knob {
			return strategies.NewKnob("jax", line, kvs...)
		}
		// allocator-spec §3, §6.3: the preallocated fraction of the card,
		// growth on demand, and the platform allocator (a device call per
		// buffer, no caching).
		return []strategies.Knob{
			knob("(defaults)"),
			knob("XLA_PYTHON_CLIENT_MEM_FRACTION=.90", strategies.KV{Key: "mem_fraction", Value: "0.90"}),
			knob("XLA_PYTHON_CLIENT_MEM_FRACTION=.95", strategies.KV{Key: "mem_fraction", Value: "0.95"}),
			knob("XLA_PYTHON_CLIENT_PREALLOCATE=false", strategies.KV{Key: "preallocate", Value: "false"}),
			knob("XLA_PYTHON_CLIENT_ALLOCATOR=platform", strategies.KV{Key: "allocator", Value: "platform"}),
			knob("XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async", strategies.KV{Key: "allocator", Value: "cuda_async"}),
			knob("XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async XLA_PYTHON_CLIENT_PREALLOCATE=false", strategies.KV{Key: "allocator", Value: "cuda_async"}, strategies.KV{Key: "preallocate", Value: "false"}),
		}
	},
}
