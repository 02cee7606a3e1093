package torchlike

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// refStat is upstream's Stat and update_stat, kept whole for the
// aggregate and each pool: the reference the lazy counters are checked
// against.
type refStats struct {
	s           [nStats]StatArray
	activeApart bool
}

func (r *refStats) update(k int, small bool, n int64) {
	pool := Large
	if small {
		pool = Small
	}
	for _, i := range []int{All, pool} {
		st := &r.s[k][i]
		st.Current += n
		st.Peak = max(st.Peak, st.Current)
		if n > 0 {
			st.Allocated += n
		} else {
			st.Freed -= n
		}
	}
}

func (r *refStats) resetPeak() {
	for k := range r.s {
		for i := range r.s[k] {
			r.s[k][i].Peak = r.s[k][i].Current
		}
	}
}

// TestCountersMatchReference applies random statistic updates through
// each of counters' ways in (increase, decrease, raise, shift, and the
// direct decrements of the hot paths) and through the reference, and
// compares every figure of every statistic after each update.
func TestCountersMatchReference(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var c counters
		var r refStats
		for step := range 2000 {
			k := rng.IntN(nStats)
			small := rng.IntN(2) == 0
			n := rng.Int64N(5000) + 1
			if rng.IntN(2) == 0 {
				// Rises of a few units, so that the currents
				// meet the thresholds and peaks exactly.
				n = rng.Int64N(3) + 1
			}
			cur := c.pool[pi(small)].g[k].cur()
			switch op := rng.IntN(10); {
			case op < 3:
				c.increase(k, small, n)
				r.update(k, small, n)
			case op < 5:
				p, o := c.pools(small)
				c.raise(k, p, o, n)
				r.update(k, small, n)
			case op < 7 && cur > 0:
				n = min(n, cur)
				if op == 5 {
					c.decrease(k, small, n)
				} else {
					c.pool[pi(small)&1].g[k].freed += n
				}
				r.update(k, small, -n)
			case op < 9:
				// shift's change has any sign, never below zero.
				n = max(rng.Int64N(5000)-2500, -cur)
				p, o := c.pools(small)
				c.shift(k, p, o, n)
				r.update(k, small, n)
			case rng.IntN(20) == 0:
				c.resetPeak()
				r.resetPeak()
			}
			for k := range nStats {
				if got, want := c.array(k), r.s[k]; got != want {
					t.Fatalf("seed %d step %d: statistic %d is %+v, the reference's %+v", seed, step, k, got, want)
				}
				if err := c.checkThresholds(k); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
		}
	}
}

// checkThresholds reports whether statistic k's thresholds break
// poolStats' rules: each pool's current at most its threshold, which
// is at most its peak, and the two thresholds' sum at most the
// aggregate's peak (the last two, that raise's one test misses no
// peak; the first, that it does not take its slow path needlessly).
func (c *counters) checkThresholds(k int) error {
	s, l := &c.pool[piSmall].g[k], &c.pool[piLarge].g[k]
	for _, g := range []*gauge{s, l} {
		if g.cur() > g.thr || g.thr > g.peak {
			return fmt.Errorf("statistic %d: a pool's current %d, threshold %d, peak %d", k, g.cur(), g.thr, g.peak)
		}
	}
	if s.thr+l.thr > c.allPeak[k] {
		return fmt.Errorf("statistic %d: thresholds %d and %d above the aggregate's peak %d", k, s.thr, l.thr, c.allPeak[k])
	}
	return nil
}

// TestSplitActiveCopies checks that Active follows Allocation until
// splitActive, and keeps its own figures after.
func TestSplitActiveCopies(t *testing.T) {
	var c counters
	c.increase(sAllocation, true, 3)
	c.increase(sAllocatedBytes, false, 4096)
	c.decrease(sAllocatedBytes, false, 512)
	s := c.stats()
	if s.Active != s.Allocation || s.ActiveBytes != s.AllocatedBytes {
		t.Fatalf("before splitActive, Active %+v and ActiveBytes %+v differ from Allocation and AllocatedBytes", s.Active, s.ActiveBytes)
	}
	c.splitActive()
	c.decrease(sAllocatedBytes, false, 1024)
	s = c.stats()
	if want := (Stat{Current: 3584, Peak: 4096, Allocated: 4096, Freed: 512}); s.ActiveBytes[Large] != want || s.ActiveBytes[All] != want {
		t.Fatalf("after splitActive, ActiveBytes is %+v, want %+v in the pool and the aggregate", s.ActiveBytes, want)
	}
	if s.AllocatedBytes[Large].Current != 2560 {
		t.Fatalf("AllocatedBytes is %+v after its own decrease", s.AllocatedBytes)
	}
}
