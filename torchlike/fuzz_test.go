package torchlike

import (
	"testing"

	"membench/internal/fuzzbound"
	"membench/strategies"
)

// FuzzParseConfig feeds PYTORCH_CUDA_ALLOC_CONF-like strings to the knob
// parser: no panic, and a configuration that parses builds an allocator
// that serves a few requests with its invariants intact.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"expandable_segments:True,max_split_size_mb:128", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
		"garbage_collection_threshold:0.6,per_process_memory_fraction:0.5", "roundup_power2_divisions:4", "large_segment_size_mb:12",
		"backend:native", "max_non_split_rounding_mb:64", "roundup_power2_divisions:[>:0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conf string) {
		fuzzbound.Check(t, func() {
			sp, err := strategies.ParseSpec("torch:" + conf)
			if err != nil {
				return
			}
			cfg, err := ParseConfig(sp)
			if err != nil {
				return
			}
			d, _ := strategies.ParseDevice("gpu:capacity=256MiB")
			a := New(cfg, strategies.NewMemory(&d))
			var hs []strategies.Handle
			for _, n := range []int64{1, 513, 1 << 20, 3 << 20, 25 << 20, 100 << 20} {
				if h, ok := a.Malloc(n, 0); ok {
					hs = append(hs, h)
				}
			}
			for _, h := range hs {
				a.Free(h)
			}
			a.EmptyCache()
			if err := a.Check(); err != nil {
				t.Fatalf("%q: %v", conf, err)
			}
		})
	})
}
