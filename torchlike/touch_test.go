package torchlike

import (
	"math/rand/v2"
	"testing"

	"membench/strategies"
)

// TestTouchChangesNothing: Touch is a hint and nothing else. An allocator
// touched as the replay touches it (the block of a free a few events
// ahead), and also with handles the replay never passes (negative, past
// the arena, freed, touched twice, touched and never freed), places every
// block where an untouched twin does, with the same statistics, and its
// invariants hold. Touch reads the neighbours of the block touched
// before, which may have merged, been freed or been recycled since.
func TestTouchChangesNothing(t *testing.T) {
	for _, knobs := range []string{"", "expandable_segments=true"} {
		t.Run("knobs="+knobs, func(t *testing.T) {
			const device = "a100-40g:capacity=1GiB"
			touched, plain := newTorch(t, knobs, device), newTorch(t, knobs, device)
			rng := rand.New(rand.NewPCG(21, uint64(len(knobs))))
			size := func() int64 {
				if rng.IntN(50) == 0 {
					return 1<<20 + rng.Int64N(3<<20)
				}
				return 1 + rng.Int64N(64<<10)
			}
			type pair struct{ t, p strategies.Handle }
			var live []pair
			var gone []strategies.Handle // freed handles of touched
			malloc := func(step int) {
				n := size()
				ht, okt := touched.Malloc(n, 0)
				hp, okp := plain.Malloc(n, 0)
				if okt != okp {
					t.Fatalf("step %d: Malloc(%d) fits %v touched, %v plain", step, n, okt, okp)
				}
				if !okt {
					return
				}
				if bt, bp := touched.arena[ht], plain.arena[hp]; bt.addr != bp.addr || bt.size != bp.size {
					t.Fatalf("step %d: Malloc(%d) took %d B at %#x touched, %d B at %#x plain", step, n, bt.size, bt.addr, bp.size, bp.addr)
				}
				live = append(live, pair{ht, hp})
			}
			for step := range 3000 {
				malloc(step)
			}
			for step := range 20000 {
				// The replay's touch: the free two steps on (the
				// order of live changes by then, so it is often
				// another block's).
				if len(live) > 2 {
					touched.Touch(live[len(live)-3].t)
				}
				switch rng.IntN(8) {
				case 0:
					touched.Touch(-1)
				case 1:
					touched.Touch(strategies.Handle(len(touched.arena) + rng.IntN(1000)))
				case 2:
					if len(gone) > 0 {
						touched.Touch(gone[rng.IntN(len(gone))])
					}
				case 3:
					if len(live) > 0 {
						touched.Touch(live[rng.IntN(len(live))].t) // never freed soon
					}
				}
				if rng.IntN(2) == 0 && len(live) > 0 {
					i := len(live) - 1 - rng.IntN(min(len(live), 3))
					touched.Free(live[i].t)
					plain.Free(live[i].p)
					gone = append(gone, live[i].t)
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
				} else {
					malloc(step)
				}
				if gt, gp := *touched.Stats(), *plain.Stats(); gt != gp {
					t.Fatalf("step %d: statistics differ:\n%s", step, statDiff(gt.Map(), gp.Map()))
				}
				if step%1000 == 0 {
					if err := touched.Check(); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
			}
			if err := touched.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTouchAfterRelease: a released allocator has no arena, and Touch,
// a hint, must then ask for nothing, neither the block passed nor the
// neighbours of the block touched before the release (whose index Touch
// still holds).
func TestTouchAfterRelease(t *testing.T) {
	a := newTorch(t, "", "a100-40g:capacity=1GiB")
	var hs []strategies.Handle
	for range 8 {
		h, ok := a.Malloc(4096, 0)
		if !ok {
			t.Fatal("Malloc(4096) failed")
		}
		hs = append(hs, h)
	}
	a.Free(hs[2]) // hs[3] has address neighbours on both sides
	a.Touch(hs[3])
	a.Release()
	a.Touch(hs[4])
	a.Touch(hs[5])
	a.Touch(-1)
}
