package snapshot_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"membench/internal/fuzzbound"
	"os"
	"strconv"
	"strings"
	"testing"

	"membench/internal/pickle"
	"membench/torchlike/snapshot"
	"membench/torchlike/snapshot/snaptest"
	"membench/traces"
)

// snapRead opens a snapshot through openSnapshot and reads every event
// through traces.Check, so that any id inconsistency fails.
func snapRead(t testing.TB, name string, data []byte, opts traces.OpenOptions) ([]traces.Event, traces.Meta) {
	t.Helper()
	r, err := snapshot.OpenSnapshot(name, bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	evs, err := traces.ReadAll(traces.Check(r))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs, r.Meta()
}

type snapCounts struct{ allocs, frees, marks, live int }

func countSnapEvents(t testing.TB, evs []traces.Event) snapCounts {
	var c snapCounts
	live := map[uint64]bool{}
	var next uint64 = 1
	for _, ev := range evs {
		switch ev.Op {
		case traces.OpAlloc:
			c.allocs++
			if ev.ID != next {
				t.Fatalf("alloc id %d, want %d", ev.ID, next)
			}
			next++
			live[ev.ID] = true
		case traces.OpFree:
			c.frees++
			delete(live, ev.ID)
		case traces.OpMark:
			c.marks++
		}
	}
	c.live = len(live)
	return c
}

func readSnapFile(t testing.TB, name string) []byte {
	data, err := os.ReadFile(snapshot.RealSnapPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSnapshotReal(t *testing.T) {
	for _, c := range []struct {
		file    string
		entries string
		want    snapCounts
	}{
		{"cs336-lm-peak-probe.pickle", "97", snapCounts{36, 26, 0, 10}},
		{"opt125m-zo-finetune.pickle", "23105", snapCounts{7946, 7549, 0, 397}},
		{"cs336-lm-peak-probe.noframes.json", "97", snapCounts{36, 26, 0, 10}},
	} {
		evs, meta := snapRead(t, c.file, readSnapFile(t, c.file), traces.DefaultOpenOptions)
		if got := countSnapEvents(t, evs); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.file, got, c.want)
		}
		enc := "pickle"
		if strings.HasSuffix(c.file, ".json") {
			enc = "json"
		}
		for k, v := range map[string]string{"format": "pytorch-snapshot", "encoding": enc, "device": "0",
			"devices": "0", "entries": c.entries, "warm_start": "", "torch.max_split_size": "-1",
			"torch.expandable_segments": "False", "torch.garbage_collection_threshold": "0"} {
			if got := meta.Get(k); got != v {
				t.Errorf("%s: meta %s = %q, want %q", c.file, k, got, v)
			}
		}
		found := false
		for _, kv := range meta {
			found = found || kv.Key == "torch.PYTORCH_CUDA_ALLOC_CONF"
		}
		if !found {
			t.Errorf("%s: no torch.PYTORCH_CUDA_ALLOC_CONF in meta %v", c.file, meta)
		}
		last := int64(0)
		for i, ev := range evs {
			if ev.Time < last {
				t.Fatalf("%s: event %d goes back in time (%d < %d)", c.file, i, ev.Time, last)
			}
			last = ev.Time
			if ev.Op == traces.OpAlloc && (ev.Size <= 0 || ev.Stream != 0) {
				t.Fatalf("%s: event %d: %+v", c.file, i, ev)
			}
		}
		if last <= 0 {
			t.Errorf("%s: no times", c.file)
		}
	}
}

// The other engineer's traces.Open detects the format and hands over to
// openSnapshot.
func TestSnapshotThroughOpen(t *testing.T) {
	for _, f := range []string{"cs336-lm-peak-probe.pickle", "cs336-lm-peak-probe.noframes.json"} {
		r, err := traces.Open(snapshot.RealSnapPath(t, f), traces.DefaultOpenOptions)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		evs, err := traces.ReadAll(traces.Check(r))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c := countSnapEvents(t, evs); c.allocs != 36 || r.Meta().Get("format") != "pytorch-snapshot" {
			t.Errorf("%s: %+v %v", f, c, r.Meta())
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: close: %v", f, err)
		}
	}
}

// encodeSnap writes s as a pickle, or as JSON the way json.dump would.
func encodeSnap(t testing.TB, s *snapshot.Snapshot, asJSON bool) []byte {
	var buf bytes.Buffer
	if !asJSON {
		if err := snaptest.EncodePickle(&buf, s); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var conv func(v any) any
	conv = func(v any) any {
		switch v := v.(type) {
		case *pickle.Dict:
			m := map[string]any{}
			for k, x := range v.All() {
				m[k.(string)] = conv(x)
			}
			return m
		case *pickle.List:
			return conv(pickle.Tuple(v.Items))
		case pickle.Tuple:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = conv(x)
			}
			return out
		}
		return v
	}
	data, err := json.Marshal(conv(snaptest.Value(s)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func loadTorchSnap(t testing.TB, file string) *snapshot.Snapshot {
	s, err := snapshot.Decode(bytes.NewReader(readSnapFile(t, file)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A warm start: the opt125m trace without its first K entries. The events
// must begin with the blocks live at the cut, and the stream must stay
// consistent to the end (traces.Check), leaving the snapshot's live blocks.
func TestSnapshotWarmStart(t *testing.T) {
	s := loadTorchSnap(t, "opt125m-zo-finetune.pickle")
	full := s.DeviceTraces[0]
	for _, k := range []int{1, 5000, 11165, 16001, len(full) - 1} {
		// Live blocks at the cut by forward replay of the prefix.
		liveAtCut := map[int64]int64{}
		for _, e := range full[:k] {
			switch e.Action {
			case "alloc":
				liveAtCut[e.Addr] = e.Size
			case "free_completed":
				delete(liveAtCut, e.Addr)
			}
		}
		cut := &snapshot.Snapshot{Segments: s.Segments, DeviceTraces: [][]snapshot.TraceEntry{full[k:]}, Settings: s.Settings}
		for _, asJSON := range []bool{false, true} {
			evs, meta := snapRead(t, "cut", encodeSnap(t, cut, asJSON), traces.DefaultOpenOptions)
			n := len(liveAtCut)
			if n > 0 && meta.Get("warm_start") != strconv.Itoa(n)+" blocks" {
				t.Errorf("cut %d: warm_start %q, want %d blocks", k, meta.Get("warm_start"), n)
			}
			var sizes, want []int64
			for _, ev := range evs[:n] {
				if ev.Op != traces.OpAlloc || ev.Time != 0 {
					t.Fatalf("cut %d: warm event %+v", k, ev)
				}
				sizes = append(sizes, ev.Size)
			}
			for _, sz := range liveAtCut {
				want = append(want, sz)
			}
			if !sameMultiset(sizes, want) {
				t.Errorf("cut %d: warm-start sizes differ from the forward replay", k)
			}
			if c := countSnapEvents(t, evs); c.live != 397 {
				t.Errorf("cut %d: %d live at the end, want 397", k, c.live)
			}
		}
	}
}

func sameMultiset(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int64]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
		if m[x] < 0 {
			return false
		}
	}
	return true
}

const mb = int64(1 << 20)

func multiDevice() *snapshot.Snapshot {
	S0, S1, S3 := int64(0x10000000), int64(0x50000000), int64(0x90000000)
	return &snapshot.Snapshot{
		Segments: []snapshot.Segment{
			{Device: 0, Address: S0, TotalSize: 2 * mb, SegmentType: "small", Blocks: []snapshot.Block{
				{Address: S0, Size: 512, RequestedSize: 100, State: "active_allocated"}}},
			{Device: 1, Address: S1, TotalSize: 20 * mb, SegmentType: "large", Blocks: []snapshot.Block{
				{Address: S1, Size: 5 * mb, RequestedSize: 5 * mb, State: "active_allocated"},
				{Address: S1 + 5*mb, Size: 15 * mb, State: "inactive"}}},
			{Device: 3, Address: S3, TotalSize: 20 * mb, SegmentType: "large", Blocks: []snapshot.Block{
				{Address: S3, Size: 4 * mb, RequestedSize: 4 * mb, State: "active_allocated"},
				{Address: S3 + 4*mb, Size: 16 * mb, State: "inactive"}}},
		},
		DeviceTraces: [][]snapshot.TraceEntry{
			{},
			{
				{Action: "free_requested", Addr: S1, Size: 3 * mb, Stream: 7, TimeUS: 1000},
				{Action: "free_completed", Addr: S1, Size: 3 * mb, Stream: 7, TimeUS: 1002},
				{Action: "oom", Size: 64 * mb, DeviceFree: 5 * mb, TimeUS: 1003},
				{Action: "alloc", Addr: S1, Size: 5 * mb, Stream: 7, TimeUS: 1005},
				{Action: "snapshot", Size: 5 * mb, TimeUS: 1010},
			},
			{},
			{
				{Action: "segment_alloc", Addr: S3, Size: 20 * mb, Stream: 9},
				{Action: "alloc", Addr: S3, Size: 4 * mb, Stream: 9},
			},
		},
		Settings: &snapshot.Settings{PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:128\nx", MaxSplitSize: 128 * mb},
	}
}

func TestSnapshotDevices(t *testing.T) {
	data := encodeSnap(t, multiDevice(), false)
	// Default: the lowest device with trace entries (1, not 0).
	evs, meta := snapRead(t, "multi", data, traces.DefaultOpenOptions)
	want := []traces.Event{
		{Op: traces.OpAlloc, ID: 1, Size: 3 * mb, Stream: 0, Time: 0}, // warm start: live before the first entry
		{Op: traces.OpFree, ID: 1, Time: 2000},
		{Op: traces.OpMark, Label: "oom", Time: 3000},
		{Op: traces.OpAlloc, ID: 2, Size: 5 * mb, Stream: 7, Time: 5000},
		{Op: traces.OpMark, Label: "snapshot", Time: 10000},
	}
	if len(evs) != len(want) {
		t.Fatalf("device 1: %+v", evs)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("device 1 event %d: %+v, want %+v", i, evs[i], want[i])
		}
	}
	for k, v := range map[string]string{"device": "1", "devices": "0,1,3", "warm_start": "1 blocks",
		"warm_start_segments": "1", "torch.max_split_size": "134217728",
		"torch.PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128 x", "time-origin-us": "1000 (time_us of the first entry; event times count from it)"} {
		if got := meta.Get(k); got != v {
			t.Errorf("meta %s = %q, want %q", k, got, v)
		}
	}
	// Explicit device 3: a cold start, no clock.
	evs, meta = snapRead(t, "multi", data, traces.OpenOptions{Device: 3})
	if len(evs) != 1 || evs[0] != (traces.Event{Op: traces.OpAlloc, ID: 1, Size: 4 * mb, Stream: 9, Time: traces.NoTime}) || meta.Get("warm_start") != "" {
		t.Errorf("device 3: %+v %v", evs, meta)
	}
	// Device 0: segments but no trace; its live block is the whole story.
	evs, _ = snapRead(t, "multi", data, traces.OpenOptions{Device: 0})
	if len(evs) != 1 || evs[0].Size != 100 {
		t.Errorf("device 0: %+v", evs)
	}
	// Device 2 does not exist.
	_, err := snapshot.OpenSnapshot("multi", bytes.NewReader(data), traces.OpenOptions{Device: 2})
	var pe *traces.PosError
	if !errors.As(err, &pe) || pe.File != "multi" || !strings.Contains(err.Error(), "devices present: 0,1,3") {
		t.Errorf("device 2: %v", err)
	}
	// The JSON form gives the same events.
	evs2, _ := snapRead(t, "multi.json", encodeSnap(t, multiDevice(), true), traces.DefaultOpenOptions)
	if len(evs2) != len(want) || evs2[3] != want[3] {
		t.Errorf("json: %+v", evs2)
	}
}

func TestSnapshotErrors(t *testing.T) {
	S := int64(0x40000000)
	mk := func(blocks []snapshot.Block, trace ...snapshot.TraceEntry) []byte {
		return encodeSnap(t, &snapshot.Snapshot{
			Segments:     []snapshot.Segment{{Address: S, TotalSize: 20 * mb, SegmentType: "large", Blocks: blocks}},
			DeviceTraces: [][]snapshot.TraceEntry{trace},
		}, false)
	}
	e := func(action string, addr, size int64) snapshot.TraceEntry {
		return snapshot.TraceEntry{Action: action, Addr: addr, Size: size}
	}
	free := []snapshot.Block{{Address: S, Size: 20 * mb, State: "inactive"}}
	zero := []snapshot.Block{{Address: S, Size: 512, RequestedSize: 0, State: "active_allocated"}}
	for _, c := range []struct {
		name  string
		data  []byte
		event int
		is    error
		want  string
	}{
		{"zero size", mk(zero, e("free_completed", S+2*mb, 4*mb), e("alloc", S, 0)), 1, traces.ErrBadSize, "alloc of 0 bytes"},
		{"double free", mk(free, e("alloc", S, 4*mb), e("free_requested", S, 4*mb), e("free_completed", S, 4*mb),
			e("free_completed", S, 4*mb)), 3, traces.ErrUnknownID, "already freed"},
		{"free outside segments", mk(free, e("free_completed", S+40*mb, 4*mb)), 0, snapshot.ErrInconsistent, "in no segment"},
		{"alloc never freed", mk(free, e("alloc", S, 4*mb)), 0, snapshot.ErrInconsistent, "no live block"},
		{"refused pickle", []byte("\x80\x02cos\nsystem\n(S'echo'\ntR."), -1, pickle.ErrRefused, "GLOBAL"},
		{"truncated", readSnapFile(t, "cs336-lm-peak-probe.pickle")[:5000], -1, io.ErrUnexpectedEOF, "truncated"},
		{"json type", []byte(`{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": "8"}]]}`),
			-1, nil, "device_traces[0][0].size: want int, got str"},
		{"not a snapshot", []byte(`{"a": 1}`), -1, nil, "neither segments nor device_traces"},
		{"empty", []byte("  "), -1, nil, "empty"},
		{"nothing", []byte(`{"segments": [], "device_traces": [[]]}`), -1, nil, "no segments and no trace entries"},
	} {
		r, err := snapshot.OpenSnapshot("f.pickle", bytes.NewReader(c.data), traces.DefaultOpenOptions)
		if err == nil {
			_, err = traces.ReadAll(r)
		}
		var pe *traces.PosError
		if !errors.As(err, &pe) || pe.File != "f.pickle" || pe.Event != c.event ||
			(c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v (event %d), want event %d, %v, %q", c.name, err, eventOf(err), c.event, c.is, c.want)
		}
	}
	// A huge size.
	big := encodeSnap(t, &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Address: S, TotalSize: 4 * traces.MaxSize, SegmentType: "large", Blocks: []snapshot.Block{
			{Address: S, Size: 2 * traces.MaxSize, RequestedSize: 2 * traces.MaxSize, State: "active_allocated"}}}},
		DeviceTraces: [][]snapshot.TraceEntry{{e("alloc", S, 2*traces.MaxSize)}},
	}, false)
	r, err := snapshot.OpenSnapshot("big", bytes.NewReader(big), traces.DefaultOpenOptions)
	if err == nil {
		_, err = traces.ReadAll(r)
	}
	if !errors.Is(err, traces.ErrBadSize) || eventOf(err) != 0 {
		t.Errorf("huge alloc: %v", err)
	}
}

func eventOf(err error) int {
	var pe *traces.PosError
	if errors.As(err, &pe) {
		return pe.Event
	}
	return -2
}

func FuzzOpenSnapshot(f *testing.F) {
	f.Add(encodeSnap(f, multiDevice(), false))
	f.Add(encodeSnap(f, multiDevice(), true))
	f.Add(readSnapFile(f, "cs336-lm-peak-probe.pickle"))
	f.Add(readSnapFile(f, "cs336-lm-peak-probe.noframes.json"))
	s := loadTorchSnap(f, "cs336-lm-peak-probe.pickle")
	s.DeviceTraces[0] = s.DeviceTraces[0][40:]
	f.Add(encodeSnap(f, s, false))
	f.Add(encodeSnap(f, s, true))
	f.Add([]byte(`{"segments": [{"address": 0, "total_size": 2097152, "is_expandable": true, "blocks": []}],
		"device_traces": [[{"action": "segment_unmap", "addr": 2097152, "size": 2097152}, {"action": "segment_map", "addr": 0, "size": 2097152}]],
		"allocator_settings": {"expandable_segments": true, "roundup_power2_divisions": {"1": 4}}}`))
	// The reproducers of issue 11, small enough to mutate quickly.
	f.Add([]byte("\x80\x02})" + strings.Repeat("\x85", 40) + "Ns."))
	f.Add([]byte("\x80\x04}(\x8c\x08segments" + strings.Repeat("](", 600) + strings.Repeat("e", 600)))
	for _, seed := range snapshot.SharedEntrySeeds() {
		f.Add(seed)
	}
	f.Add([]byte(`{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": ` + strings.Repeat("9", 100) + `}]]}`))
	f.Add([]byte(`{"segments": [], "device_traces": [[{"action": "teleport", "addr": 1, "size": 1}]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each input within 1 s of CPU and 256 MiB of allocation.
		fuzzbound.Check(t, func() { fuzzOpen(t, data) })
	})
}

func fuzzOpen(t *testing.T, data []byte) {
	for _, dev := range []int{-1, 1} {
		r, err := snapshot.OpenSnapshot("fuzz", bytes.NewReader(data), traces.OpenOptions{Device: dev})
		if err != nil {
			var pe *traces.PosError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *PosError: %v", err, err)
			}
			continue
		}
		for n := 0; n < 1<<20; n++ {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var pe *traces.PosError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T is not a *PosError: %v", err, err)
				}
				break
			}
			if ev.Op == traces.OpAlloc && (ev.Size <= 0 || ev.Size > traces.MaxSize) {
				t.Fatalf("alloc size %d", ev.Size)
			}
		}
		r.Close()
	}
}
