package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"membench/internal/pickle"
	"membench/internal/pickle/pickletest"
	"membench/torchlike/snapshot"
	"membench/torchlike/snapshot/snaptest"
)

func TestEncodePickleRoundTrip(t *testing.T) {
	s := snapshot.LoadSnap(t, "opt125m-zo-finetune.pickle")
	var buf bytes.Buffer
	if err := snaptest.EncodePickle(&buf, s); err != nil {
		t.Fatal(err)
	}
	t.Logf("re-encoded without frames: %d bytes", buf.Len())
	got, err := snapshot.Decode(&buf)
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
		return snaptest.Value(&snapshot.Snapshot{
			Segments: []snapshot.Segment{{Address: 1 << 30, TotalSize: 2 << 20, SegmentType: "small",
				Blocks: []snapshot.Block{{Address: 1 << 30, Size: 2 << 20, RequestedSize: 0, State: "inactive"}}}},
			DeviceTraces: [][]snapshot.TraceEntry{{{Action: "segment_alloc", Addr: 1 << 30, Size: 2 << 20}, {Action: "alloc", Addr: 1 << 30, Size: 512}}},
			Settings:     &snapshot.Settings{MaxSplitSize: -1},
		})
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
		_, err := snapshot.FromValue(d)
		if c.want == "" {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	for _, in := range []string{"", "   ", "[1, 2]", `{"a": 1}`, "{", "\x80\x04K\x01.", "\x80\x02cos\nsystem\n."} {
		if _, err := snapshot.Decode(strings.NewReader(in)); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
	_, err := snapshot.Decode(strings.NewReader("\x80\x02cos\nsystem\n."))
	if !errors.Is(err, pickle.ErrRefused) {
		t.Errorf("GLOBAL pickle: %v", err)
	}
}

// The pickle machine reuses its text for the next decode, so a Snapshot
// must hold no string of it: decoding other snapshots afterwards leaves
// the first one as it was (unknown actions, settings and segment types
// included), whether its parts were streamed or built as values.
func TestDecodedStringsOwnTheirText(t *testing.T) {
	mk := func(tag string, extra bool) []byte {
		s := &snapshot.Snapshot{
			Segments: []snapshot.Segment{{Address: 1 << 30, TotalSize: 2 << 20, SegmentType: "small",
				Blocks: []snapshot.Block{{Address: 1 << 30, Size: 2 << 20, State: "inactive"}}}},
			DeviceTraces: [][]snapshot.TraceEntry{{
				{Action: "segment_alloc", Addr: 1 << 30, Size: 2 << 20},
				{Action: "teleport_" + tag, Addr: 1 << 30, Size: 512},
				{Action: "defragment_" + tag + strings.Repeat("x", 100), Addr: 1 << 30, Size: 512},
			}},
			Settings: &snapshot.Settings{MaxSplitSize: -1, PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:" + tag},
		}
		v := snaptest.Value(s)
		if extra {
			// A key the schema skips, holding a tuple.
			trs, _ := v.Get("device_traces")
			e := trs.(*pickle.List).Items[0].(*pickle.List).Items[1].(*pickle.Dict)
			e.Set("stream_uses", pickle.Tuple{int64(1), "x" + tag, pickle.Tuple{int64(2)}})
		}
		var buf bytes.Buffer
		if err := pickletest.Encode(&buf, v); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, extra := range []bool{false, true} {
		ownText(t, mk("111", extra), [][]byte{mk("222", extra), mk("333", !extra), mk("444", extra)})
	}
}

func ownText(t *testing.T, first []byte, others [][]byte) {
	t.Helper()
	// No collection may empty the pools between the decodes: the text
	// must be reused for the test to see a string that was kept.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	got, err := snapshot.Decode(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("%+v %+v %+v", got.DeviceTraces, got.Segments, *got.Settings) // a copy of its text
	for _, o := range others {
		if _, err := snapshot.Decode(bytes.NewReader(o)); err != nil {
			t.Fatal(err)
		}
	}
	if after := fmt.Sprintf("%+v %+v %+v", got.DeviceTraces, got.Segments, *got.Settings); after != before {
		t.Errorf("a later decode changed an earlier snapshot:\n%s\nwas\n%s", after, before)
	}
	if a := got.DeviceTraces[0][1].Action; a != "teleport_111" {
		t.Errorf("action %q", a)
	}
}
