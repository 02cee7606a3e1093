package harness

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"membench/jaxlike"
	"membench/jaxlike/heapsim"
	"membench/jaxlike/jit"
	"membench/strategies"
	"membench/tflike"
	"membench/torchlike"
	"membench/traces"
	// PyTorch snapshots are detected by traces and decoded by the torch
	// house, which registers its reader when linked in; exports write
	// them (ExportMemoryViz).
	"membench/torchlike/snapshot"
	_ "membench/xprof"
)

// Constructor builds a strategy's allocator on a replay's device memory.
type Constructor func(sp strategies.Spec, mem *strategies.Memory) (strategies.Allocator, error)

// registry maps strategy names to constructors: the one place that knows
// every framework package (architecture: harness → framework packages).
var registry = map[string]Constructor{
	"torch": func(sp strategies.Spec, mem *strategies.Memory) (strategies.Allocator, error) {
		cfg, err := torchlike.ParseConfig(sp)
		if err != nil {
			return nil, err
		}
		// The torch house decides which devices it models (not a TPU).
		a, err := torchlike.Build(cfg, mem)
		if err != nil {
			return nil, err
		}
		return a, nil
	},
	"tf": func(sp strategies.Spec, mem *strategies.Memory) (strategies.Allocator, error) {
		cfg, err := tflike.ParseConfig(sp)
		if err != nil {
			return nil, err
		}
		return tflike.New(cfg, mem), nil
	},
	"jax": func(sp strategies.Spec, mem *strategies.Memory) (strategies.Allocator, error) {
		cfg, err := jaxlike.ParseConfig(sp)
		if err != nil {
			return nil, err
		}
		return jaxlike.New(cfg, mem), nil
	},
	// The offline floor (issue 14): XLA's heap simulator packing the whole
	// trace, a bound to read the allocators against, not an allocator.
	"planner": func(sp strategies.Spec, mem *strategies.Memory) (strategies.Allocator, error) {
		cfg, err := heapsim.ParsePlannerConfig(sp)
		if err != nil {
			return nil, err
		}
		return heapsim.NewPlanner(cfg, mem), nil
	},
}

// recordedNotes compare, for the strategy whose framework recorded a
// trace, the replay's settings with the recorded ones: a PyTorch snapshot
// says which allocator_settings it was taken under, and a replay of it
// under others says so (snapshot.ReplayNote).
var recordedNotes = map[string]func(strategies.Spec, traces.Meta) string{
	"torch": func(sp strategies.Spec, m traces.Meta) string {
		cfg, err := torchlike.ParseConfig(sp)
		if err != nil {
			return ""
		}
		return snapshot.ReplayNote(m, cfg)
	},
}

// RecordedNote is recordedNotes' note for the strategy spec label on a
// trace with meta m, or "".
func RecordedNote(label string, m traces.Meta) string {
	sp, err := strategies.ParseSpec(label)
	if err != nil {
		return ""
	}
	if f, ok := recordedNotes[sp.Name]; ok {
		return f(sp, m)
	}
	return ""
}

// executions are the strategies that can run a trace's executable
// launches compiled, each with its knob (jax: jit, tf: jit_compile); a
// strategy not here replays every trace op by op.
var executions = map[string]func(strategies.Spec) (jit.Execution, error){
	"jax": func(sp strategies.Spec) (jit.Execution, error) {
		c, err := jaxlike.ParseConfig(sp)
		return c.Execution(), err
	},
	"tf": func(sp strategies.Spec) (jit.Execution, error) {
		c, err := tflike.ParseConfig(sp)
		return c.Execution(), err
	},
}

// executionOf is how the strategy spec runs launches: nil for a strategy
// that has no compiled mode (or a label that is not a spec).
func executionOf(spec string) *jit.Execution {
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		return nil
	}
	f, ok := executions[sp.Name]
	if !ok {
		return nil
	}
	x, err := f(sp)
	if err != nil {
		return nil
	}
	return &x
}

// memoryVizSettings give, for a strategy that is PyTorch's allocator, the
// allocator_settings its export writes (ExportMemoryViz): PyTorch's own,
// from the model's configuration, so that `membench validate` replays the
// export as configured. The other strategies' exports describe their
// model instead.
var memoryVizSettings = map[string]func(strategies.Spec, strategies.Allocator) (*snapshot.Settings, error){
	"torch": func(sp strategies.Spec, a strategies.Allocator) (*snapshot.Settings, error) {
		t, ok := a.(*torchlike.Allocator)
		if !ok {
			return nil, fmt.Errorf("not the CUDA caching allocator model (%T)", a)
		}
		cfg := t.Config()
		if cfg.NoCaching {
			// Upstream's uncached path records no memory history.
			return nil, fmt.Errorf("with PYTORCH_NO_CUDA_MEMORY_CACHING PyTorch records no memory history, so there is no snapshot to show")
		}
		// PYTORCH_CUDA_ALLOC_CONF's form: key:value, comma-separated, in
		// the spec's order.
		parts := make([]string, len(sp.Params))
		for i, p := range sp.Params {
			parts[i] = p.Key + ":" + p.Value
		}
		return snapshot.SettingsOf(cfg, strings.Join(parts, ",")), nil
	},
}

// advisers hold each framework's knowledge of its reservation policy, for
// the capacity answers (Advise).
var advisers = map[string]strategies.Adviser{
	"torch": torchlike.Adviser,
	"tf":    tflike.Adviser,
	"jax":   jaxlike.Adviser,
}

// DefaultStrategies is what `membench run` compares when no strategy is
// named: the CLI contract's jax, tf and torch, less any not yet built. On
// a device that a strategy has no model of (torch on a TPU), Plan leaves
// it out.
func DefaultStrategies() []string {
	var out []string
	for _, n := range []string{"jax", "tf", "torch"} {
		if _, ok := registry[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// Strategies lists the registered strategy names.
func Strategies() []string {
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// NewAllocator parses spec and builds its allocator on mem.
func NewAllocator(spec string, mem *strategies.Memory) (strategies.Allocator, strategies.Spec, error) {
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		return nil, sp, err
	}
	if k, dup := sp.Repeated(); dup {
		// The later value would win, under a label naming both.
		return nil, sp, fmt.Errorf("strategy %q: knob %q given twice", spec, k)
	}
	c, ok := registry[sp.Name]
	if !ok {
		return nil, sp, fmt.Errorf("unknown strategy %q (known: %s)", sp.Name, strings.Join(Strategies(), ", "))
	}
	a, err := c(sp, mem)
	return a, sp, err
}

// IsOffline reports whether spec names an offline plan
// (strategies.Offline): a bound to read the allocators against, made with
// the whole trace in view, not an allocator. Readers of results that have
// only the strategy's name (the report, from benchfmt files) ask here, so
// that they never rank a bound among the allocators.
func IsOffline(spec string) bool {
	if v, ok := offlineSpecs.Load(spec); ok {
		return v.(bool)
	}
	off := isOffline(spec)
	offlineSpecs.Store(spec, off)
	return off
}

// offlineSpecs caches IsOffline: the report asks for every strategy many
// times, and building an allocator to find out is not free.
var offlineSpecs sync.Map

func isOffline(spec string) bool {
	dev, err := strategies.ParseDevice(strategies.DefaultDevice)
	if err != nil {
		return false
	}
	a, _, err := NewAllocator(spec, strategies.NewMemory(&dev))
	if err != nil {
		return false
	}
	_, ok := a.(strategies.Offline)
	return ok
}
