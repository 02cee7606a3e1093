package validate_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"membench/bfc"
	"membench/bfc/validate"
	"membench/strategies"
	"membench/xprof"
)

// record replays random requests through the BFC model itself
// (bfc.Allocator) and writes the decisions it makes after the first skip
// events as a profile would record them: the window of a warm recording.
func record(t *testing.T, seed uint64, n, skip int, opts bfc.Options) *xprof.Allocator {
	t.Helper()
	d, err := strategies.ParseDevice("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	a := bfc.New(opts, strategies.NewMemory(&d))
	rng := rand.New(rand.NewPCG(seed, 7))
	type buf struct {
		h        strategies.Handle
		req      int64
		addr, sz int64
	}
	var live []buf
	rec := &xprof.Allocator{Name: "GPU_0_bfc", Device: 0}
	const base = 1 << 40 // where the device put the region
	for i := 0; i < n; i++ {
		var r xprof.Record
		if len(live) > 0 && rng.IntN(100) < 45 {
			k := rng.IntN(len(live))
			b := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			a.Free(b.h)
			r = xprof.Record{Requested: b.req, Chunk: b.sz, Addr: uint64(base + b.addr)}
		} else {
			req := int64(1 + rng.IntN(4096))
			switch rng.IntN(10) {
			case 0:
				req = int64(1+rng.IntN(64)) << 20 // large tensors
			case 1, 2:
				req = int64(1+rng.IntN(1024)) << 10
			}
			h, ok := a.Malloc(req, 0)
			if !ok {
				continue
			}
			addr, sz := a.Chunk(h)
			live = append(live, buf{h, req, addr, sz})
			r = xprof.Record{Alloc: true, Requested: req, Chunk: sz, Addr: uint64(base + addr)}
		}
		r.InUse = a.Allocated()
		r.Time = int64(i)
		r.Has = xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse
		if i >= skip {
			rec.Records = append(rec.Records, r)
		}
	}
	return rec
}

// TestModelAgreesWithItself: windows recorded from the BFC model itself,
// cold and warm, with and without growth, validate with no disagreement,
// and most of a long window is determined. So the rules the validator
// judges real recordings by are the ones the model applies.
func TestModelAgreesWithItself(t *testing.T) {
	for _, tc := range []struct {
		name   string
		skip   int
		opts   bfc.Options
		minDet float64
	}{
		{"cold, preallocated", 0, bfc.Options{Limit: 8 << 30}, 0.5},
		{"warm, preallocated", 3000, bfc.Options{Limit: 8 << 30}, 0.3},
		{"warm, growth", 3000, bfc.Options{Limit: 8 << 30, AllowGrowth: true}, 0.3},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			rec := record(t, seed, 9000, tc.skip, tc.opts)
			rep, err := validate.Allocator(rec, validate.Options{})
			if err != nil {
				t.Fatalf("%s seed %d: %v", tc.name, seed, err)
			}
			if !rep.OK() || rep.Gaps > 0 {
				var b bytes.Buffer
				rep.Write(&b, tc.name)
				t.Fatalf("seed %d:\n%s", seed, b.String())
			}
			if share := float64(rep.Determined()) / float64(rep.Allocs); share < tc.minDet {
				t.Errorf("%s seed %d: %d of %d allocations determined (%.0f%%), want at least %.0f%%", tc.name, seed, rep.Determined(), rep.Allocs, 100*share, 100*tc.minDet)
			}
			if seed == 1 {
				t.Logf("%s: %d of %d determined, all agree; undetermined %v", tc.name, rep.Determined(), rep.Allocs, rep.Undetermined)
			}
		}
	}
}

// TestOtherRulesDisagree: a window recorded from an allocator that splits
// every chunk (max_internal_fragmentation_bytes of a few bytes) is judged
// by the default BFC's rule, which hands out a chunk under twice the
// request whole: the validator must find the difference.
func TestOtherRulesDisagree(t *testing.T) {
	rec := record(t, 1, 9000, 3000, bfc.Options{Limit: 8 << 30, FragmentationFraction: 1e-9})
	rep, err := validate.Allocator(rec, validate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Disagree == 0 || rep.First == nil || rep.First.Chunk != rep.First.Rounded || rep.First.ModelCh <= rep.First.Rounded {
		t.Errorf("always-splitting recording: %d disagree, first %+v", rep.Disagree, rep.First)
	}
}
