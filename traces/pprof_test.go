package traces

import (
	"bytes"
	"errors"
	"fmt"
	rpprof "runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"membench/internal/fuzzbound"
)

// No real JAX device memory profile is available to the project: the
// profiles here are built with the pprof package the way JAX's
// save_device_memory_profile lays them out (sample types
// allocations/count and space/bytes; string labels "kind" and "device").

type jaxSample struct {
	count, bytes int64
	kind, device string
}

func jaxProfile(t testing.TB, samples ...jaxSample) *profile.Profile {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "train_step", SystemName: "train_step", Filename: "train.py"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 12}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}},
		Function:   []*profile.Function{fn},
		Location:   []*profile.Location{loc},
	}
	for _, s := range samples {
		labels := map[string][]string{}
		if s.kind != "" {
			labels["kind"] = []string{s.kind}
		}
		if s.device != "" {
			labels["device"] = []string{s.device}
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{loc},
			Value:    []int64{s.count, s.bytes},
			Label:    labels,
		})
	}
	return p
}

// pprofBytes encodes p gzipped (as JAX writes it) or not.
func pprofBytes(t testing.TB, p *profile.Profile, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if gz {
		err = p.Write(&buf)
	} else {
		err = p.WriteUncompressed(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const tpu0 = "TPU_0(process=0,(0,0,0,0))"

func testJAXProfile(t testing.TB) *profile.Profile {
	return jaxProfile(t,
		jaxSample{1, 4096, "buffer", "cuda:1"},
		jaxSample{3, 10, "buffer", "cuda:0"},
		jaxSample{1, 1 << 20, "executable", "cuda:0"},
		jaxSample{2, 0, "buffer", "cuda:0"},
		jaxSample{2, 64, "buffer", tpu0},
		jaxSample{1, 7, "buffer", "cuda:0"},
	)
}

func TestJAXPprof(t *testing.T) {
	allocs := func(sizes ...int64) []Event {
		evs := make([]Event, len(sizes))
		for i, s := range sizes {
			evs[i] = Event{Op: OpAlloc, ID: uint64(i + 1), Size: s, Time: NoTime}
		}
		return evs
	}
	cases := []struct {
		device int
		want   []Event
		name   string
		kinds  string
	}{
		{-1, allocs(32, 32), tpu0, "buffer=2"},
		{0, allocs(32, 32), tpu0, "buffer=2"},
		{1, allocs(4, 3, 3, 1<<20, 7), "cuda:0", "buffer=4 executable=1"},
		{2, allocs(4096), "cuda:1", "buffer=1"},
	}
	p := testJAXProfile(t)
	for _, gz := range []bool{true, false} {
		data := pprofBytes(t, p, gz)
		format, gzipped, err := Detect(bytes.NewReader(data))
		if format != FormatJAXPprof || gzipped != gz || err != nil {
			t.Fatalf("Detect = %q, %v, %v", format, gzipped, err)
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("gzip=%v/device=%d", gz, c.device), func(t *testing.T) {
				r, err := OpenReader("mem.prof", bytes.NewReader(data), OpenOptions{Device: c.device})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				got, err := ReadAll(Check(r))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("events\n  %+v\nwant\n  %+v", got, c.want)
				}
				m := r.Meta()
				var total int64
				for _, ev := range got {
					total += ev.Size
				}
				for k, v := range map[string]string{
					"format":        FormatJAXPprof,
					"live-set-only": "true",
					"device":        c.name,
					"devices":       `"` + strings.ReplaceAll(tpu0, `"`, `\"`) + `", "cuda:0", "cuda:1"`,
					"kinds":         c.kinds,
					"buffers":       fmt.Sprint(len(got)),
					"live-bytes":    fmt.Sprint(total),
					"sample-types":  "allocations/count space/bytes",
				} {
					if m.Get(k) != v {
						t.Errorf("meta %s = %q, want %q", k, m.Get(k), v)
					}
				}
				if !strings.Contains(m.Get("snapshot"), "not a history") {
					t.Errorf("meta snapshot = %q", m.Get("snapshot"))
				}
				roundTrip(t, m, got)
			})
		}
	}
}

// TestJAXPprofOtherProfiles: a Go heap profile is a memory profile too
// (inuse_space over inuse_objects); samples without labels are one device.
func TestJAXPprofOtherProfiles(t *testing.T) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		Sample: []*profile.Sample{
			{Value: []int64{9, 900, 2, 200}},
			{Value: []int64{1, 10, 0, 0}},
		},
		TimeNanos: 1700000000000000000,
	}
	r, err := NewJAXPprofReader("heap.prof", bytes.NewReader(pprofBytes(t, p, true)), DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ReadAll(r)
	if fmt.Sprint(got) != fmt.Sprint([]Event{{Op: OpAlloc, ID: 1, Size: 100, Time: NoTime}, {Op: OpAlloc, ID: 2, Size: 100, Time: NoTime}}) {
		t.Errorf("events %+v", got)
	}
	m := r.Meta()
	if m.Get("device") != "(no device label)" || m.Get("skipped-samples") != "1 (0 bytes)" ||
		!strings.HasPrefix(m.Get("time-nanos"), "1700000000000000000 ") || m.Get("kinds") != "(no kind label)=2" {
		t.Errorf("meta %q", m)
	}

	// One bytes type, no count: every sample is one allocation.
	p = &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "objects", Unit: "count"}, {Type: "footprint", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Value: []int64{4, 64}}},
	}
	r, err = NewJAXPprofReader("one.prof", bytes.NewReader(pprofBytes(t, p, false)), DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadAll(r); len(got) != 1 || got[0].Size != 64 {
		t.Errorf("events %+v", got)
	}
}

func TestJAXPprofErrors(t *testing.T) {
	cpu := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Value: []int64{1, 10000000}}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10000000,
	}
	twoBytes := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "a", Unit: "bytes"}, {Type: "b", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Value: []int64{1, 1}}},
	}
	cases := []struct {
		name   string
		data   []byte
		device int
		want   string
		is     error
	}{
		{"cpu profile", pprofBytes(t, cpu, true), -1,
			"p.prof: pprof profile is not a memory profile: its sample types are samples/count cpu/nanoseconds; want space/bytes", nil},
		{"two bytes types", pprofBytes(t, twoBytes, true), -1,
			"p.prof: pprof profile has more than one bytes sample type (a/bytes b/bytes)", nil},
		{"no samples", pprofBytes(t, jaxProfile(t), true), -1,
			"p.prof: the pprof profile holds no samples", nil},
		{"device range", pprofBytes(t, testJAXProfile(t), true), 3,
			`p.prof: device 3 is not in the pprof profile: it has 3 device(s), "TPU_0(process=0,(0,0,0,0))", "cuda:0", "cuda:1"`, nil},
		{"count > bytes", pprofBytes(t, jaxProfile(t, jaxSample{1, 8, "buffer", "d"}, jaxSample{5, 3, "buffer", "d"}), true), -1,
			"p.prof (event 1): bad size: sample 1: 3 bytes over 5 allocations is less than one byte each", ErrBadSize},
		{"negative", pprofBytes(t, jaxProfile(t, jaxSample{1, -8, "buffer", "d"}), true), -1,
			"p.prof (event 0): sample 0: negative value (-8 bytes, 1 allocations)", nil},
		{"too large", pprofBytes(t, jaxProfile(t, jaxSample{1, MaxSize + 1, "buffer", "d"}), true), -1,
			"p.prof (event 0): bad size: sample 0: allocations of 1125899906842625 bytes", ErrBadSize},
		{"too many", pprofBytes(t, jaxProfile(t, jaxSample{1, 8, "buffer", "d"}, jaxSample{1 << 40, 1 << 41, "buffer", "d"}), true), -1,
			`p.prof (event 1): sample 1 (1099511627776 allocations of 2199023255552 bytes): the profile stands for more than 524288 allocations on device "d", 1 before this sample`, nil},
		{"truncated", func() []byte { b := pprofBytes(t, testJAXProfile(t), true); return b[:len(b)-10] }(), -1,
			"p.prof: truncated gzip stream", nil},
		{"not a protobuf", gzipped(t, []byte("\x0a\x04\x08\x01\x10\x02\x12\x02\x08\x05")), -1,
			"p.prof: unknown trace format: content (after gzip decompression) starts like a protobuf but is not a pprof profile", ErrUnknownFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenReader("p.prof", bytes.NewReader(c.data), OpenOptions{Device: c.device})
			var pe *PosError
			if !errors.As(err, &pe) || pe.File != "p.prof" {
				t.Fatalf("err = %#v, want a *PosError naming the file", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %q\nwant it to start %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("err = %v, want it to wrap %v", err, c.is)
			}
		})
	}
}

// TestLooksLikePprof: the cheap prefix check turns away other content
// that starts with 0x0a and accepts real profiles however they are cut.
func TestLooksLikePprof(t *testing.T) {
	for _, s := range []string{"\n", "\n\n\n\n", "\nhello\n", "\n\x02\x08", "\n\x02\x08\x01\x00", "\n\x00\x41\x01", "\n\x00\x08\x01"} {
		if looksLikePprof([]byte(s)) {
			t.Errorf("looksLikePprof(%q) = true", s)
		}
	}
	// Profiles of many shapes, so that the sniffLen cut falls inside
	// every kind of field: the prefix stands for longer content (detect
	// sees no more) and must be accepted, and so must the whole.
	for k := range 120 {
		p := testJAXProfile(t)
		for i := range k {
			p.Sample = append(p.Sample, &profile.Sample{
				Location: p.Sample[0].Location,
				Value:    []int64{int64(i), int64(i) << (i % 50)},
				Label:    map[string][]string{"kind": {"buffer"}, "device": {strings.Repeat("d", i)}},
			})
		}
		data := pprofBytes(t, p, false)
		if !looksLikePprof(data) || len(data) >= sniffLen && !looksLikePprof(data[:sniffLen]) {
			t.Errorf("a profile of %d bytes (%d samples) is turned away", len(data), len(p.Sample))
		}
	}
	if !looksLikePprof(pprofBytes(t, jaxProfile(t, jaxSample{1, 1, "buffer", "d"}), false)) {
		t.Error("a small profile is turned away")
	}
}

func FuzzPprof(f *testing.F) {
	f.Add(pprofBytes(f, testJAXProfile(f), false))
	f.Add(pprofBytes(f, jaxProfile(f, jaxSample{3, 10, "buffer", "d"}), false))
	f.Add(pprofBytes(f, jaxProfile(f, jaxSample{5, 3, "buffer", "d"}), false))
	f.Add([]byte("\x0a\x04\x08\x01\x10\x02"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			looksLikePprof(data) // must not panic
			r, err := NewJAXPprofReader("fuzz.prof", bytes.NewReader(data), DefaultOpenOptions)
			if err != nil {
				var pe *PosError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T %v is not a *PosError", err, err)
				}
				return
			}
			evs, err := ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for i, ev := range evs {
				if ev.Op != OpAlloc || ev.ID != uint64(i+1) || ev.Size < 1 || ev.Size > MaxSize {
					t.Fatalf("event %d: %+v", i, ev)
				}
				total += ev.Size
			}
			if m := r.Meta(); m.Get("buffers") != fmt.Sprint(len(evs)) || m.Get("live-bytes") != fmt.Sprint(total) {
				t.Fatalf("meta %q for %d events of %d bytes", m, len(evs), total)
			}
			roundTrip(t, r.Meta(), evs)
		})
	})
}

// TestGoRuntimeProfiles: profiles written by Go's runtime/pprof start with
// other fields than JAX's; a heap profile imports as a live set and a CPU
// profile is refused as not a memory profile.
func TestGoRuntimeProfiles(t *testing.T) {
	var heap bytes.Buffer
	if err := rpprof.WriteHeapProfile(&heap); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader("heap.pprof", bytes.NewReader(heap.Bytes()), DefaultOpenOptions)
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	if r.Meta().Get("format") != FormatJAXPprof {
		t.Errorf("meta %v", r.Meta())
	}
	r.Close()
	var cpu bytes.Buffer
	if err := rpprof.StartCPUProfile(&cpu); err != nil {
		t.Skip("CPU profiling unavailable:", err)
	}
	x := 0
	for i := 0; i < 1e7; i++ {
		x += i
	}
	rpprof.StopCPUProfile()
	_, err = OpenReader("cpu.pprof", bytes.NewReader(cpu.Bytes()), DefaultOpenOptions)
	if err == nil || !strings.Contains(err.Error(), "not a memory profile") || !strings.Contains(err.Error(), "cpu.pprof") {
		t.Errorf("CPU profile: %v (x=%d)", err, x)
	}
}

// TestPprofLiveBytesBounded: samples whose bytes add past int64 are an
// error naming the sample, not a negative live set.
func TestPprofLiveBytesBounded(t *testing.T) {
	p := jaxProfile(t, jaxSample{1 << 13, 1 << 62, "buffer", "cuda:0"}, jaxSample{1 << 13, 1 << 62, "buffer", "cuda:0"}, jaxSample{1 << 13, 1 << 62, "buffer", "cuda:0"})
	_, err := OpenReader("big.prof", bytes.NewReader(pprofBytes(t, p, false)), DefaultOpenOptions)
	if err == nil || !strings.Contains(err.Error(), "big.prof") || !strings.Contains(err.Error(), "live set exceeds") {
		t.Errorf("err = %v", err)
	}
}
