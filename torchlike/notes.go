package torchlike

import (
	"fmt"

	"membench/asyncpool"
	"membench/strategies"
)

// Build is New for a device a user chose: it refuses a device this model
// does not describe. PyTorch on a TPU runs through PyTorch/XLA, whose
// buffers the TPU runtime allocates; CUDACachingAllocator never sees them.
func Build(cfg Config, mem *strategies.Memory) (strategies.Allocator, error) {
	if err := CheckDevice(mem.Dev); err != nil {
		return nil, err
	}
	if cfg.AsyncBackend {
		return newAsync(cfg, mem), nil
	}
	return New(cfg, mem), nil
}

// newAsync is backend:cudaMallocAsync (allocator-spec §6.3): CUDA's pool,
// which PyTorch trims only on torch.cuda.empty_cache() (so it keeps what
// it maps), with set_per_process_memory_fraction capping the bytes
// requested. The caching allocator's knobs do nothing there.
func newAsync(cfg Config, mem *strategies.Memory) strategies.Allocator {
	o := asyncpool.Options{ReleaseThreshold: asyncpool.Keep, Granularity: cfg.PoolGranularity, Name: "cudaMallocAsync", Framework: "torch"}
	if cfg.FractionSet {
		o.RequestedCap = max(int64(cfg.MemoryFraction*float64(mem.Dev.Total)), 1)
	}
	d := DefaultConfig()
	for _, k := range []struct {
		set  bool
		name string
	}{
		{cfg.MaxSplitSize != d.MaxSplitSize, "max_split_size_mb"},
		{cfg.MaxNonSplitRounding != d.MaxNonSplitRounding, "max_non_split_rounding_mb"},
		{cfg.GCThreshold != 0, "garbage_collection_threshold"},
		{cfg.Divisions != d.Divisions, "roundup_power2_divisions"},
		{cfg.ExpandableSegments, "expandable_segments"},
		{cfg.LargeSegmentSize != d.LargeSegmentSize, "large_segment_size_mb"},
		{cfg.NoCaching, "PYTORCH_NO_CUDA_MEMORY_CACHING"},
	} {
		if k.set {
			o.Notes = append(o.Notes, k.name+" has no effect with backend:cudaMallocAsync: it configures the native caching allocator")
		}
	}
	return asyncpool.New(o, mem)
}

// CheckDevice reports whether the model describes PyTorch's memory on d:
// a GPU, yes; a TPU, no (a *strategies.UnsupportedDeviceError saying why).
func CheckDevice(d *strategies.Device) error {
	if d.Kind == strategies.TPU {
		return &strategies.UnsupportedDeviceError{Strategy: "torch", Device: d.Name,
			Reason: "PyTorch on a TPU goes through PyTorch/XLA, whose memory is managed by the TPU runtime's allocator, not by the CUDA caching allocator this strategy models; use jax or tf on a TPU device (the TPU runtime model)"}
	}
	return nil
}

// Notes implements strategies.Noter: the knobs of this configuration that
// have no effect as set, in a fixed order. The model rests on published
// behaviour, so it adds no assumption of its own.
func (a *Allocator) Notes() []string { return a.cfg.notes() }

func (c *Config) notes() []string {
	var out []string
	d := DefaultConfig()
	if c.NoCaching {
		// PYTORCH_NO_CUDA_MEMORY_CACHING: one cudaMalloc per tensor, no
		// pools, no rounding, no fraction (the uncached path bypasses
		// the caching allocator entirely).
		var set []string
		add := func(changed bool, s string) {
			if changed {
				set = append(set, s)
			}
		}
		add(c.MaxSplitSize != d.MaxSplitSize, "max_split_size_mb")
		add(c.MaxNonSplitRounding != d.MaxNonSplitRounding, "max_non_split_rounding_mb")
		add(c.GCThreshold != 0, "garbage_collection_threshold")
		add(c.Divisions != d.Divisions, "roundup_power2_divisions")
		add(c.ExpandableSegments, "expandable_segments")
		add(c.FractionSet, "per_process_memory_fraction")
		add(c.LargeSegmentSize != d.LargeSegmentSize, "large_segment_size_mb")
		for _, k := range set {
			out = append(out, fmt.Sprintf("%s has no effect with PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is its own cudaMalloc, outside the caching allocator", k))
		}
	} else {
		if c.GCThreshold > 0 && !c.FractionSet {
			out = append(out, fmt.Sprintf("garbage_collection_threshold=%g has no effect without per_process_memory_fraction (torch.cuda.set_per_process_memory_fraction): the threshold is a fraction of that limit (allocator-spec §1.9)", c.GCThreshold))
		}
		if c.MaxNonSplitRounding != d.MaxNonSplitRounding && c.MaxSplitSize == unlimited {
			out = append(out, fmt.Sprintf("max_non_split_rounding_mb=%d has no effect without max_split_size_mb: it bounds the reuse of oversize blocks, which exist only above max_split_size (allocator-spec §1.5)", c.MaxNonSplitRounding/mb))
		}
	}
	if c.poolGranularitySet && !c.AsyncBackend {
		out = append(out, "pool_granularity has no effect without backend:cudaMallocAsync: it is the assumed growth unit of CUDA's stream-ordered pool")
	}
	for _, kv := range c.inert {
		out = append(out, kv+" has no effect on a replay: it concerns pinned host memory, locking or graph capture, which a single-process replay does not see (accepted so that a real PYTORCH_CUDA_ALLOC_CONF parses whole)")
	}
	return out
}
