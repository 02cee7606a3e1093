package tflike

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

// Config is TensorFlow's GPUOptions and environment as they affect memory.
type Config struct {
	AllowGrowth           bool    // GPUOptions.allow_growth, TF_FORCE_GPU_ALLOW_GROWTH
	Fraction              float64 // per_process_gpu_memory_fraction; 0 = unset
	GarbageCollection     bool    // TF_ENABLE_GPU_GARBAGE_COLLECTION, default true
	CudaMalloc            bool    // TF_GPU_ALLOCATOR=cuda_malloc
	Async                 bool    // TF_GPU_ALLOCATOR=cuda_malloc_async: CUDA's stream-ordered pool
	AsyncPrealloc         bool    // TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC: the async pool reserves its limit up front
	FragmentationFraction float64 // experimental.internal_fragmentation_fraction
	SystemMemoryMB        int64   // TF_DEVICE_MIN_SYS_MEMORY_IN_MB / gpu_system_memory_size_in_mb
	MemoryLimitMB         int64   // a logical device's memory_limit_mb
	tpurt.Knobs                   // defrag, defrag_via_host, program_bytes
	// JITCompile is tf.function(jit_compile=True): the function runs as
	// an XLA executable, allocating as JAX's do under jit (allocator-spec
	// §6.1; package jit). JITCompileSet says it was given.
	JITCompile, JITCompileSet bool
	// given are the knobs set, in the order given (see notes).
	given []setting
}

// setting is one knob as the spec gave it.
type setting struct {
	knob string // the canonical key
	text string // key=value as written
}

// canonical maps the environment variables' names to the knobs they set.
var canonical = map[string]string{
	"TF_FORCE_GPU_ALLOW_GROWTH":        "allow_growth",
	"TF_ENABLE_GPU_GARBAGE_COLLECTION": "garbage_collection",
	"TF_GPU_ALLOCATOR":                 "allocator",
	"TF_DEVICE_MIN_SYS_MEMORY_IN_MB":   "gpu_system_memory_size_in_mb",
}

// Keys are the knobs a tf strategy spec accepts, with the environment
// variables' names as aliases.
var Keys = append([]string{
	"allow_growth", "TF_FORCE_GPU_ALLOW_GROWTH",
	"per_process_gpu_memory_fraction",
	"garbage_collection", "TF_ENABLE_GPU_GARBAGE_COLLECTION",
	"allocator", "TF_GPU_ALLOCATOR",
	"async_prealloc", "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC",
	"internal_fragmentation_fraction",
	"gpu_system_memory_size_in_mb", "TF_DEVICE_MIN_SYS_MEMORY_IN_MB",
	"memory_limit_mb",
	"jit_compile",
}, tpurt.KnobKeys...)

// Execution is how a replay runs the trace's executable launches: op by
// op unless jit_compile=true, TensorFlow's own default (graph and eager
// execution without XLA allocate per op through the BFC; §6.1).
func (c Config) Execution() jit.Execution {
	x := jit.Execution{Strategy: "tf", Knob: "jit_compile", Mode: jit.Off}
	if c.JITCompile {
		x.Mode = jit.On
	}
	if !c.JITCompileSet {
		x.Default = "TensorFlow's default: without jit_compile=True a function does not run as an XLA executable"
	}
	return x
}

// ParseConfig reads a tf strategy spec.
func ParseConfig(sp strategies.Spec) (Config, error) {
	c := Config{GarbageCollection: true}
	if err := sp.CheckKeys(Keys...); err != nil {
		return c, err
	}
	for _, p := range sp.Params {
		var err error
		knob := p.Key
		if k, ok := canonical[p.Key]; ok {
			knob = k
		}
		c.given = append(c.given, setting{knob, p.Key + "=" + p.Value})
		switch p.Key {
		case "allow_growth", "TF_FORCE_GPU_ALLOW_GROWTH":
			c.AllowGrowth, err = strategies.ParseBool(p.Value)
		case "per_process_gpu_memory_fraction":
			c.Fraction, err = strconv.ParseFloat(p.Value, 64)
			if err == nil && !(c.Fraction > 0 && c.Fraction <= 1) {
				err = fmt.Errorf("must be in (0, 1] (unified memory above 1 is not modelled)")
			}
		case "jit_compile":
			c.JITCompile, err = strategies.ParseBool(p.Value)
			c.JITCompileSet = true
		case "garbage_collection", "TF_ENABLE_GPU_GARBAGE_COLLECTION":
			c.GarbageCollection, err = strategies.ParseBool(p.Value)
		case "allocator", "TF_GPU_ALLOCATOR":
			switch p.Value {
			case "bfc", "":
				c.CudaMalloc, c.Async = false, false
			case "cuda_malloc":
				c.CudaMalloc, c.Async = true, false
			case "cuda_malloc_async":
				c.CudaMalloc, c.Async = false, true
			default:
				err = fmt.Errorf("valid values: bfc, cuda_malloc, cuda_malloc_async")
			}
		case "async_prealloc", "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC":
			c.AsyncPrealloc, err = strategies.ParseBool(p.Value)
		case "internal_fragmentation_fraction":
			c.FragmentationFraction, err = strconv.ParseFloat(p.Value, 64)
			if err == nil && !(c.FragmentationFraction >= 0 && c.FragmentationFraction <= 1) {
				err = fmt.Errorf("must be in [0, 1]")
			}
		case "gpu_system_memory_size_in_mb", "TF_DEVICE_MIN_SYS_MEMORY_IN_MB":
			c.SystemMemoryMB, err = strconv.ParseInt(p.Value, 10, 64)
			if err == nil && !(c.SystemMemoryMB >= 0 && c.SystemMemoryMB <= maxMB) {
				err = fmt.Errorf("must be in [0, %d] (MiB)", maxMB)
			}
		case "memory_limit_mb":
			c.MemoryLimitMB, err = strconv.ParseInt(p.Value, 10, 64)
			if err == nil && !(c.MemoryLimitMB > 0 && c.MemoryLimitMB <= maxMB) {
				err = fmt.Errorf("must be in [1, %d] (MiB)", maxMB)
			}
		default:
			_, err = c.Knobs.Parse(p.Key, p.Value)
		}
		if err != nil {
			return c, fmt.Errorf("tf: %s=%s: %w", p.Key, p.Value, err)
		}
	}
	return c, nil
}

// maxMB bounds the knobs given in MiB: 2^40 MiB is an exbibyte, far beyond
// any device, and keeps the byte counts (MiB << 20) clear of int64
// overflow, which would otherwise wrap to a negative limit and fail every
// allocation.
const maxMB = 1 << 40

// MinSystemMemory is the memory TensorFlow leaves to the system when it
// sizes its default limit (gpu_device.cc, allocator-spec §2.8), for an
// optimized build.
func MinSystemMemory(available int64, ccMajor int) int64 {
	const mib = 1 << 20
	switch {
	case available < 1<<31:
		return 225 * mib
	case ccMajor <= 6:
		return 500 * mib
	case ccMajor <= 7:
		return 1050 * mib
	case ccMajor <= 8:
		return 1536 * mib
	}
	return 1800 * mib
}

// MemoryLimit is SingleVirtualDeviceMemoryLimit: free memory less the
// system reserve, or the fraction of total memory, or free memory less an
// explicit reserve.
func (c Config) MemoryLimit(d *strategies.Device) int64 {
	if c.MemoryLimitMB > 0 {
		return c.MemoryLimitMB << 20
	}
	var limit int64
	if c.Fraction == 0 {
		limit = d.Free
		if r := MinSystemMemory(d.Free, d.ComputeMajor); r < limit {
			limit -= r
		}
	} else {
		limit = int64(float64(d.Total) * c.Fraction)
	}
	if c.SystemMemoryMB > 0 && c.SystemMemoryMB<<20 < d.Free {
		limit = d.Free - c.SystemMemoryMB<<20
	}
	return limit
}

// New builds TensorFlow's allocator for device memory mem. Its Notes
// (strategies.Noter) name the knobs that have no effect as set.
func New(c Config, mem *strategies.Memory) strategies.Allocator {
	d := mem.Dev
	notes := c.notes(d)
	if d.Kind == strategies.TPU {
		return c.Knobs.New(mem, notes...)
	}
	if c.CudaMalloc {
		a := platform.New(mem, "cuda_malloc")
		a.KnobNotes = notes
		return a
	}
	if c.Async {
		// allocator-spec §6.3: GpuCudaMallocAsyncAllocator sets the
		// pool's release threshold to its memory limit, does not enforce
		// the limit as a cap, and reserves it up front only with
		// TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC.
		limit := c.MemoryLimit(d)
		o := asyncpool.Options{ReleaseThreshold: limit, Name: "cuda_malloc_async", Framework: "tf", Notes: notes}
		if c.AsyncPrealloc {
			o.Reserve = limit
		}
		return asyncpool.New(o, mem)
	}
	return bfc.New(bfc.Options{
		Notes:                 notes,
		Limit:                 c.MemoryLimit(d),
		AllowGrowth:           c.AllowGrowth,
		GarbageCollection:     c.GarbageCollection,
		FragmentationFraction: c.FragmentationFraction,
		Defrag:                c.Defrag,
		DefragViaHost:         true, // a GPU relocates through host memory
		Name:                  "GPU_0_bfc",
	}, mem)
}

// notes says which of the knobs given have no effect on device d: on a
// TPU, GPUOptions and the GPU environment (the TPU runtime model uses
// the whole HBM less the runtime reserve); with TF_GPU_ALLOCATOR=
// cuda_malloc, every BFC setting; a fraction or a system reserve that a
// memory_limit_mb or a system reserve overrides (SingleVirtualDeviceMemoryLimit,
// allocator-spec §2.8); defrag_via_host on a GPU (relocation there always
// goes through host memory) or with defrag=false; program_bytes on a GPU.
func (c Config) notes(d *strategies.Device) []string {
	var out []string
	sysReserve := c.SystemMemoryMB > 0 && c.SystemMemoryMB<<20 < d.Free
	for _, g := range c.given {
		tpuKnob := tpurt.IsKnob(g.knob)
		why := ""
		switch {
		case g.knob == "jit_compile":
			// It chooses the replay's mode, whatever the allocator;
			// the replay says which mode ran (package jit).
		case d.Kind == strategies.TPU && !tpuKnob:
			why = "on a TPU device: it configures TensorFlow's GPU allocator; the TPU runtime model uses the whole HBM less the runtime reserve"
		case d.Kind != strategies.TPU && c.CudaMalloc && g.knob != "allocator":
			why = "with TF_GPU_ALLOCATOR=cuda_malloc: every tensor is its own cudaMalloc, with no BFC limit, growth policy, garbage collection or relocation"
		case d.Kind != strategies.TPU && c.Async && (g.knob == "allow_growth" || g.knob == "garbage_collection" || g.knob == "internal_fragmentation_fraction" || tpuKnob):
			why = "with TF_GPU_ALLOCATOR=cuda_malloc_async: it configures the BFC, which the driver's pool replaces"
		case g.knob == "async_prealloc" && !c.Async:
			why = "without TF_GPU_ALLOCATOR=cuda_malloc_async: it concerns the driver's pool only"
		case g.knob == "per_process_gpu_memory_fraction" && c.MemoryLimitMB > 0,
			g.knob == "gpu_system_memory_size_in_mb" && c.MemoryLimitMB > 0:
			why = "with memory_limit_mb set: the logical device's limit overrides it (allocator-spec §2.8)"
		case g.knob == "gpu_system_memory_size_in_mb" && c.SystemMemoryMB > 0 && !sysReserve:
			why = "on this device: it is not below the free memory, and TensorFlow then ignores it (allocator-spec §2.8)"
		case g.knob == "per_process_gpu_memory_fraction" && sysReserve:
			why = "with gpu_system_memory_size_in_mb set: the limit is free memory less that reserve (allocator-spec §2.8)"
		default:
			why = c.Knobs.NoEffect(g.knob, d.Kind)
		}
		if why != "" {
			out = append(out, g.text+" has no effect "+why)
		}
	}
	return out
}

// Adviser is TensorFlow's reservation policy on a GPU (allocator-spec
// §2.8): the BFC's limit is free memory less a system reserve that depends
// on the compute capability (1.5 GiB on an A100), taken whole unless
// allow_growth. Placement alone is per_process_gpu_memory_fraction at 1;
// the knobs worth measuring are the largest fraction the smallest card
// allows and growth on demand.
var Adviser = strategies.Adviser{
	Placement: func(sp strategies.Spec, dev strategies.Device) (strategies.Spec, bool) {
		c, err := ParseConfig(sp)
		if err != nil || dev.Kind == strategies.TPU || c.CudaMalloc || c.MemoryLimitMB > 0 {
			return sp, false
		}
		return sp.With(strategies.KV{Key: "per_process_gpu_memory_fraction", Value: "1"}), true
	},
	Knobs: func(sp strategies.Spec, dev strategies.Device, limit int64) []strategies.Knob {
		c, err := ParseConfig(sp)
		if err != nil || dev.Kind == strategies.TPU || c.CudaMalloc || c.MemoryLimitMB > 0 {
			return nil
		}
		f := strategies.FractionForCard(dev, limit)
		knobs := []strategies.Knob{{
			Spec: sp.With(strategies.KV{Key: "per_process_gpu_memory_fraction", Value: f}),
			Line: "per_process_gpu_memory_fraction=" + f + " (tf.compat.v1.GPUOptions)",
		}}
		if !c.AllowGrowth {
			knobs = append(knobs, strategies.Knob{
				Spec: sp.With(strategies.KV{Key: "allow_growth", Value: "true"}, "TF_FORCE_GPU_ALLOW_GROWTH"),
				Line: "TF_FORCE_GPU_ALLOW_GROWTH=true",
			})
		}
		return knobs
	},
	Tune: func(dev strategies.Device) []strategies.Knob {
		if dev.Kind == strategies.TPU {
			return tpurt.TuneKnobs("tf")
		}
		knob := func(line string, kvs ...strategies.KV) strategies.Knob { return strategies.NewKnob("tf", line, kvs...) }
		// allocator-spec §2.4, §2.5, §2.8: growth on demand, the fraction
		// of free memory, garbage collection of free regions, and the
		// driver's allocator.
		grow := strategies.KV{Key: "allow_growth", Value: "true"}
		noGC := strategies.KV{Key: "garbage_collection", Value: "false"}
		return []strategies.Knob{
			knob("(defaults)"),
			knob("TF_FORCE_GPU_ALLOW_GROWTH=true", grow),
			knob("TF_FORCE_GPU_ALLOW_GROWTH=true TF_ENABLE_GPU_GARBAGE_COLLECTION=false", grow, noGC),
			knob("TF_ENABLE_GPU_GARBAGE_COLLECTION=false", noGC),
			knob("per_process_gpu_memory_fraction=0.95 (tf.compat.v1.GPUOptions)", strategies.KV{Key: "per_process_gpu_memory_fraction", Value: "0.95"}),
			knob("TF_GPU_ALLOCATOR=cuda_malloc", strategies.KV{Key: "allocator", Value: "cuda_malloc"}),
			knob("TF_GPU_ALLOCATOR=cuda_malloc_async", strategies.KV{Key: "allocator", Value: "cuda_malloc_async"}),
		}
	},
}
