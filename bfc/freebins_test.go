package bfc

import (
	"math/rand/v2"
	"testing"

	"membench/internal/freeset"
)

// TestFreeBinsAgainstSet checks freeBins against one freeset.Set in
// (size, address) order, the set it stands for, through a long random
// sequence of inserts, removes and replacements of chunks in the bins and
// in the big set, asking both for best fits, the largest chunk and
// membership throughout.
func TestFreeBinsAgainstSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bins, ref := newFreeBins(), freeset.New(false)
	var keys []freeset.Key
	size := func() int64 {
		switch rng.IntN(4) {
		case 0: // around the boundary of the big set
			return bigSize + MinAllocationSize*(rng.Int64N(9)-4)
		case 1:
			return MinAllocationSize * (1 + rng.Int64N(2*numBins))
		default: // few sizes: many chunks to a bin
			return MinAllocationSize * (1 + rng.Int64N(8))
		}
	}
	for step := range 50000 {
		switch r := rng.IntN(10); {
		case r < 4 || len(keys) == 0:
			k := freeset.Key{Size: size(), Addr: rng.Int64N(1<<40) &^ 255, B: int32(step)}
			if ref.Contains(k) {
				continue
			}
			bins.Insert(k)
			ref.Insert(k)
			keys = append(keys, k)
		case r < 7:
			i := rng.IntN(len(keys))
			bins.Remove(keys[i])
			ref.Remove(keys[i])
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
		default:
			i := rng.IntN(len(keys))
			nk := freeset.Key{Size: size(), Addr: keys[i].Addr, B: int32(step)}
			if rng.IntN(2) == 0 {
				nk.Size = keys[i].Size
				nk.Addr = rng.Int64N(1<<40) &^ 255
			}
			if ref.Contains(nk) {
				continue
			}
			bins.Replace(keys[i], nk)
			ref.Replace(keys[i], nk)
			keys[i] = nk
		}
		probe := freeset.Key{Size: size()}
		got, ok := bins.LowerBound(probe)
		want, wok := ref.LowerBound(probe)
		if got != want || ok != wok {
			t.Fatalf("step %d: best fit for %d B: %+v %v, want %+v %v", step, probe.Size, got, ok, want, wok)
		}
		got, ok = bins.Max()
		want, wok = ref.Max()
		if got != want || ok != wok {
			t.Fatalf("step %d: largest %+v %v, want %+v %v", step, got, ok, want, wok)
		}
		if bins.Len() != ref.Len() {
			t.Fatalf("step %d: %d chunks, want %d", step, bins.Len(), ref.Len())
		}
		if len(keys) > 0 {
			k := keys[rng.IntN(len(keys))]
			if !bins.Contains(k) {
				t.Fatalf("step %d: lost %+v", step, k)
			}
			k.B = -1
			if bins.Contains(k) {
				t.Fatalf("step %d: holds %+v", step, k)
			}
		}
	}
	// Drained, every bin empties and the bitmap with it.
	for len(keys) > 0 {
		i := rng.IntN(len(keys))
		bins.Remove(keys[i])
		ref.Remove(keys[i])
		keys[i] = keys[len(keys)-1]
		keys = keys[:len(keys)-1]
		probe := freeset.Key{Size: size()}
		got, ok := bins.LowerBound(probe)
		want, wok := ref.LowerBound(probe)
		g2, ok2 := bins.Max()
		w2, wok2 := ref.Max()
		if got != want || ok != wok || g2 != w2 || ok2 != wok2 {
			t.Fatalf("%d chunks left: best fit %+v %v, want %+v %v; largest %+v %v, want %+v %v", len(keys), got, ok, want, wok, g2, ok2, w2, wok2)
		}
	}
	if bins.summary != 0 || bins.Len() != 0 {
		t.Errorf("drained, the bitmap's summary is %#x and %d chunks are left", bins.summary, bins.Len())
	}
}
