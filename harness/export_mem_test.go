package harness

import (
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"membench/strategies"
	"membench/traces"
)

// longTrace is a generated trace of n allocations, 64 of them live at a
// time, each freed in a scrambled order: what the replay holds stays
// small however long the trace is, so that what an export holds beyond it
// shows. It makes its events as they are read, and every sample events
// it calls onSample (memory is measured there, during the replay).
type longTrace struct {
	n, i      int
	live      []uint64
	next      uint64
	rnd       uint64
	sample    int
	onSample  func()
	sinceLast int
}

var longSizes = [...]int64{512, 4096, 65536, 1 << 20, 3 << 20, 8 << 20, 100000, 12345}

func (g *longTrace) Next() (traces.Event, error) {
	if g.sinceLast++; g.onSample != nil && g.sinceLast >= g.sample {
		g.sinceLast = 0
		g.onSample()
	}
	g.rnd = g.rnd*6364136223846793005 + 1442695040888963407
	r := g.rnd >> 33
	if len(g.live) > 64 || (g.i == g.n && len(g.live) > 0) {
		j := int(r % uint64(len(g.live)))
		id := g.live[j]
		g.live[j] = g.live[len(g.live)-1]
		g.live = g.live[:len(g.live)-1]
		return traces.Event{Op: traces.OpFree, ID: id, Time: traces.NoTime}, nil
	}
	if g.i == g.n {
		return traces.Event{}, io.EOF
	}
	g.i++
	g.next++
	g.live = append(g.live, g.next)
	return traces.Event{Op: traces.OpAlloc, ID: g.next, Size: longSizes[r%uint64(len(longSizes))], Time: traces.NoTime}, nil
}

func (g *longTrace) Meta() traces.Meta  { return nil }
func (g *longTrace) Pos() traces.Pos    { return traces.Pos{Event: g.i} }
func (g *longTrace) Close() error       { return nil }
func (g *longTrace) FormatVersion() int { return 1 }

// sampledWriter discards what is written, calling onSample every sample
// bytes (memory is measured there, while the pickle is written).
type sampledWriter struct {
	n, sample int
	onSample  func()
}

func (w *sampledWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n >= w.sample {
		w.n = 0
		w.onSample()
	}
	return len(p), nil
}

// exportPeak is the most heap an export of a longTrace of n allocations
// through spec holds, above what was held before it: the largest
// HeapAlloc after a collection, sampled during the replay and the writing.
func exportPeak(t *testing.T, n int, spec, device string) (peak uint64, entries int) {
	t.Helper()
	dev, err := strategies.ParseDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base {
			peak = max(peak, ms.HeapAlloc-base)
		}
	}
	ex, err := ExportMemoryViz("long", &longTrace{n: n, sample: n / 8, onSample: sample}, spec, dev, ExportOptions{SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	sample()
	if err := ex.WriteMemoryViz(&sampledWriter{sample: 1 << 20, onSample: sample}); err != nil {
		t.Fatal(err)
	}
	return peak, ex.Trace.Len()
}

// TestExportMemoryBounded: the memory an export holds does not grow with
// the trace's length. A trace four times as long (some 400,000 entries
// more) may cost no more than 2 MiB more at its peak: the entries went to
// a snapshot.Spool and are written as they are read back. Before, every
// entry was held (some 80 bytes each as a TraceEntry, then a few hundred
// as the pickle value tree), which cost 50 MB and more here. Not
// parallel: the heap is the process's.
func TestExportMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("exports some 600,000 entries")
	}
	const n = 40_000
	for _, c := range []exportCase{{"torch", "a100-80g"}, {"jax", "tpu-v4"}} {
		short, ns := exportPeak(t, n, c.spec, c.device)
		long, nl := exportPeak(t, 4*n, c.spec, c.device)
		t.Logf("%s@%s: %d entries: peak %d KiB; %d entries: peak %d KiB", c.spec, c.device, ns, short>>10, nl, long>>10)
		if nl < 3*ns {
			t.Fatalf("%s@%s: the long trace made %d entries, the short %d", c.spec, c.device, nl, ns)
		}
		if long > short+2<<20 {
			t.Errorf("%s@%s: an export of %d entries held %d KiB at its peak, one of %d held %d KiB: memory grows with the trace", c.spec, c.device, nl, long>>10, ns, short>>10)
		}
	}
}

// TestExportSpoolFails: an export whose entries cannot be kept (their
// temporary file cannot be made) fails, naming the trace and the
// directory, rather than writing a snapshot with entries missing.
func TestExportSpoolFails(t *testing.T) {
	dev, err := strategies.ParseDevice("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gone")
	ex, err := ExportMemoryViz("long", &longTrace{n: 100_000}, "torch", dev, ExportOptions{SpoolDir: dir})
	if err == nil {
		ex.Close()
		t.Fatal("exported with its entries' file missing")
	}
	if !strings.HasPrefix(err.Error(), "long: ") || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the trace and the directory", err)
	}
}
