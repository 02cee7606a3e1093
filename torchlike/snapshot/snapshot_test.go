package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"membench/internal/pickle"
)

var realFiles = []struct {
	name     string
	segments int
	entries  int
	actions  map[string]int
}{
	{"cs336-lm-peak-probe.pickle", 9, 97,
		map[string]int{"alloc": 36, "free_requested": 26, "free_completed": 26, "segment_alloc": 9}},
	{"opt125m-zo-finetune.pickle", 61, 23105,
		map[string]int{"alloc": 7946, "free_requested": 7549, "free_completed": 7549, "segment_alloc": 61}},
}

func loadSnap(t testing.TB, name string) *Snapshot {
	t.Helper()
	f, err := os.Open(realSnapPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func TestDecodeReal(t *testing.T) {
	for _, rf := range realFiles {
		s := loadSnap(t, rf.name)
		if len(s.Segments) != rf.segments {
			t.Errorf("%s: %d segments, want %d", rf.name, len(s.Segments), rf.segments)
		}
		if len(s.DeviceTraces) != 1 || len(s.DeviceTraces[0]) != rf.entries {
			t.Fatalf("%s: traces %d", rf.name, len(s.DeviceTraces))
		}
		got := map[string]int{}
		for _, e := range s.DeviceTraces[0] {
			got[e.Action]++
			if e.TimeUS == 0 || e.Size <= 0 {
				t.Fatalf("%s: entry without time or size: %+v", rf.name, e)
			}
		}
		if !reflect.DeepEqual(got, rf.actions) {
			t.Errorf("%s: actions %v, want %v", rf.name, got, rf.actions)
		}
		if !slices.Equal(s.Devices(), []int{0}) {
			t.Errorf("%s: devices %v", rf.name, s.Devices())
		}
		st := s.Settings
		if st == nil || st.MaxSplitSize != -1 || st.ExpandableSegments || st.GarbageCollectionThreshold != 0 ||
			st.RoundupPower2Divisions != [16]int64{} || st.PYTORCH_CUDA_ALLOC_CONF != "" {
			t.Errorf("%s: settings %+v", rf.name, st)
		}
		if st.Raw["max_split_size"] != "-1" || st.Raw["expandable_segments"] != "False" ||
			!strings.HasPrefix(st.Raw["roundup_power2_divisions"], "{1: 0, 2: 0,") {
			t.Errorf("%s: raw settings %v", rf.name, st.Raw)
		}
		for _, sg := range s.Segments {
			var sum int64
			for _, b := range sg.Blocks {
				sum += b.Size
			}
			if sum != sg.TotalSize || (sg.SegmentType != "large" && sg.SegmentType != "small") {
				t.Errorf("%s: segment %#x: blocks sum %d of %d, type %q", rf.name, sg.Address, sum, sg.TotalSize, sg.SegmentType)
			}
		}
	}
}

// toJSON renders a decoded pickle value as JSON the way Python's json.dump
// would (tuples as lists, dict keys as strings).
func toJSON(b *bytes.Buffer, v any) { writeJSON(b, v, false) }

// writeJSON is toJSON, leaving out every "frames" key when noFrames.
func writeJSON(b *bytes.Buffer, v any, noFrames bool) {
	toJSON := func(b *bytes.Buffer, v any) { writeJSON(b, v, noFrames) }
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool, int64, string:
		x, _ := json.Marshal(v)
		b.Write(x)
	case float64:
		fmt.Fprintf(b, "%v", v)
		if v == float64(int64(v)) {
			b.WriteString(".0")
		}
	case *big.Int:
		b.WriteString(v.String())
	case *pickle.List:
		toJSON(b, pickle.Tuple(v.Items))
	case pickle.Tuple:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			toJSON(b, x)
		}
		b.WriteByte(']')
	case *pickle.Dict:
		b.WriteByte('{')
		i := 0
		for k, x := range v.All() {
			if noFrames && k == "frames" {
				continue
			}
			if i > 0 {
				b.WriteString(", ")
			}
			toJSON(b, fmt.Sprint(k))
			b.WriteString(": ")
			toJSON(b, x)
			i++
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("toJSON %T", v))
	}
}

func TestDecodeJSON(t *testing.T) {
	for _, rf := range realFiles {
		want := loadSnap(t, rf.name)
		data, err := os.ReadFile(realSnapPath(t, rf.name))
		if err != nil {
			t.Fatal(err)
		}
		v, err := pickle.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.WriteString("\n ")
		toJSON(&buf, v) // frames included
		got, err := Decode(&buf)
		if err != nil {
			t.Fatalf("%s as JSON: %v", rf.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: JSON form decodes differently", rf.name)
		}
	}
	// The file Python's json.dump wrote (frames removed).
	f, err := os.Open(realSnapPath(t, "cs336-lm-peak-probe.noframes.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := loadSnap(t, "cs336-lm-peak-probe.pickle"); !reflect.DeepEqual(got, want) {
		t.Errorf("python JSON decodes differently from the pickle")
	}
}

func TestEncodePickleRoundTrip(t *testing.T) {
	s := loadSnap(t, "opt125m-zo-finetune.pickle")
	var buf bytes.Buffer
	if err := s.EncodePickle(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("re-encoded without frames: %d bytes", buf.Len())
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Raw keeps every settings key as text; Value writes only the typed ones.
	got.Settings.Raw, s.Settings.Raw = nil, nil
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip differs")
	}
}

func TestSchemaErrors(t *testing.T) {
	base := func() *pickle.Dict {
		return (&Snapshot{
			Segments: []Segment{{Address: 1 << 30, TotalSize: 2 << 20, SegmentType: "small",
				Blocks: []Block{{Address: 1 << 30, Size: 2 << 20, RequestedSize: 0, State: "inactive"}}}},
			DeviceTraces: [][]TraceEntry{{{Action: "segment_alloc", Addr: 1 << 30, Size: 2 << 20}, {Action: "alloc", Addr: 1 << 30, Size: 512}}},
			Settings:     &Settings{MaxSplitSize: -1},
		}).Value()
	}
	get := func(d *pickle.Dict, path ...any) *pickle.Dict {
		var v any = d
		for _, p := range path {
			switch p := p.(type) {
			case string:
				v, _ = v.(*pickle.Dict).Get(p)
			case int:
				v = v.(*pickle.List).Items[p]
			}
		}
		return v.(*pickle.Dict)
	}
	for _, c := range []struct {
		name string
		edit func(d *pickle.Dict)
		want string
	}{
		{"entry size str", func(d *pickle.Dict) { get(d, "device_traces", 0, 1).Set("size", "512") },
			"device_traces[0][1].size: want int, got str"},
		{"entry action missing", func(d *pickle.Dict) {
			e := get(d, "device_traces", 0, 0)
			nd := pickle.NewDict()
			for k, v := range e.All() {
				if k != "action" {
					nd.Set(k, v)
				}
			}
			d2, _ := d.Get("device_traces")
			d2.(*pickle.List).Items[0].(*pickle.List).Items[0] = nd
		}, "device_traces[0][0].action: missing"},
		{"entry not dict", func(d *pickle.Dict) {
			d2, _ := d.Get("device_traces")
			d2.(*pickle.List).Items[0].(*pickle.List).Items[1] = int64(3)
		}, "device_traces[0][1]: want dict, got int"},
		{"trace not list", func(d *pickle.Dict) { d.Set("device_traces", "x") }, "device_traces: want list, got str"},
		{"segment address float", func(d *pickle.Dict) { get(d, "segments", 0).Set("address", 1.5) },
			"segments[0].address: want int, got float"},
		{"block state int", func(d *pickle.Dict) { get(d, "segments", 0, "blocks", 0).Set("state", int64(1)) },
			"segments[0].blocks[0].state: want str, got int"},
		{"expandable str", func(d *pickle.Dict) { get(d, "segments", 0).Set("is_expandable", "yes") },
			"segments[0].is_expandable: want bool, got str"},
		{"huge int", func(d *pickle.Dict) {
			get(d, "device_traces", 0, 1).Set("addr", new(big.Int).Lsh(big.NewInt(1), 70))
		}, "device_traces[0][1].addr: int 1180591620717411303424 does not fit in 64 bits"},
		{"settings", func(d *pickle.Dict) { get(d, "allocator_settings").Set("max_split_size", "big") },
			"allocator_settings.max_split_size: want int, got str"},
		{"roundup key", func(d *pickle.Dict) { get(d, "allocator_settings", "roundup_power2_divisions").Set("3", int64(1)) },
			"roundup_power2_divisions: key 3 is not a power-of-two"},
		{"not a snapshot", func(d *pickle.Dict) { d.Set("segments", nil); d.Set("device_traces", nil) }, ""},
	} {
		d := base()
		c.edit(d)
		_, err := FromValue(d)
		if c.want == "" {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	for _, in := range []string{"", "   ", "[1, 2]", `{"a": 1}`, "{", "\x80\x04K\x01.", "\x80\x02cos\nsystem\n."} {
		if _, err := Decode(strings.NewReader(in)); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
	_, err := Decode(strings.NewReader("\x80\x02cos\nsystem\n."))
	if !errors.Is(err, pickle.ErrRefused) {
		t.Errorf("GLOBAL pickle: %v", err)
	}
}

func TestOldSchemaDefaults(t *testing.T) {
	// A snapshot as old releases wrote it: no addresses on blocks, no
	// requested sizes, no time, no settings, no segment_type.
	in := `{"segments": [{"device": 1, "address": 1048576, "total_size": 2097152, "stream": 0,
	  "blocks": [{"size": 512, "state": "active_allocated"}, {"size": 2096640, "state": "inactive"}]}],
	  "device_traces": [[], [{"action": "alloc", "addr": 1048576, "size": 100}]]}`
	s, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	sg := s.Segments[0]
	if sg.SegmentType != "small" || sg.Blocks[1].Address != 1048576+512 || sg.Blocks[0].RequestedSize != 512 {
		t.Errorf("defaults: %+v", sg)
	}
	if s.Settings != nil || s.DeviceTraces[1][0].TimeUS != 0 {
		t.Errorf("settings %v", s.Settings)
	}
	if !slices.Equal(s.Devices(), []int{1}) {
		t.Errorf("devices %v", s.Devices())
	}
	l, err := s.InitialState(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Segments) != 1 || l.NumBlocks() != 0 {
		t.Errorf("layout %+v", l)
	}
	if _, err := s.InitialState(0); err == nil || !strings.Contains(err.Error(), "devices: 1") {
		t.Errorf("device 0: %v", err)
	}
}

func BenchmarkDecodeAndInitialState(b *testing.B) {
	data, err := os.ReadFile(realSnapPath(b, "opt125m-zo-finetune.pickle"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s, err := Decode(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.InitialState(0); err != nil {
			b.Fatal(err)
		}
	}
}
