package harness

import (
	"math"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
	"membench/strategies"
	"membench/traces"
)

// specFuzzTrace is a small trace of small and large requests, frees out
// of order, a size that no device holds and a block freed while others
// grow around it: enough to reach every model's growth, split, merge,
// release and OOM paths.
const specFuzzTrace = "membench-trace 1\n" +
	"a 1 1000\na 2 4194304\na 3 512\nf 2\na 4 20971520\na 5 1099511627776\n" +
	"a 6 3000000\nf 1\na 7 1048577\nf 3\nf 6\na 8 8000000000\nf 4\nf 7\nf 8\n"

// FuzzSpec builds every strategy from a fuzzed spec (knobs and values)
// on a fuzzed device and replays a small trace, under fuzzbound's bound:
// a spec or device is refused with an error, or the replay runs and
// every metric it reports is a finite number, never negative where a
// count, a size or a time is meant (issue 11: tf:memory_limit_mb at 2^43
// overflowed; malloc-sec=NaN gave a negative modelled time). Unknown
// knobs must be refused, not ignored.
func FuzzSpec(f *testing.F) {
	for _, c := range [][2]string{
		{"torch", "a100-80g"},
		{"torch:expandable_segments=true,max_split_size_mb=20", "a100-40g:capacity=1GiB"},
		{"torch:roundup_power2_divisions=4,garbage_collection_threshold=0.6", "h100-80g:malloc-sec=1e-3"},
		{"tf:allow_growth=true", "a100-80g"},
		{"tf:memory_limit_mb=8796093022208", "a100-80g"},
		{"jax:preallocate=false,mem_fraction=0.5", "tpu-v5e"},
		{"jax:mem_fraction=0.94", "tpu-v5e:capacity=64GiB"},
		{"planner", "a100-40g:capacity=6GiB"},
		{"tf:no_such_knob=1", "a100-80g"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, spec, device string) {
		if len(spec) > 256 || len(device) > 256 {
			return
		}
		dev, err := strategies.ParseDevice(device)
		if err != nil {
			return
		}
		fuzzbound.Check(t, func() {
			r, err := traces.NewNativeReader("t.txt", strings.NewReader(specFuzzTrace))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Replay("t", r, spec, dev, DefaultOptions)
			if err != nil {
				return
			}
			for _, m := range Metrics {
				x := m.Value(res)
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%s on %s: %s = %v", spec, device, m.Unit, x)
				}
				if x < 0 && m.Unit != "first-oom-event" {
					t.Fatalf("%s on %s: %s = %v, negative", spec, device, m.Unit, x)
				}
			}
		})
	})
}
