package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"membench/strategies"
	"membench/torchlike/snapshot"
	"membench/traces"
	"membench/traces/corpus"
)

var updateExport = flag.Bool("update-export", false, "rewrite testdata/export.golden")

// exportCase is one strategy on one device that TestExport* export.
type exportCase struct{ spec, device string }

var exportCases = []exportCase{
	{"torch", "a100-80g"},
	{"torch:expandable_segments=true", "a100-80g"},
	{"torch:max_split_size_mb=20,roundup_power2_divisions=4", "a100-80g"},
	{"jax", "a100-80g"},
	{"tf:allow_growth=true", "a100-80g"},
	{"jax:allocator=platform", "a100-80g"},
	{"jax", "tpu-v4"},
}

// gptTrainExports caches each exportCase's export of gpt-train:
// TestExportRoundTrip and TestExportPython check the same files (the
// round trip still makes a second export of its own, to compare).
var gptTrainExports struct {
	sync.Mutex
	m map[exportCase]*cachedExport
}

type cachedExport struct {
	once sync.Once
	ex   *Export
	b    []byte
	err  error
}

// gptTrainExport is c's export of gpt-train, made once per test binary.
func gptTrainExport(t *testing.T, c exportCase) (*Export, []byte) {
	t.Helper()
	gptTrainExports.Lock()
	if gptTrainExports.m == nil {
		gptTrainExports.m = map[exportCase]*cachedExport{}
	}
	e := gptTrainExports.m[c]
	if e == nil {
		e = &cachedExport{}
		gptTrainExports.m[c] = e
	}
	gptTrainExports.Unlock()
	e.once.Do(func() {
		dev, err := strategies.ParseDevice(c.device)
		if err != nil {
			e.err = err
			return
		}
		r, err := corpus.Open("gpt-train")
		if err != nil {
			e.err = err
			return
		}
		defer r.Close()
		if e.ex, e.err = ExportMemoryViz("gpt-train", r, c.spec, dev, ExportOptions{}); e.err != nil {
			e.err = fmt.Errorf("%s on %s: %w", c.spec, dev.Label(), e.err)
			return
		}
		var buf bytes.Buffer
		e.err = e.ex.WriteMemoryViz(&buf)
		e.b = buf.Bytes()
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.ex, e.b
}

func exportTrace(t *testing.T, name string, r traces.Reader, spec, device string) (*Export, []byte) {
	t.Helper()
	dev, err := strategies.ParseDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	return exportOn(t, name, r, spec, dev)
}

func exportOn(t *testing.T, name string, r traces.Reader, spec string, dev strategies.Device) (*Export, []byte) {
	t.Helper()
	ex, err := ExportMemoryViz(name, r, spec, dev, ExportOptions{SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatalf("%s on %s: %v", spec, dev.Label(), err)
	}
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	})
	var buf bytes.Buffer
	if err := ex.WriteMemoryViz(&buf); err != nil {
		t.Fatal(err)
	}
	return ex, buf.Bytes()
}

// exportEntries is ex's trace, read back from its spool.
func exportEntries(t *testing.T, ex *Export) []snapshot.TraceEntry {
	t.Helper()
	var out []snapshot.TraceEntry
	r := ex.Trace.Reader()
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// fullSnapshot is ex's snapshot with its trace in DeviceTraces, as
// written.
func fullSnapshot(t *testing.T, ex *Export) *snapshot.Snapshot {
	t.Helper()
	s := *ex.Snapshot
	s.DeviceTraces = [][]snapshot.TraceEntry{exportEntries(t, ex)}
	return &s
}

// requests is a trace's allocations and frees as the allocator sees
// them, in order: "a SIZE STREAM" and "f SIZE" (the freed allocation's
// size). Ids differ between a trace and its export (a snapshot has
// addresses, its reader makes fresh ids), so they are left out.
func requests(t *testing.T, r traces.Reader) []string {
	t.Helper()
	evs, err := traces.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	size := map[uint64]int64{}
	var out []string
	for _, ev := range evs {
		switch ev.Op {
		case traces.OpAlloc:
			size[ev.ID] = ev.Size
			out = append(out, fmt.Sprintf("a %d %d", ev.Size, ev.Stream))
		case traces.OpFree:
			out = append(out, fmt.Sprintf("f %d", size[ev.ID]))
			delete(size, ev.ID)
		}
	}
	return out
}

// TestExportRoundTrip: an export of a corpus trace through every kind of
// model decodes (snapshot.Decode) to exactly the snapshot written; the
// trace it holds, read back by membench's snapshot reader, makes the same
// requests in the same order as the trace replayed; the reconstruction
// finds it a cold start (the final segments are what the trace's entries
// leave, which is what the viewer's state history assumes); and a second
// export is byte-identical.
func TestExportRoundTrip(t *testing.T) {
	r0, err := corpus.Open("gpt-train")
	if err != nil {
		t.Fatal(err)
	}
	want := requests(t, r0)
	for _, c := range exportCases {
		t.Run(c.spec+"@"+c.device, func(t *testing.T) {
			t.Parallel()
			ex, b := gptTrainExport(t, c)
			r2, _ := corpus.Open("gpt-train")
			_, b2 := exportTrace(t, "gpt-train", r2, c.spec, c.device)
			if !bytes.Equal(b, b2) {
				t.Fatal("two exports of one replay differ")
			}
			got, err := snapshot.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			written := *fullSnapshot(t, ex)
			if written.Settings == nil {
				// Foreign settings come back as Raw settings.
				if got.Settings == nil || got.Settings.Raw["membench_strategy"] != written.ForeignSettings[0][1] {
					t.Errorf("allocator_settings read back as %+v", got.Settings)
				}
				got.Settings, written.ForeignSettings = nil, nil
			} else {
				got.Settings.Raw = nil
			}
			if !reflect.DeepEqual(got, &written) {
				t.Errorf("decoded snapshot differs from the one written")
			}
			layout, err := got.InitialState(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(layout.Segments) != 0 {
				t.Errorf("the export reads as a warm start (%d segments before the first entry): its segments and trace disagree", len(layout.Segments))
			}
			sr, err := traces.OpenReader("export", bytes.NewReader(b), traces.DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			back := requests(t, sr)
			if !reflect.DeepEqual(back, want) {
				t.Errorf("read back: %d requests, the trace has %d (first difference at %d)", len(back), len(want), firstDiff(back, want))
			}
			checkTiling(t, got)
		})
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkTiling: every segment's blocks tile it from its address, as
// MemoryViz (which places blocks by their sizes from the segment's
// address) and _memory_viz.segsum (which asserts the sums) require.
func checkTiling(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	for i, sg := range s.Segments {
		at := sg.Address
		for _, b := range sg.Blocks {
			if b.Address != at || b.RequestedSize > b.Size {
				t.Fatalf("segment %d: block at %#x (size %d, requested %d) where %#x was expected", i, b.Address, b.Size, b.RequestedSize, at)
			}
			at += b.Size
		}
		if at != sg.Address+sg.TotalSize {
			t.Fatalf("segment %d: blocks end at %#x, the segment at %#x", i, at, sg.Address+sg.TotalSize)
		}
		if i > 0 && s.Segments[i-1].Address >= sg.Address {
			t.Fatalf("segments not in address order at %d", i)
		}
	}
}

// smallTrace is a hand-sized trace with a clock: two streams, a block
// freed in the middle of others, a request large enough for a segment of
// its own on every GPU model.
func smallTrace() traces.Reader {
	const MiB = 1 << 20
	evs := []traces.Event{
		{Op: traces.OpAlloc, ID: 1, Size: 1000, Time: 1_000},
		{Op: traces.OpAlloc, ID: 2, Size: 3 * MiB, Time: 2_000},
		{Op: traces.OpAlloc, ID: 3, Size: 700, Stream: 7, Time: 3_500},
		{Op: traces.OpMark, Label: "step", Time: 4_000},
		{Op: traces.OpFree, ID: 1, Time: 5_000},
		{Op: traces.OpAlloc, ID: 4, Size: 25 * MiB, Time: 6_000},
		{Op: traces.OpFree, ID: 2, Time: 7_000},
		{Op: traces.OpAlloc, ID: 5, Size: 512, Time: 8_000},
		{Op: traces.OpFree, ID: 4, Time: 9_000},
	}
	return &traces.SliceReader{Events: evs}
}

// dump renders a snapshot as text, one entry or block a line, for the
// golden file.
func dump(s *snapshot.Snapshot) string {
	var b strings.Builder
	for _, e := range s.DeviceTraces[0] {
		if e.Action == "oom" {
			fmt.Fprintf(&b, "  %-14s device_free=%d size=%d stream=%d t=%dus\n", e.Action, e.DeviceFree, e.Size, e.Stream, e.TimeUS)
			continue
		}
		fmt.Fprintf(&b, "  %-14s %#x size=%d stream=%d t=%dus\n", e.Action, e.Addr, e.Size, e.Stream, e.TimeUS)
	}
	for _, sg := range s.Segments {
		fmt.Fprintf(&b, "  segment %#x total=%d allocated=%d active=%d requested=%d stream=%d %s expandable=%t\n",
			sg.Address, sg.TotalSize, sg.AllocatedSize, sg.ActiveSize, sg.RequestedSize, sg.Stream, sg.SegmentType, sg.IsExpandable)
		for _, bl := range sg.Blocks {
			fmt.Fprintf(&b, "    block %#x size=%d requested=%d %s\n", bl.Address, bl.Size, bl.RequestedSize, bl.State)
		}
	}
	if st := s.Settings; st != nil {
		fmt.Fprintf(&b, "  settings: conf=%q max_split_size=%d expandable=%t divisions=%v\n", st.PYTORCH_CUDA_ALLOC_CONF, st.MaxSplitSize, st.ExpandableSegments, st.RoundupPower2Divisions)
	}
	for _, kv := range s.ForeignSettings {
		fmt.Fprintf(&b, "  settings: %s=%q\n", kv[0], kv[1])
	}
	return b.String()
}

// TestExportGolden: the decisions each model exports for a small trace,
// entry by entry, against testdata/export.golden (go test -run
// TestExportGolden ./harness -update-export rewrites it after a
// deliberate change; read the diff). It pins the order PyTorch records
// (segment_alloc before the alloc it serves, free_requested then
// free_completed), the sizes each action carries (requested bytes for
// allocs and frees, the segment's for segment events), the clock
// (nanoseconds / 1000) and the end state.
func TestExportGolden(t *testing.T) {
	var b strings.Builder
	// A program loaded at the end: its block at the bottom of the heap's
	// one segment, beside the buffers.
	cases := append(slices.Clone(exportCases), exportCase{"tf:program_bytes=1MiB", "tpu-v4"})
	for _, c := range cases {
		ex, _ := exportTrace(t, "small", smallTrace(), c.spec, c.device)
		fmt.Fprintf(&b, "%s on %s:\n%s", c.spec, c.device, dump(fullSnapshot(t, ex)))
	}
	path := filepath.Join("testdata", "export.golden")
	if *updateExport {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-export to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("export differs from %s:\n%s", path, b.String())
	}
}

// TestExportMoves: a block the TPU runtime's defragmentation moves is
// written as a free at its old address and an alloc at its new one, and
// the file still reads as consistent (a cold start whose final segments
// the entries explain).
func TestExportMoves(t *testing.T) {
	// A 4 KiB heap: buffers A, B, C top-down, B freed, then a 2 KiB
	// request that only a slide of C to the top makes room for.
	dev := tinyTPU(t)
	evs := []traces.Event{
		{Op: traces.OpAlloc, ID: 1, Size: 1024},
		{Op: traces.OpAlloc, ID: 2, Size: 1024},
		{Op: traces.OpAlloc, ID: 3, Size: 1024},
		{Op: traces.OpFree, ID: 2},
		{Op: traces.OpAlloc, ID: 4, Size: 2048},
		{Op: traces.OpFree, ID: 3},
	}
	ex, b := exportOn(t, "moves", &traces.SliceReader{Events: evs}, "jax", dev)
	if ex.Moves != 1 || ex.Result.OOMCount != 0 {
		t.Fatalf("%d moves, %d OOMs; want one move and no OOM", ex.Moves, ex.Result.OOMCount)
	}
	got, err := snapshot.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if layout, err := got.InitialState(0); err != nil || len(layout.Segments) != 0 {
		t.Fatalf("reconstruction: %v (%d segments at the start)", err, len(layout.Segments))
	}
	checkTiling(t, got)
}

// TestExportOOM: a request the device cannot hold is an oom entry (the
// torch model's own, with the rounded size and the device's free bytes;
// the others' from LastOOM), and its free writes nothing.
func TestExportOOM(t *testing.T) {
	dev, err := strategies.ParseDevice("a100-80g:capacity=64MiB")
	if err != nil {
		t.Fatal(err)
	}
	evs := []traces.Event{
		{Op: traces.OpAlloc, ID: 1, Size: 40 << 20},
		{Op: traces.OpAlloc, ID: 2, Size: 40 << 20},
		{Op: traces.OpFree, ID: 2},
		{Op: traces.OpFree, ID: 1},
	}
	for _, spec := range []string{"torch", "jax:preallocate=false"} {
		ex, _ := exportOn(t, "oom", &traces.SliceReader{Events: evs}, spec, dev)
		var acts []string
		for _, e := range exportEntries(t, ex) {
			acts = append(acts, e.Action)
			if e.Action == "oom" && (e.Size < 40<<20 || e.DeviceFree <= 0) {
				t.Errorf("%s: oom entry %+v", spec, e)
			}
		}
		if got := strings.Join(acts, " "); got != "segment_alloc alloc oom free_requested free_completed" {
			t.Errorf("%s: actions %s", spec, got)
		}
	}
}

// TestExportRefused: a strategy that is no allocator (the offline
// planner) is refused with ErrNotExportable, before any output.
func TestExportRefused(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-80g")
	_, err := ExportMemoryViz("small", smallTrace(), "planner", dev, ExportOptions{})
	if !errors.Is(err, ErrNotExportable) {
		t.Fatalf("planner: %v, want ErrNotExportable", err)
	}
}

// pythonCheck is what python3 reports of each export named on its
// command line, loaded with its own pickle module, one JSON line a file:
// the top-level keys, the counts, and whether every segment's blocks tile
// it (the assertion _memory_viz.segsum makes).
const pythonCheck = `
import collections, json, pickle, sys
for path in sys.argv[1:]:
    d = pickle.load(open(path, "rb"))
    tiled = True
    for s in d["segments"]:
        at = s["address"]
        for b in s["blocks"]:
            tiled = tiled and b["address"] == at and b["requested_size"] <= b["size"] and b["frames"] == []
            at += b["size"]
        tiled = tiled and at == s["address"] + s["total_size"]
        alloc = sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
        tiled = tiled and alloc == s["allocated_size"]
    acts = collections.Counter(e["action"] for t in d["device_traces"] for e in t)
    print(json.dumps({"keys": sorted(d), "segments": len(d["segments"]),
        "entries": sum(len(t) for t in d["device_traces"]), "actions": dict(sorted(acts.items())),
        "tiled": tiled, "settings": sorted(d["allocator_settings"])}))
`

// TestExportPython: Python's own pickle module loads an export of each
// kind of model, and finds in it what membench wrote. It runs python3
// when present (PyTorch is not needed: the file is plain data).
func TestExportPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: skipping the check that Python's own pickle module loads an export (membench's reader round trip is TestExportRoundTrip)")
	}
	// One python3 process reads every export (starting one per file
	// was most of this test's time).
	dir := t.TempDir()
	args := []string{"-c", pythonCheck}
	exports := make([]*Export, len(exportCases))
	for i, c := range exportCases {
		ex, b := gptTrainExport(t, c)
		path := filepath.Join(dir, fmt.Sprintf("export-%d.pickle", i))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		exports[i], args = ex, append(args, path)
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(exportCases) {
		t.Fatalf("python3 printed %d lines for %d exports:\n%s", len(lines), len(exportCases), out)
	}
	for i, c := range exportCases {
		ex := exports[i]
		var got struct {
			Keys     []string
			Segments int
			Entries  int
			Actions  map[string]int
			Tiled    bool
			Settings []string
		}
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("python3 printed %q: %v", lines[i], err)
		}
		want := map[string]int{}
		for _, e := range exportEntries(t, ex) {
			want[e.Action]++
		}
		if strings.Join(got.Keys, ",") != "allocator_settings,device_traces,segments" || got.Segments != len(ex.Snapshot.Segments) ||
			got.Entries != len(exportEntries(t, ex)) || !reflect.DeepEqual(got.Actions, want) || !got.Tiled {
			t.Errorf("%s@%s: python3 read %+v; membench wrote %d segments, actions %v", c.spec, c.device, got, len(ex.Snapshot.Segments), want)
		}
		if ex.Snapshot.Settings != nil && !strings.Contains(strings.Join(got.Settings, ","), "roundup_power2_divisions") {
			t.Errorf("%s: torch settings read as %v", c.spec, got.Settings)
		}
	}
}

// TestExportPrograms: a program the TPU runtime holds (program_bytes) is
// an alloc at the bottom of the heap, inside the heap's one segment, and
// its eviction for a buffer that needs the room is its free, before the
// alloc of that buffer.
func TestExportPrograms(t *testing.T) {
	dev := tinyTPU(t)
	evs := []traces.Event{
		{Op: traces.OpAlloc, ID: 1, Size: 1024},
		{Op: traces.OpAlloc, ID: 2, Size: 1024},
		{Op: traces.OpAlloc, ID: 3, Size: 1024},
		{Op: traces.OpFree, ID: 1},
	}
	ex, b := exportOn(t, "programs", &traces.SliceReader{Events: evs}, "jax:program_bytes=2048", dev)
	var got []string
	base := exportEntries(t, ex)[0].Addr
	for _, e := range exportEntries(t, ex) {
		got = append(got, fmt.Sprintf("%s+%d:%d", e.Action, e.Addr-base, e.Size))
	}
	want := "segment_alloc+0:4096 alloc+0:2048 alloc+3072:1024 alloc+2048:1024 " +
		"free_requested+0:2048 free_completed+0:2048 alloc+1024:1024 free_requested+3072:1024 free_completed+3072:1024"
	if strings.Join(got, " ") != want {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	snap, err := snapshot.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if layout, err := snap.InitialState(0); err != nil || len(layout.Segments) != 0 {
		t.Fatalf("reconstruction: %v", err)
	}
	if len(snap.Segments) != 1 || snap.Segments[0].TotalSize != 4096 {
		t.Errorf("segments %+v: want the heap as one", snap.Segments)
	}
	checkTiling(t, snap)
}

// tinyTPU is a TPU v4 with a 4 KiB heap, small enough that a few buffers
// force the runtime's defragmentation and program eviction.
func tinyTPU(t *testing.T) strategies.Device {
	t.Helper()
	dev, err := strategies.ParseDevice("tpu-v4")
	if err != nil {
		t.Fatal(err)
	}
	dev.Total, dev.Capacity, dev.Free = 4096, 4096, 4096
	return dev
}
