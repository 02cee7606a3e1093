package asyncpool_test

import (
	"testing"

	"membench/asyncpool"
	"membench/jaxlike"
	"membench/strategies"
	"membench/tflike"
	"membench/torchlike"
)

// TestFrameworks: each framework's switch to CUDA's pool builds one with
// that framework's documented policy (allocator-spec §6.3), seen through
// what the pool does: JAX reserves its fraction up front unless told not
// to and keeps it; TensorFlow reserves only when asked and gives back
// above its limit; PyTorch never gives back and caps requested bytes by
// its memory fraction.
func TestFrameworks(t *testing.T) {
	dev, err := strategies.ParseDevice("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	build := func(spec string) (*asyncpool.Pool, *strategies.Memory) {
		t.Helper()
		sp, err := strategies.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		d := dev
		mem := strategies.NewMemory(&d)
		var a strategies.Allocator
		switch sp.Name {
		case "jax":
			c, err := jaxlike.ParseConfig(sp)
			if err != nil {
				t.Fatal(err)
			}
			a = jaxlike.New(c, mem)
		case "tf":
			c, err := tflike.ParseConfig(sp)
			if err != nil {
				t.Fatal(err)
			}
			a = tflike.New(c, mem)
		case "torch":
			c, err := torchlike.ParseConfig(sp)
			if err != nil {
				t.Fatal(err)
			}
			if a, err = torchlike.Build(c, mem); err != nil {
				t.Fatal(err)
			}
		}
		p, ok := a.(*asyncpool.Pool)
		if !ok {
			t.Fatalf("%s builds %T, not the async pool", spec, a)
		}
		return p, mem
	}
	step := func(p *asyncpool.Pool, mem *strategies.Memory) (afterAlloc, afterFree int64) {
		h, ok := p.Malloc(64<<20, 0)
		if !ok {
			t.Fatalf("allocation failed: %s", p.LastOOM().Message)
		}
		afterAlloc = mem.Reserved()
		p.Free(h)
		return afterAlloc, mem.Reserved()
	}
	jaxLimit := int64(float64(dev.Total) * 0.75)
	for _, tc := range []struct {
		spec             string
		alloc, afterFree int64
	}{
		{"jax:allocator=cuda_async", jaxLimit / (2 << 20) * (2 << 20), jaxLimit / (2 << 20) * (2 << 20)},
		{"jax:allocator=cuda_async,preallocate=false", 64 << 20, 64 << 20},
		{"tf:allocator=cuda_malloc_async", 64 << 20, 64 << 20},
		{"torch:backend=cudaMallocAsync", 64 << 20, 64 << 20},
	} {
		p, mem := build(tc.spec)
		a, f := step(p, mem)
		if a != tc.alloc || f != tc.afterFree {
			t.Errorf("%s: reserved %d after the allocation, %d after its free; want %d, %d", tc.spec, a, f, tc.alloc, tc.afterFree)
		}
	}
	// TensorFlow reserves its limit up front only when asked.
	p, mem := build("tf:allocator=cuda_malloc_async,async_prealloc=true")
	if a, _ := step(p, mem); a < 70<<30 {
		t.Errorf("tf with TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC reserved %d", a)
	}
	// PyTorch's fraction caps requested bytes.
	p, _ = build("torch:backend=cudaMallocAsync,per_process_memory_fraction=0.0005")
	if _, ok := p.Malloc(64<<20, 0); ok {
		t.Errorf("torch's fraction did not cap the pool")
	}
}
