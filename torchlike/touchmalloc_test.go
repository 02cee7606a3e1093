package torchlike

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	"membench/internal/cpuclock"
	"membench/internal/prefetch"
	"membench/strategies"
)

// liveRun is internal/livebench's steady state (a free of a random live
// allocation, then an allocation of a new one) on a torch model with live
// allocations, with the harness's touches: the handle 8 events on, the
// free's record 4 events on, and with mallocAhead > 0 the allocation
// mallocAhead steps (2 events each) on through TouchMalloc.
func liveRun(b *testing.B, cfg Config, live, mallocAhead int) {
	dev, err := strategies.ParseDevice(strategies.DefaultDevice)
	if err != nil {
		b.Fatal(err)
	}
	a := New(cfg, strategies.NewMemory(&dev))
	rng := rand.New(rand.NewPCG(15, uint64(live)))
	size := func() int64 {
		if rng.IntN(100) == 0 {
			return (1 + rng.Int64N(2<<20)) + 1<<20
		}
		return 512 + rng.Int64N(48<<10-512)
	}
	hs := make([]strategies.Handle, live)
	for i := range hs {
		hs[i], _ = a.Malloc(size(), 0)
	}
	steps := (b.N + 1) / 2
	pick := make([]int32, steps)
	sizes := make([]int64, steps)
	for k := range pick {
		pick[k], sizes[k] = int32(rng.IntN(live)), size()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuclock.Now()
	for k := range steps {
		if k+4 < steps {
			prefetch.Line(unsafe.Pointer(&hs[pick[k+4]]))
		}
		if k+2 < steps {
			a.Touch(hs[pick[k+2]])
		}
		if mallocAhead > 0 && k+mallocAhead < steps {
			a.TouchMalloc(sizes[k+mallocAhead], 0)
		}
		v := pick[k]
		a.Free(hs[v])
		h, ok := a.Malloc(sizes[k], 0)
		if !ok {
			b.Fatal("out of memory")
		}
		hs[v] = h
	}
	b.ReportMetric(float64((cpuclock.Now()-cpu).Nanoseconds())/float64(2*steps), "cpu-ns/event")
}

// BenchmarkLive is harness.BenchmarkReplayLive on the torch model alone
// (liveRun), in both segment modes at 10^3 and 10^6 live allocations,
// touching each allocation ahead=0 (not at all), 1, 2 (the harness's ahead/2,
// 4 events) or 4 steps of two events before it: cpu-ns/event is the model's
// cost per event, which the replay adds its own to.
func BenchmarkLive(b *testing.B) {
	for _, exp := range []bool{false, true} {
		for _, live := range []int{1000, 1000000} {
			for _, ahead := range []int{0, 1, 2, 4} {
				name := "expandable=" + strconv.FormatBool(exp) + "/live=" + strconv.Itoa(live) + "/ahead=" + strconv.Itoa(ahead)
				b.Run(name, func(b *testing.B) {
					liveRun(b, Config{ExpandableSegments: exp}, live, ahead)
				})
			}
		}
	}
}

// TestTouchMallocChangesNothing replays random workloads through two
// allocators of the same configuration, one of which is touched
// (TouchMalloc) with a random request, and often with the next one, before
// every event, and requires the two to agree in every allocation and, every
// few hundred events and at the end, in their whole state (reflect.DeepEqual
// sees every field: blocks, free sets with their trees' fingers and class
// trees, statistics). The sizes are drawn from a few small ones, so that
// the small pool's classes spill into their trees, and from the large pool's
// range, on three streams; the configurations cover Malloc's plain best fit
// and getFreeBlock's, expandable segments, rounding and an oversize limit.
func TestTouchMallocChangesNothing(t *testing.T) {
	for _, knobs := range []string{"", "expandable_segments=true", "max_split_size_mb=64",
		"roundup_power2_divisions=4", "per_process_memory_fraction=0.5"} {
		t.Run("knobs="+knobs, func(t *testing.T) {
			a, b := newTorch(t, knobs, strategies.DefaultDevice), newTorch(t, knobs, strategies.DefaultDevice)
			rng := rand.New(rand.NewPCG(7, 8))
			size := func() int64 {
				switch rng.IntN(10) {
				case 0:
					return 1 + rng.Int64N(40<<20)
				case 1:
					return 1 + rng.Int64N(1<<20)
				}
				return 512 * (1 + rng.Int64N(6))
			}
			var ha, hb []strategies.Handle
			next := size()
			for step := range 20000 {
				stream := rng.Int64N(3)
				if rng.IntN(4) != 0 {
					a.TouchMalloc(size(), rng.Int64N(3))
				}
				a.TouchMalloc(next, stream)
				if len(ha) > 0 && (rng.IntN(2) == 0 || len(ha) > 3000) {
					i := rng.IntN(len(ha))
					a.Free(ha[i])
					b.Free(hb[i])
					ha[i], hb[i] = ha[len(ha)-1], hb[len(hb)-1]
					ha, hb = ha[:len(ha)-1], hb[:len(hb)-1]
				} else {
					x, xok := a.Malloc(next, stream)
					y, yok := b.Malloc(next, stream)
					if x != y || xok != yok || xok && a.Addr(x) != b.Addr(y) {
						t.Fatalf("step %d: Malloc(%d) touched gave %d %v, untouched %d %v", step, next, x, xok, y, yok)
					}
					if xok {
						ha, hb = append(ha, x), append(hb, y)
					}
					next = size()
				}
				if step%500 == 0 && !reflect.DeepEqual(a, b) {
					t.Fatalf("step %d: the touched allocator's state differs", step)
				}
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("the touched allocator's state differs at the end")
			}
		})
	}
}
