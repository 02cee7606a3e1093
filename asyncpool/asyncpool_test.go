package asyncpool

import (
	"strings"
	"testing"

	"membench/strategies"
)

const mib = 1 << 20

func device(t *testing.T, capacity string) *strategies.Memory {
	t.Helper()
	d, err := strategies.ParseDevice("a100-80g:total=" + capacity + ",capacity=" + capacity + ",free=" + capacity)
	if err != nil {
		t.Fatal(err)
	}
	return strategies.NewMemory(&d)
}

// TestPool: before/ops/after. Each op allocates (size > 0) or frees the
// i-th live allocation (size < 0: -i); after each, the pool holds
// reserved bytes and the device reserved the same.
func TestPool(t *testing.T) {
	type op struct {
		size     int64
		ok       bool
		reserved int64
	}
	cases := []struct {
		name string
		opts Options
		cap  string
		ops  []op
		oom  string
	}{
		{"grows in granules, alignment 256", Options{ReleaseThreshold: Keep}, "1GiB", []op{
			{1, true, 2 * mib}, {2*mib - 256, true, 2 * mib}, {1, true, 4 * mib}}, ""},
		{"threshold 0 gives back all but what is live", Options{}, "1GiB", []op{
			{3 * mib, true, 4 * mib}, {1 * mib, true, 4 * mib}, {-1, true, 2 * mib}, {-1, true, 0}}, ""},
		{"a threshold keeps up to it", Options{ReleaseThreshold: 2 * mib}, "1GiB", []op{
			{5 * mib, true, 6 * mib}, {-1, true, 2 * mib}}, ""},
		{"keep never gives back", Options{ReleaseThreshold: Keep}, "1GiB", []op{
			{5 * mib, true, 6 * mib}, {-1, true, 6 * mib}, {1, true, 6 * mib}}, ""},
		{"a reserve is mapped at the first allocation and stays", Options{Reserve: 100 * mib}, "1GiB", []op{
			{1, true, 100 * mib}, {-1, true, 100 * mib}, {150 * mib, true, 150 * mib}, {-1, true, 100 * mib}}, ""},
		{"no placement fragmentation: freed memory serves any size", Options{ReleaseThreshold: Keep}, "8MiB", []op{
			{2 * mib, true, 2 * mib}, {2 * mib, true, 4 * mib}, {2 * mib, true, 6 * mib}, {-2, true, 6 * mib}, {4 * mib, true, 8 * mib}}, ""},
		{"the device runs out", Options{}, "8MiB", []op{
			{6 * mib, true, 6 * mib}, {4 * mib, false, 6 * mib}}, "the device has 2097152 B free"},
		{"a reserve the device lacks fails the first allocation", Options{Reserve: 16 * mib}, "8MiB", []op{
			{1, false, 0}}, "reserve of 16777216 B could not be mapped"},
		{"PyTorch's fraction caps requested bytes", Options{ReleaseThreshold: Keep, RequestedCap: 3 * mib}, "1GiB", []op{
			{2 * mib, true, 2 * mib}, {mib, true, 4 * mib}, {1, false, 4 * mib}}, "exceed the cap of 3145728 B"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Name = "test"
			mem := device(t, tc.cap)
			p := New(tc.opts, mem)
			var live []strategies.Handle
			for i, o := range tc.ops {
				if o.size < 0 {
					k := int(-o.size) - 1
					p.Free(live[k])
					live = append(live[:k], live[k+1:]...)
				} else {
					h, ok := p.Malloc(o.size, 0)
					if ok != o.ok {
						t.Fatalf("op %d: malloc(%d) ok=%v, want %v (%s)", i, o.size, ok, o.ok, p.LastOOM().Message)
					}
					if ok {
						live = append(live, h)
					}
				}
				if p.reserved != o.reserved || mem.Reserved() != o.reserved {
					t.Fatalf("op %d: pool holds %d, device %d; want %d", i, p.reserved, mem.Reserved(), o.reserved)
				}
				if err := p.Check(); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if tc.oom != "" && !strings.Contains(p.LastOOM().Message, tc.oom) {
				t.Errorf("OOM message %q, want %q", p.LastOOM().Message, tc.oom)
			}
		})
	}
}

// TestFootprintIsPlacement: a reserve is policy: the footprint is what the
// live allocations needed.
func TestFootprintIsPlacement(t *testing.T) {
	p := New(Options{Reserve: 64 * mib, ReleaseThreshold: Keep}, device(t, "1GiB"))
	h, _ := p.Malloc(3*mib, 0)
	p.Free(h)
	if p.PeakFootprint() != 4*mib || p.peak != 64*mib {
		t.Errorf("footprint %d, peak held %d", p.PeakFootprint(), p.peak)
	}
}

// TestSteadyStateAllocatesNothing: freed handles are reused.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	p := New(Options{ReleaseThreshold: Keep}, device(t, "1GiB"))
	h, _ := p.Malloc(mib, 0)
	p.Free(h)
	if n := testing.AllocsPerRun(1000, func() {
		h, _ := p.Malloc(mib, 0)
		p.Free(h)
	}); n != 0 {
		t.Errorf("%v allocations per malloc/free", n)
	}
}
