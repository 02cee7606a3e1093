package snapshot

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"membench/internal/cpuclock"
	"membench/traces"
)

// BenchmarkSnapshotImport measures what `membench run` pays before the
// replay starts: decoding a real snapshot pickle, reconstructing the
// allocator state before its trace and serving every event. It reports the
// cost per trace entry (ns/entry, allocs/entry), the figure the streaming
// decoder is held to (issue 11: ≤ 300 ns and near-zero allocations per
// entry), and the CPU time of a whole import (cpu-µs/import), which for
// the small snapshots (21 and 47 entries) is mostly the fixed cost of an
// import. Every shared snapshot is measured.
//
// Its imports follow one another, as in a run of several snapshots, and
// the buffers an import returns to its pools serve the next.
// BenchmarkSnapshotImportCold empties the pools (two collections, untimed)
// before each import: the cost of a first import, as in a `membench run`
// of one snapshot.
func BenchmarkSnapshotImport(b *testing.B) { importBench(b, false) }

func BenchmarkSnapshotImportCold(b *testing.B) { importBench(b, true) }

func importBench(b *testing.B, cold bool) {
	for _, name := range []string{
		"opt125m-zo-finetune.pickle",
		"cs336-gpt2medium-ctx256-train-warm.pickle",
		"cs336-gpt2medium-ctx128-infer-warm.pickle",
		"cs336-lm-peak-probe.pickle",
		"liger-cross-entropy.pickle",
		"torch-compile-cross-entropy.pickle",
	} {
		b.Run(strings.TrimSuffix(name, ".pickle"), func(b *testing.B) {
			data, err := os.ReadFile(realSnapPath(b, name))
			if err != nil {
				b.Skip(err)
			}
			entries := 0
			imp := func() {
				r, err := openSnapshot(name, bytes.NewReader(data), traces.DefaultOpenOptions)
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				for _, kv := range r.Meta() {
					if kv.Key == "entries" {
						entries, _ = strconv.Atoi(kv.Value)
					}
				}
			}
			imp()
			b.SetBytes(int64(len(data)))
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			var cpu time.Duration
			b.ResetTimer()
			// Warm, the clock is read around the loop: a reading
			// (getrusage) costs a few µs, which is most of the cost of
			// a small snapshot's import. Cold, the collections between
			// imports must not count.
			t0 := cpuclock.Now()
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					runtime.GC()
					runtime.GC() // a pool's items survive one collection
					b.StartTimer()
					c0 := cpuclock.Now()
					imp()
					cpu += cpuclock.Now() - c0
				} else {
					imp()
				}
			}
			if !cold {
				cpu = cpuclock.Now() - t0
			}
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			n := float64(b.N) * float64(entries)
			// CPU time of the process (every thread, the collector's
			// too): on a loaded machine the wall clock overstates.
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/entry")
			// The whole import's CPU time: for a small file most of it
			// is the fixed cost of an import, not its entries.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/import")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/entry")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/entry")
		})
	}
}

// BenchmarkSnapshotDecode is the decoding alone (DecodePickle), per entry.
func BenchmarkSnapshotDecode(b *testing.B) {
	for _, name := range []string{"opt125m-zo-finetune.pickle", "cs336-gpt2medium-ctx256-train-warm.pickle"} {
		b.Run(strings.TrimSuffix(name, ".pickle"), func(b *testing.B) {
			data, err := os.ReadFile(realSnapPath(b, name))
			if err != nil {
				b.Skip(err)
			}
			s, err := DecodePickle(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			entries := len(s.Trace(0))
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodePickle(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
		})
	}
}

// BenchmarkSnapshotImportFixed is the fixed cost of an import: the
// torch-compile-cross-entropy snapshot (five segments, its allocator
// settings) with its trace cut to the last entry and no frames, read as
// BenchmarkSnapshotImport reads the shared snapshots (cpu-µs/import).
// What a small snapshot costs beyond it is its entries and frames.
func BenchmarkSnapshotImportFixed(b *testing.B) {
	data, err := os.ReadFile(realSnapPath(b, "torch-compile-cross-entropy.pickle"))
	if err != nil {
		b.Skip(err)
	}
	s, err := DecodePickle(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	tr := s.DeviceTraces[0]
	s.DeviceTraces = [][]TraceEntry{tr[len(tr)-1:]}
	var buf bytes.Buffer
	if err := EncodePickle(&buf, s); err != nil {
		b.Fatal(err)
	}
	small := buf.Bytes()
	imp := func() {
		r, err := openSnapshot("fixed.pickle", bytes.NewReader(small), traces.DefaultOpenOptions)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	imp()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	t0 := cpuclock.Now()
	for i := 0; i < b.N; i++ {
		imp()
	}
	cpu := cpuclock.Now() - t0
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/import")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/import")
}
