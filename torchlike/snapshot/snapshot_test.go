package snapshot

import (
	"bytes"
	"encoding/json"
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
		t.Run(rf.name, func(t *testing.T) {
			t.Parallel()
			want := loadSnap(t, rf.name)
			data, err := os.ReadFile(realSnapPath(t, rf.name))
			if err != nil {
				t.Fatal(err)
			}
			v, err := pickle.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			// Frames are shared in the pickle and repeated in the
			// JSON, which comes out about 16 times larger (opt125m): a buffer
			// grown by doubling spends its time in page faults.
			var buf bytes.Buffer
			buf.Grow(20 * len(data))
			buf.WriteString("\n ")
			toJSON(&buf, v) // frames included
			got, err := Decode(&buf)
			if err != nil {
				t.Fatalf("%s as JSON: %v", rf.name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: JSON form decodes differently", rf.name)
			}
		})
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
	// The JSON has no frames: the pickle's entries differ in that only.
	want := loadSnap(t, "cs336-lm-peak-probe.pickle")
	for _, tr := range want.DeviceTraces {
		for i := range tr {
			tr[i].Frames = FramesNone
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("python JSON decodes differently from the pickle")
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
