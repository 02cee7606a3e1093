package spanset

import (
	"math/rand/v2"
	"testing"
)

// TestFreeSetAtLimits runs the set as the TPU model does, a coalesced
// free set that placements Carve from and frees Join into (half of them
// asked for ahead by Prefetch), over an arena of a few tens of thousands
// of bytes placed at each end of the int64 range and across zero. Buffers
// of one to eight bytes keep thousands of free ranges of a few bytes, so
// that Joins meet leaf boundaries and Carves shrink the largest spans of
// many nodes in a tree of two or three inner levels. A byte map is the
// model: every Join must return the free run that holds its range, and
// the set must hold exactly the map's maximal free runs (no two
// adjacent), with maxima the tree's Check finds exact.
func TestFreeSetAtLimits(t *testing.T) {
	const w = 1 << 18
	for _, tc := range []struct {
		name string
		base int64
	}{
		{"low", minInt},
		{"zero", -w / 2},
		{"high", maxInt - w}, // the last byte ends at the largest int64
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.base), 7))
			s := New()
			free := make([]bool, w)
			for i := range free {
				free[i] = true
			}
			s.Join(tc.base, w)
			type buf struct{ off, size int64 }
			var live []buf
			var ahead []buf // frees whose leaves were asked for
			freed := func(b buf) {
				for i := b.off; i < b.off+b.size; i++ {
					free[i] = true
				}
				got := s.Join(tc.base+b.off, b.size)
				lo, hi := b.off, b.off+b.size
				for lo > 0 && free[lo-1] {
					lo--
				}
				for hi < w && free[hi] {
					hi++
				}
				if want := (Span{tc.base + lo, hi - lo}); got != want {
					t.Fatalf("Join(%d, %d) = %v, want %v", tc.base+b.off, b.size, got, want)
				}
			}
			height := 0
			for step := range 400000 {
				height = max(height, s.height)
				switch {
				case len(ahead) > 0 && (len(ahead) > 4 || rng.IntN(3) == 0):
					freed(ahead[0])
					ahead = ahead[1:]
				case len(live) > 0 && rng.IntN(100) < 45+len(live)*10/w:
					k := rng.IntN(len(live))
					b := live[k]
					live[k] = live[len(live)-1]
					live = live[:len(live)-1]
					if rng.IntN(2) == 0 {
						s.Prefetch(tc.base + b.off)
						ahead = append(ahead, b)
					} else {
						freed(b)
					}
				default:
					size := 1 + rng.Int64N(8)
					sp, ok := s.Carve(size)
					if !ok {
						continue
					}
					off := sp.End() - size - tc.base
					for i := off; i < off+size; i++ {
						if !free[i] {
							t.Fatalf("step %d: Carve(%d) from %v took a used byte", step, size, sp)
						}
						free[i] = false
					}
					live = append(live, buf{off, size})
				}
				if step%2000 != 0 {
					continue
				}
				if err := s.Check(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				var runs []Span
				var largest int64
				for i := int64(0); i < w; {
					if !free[i] {
						i++
						continue
					}
					j := i
					for j < w && free[j] {
						j++
					}
					runs = append(runs, Span{tc.base + i, j - i})
					largest = max(largest, j-i)
					i = j
				}
				k := 0
				s.Ascend(func(sp Span) bool {
					if k >= len(runs) || sp != runs[k] {
						t.Fatalf("step %d: span %d is %v, want the free run %v", step, k, sp, runs[min(k, len(runs)-1)])
					}
					k++
					return true
				})
				if k != len(runs) || s.Largest() != largest {
					t.Fatalf("step %d: %d spans of largest %d, want %d of %d", step, k, s.Largest(), len(runs), largest)
				}
			}
			if height < 2 {
				t.Errorf("the tree reached height %d, want 2 or more", height)
			}
		})
	}
}
