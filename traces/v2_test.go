package traces

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update if the change is intended):\n got %q\nwant %q", path, got, want)
	}
}

// v2Events is the trace of doc.go's version-2 example, with a stream, a
// quoted executable name and a donor above the id (its delta negative).
var v2Events = []Event{
	{Op: OpAlloc, ID: 1, Size: 1048576, Kind: KindEager, Time: NoTime},
	{Op: OpAlloc, ID: 2, Size: 4096, Kind: KindDevicePut, Time: 5},
	{Op: OpLaunch, Label: "train_step", Time: 100},
	{Op: OpAlloc, ID: 3, Size: 4096, Kind: KindParameter, Time: NoTime},
	{Op: OpAlloc, ID: 4, Size: 8, Stream: 7, Kind: KindOutput, Time: NoTime},
	{Op: OpAlloc, ID: 5, Size: 1048576, Stream: 7, Kind: KindOutput, Donated: true, Donor: 1, Time: NoTime},
	{Op: OpAlloc, ID: 6, Size: 65536, Stream: 7, Kind: KindTemp, Time: NoTime},
	{Op: OpAlloc, ID: 7, Size: 16, Stream: 7, Kind: KindConstant, Time: NoTime},
	{Op: OpLaunchEnd, Label: "train_step", Time: 180},
	{Op: OpFree, ID: 6, Time: NoTime},
	{Op: OpFree, ID: 7, Time: NoTime},
	{Op: OpFree, ID: 3, Time: NoTime},
	{Op: OpFree, ID: 1, Time: NoTime},
	{Op: OpMark, Label: "step:1", Time: NoTime},
	{Op: OpAlloc, ID: 8, Size: 4096, Stream: 7, Kind: KindDevicePut, Time: NoTime},
	{Op: OpLaunch, Label: "eval step", Time: NoTime},
	{Op: OpAlloc, ID: 0, Size: 4096, Stream: 7, Kind: KindOutput, Donated: true, Donor: 8, Time: 300},
	{Op: OpLaunchEnd, Label: "eval step", Time: NoTime},
	{Op: OpAlloc, ID: 9, Size: 4, Time: NoTime},
}

// TestV2Golden: the canonical text and the binary encoding of a version-2
// trace are fixed (golden files), each reads back as the events, and
// text -> binary -> text and binary -> text -> binary give the same bytes.
func TestV2Golden(t *testing.T) {
	meta := Meta{{"source", "doc.go example"}}
	var text, bin bytes.Buffer
	if _, err := WriteNative(&text, &SliceReader{Events: v2Events, M: meta, Version: 2}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteBinary(&bin, &SliceReader{Events: v2Events, M: meta, Version: 2}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "v2.txt", text.Bytes())
	golden(t, "v2.bin", bin.Bytes())
	for _, c := range []struct {
		name string
		data []byte
	}{{"v2.txt", text.Bytes()}, {"v2.bin", bin.Bytes()}} {
		r, err := OpenReader(c.name, bytes.NewReader(c.data), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		if v := FormatVersion(r); v != 2 {
			t.Errorf("%s: FormatVersion = %d, want 2", c.name, v)
		}
		evs, err := ReadAll(Check(r))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(evs, v2Events) {
			t.Errorf("%s reads as\n%+v\nwant\n%+v", c.name, evs, v2Events)
		}
	}
	textToBinaryToText(t, text.Bytes())
	br, _ := NewBinaryReader("b", bytes.NewReader(bin.Bytes()))
	var back bytes.Buffer
	WriteNative(&back, br, WriterOptions{})
	tr, _ := NewNativeReader("t", &back)
	var again bytes.Buffer
	if _, err := WriteBinary(&again, tr, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), bin.Bytes()) {
		t.Errorf("binary -> text -> binary differs")
	}
}

// TestV1Unchanged: a trace without the new vocabulary is written as
// version 1, byte for byte as before (the bytes below were written by the
// version-1 writers, before version 2 existed), and keeps version 1 through a conversion.
func TestV1Unchanged(t *testing.T) {
	evs := []Event{{Op: OpAlloc, ID: 1, Size: 4096, Time: 1500}, {Op: OpAlloc, ID: 2, Size: 8, Stream: 7, Time: NoTime}, {Op: OpMark, Label: "b", Time: NoTime}, {Op: OpFree, ID: 1, Time: 2000}}
	const wantText = "membench-trace 1\nmeta k v\na 1 4096 @1500\na 2 8 7\nm b\nf 1 @2000\n"
	const wantBin = "membench-trace-bin\x01\x01\x01k\x01v\x14\x80 \xb8\x17\x18\b\x0e\x02\x02b\x05\x02\xe8\a\x03\x04"
	var text, bin bytes.Buffer
	WriteNative(&text, &SliceReader{Events: evs, M: Meta{{"k", "v"}}}, WriterOptions{})
	WriteBinary(&bin, &SliceReader{Events: evs, M: Meta{{"k", "v"}}}, WriterOptions{})
	if text.String() != wantText {
		t.Errorf("text %q, want %q", text.String(), wantText)
	}
	if bin.String() != wantBin {
		t.Errorf("binary %q, want %q", bin.String(), wantBin)
	}
	r, err := NewBinaryReader("b", bytes.NewReader(bin.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	WriteNative(&back, r, WriterOptions{})
	if back.String() != wantText {
		t.Errorf("binary -> text %q", back.String())
	}
}

// TestV1WriterRefusesV2: a version-1 writer refuses the new vocabulary
// rather than drop it, and writers refuse what no reader accepts.
func TestV1WriterRefusesV2(t *testing.T) {
	cases := []struct {
		name string
		v    int
		ev   Event
		want string
	}{
		{"kind in v1", 1, Event{Op: OpAlloc, ID: 1, Size: 8, Kind: KindTemp}, "needs format version 2"},
		{"launch in v1", 0, Event{Op: OpLaunch, Label: "x"}, "needs format version 2"},
		{"donor on temp", 2, Event{Op: OpAlloc, ID: 1, Size: 8, Kind: KindTemp, Donated: true, Donor: 2}, "only an output"},
		{"self donor", 2, Event{Op: OpAlloc, ID: 1, Size: 8, Kind: KindOutput, Donated: true, Donor: 1}, "itself"},
		{"bad kind", 2, Event{Op: OpAlloc, ID: 1, Size: 8, Kind: 99}, "unknown kind"},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		tw, _ := NewWriter(&buf, nil, WriterOptions{Version: c.v})
		bw, _ := NewBinaryWriter(&buf, nil, WriterOptions{Version: c.v})
		for _, w := range []eventWriter{tw, bw} {
			if err := w.Write(c.ev); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (%T): err = %v, want %q", c.name, w, err, c.want)
			}
		}
	}
	if _, err := NewWriter(io.Discard, nil, WriterOptions{Version: 3}); err == nil {
		t.Error("version 3 writer: no error")
	}
}

// TestV2TextErrors: every version-2 syntax error names its line, and the
// new vocabulary in a version-1 trace says which version it needs.
func TestV2TextErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"kind in v1", "membench-trace 1\na 1 8 output\n", `t:2 (event 0): alloc kind "output" needs format version 2 (header "membench-trace 2"); this trace is version 1`},
		{"donor in v1", "membench-trace 1\na 1 8 donor=2\n", `t:2 (event 0): a donor needs format version 2`},
		{"launch in v1", "membench-trace 1\nb step\n", `t:2 (event 0): a launch record needs format version 2`},
		{"unknown field", "membench-trace 2\na 1 8 outputs\n", `t:2 (event 0): alloc: bad field "outputs" (want a decimal int64 stream, a kind`},
		{"kind before stream", "membench-trace 2\na 1 8 temp 3\n", `t:2 (event 0): alloc: unexpected field "3"`},
		{"donor on temp", "membench-trace 2\na 1 8 temp donor=2\n", `t:2 (event 0): bad donor: a temp alloc has a donor (only an output aliases a donated input)`},
		{"donor without kind", "membench-trace 2\na 1 8 donor=2\n", `t:2 (event 0): bad donor: a none alloc has a donor`},
		{"self donor", "membench-trace 2\na 1 8 output donor=1\n", `t:2 (event 0): bad donor: alloc 1 names itself as its donor`},
		{"bad donor", "membench-trace 2\na 1 8 output donor=x\n", `t:2 (event 0): alloc: bad donor "donor=x"`},
		{"donor before kind", "membench-trace 2\na 1 8 donor=3 output\n", `bad donor: a none alloc has a donor`},
		{"launch without name", "membench-trace 2\nb\n", `t:2 (event 0): launch: missing executable name (want "b <executable> [@<time_ns>]")`},
		{"end extra", "membench-trace 2\ne x y\n", `t:2 (event 0): launch end: unexpected field "y"`},
		{"unknown record", "membench-trace 2\nx 1\n", `unknown record type "x" (want a, f, m, b, e or meta)`},
	}
	for _, c := range cases {
		r, err := NewNativeReader("t", strings.NewReader(c.in))
		if err == nil {
			_, err = ReadAll(r)
		}
		var pe *PosError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestV2BinaryErrors: corrupt version-2 records, and version-2 flags in a
// version-1 trace, are errors at their byte.
func TestV2BinaryErrors(t *testing.T) {
	v1 := BinaryMagic + "\x01\x00"
	v2 := BinaryMagic + "\x02\x00"
	cases := []struct{ name, in, want string }{
		{"kind flag in v1", v1 + "\x30\x08\x02", "at byte 20: corrupt binary trace: record tag 0x30 has unknown flags"},
		{"launch flag in v1", v1 + "\x0a\x02x", "record tag 0x0a has unknown flags"},
		{"launch and end", v2 + "\x1a\x02x", "record tag 0x1a has unknown flags"},
		{"kind 0", v2 + "\x30\x08\x00", "at byte 22: corrupt binary trace: alloc kind 0 (want 1..6)"},
		{"kind 7", v2 + "\x30\x08\x07", "alloc kind 7"},
		{"kind cut", v2 + "\x30\x08", "truncated binary trace: the content ends inside an alloc kind"},
		{"donor on temp", v2 + "\x70\x08\x03\x02", "bad donor: a temp alloc has a donor"},
		{"donor without kind", v2 + "\x50\x08\x02", "bad donor: a none alloc has a donor"},
		{"self donor", v2 + "\x70\x08\x02\x00", "names itself"},
		{"donor cut", v2 + "\x70\x08\x02", "ends inside an alloc donor"},
	}
	for _, c := range cases {
		_, _, err := readBinary(t, []byte(c.in))
		var pe *PosError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestCheckLaunches: before, ops, after: Check stops at the first event
// that breaks the order of launches or donations, with the error's kind.
func TestCheckLaunches(t *testing.T) {
	a := func(id uint64, k Kind) Event { return Event{Op: OpAlloc, ID: id, Size: 8, Kind: k, Time: NoTime} }
	don := func(id, donor uint64) Event {
		return Event{Op: OpAlloc, ID: id, Size: 8, Kind: KindOutput, Donated: true, Donor: donor, Time: NoTime}
	}
	b := Event{Op: OpLaunch, Label: "f", Time: NoTime}
	e := Event{Op: OpLaunchEnd, Label: "f", Time: NoTime}
	g := Event{Op: OpLaunchEnd, Label: "g", Time: NoTime}
	free := func(id uint64) Event { return Event{Op: OpFree, ID: id, Time: NoTime} }
	cases := []struct {
		name   string
		evs    []Event
		at     int // index of the failing event (len: at the end)
		want   error
		substr string
	}{
		{"fine", []Event{a(1, KindEager), b, a(2, KindParameter), don(3, 1), a(4, KindTemp), a(5, KindConstant), e, free(4), free(1), free(3)}, -1, nil, ""},
		{"nested", []Event{b, b}, 1, ErrLaunch, `launch of "f" inside the launch of "f" begun at event 0`},
		{"end unopened", []Event{e}, 0, ErrLaunch, "no launch is open"},
		{"end other", []Event{b, g}, 1, ErrLaunch, `the launch open (event 0) is of "f"`},
		{"never ends", []Event{b, a(1, KindTemp)}, 2, ErrLaunch, `the launch of "f" begun at event 0 never ends`},
		{"temp outside", []Event{a(1, KindTemp)}, 0, ErrLaunch, "a temp allocation outside any launch"},
		{"eager inside", []Event{b, a(1, KindEager)}, 1, ErrLaunch, `a eager allocation inside the launch of "f"`},
		{"donor dead", []Event{a(1, KindDevicePut), free(1), b, don(2, 1)}, 3, ErrBadDonor, "output 2: bad donor: id 1 is not live"},
		{"donor twice", []Event{a(1, 0), b, don(2, 1), don(3, 1)}, 3, ErrBadDonor, "id 1 was donated already"},
		{"donor freed and reused", []Event{a(1, 0), b, don(2, 1), e, free(1), a(1, 0), b, don(3, 1), e}, -1, nil, ""},
	}
	for _, c := range cases {
		cr := Check(&SliceReader{Events: c.evs, Version: 2})
		var err error
		n := 0
		for ; ; n++ {
			if _, err = cr.Next(); err != nil {
				break
			}
		}
		if c.want == nil {
			if err != io.EOF {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var pe *PosError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Event != c.at || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: err = %v at %d; want %v at event %d containing %q", c.name, err, n, c.want, c.at, c.substr)
		}
	}
}

// TestSummaryV2: the summary counts launches, donations and kinds, and a
// version-1 trace's summary has none of them.
func TestSummaryV2(t *testing.T) {
	s, err := Summarize("v2", &SliceReader{Events: v2Events, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"eager": 1, "device_put": 2, "parameter": 1, "output": 3, "temp": 1, "constant": 1}
	if s.Launches != 2 || s.Donations != 2 || !reflect.DeepEqual(s.Kinds, want) {
		t.Errorf("launches %d, donations %d, kinds %v", s.Launches, s.Donations, s.Kinds)
	}
}
