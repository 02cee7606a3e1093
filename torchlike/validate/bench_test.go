package validate

import (
	"testing"

	"membench/internal/cpuclock"
)

// BenchmarkValidateBursts validates a recording of a program that calls
// torch.cuda.empty_cache() every fourth step (2,000 calls, 33,238 trace
// entries) with 5,000 blocks live throughout, each burst of releases
// read on a copy of the replay (resolveBurst): cpu-ns/entry. The copies
// once rebuilt the model's mapped ranges from every block and copied
// the live blocks' maps entry by entry (2.5 s a validation on the build
// machine, 0.73 s since, 2026-11-25).
func BenchmarkValidateBursts(b *testing.B) {
	r := newRecorder(b, "torch", 8<<30, 0)
	id := 0
	for i := range 5000 {
		r.alloc(id, int64(4096+i*37%1000000), 0)
		id++
	}
	for s := range 8000 {
		r.alloc(id, 30<<20, 0)
		r.free(id)
		id++
		if s%4 == 3 {
			r.a.EmptyCache()
		}
	}
	snap := snapshotOf(settingsFor(false), r)
	entries := len(snap.DeviceTraces[0])
	b.ReportAllocs()
	cpu := cpuclock.Now()
	for b.Loop() {
		reps, err := Validate(snap, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !reps[0].Agree() || reps[0].EmptyCache != 2000 {
			b.Fatalf("agree %v, %d empty_cache() calls read", reps[0].Agree(), reps[0].EmptyCache)
		}
	}
	b.ReportMetric(float64((cpuclock.Now()-cpu).Nanoseconds())/float64(b.N)/float64(entries), "cpu-ns/entry")
}
