package torchlike

import (
	"math/rand/v2"
	"testing"

	"membench/strategies"
)

// TestPlainFitAsFindFreeBlock: wherever plainFit holds, Malloc's short
// search (getPlainBlock) finds what findFreeBlock finds, block for block,
// on random workloads of both pools and three streams — so that a best fit
// of another stream, or none at all, is refused as findFreeBlock refuses
// it — under the configurations that keep plainFit (the default, power-of-
// two rounding, a memory fraction without garbage collection). Each case
// must meet every outcome: a hit, a miss with nothing above the request,
// and a miss with only another stream's block above it.
func TestPlainFitAsFindFreeBlock(t *testing.T) {
	for _, knobs := range []string{"", "roundup_power2_divisions=4", "per_process_memory_fraction=0.5"} {
		t.Run("knobs="+knobs, func(t *testing.T) {
			sp, err := strategies.ParseSpec("torch:" + knobs)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ParseConfig(sp)
			if err != nil {
				t.Fatal(err)
			}
			dev, err := strategies.ParseDevice(strategies.DefaultDevice)
			if err != nil {
				t.Fatal(err)
			}
			a := New(cfg, strategies.NewMemory(&dev))
			rng := rand.New(rand.NewPCG(6, 1))
			var live []strategies.Handle
			var hits, nothing, otherStream int
			for range 20000 {
				if len(live) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(live))
					a.Free(live[i])
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
					continue
				}
				size := 1 + rng.Int64N(64<<10)
				if rng.IntN(8) == 0 {
					size = 1 + rng.Int64N(24<<20)
				}
				stream := rng.Int64N(3)
				if !a.plainFit() {
					t.Fatal("plainFit does not hold")
				}
				var p, q params
				p.size, p.stream, p.pool, p.block = a.cfg.roundSize(size), stream, &a.large, none
				if p.size <= SmallSize {
					p.pool = &a.small
				}
				q = p
				ok := a.getPlainBlock(&p)
				k, want := a.findFreeBlock(&q)
				switch {
				case ok != want:
					t.Fatalf("size %d stream %d: getPlainBlock says %v, findFreeBlock %v", p.size, stream, ok, want)
				case ok && (p.block != k.B || p.found != k || !p.inSet):
					t.Fatalf("size %d stream %d: getPlainBlock found %+v (block %d), findFreeBlock %+v", p.size, stream, p.found, p.block, k)
				case ok:
					hits++
				case k.Size == 0:
					nothing++
				default:
					otherStream++
				}
				if h, ok := a.Malloc(size, stream); ok {
					live = append(live, h)
				}
			}
			if hits == 0 || nothing == 0 || otherStream == 0 {
				t.Errorf("outcomes met: %d hits, %d with nothing above, %d with another stream's block above; want each", hits, nothing, otherStream)
			}
			if err := a.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
