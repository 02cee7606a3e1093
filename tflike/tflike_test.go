package tflike

import (
	"strings"
	"testing"

	"membench/bfc"
	"membench/jaxlike/jit"
	"membench/platform"
	"membench/strategies"
	"membench/tpurt"
)

func cfg(t *testing.T, spec string) Config {
	t.Helper()
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMinSystemMemory is gpu_device.cc's table (allocator-spec §2.8).
func TestMinSystemMemory(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		avail int64
		cc    int
		want  int64
	}{
		{1 << 30, 9, 225 * mib}, {(2 << 30) - 1, 8, 225 * mib},
		{2 << 30, 6, 500 * mib}, {16 << 30, 5, 500 * mib},
		{16 << 30, 7, 1050 * mib},
		{40 << 30, 8, 1536 * mib},
		{80 << 30, 9, 1800 * mib}, {80 << 30, 10, 1800 * mib},
	} {
		if got := MinSystemMemory(c.avail, c.cc); got != c.want {
			t.Errorf("MinSystemMemory(%d, cc %d) = %d, want %d", c.avail, c.cc, got, c.want)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	dev := func(spec string) *strategies.Device {
		d, err := strategies.ParseDevice(spec)
		if err != nil {
			t.Fatal(err)
		}
		return &d
	}
	for _, c := range []struct {
		spec, dev string
		want      int64
	}{
		{"tf", "a100-80g", (81920-512)*mib - 1536*mib},            // cc 8: free − 1536 MiB
		{"tf", "h100-80g", (81559-512)*mib - 1800*mib},            // cc 9: free − 1800 MiB
		{"tf", "a100-40g:cc=7", 42405855232 - 512*mib - 1050*mib}, // free = total − the 512 MiB context
		{"tf", "a100-40g:cc=6", 42405855232 - 512*mib - 500*mib},
		{"tf", "gpu:capacity=1GiB", 1<<30 - 225*mib},                        // under 2 GiB free
		{"tf:per_process_gpu_memory_fraction=0.5", "a100-80g", 40960 * mib}, // of total, not free
		{"tf:TF_DEVICE_MIN_SYS_MEMORY_IN_MB=4096", "a100-80g", (81920 - 512 - 4096) * mib},
		{"tf:memory_limit_mb=1000", "a100-80g", 1000 * mib},
	} {
		if got := cfg(t, c.spec).MemoryLimit(dev(c.dev)); got != c.want {
			t.Errorf("%s on %s: limit %d, want %d", c.spec, c.dev, got, c.want)
		}
	}
}

func TestKnobs(t *testing.T) {
	if c := cfg(t, "tf"); c.AllowGrowth || !c.GarbageCollection || c.CudaMalloc || c.Defrag {
		t.Errorf("defaults: %+v", c)
	}
	if c := cfg(t, "tf:TF_FORCE_GPU_ALLOW_GROWTH=true,TF_ENABLE_GPU_GARBAGE_COLLECTION=false"); !c.AllowGrowth || c.GarbageCollection {
		t.Errorf("env aliases: %+v", c)
	}
	d, _ := strategies.ParseDevice("a100-80g")
	mem := strategies.NewMemory(&d)
	if _, ok := New(cfg(t, "tf:TF_GPU_ALLOCATOR=cuda_malloc"), mem).(*platform.Allocator); !ok {
		t.Error("cuda_malloc is not the platform allocator")
	}
	a, ok := New(cfg(t, "tf:allow_growth=true,internal_fragmentation_fraction=0.1"), mem).(*bfc.Allocator)
	if !ok || !a.Options().AllowGrowth || !a.Options().GarbageCollection || a.Options().FragmentationFraction != 0.1 {
		t.Errorf("bfc options %+v", a.Options())
	}
	tpu, _ := strategies.ParseDevice("tpu-v4")
	ta := New(cfg(t, "tf"), strategies.NewMemory(&tpu)).(*tpurt.Allocator)
	if o := ta.Options(); !o.Defrag || ta.Limit() != tpu.Capacity {
		t.Errorf("TPU path: limit %d, options %+v", ta.Limit(), o)
	}
	for spec, want := range map[string]string{
		"tf:allow_grow=true":                     "valid keys",
		"tf:allocator=cuda_async":                "cuda_malloc_async",
		"tf:per_process_gpu_memory_fraction=1.5": "(0, 1]",
		"tf:allow_growth=maybe":                  "bad boolean",
		"tf:jit_compile=maybe":                   "bad boolean",
	} {
		sp, _ := strategies.ParseSpec(spec)
		if _, err := ParseConfig(sp); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestMiBKnobsBounded: a limit in MiB too large for the byte count is
// refused, not wrapped to a negative limit (issue 11, defect 10).
func TestMiBKnobsBounded(t *testing.T) {
	for _, spec := range []string{
		"tf:memory_limit_mb=8796093022208", // 2^43: << 20 overflows int64
		"tf:memory_limit_mb=9223372036854775807",
		"tf:gpu_system_memory_size_in_mb=8796093022208",
		"tf:memory_limit_mb=0",
	} {
		sp, err := strategies.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseConfig(sp); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
	sp, _ := strategies.ParseSpec("tf:memory_limit_mb=1099511627776")
	c, err := ParseConfig(sp)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := strategies.ParseDevice("a100-80g")
	if l := c.MemoryLimit(&d); l <= 0 {
		t.Errorf("largest memory_limit_mb gives limit %d", l)
	}
}

// TestJITCompile: TensorFlow runs per op unless jit_compile=true, and the
// default says why.
func TestJITCompile(t *testing.T) {
	if x := cfg(t, "tf").Execution(); x.Mode != jit.Off || x.Default == "" {
		t.Errorf("tf: %+v", x)
	}
	if x := cfg(t, "tf:jit_compile=true").Execution(); x.Mode != jit.On || x.Knob != "jit_compile" {
		t.Errorf("tf:jit_compile=true: %+v", x)
	}
	if x := cfg(t, "tf:jit_compile=false").Execution(); x.Mode != jit.Off || x.Default != "" {
		t.Errorf("tf:jit_compile=false: %+v", x)
	}
}
