package xprof_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"membench/internal/fuzzbound"
	"membench/internal/sharedtraces"
	"membench/traces"
	"membench/xprof"
)

// The public profiles and what their README says each holds.
var realProfiles = []struct {
	file   string
	allocs map[string][2]int // allocator → allocations, deallocations
	limit  map[string]int64
}{
	{"tf-v100x8-bert-multiworker.xplane.pb",
		map[string][2]int{"GPU_4_bfc": {761, 208}, "GPU_6_bfc": {761, 208}, "GPU_1_bfc": {19, 0}, "gpu_host_bfc": {318, 218}},
		map[string]int64{"GPU_4_bfc": 15_477_102_400}},
	{"xprof-tpu-v6e-inference.xplane.pb",
		map[string][2]int{"TPU:0": {117, 117}, "TPU:1": {112, 112}, "TPU:2": {112, 112}, "TPU:3": {112, 112}},
		map[string]int64{"TPU:0": 33_550_237_696, "TPU:3": 33_550_237_696}},
	{"jax-mi300x-conv-minimal-08.xplane.pb",
		map[string][2]int{"GPU_0_bfc": {10, 10}, "GPU_7_bfc": {15, 15}},
		map[string]int64{"GPU_0_bfc": 154_606_239_744}},
	{"jax-mi300x-conv-minimal-legacy.xplane.pb",
		map[string][2]int{"GPU_0_bfc": {20, 20}, "GPU_5_bfc": {30, 30}},
		map[string]int64{"GPU_0_bfc": 153_800_933_376}},
	{"jax-mi355-te-fused-attn.xplane.pb",
		map[string][2]int{"GPU_0_bfc": {30, 29}},
		map[string]int64{"GPU_0_bfc": 299_944_250_900}},
}

func readReal(t *testing.T, file string) *xprof.Profile {
	t.Helper()
	f, err := os.Open(sharedtraces.Path(t, "profiler/"+file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := xprof.Read(f, xprof.DefaultLimits)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p
}

// TestRealProfiles reads every public profile: the allocators and their
// event counts are those its README lists, the limit is the recorded one,
// and bytes in use moves by exactly the chunk of each event (a TPU
// deallocation carries no size: its allocation's chunk is used), which is
// what validation relies on to know the order is the allocator's.
func TestRealProfiles(t *testing.T) {
	for _, tc := range realProfiles {
		t.Run(tc.file, func(t *testing.T) {
			p := readReal(t, tc.file)
			for name, want := range tc.allocs {
				a := p.Find(name)
				if a == nil {
					t.Fatalf("no allocator %s; have %v", name, p.Names())
				}
				var got [2]int
				for _, r := range a.Records {
					if r.Alloc {
						got[0]++
					} else {
						got[1]++
					}
				}
				if got != want {
					t.Errorf("%s: %d allocations, %d deallocations; want %d, %d", name, got[0], got[1], want[0], want[1])
				}
			}
			for name, want := range tc.limit {
				if got := p.Find(name).Limit(); got != want {
					t.Errorf("%s: limit %d, want %d", name, got, want)
				}
			}
			for _, a := range p.Allocators {
				chunk := map[uint64]int64{}
				for i := 1; i < len(a.Records); i++ {
					r, prev := &a.Records[i], &a.Records[i-1]
					if r.Time < prev.Time {
						t.Fatalf("%s: event %d is earlier than event %d", a.Name, i, i-1)
					}
					size := r.Chunk
					if r.Alloc {
						chunk[r.Addr] = r.Chunk
					} else if r.Has&xprof.HasChunk == 0 {
						size = chunk[r.Addr]
					}
					if !r.Alloc {
						size = -size
					}
					if size != 0 && r.InUse-prev.InUse != size {
						t.Fatalf("%s: event %d: bytes in use %d → %d, want a change of %d", a.Name, i, prev.InUse, r.InUse, size)
					}
				}
			}
		})
	}
}

// TestSelect: a profile with several allocators needs a choice, and the
// error that asks for it lists them.
func TestSelect(t *testing.T) {
	p := readReal(t, "tf-v100x8-bert-multiworker.xplane.pb")
	_, err := p.Select("", -1)
	if err == nil || !strings.Contains(err.Error(), "GPU_4_bfc (969 events)") || !strings.Contains(err.Error(), "gpu_host_bfc") {
		t.Errorf("ambiguous choice: %v", err)
	}
	if a, err := p.Select("", 6); err != nil || a.Name != "GPU_6_bfc" {
		t.Errorf("device 6: %v, %v", a, err)
	}
	if a, err := p.Select("gpu_host_bfc", -1); err != nil || a.Name != "gpu_host_bfc" || a.Device != -1 {
		t.Errorf("by name: %v, %v", a, err)
	}
	if _, err := p.Select("GPU_9_bfc", -1); err == nil || !strings.Contains(err.Error(), `no allocator "GPU_9_bfc"`) {
		t.Errorf("missing allocator: %v", err)
	}
	tpu := readReal(t, "xprof-tpu-v6e-inference.xplane.pb")
	if a, err := tpu.Select("", 2); err != nil || a.Name != "TPU:2" || !a.TPU() {
		t.Errorf("TPU chip 2: %v, %v", a, err)
	}
}

// TestOpenReal replays one allocator through traces.Open: the format is
// detected from the content, the warm start comes first and the stream
// passes traces.Check (every free names a live id).
func TestOpenReal(t *testing.T) {
	path := sharedtraces.Path(t, "profiler/tf-v100x8-bert-multiworker.xplane.pb")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	format, _, err := traces.Detect(f)
	f.Close()
	if err != nil || format != traces.FormatXSpace {
		t.Fatalf("Detect: %q, %v", format, err)
	}
	if _, err := traces.Open(path, traces.DefaultOpenOptions); err == nil || !strings.Contains(err.Error(), "say which to read") {
		t.Fatalf("no allocator chosen: %v", err)
	}
	r, err := traces.Open(path, traces.OpenOptions{Device: -1, Allocator: "GPU_4_bfc"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Meta().Get("allocator"); got != "GPU_4_bfc" {
		t.Errorf("meta allocator %q", got)
	}
	// The first event allocates 256 bytes on top of 4,013,337,088.
	if !strings.HasPrefix(r.Meta().Get("warm_start"), "4013337088 bytes in use before the first event") {
		t.Errorf("warm_start %q", r.Meta().Get("warm_start"))
	}
	evs, err := traces.ReadAll(traces.Check(r))
	if err != nil {
		t.Fatal(err)
	}
	allocs, frees := 0, 0
	for _, e := range evs {
		switch e.Op {
		case traces.OpAlloc:
			allocs++
		case traces.OpFree:
			frees++
		}
	}
	// 761 allocations in the window, plus the warm start: the chunks
	// the window frees before allocating them, and one for the rest.
	if allocs <= 761 || frees != 208 {
		t.Errorf("%d allocs, %d frees", allocs, frees)
	}
	var warm int64
	for _, e := range evs[:allocs-761] {
		warm += e.Size
	}
	if warm != 4013337088 {
		t.Errorf("warm start holds %d bytes, want the 4013337088 in use", warm)
	}
}

// space builds XSpace bytes by hand, for cases no real file shows.
type space struct{ b []byte }

func msg(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
func bytesField(n protowire.Number, v []byte) []byte {
	b := protowire.AppendTag(nil, n, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
func varintField(n protowire.Number, v uint64) []byte {
	b := protowire.AppendTag(nil, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
func metaEntry(field protowire.Number, id uint64, name string) []byte {
	return bytesField(field, msg(varintField(1, id), bytesField(2, msg(varintField(1, id), bytesField(2, []byte(name))))))
}

// statU is a uint64 stat; statRef names a string through stat metadata.
func statU(id, v uint64) []byte   { return bytesField(4, msg(varintField(1, id), varintField(3, v))) }
func statRef(id, v uint64) []byte { return bytesField(4, msg(varintField(1, id), varintField(7, v))) }

// testPlane holds allocator events of GPU_0_bfc on two lines, the later
// line first in the file, so that only time order gives the sequence.
func testPlane() []byte {
	const (
		evAlloc, evFree                          = 1, 2
		sName, sReq, sChunk, sAddr, sInUse, sBFC = 10, 11, 12, 13, 14, 15
	)
	ev := func(kind uint64, off, req, chunk, addr, inUse uint64) []byte {
		return bytesField(4, msg(varintField(1, kind), varintField(2, off),
			statRef(sName, sBFC), statU(sReq, req), statU(sChunk, chunk), statU(sAddr, addr), statU(sInUse, inUse)))
	}
	line1 := bytesField(3, msg(varintField(1, 7), varintField(3, 2000),
		ev(evFree, 500_000, 100, 256, 0x1000, 0)))
	line2 := bytesField(3, msg(varintField(1, 8), varintField(3, 1000),
		ev(evAlloc, 10_000, 100, 256, 0x1000, 256), bytesField(4, msg(varintField(1, 99)))))
	return msg(varintField(1, 0), bytesField(2, []byte("/host:CPU")), line1, line2,
		metaEntry(4, evAlloc, "MemoryAllocation"), metaEntry(4, evFree, "MemoryDeallocation"), metaEntry(4, 99, "SomethingElse"),
		metaEntry(5, sName, "allocator_name"), metaEntry(5, sReq, "requested_bytes"), metaEntry(5, sChunk, "allocation_bytes"),
		metaEntry(5, sAddr, "addr"), metaEntry(5, sInUse, "bytes_allocated"), metaEntry(5, sBFC, "GPU_0_bfc"))
}

func testSpace() []byte {
	return msg(bytesField(1, msg(bytesField(2, []byte("/host:metadata")))), bytesField(1, testPlane()), bytesField(3, []byte("an error string")))
}

func TestHandMade(t *testing.T) {
	p, err := xprof.Read(bytes.NewReader(testSpace()), xprof.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Allocators) != 1 || p.Allocators[0].Name != "GPU_0_bfc" || p.Allocators[0].Device != 0 {
		t.Fatalf("allocators %v", p.Names())
	}
	recs := p.Allocators[0].Records
	if len(recs) != 2 || !recs[0].Alloc || recs[1].Alloc || recs[0].Time != 1000*1000+10_000 || recs[1].Time != 2000*1000+500_000 {
		t.Fatalf("records %+v", recs)
	}
	if r := recs[0]; r.Requested != 100 || r.Chunk != 256 || r.Addr != 0x1000 || r.InUse != 256 || r.Has&xprof.HasReserved != 0 || r.Limit() != -1 {
		t.Errorf("record %+v", r)
	}
	if f, _, err := traces.Detect(bytes.NewReader(testSpace())); err != nil || f != traces.FormatXSpace {
		t.Errorf("Detect: %q %v", f, err)
	}
}

// TestDamaged: every truncation of a profile, and absurd lengths, give an
// error with a byte offset, never a panic, within bounded time and memory.
func TestDamaged(t *testing.T) {
	full := testSpace()
	for n := 1; n < len(full); n++ {
		_, err := xprof.Read(bytes.NewReader(full[:n]), xprof.DefaultLimits)
		var oe *xprof.OffsetError
		if err == nil {
			// A cut between planes leaves a shorter valid space.
			continue
		}
		if !errors.As(err, &oe) {
			t.Fatalf("cut at %d: %v is not an OffsetError", n, err)
		}
	}
	huge := msg(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendVarint(nil, math.MaxInt64))
	fuzzbound.Check(t, func() {
		_, err := xprof.Read(bytes.NewReader(huge), xprof.DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), "more than the limit") {
			t.Errorf("huge plane: %v", err)
		}
	})
	big := msg(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendVarint(nil, 100<<20))
	fuzzbound.Check(t, func() {
		_, err := xprof.Read(bytes.NewReader(big), xprof.DefaultLimits)
		if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("plane longer than the file: %v", err)
		}
	})
	lim := xprof.Limits{MaxPlaneBytes: 1 << 20, MaxRecords: 1}
	if _, err := xprof.Read(bytes.NewReader(full), lim); err == nil || !strings.Contains(err.Error(), "more than 1 allocator events") {
		t.Errorf("record limit: %v", err)
	}
}

// FuzzRead feeds both kinds of profile to the reader, each input under
// the time and memory bound of every fuzz target.
func FuzzRead(f *testing.F) {
	f.Add(testSpace())
	f.Add(testPlane())
	f.Add([]byte{0x0a, 0x05, 0x12, 0x03, '/', 'a', 'b'})
	f.Add([]byte(`{"memoryProfilePerAllocator": {"GPU_0_bfc": {"memoryProfileSnapshots": [{"timeOffsetPs": "5", "aggregationStats": {"heapAllocatedBytes": "256"}, "activityMetadata": {"memoryActivity": "ALLOCATION", "requestedBytes": "100", "allocationBytes": "256", "address": "4096"}}]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzbound.Check(t, func() {
			p, err := xprof.ReadAny(bytes.NewReader(b), xprof.Limits{MaxPlaneBytes: 1 << 20, MaxRecords: 1 << 12})
			if err != nil {
				return
			}
			for _, a := range p.Allocators {
				xprof.Events(a)
			}
		})
	})
}

// memoryProfileJSON writes an allocator's records as TensorBoard's
// memory_profile.json (proto3 JSON: camelCase, 64-bit integers as
// strings), as the converter of TensorFlow 2.2–2.3 wrote it: every event.
func memoryProfileJSON(a *xprof.Allocator, extra string) []byte {
	var b strings.Builder
	b.WriteString(`{"memoryProfilePerAllocator": {"` + a.Name + `": {"memoryProfileSnapshots": [`)
	for i, r := range a.Records {
		if i > 0 {
			b.WriteString(",")
		}
		act := "DEALLOCATION"
		if r.Alloc {
			act = "ALLOCATION"
		}
		fmt.Fprintf(&b, `{"timeOffsetPs": "%d", "aggregationStats": {"stackReservedBytes": "%d", "heapAllocatedBytes": "%d", "freeMemoryBytes": "%d", "fragmentation": 0.5, "peakBytesInUse": "%d"}, `+
			`"activityMetadata": {"memoryActivity": "%s", "requestedBytes": "%d", "allocationBytes": "%d", "address": "%d", "tfOpName": %q, "stepId": "%d", "regionType": "", "dataType": "float", "tensorShape": %q}}`,
			r.Time, r.Reserved, r.InUse, r.Available, r.Peak, act, r.Requested, r.Chunk, r.Addr, r.Op, r.Step, r.Shape)
	}
	b.WriteString(`]` + extra + `}}, "numHosts": 1, "memoryIds": ["` + a.Name + `"]}`)
	return []byte(b.String())
}

// TestMemoryProfileJSON: the JSON TensorBoard writes beside a profile
// gives the same records as the profile (built here from the real
// GPU_4_bfc events, as no public memory_profile.json is at hand); one that
// XProf has cut down to the peak's allocations is refused, saying why.
func TestMemoryProfileJSON(t *testing.T) {
	p := readReal(t, "tf-v100x8-bert-multiworker.xplane.pb")
	a := p.Find("GPU_4_bfc")
	js := memoryProfileJSON(a, "")
	if f, _, err := traces.Detect(bytes.NewReader(js)); err != nil || f != traces.FormatMemoryProfileJSON {
		t.Fatalf("Detect: %q %v", f, err)
	}
	q, err := xprof.ReadAny(bytes.NewReader(js), xprof.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	b := q.Find("GPU_4_bfc")
	if b == nil || len(b.Records) != len(a.Records) {
		t.Fatalf("records: %v", q.Names())
	}
	for i := range a.Records {
		x, y := a.Records[i], b.Records[i]
		x.Seq, y.Seq = 0, 0
		x.Has &^= xprof.HasAvailable | xprof.HasReserved | xprof.HasPeak
		y.Has &^= xprof.HasAvailable | xprof.HasReserved | xprof.HasPeak
		x.Region, y.Region = "", ""
		if x != y {
			t.Fatalf("record %d: %+v from the JSON, %+v from the profile", i, y, x)
		}
	}
	_, err = xprof.ReadAny(bytes.NewReader(memoryProfileJSON(a, `, "sampledTimelineSnapshots": [{}]`)), xprof.DefaultLimits)
	if !errors.Is(err, xprof.ErrSampled) {
		t.Errorf("sampled memory profile: %v", err)
	}
	for _, bad := range []string{`{"memoryProfilePerAllocator": {"x": {"memoryProfileSnapshots": [{"activityMetadata": {"memoryActivity": "RESERVATION"}}]}}}`,
		`{"memoryProfilePerAllocator": {"x": {"memoryProfileSnapshots": [{"activityMetadata": {"memoryActivity": "ALLOCATION", "requestedBytes": "99999999999999999999999"}}]}}}`,
		`{"memoryProfilePerAllocator": {"x": `} {
		if _, err := xprof.ReadAny(strings.NewReader(bad), xprof.DefaultLimits); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestTies: events of one allocator recorded in the same nanosecond are
// put in the order its bytes in use say, whatever the file order.
func TestTies(t *testing.T) {
	const (
		evAlloc                             = 1
		sName, sChunk, sAddr, sInUse, sGPU0 = 10, 12, 13, 14, 15
	)
	ev := func(off, chunk, addr, inUse uint64) []byte {
		return bytesField(4, msg(varintField(1, evAlloc), varintField(2, off),
			statRef(sName, sGPU0), statU(sChunk, chunk), statU(sAddr, addr), statU(sInUse, inUse)))
	}
	// Three allocations in one nanosecond, written in the wrong order
	// (the one that makes 768 bytes in use first).
	line := bytesField(3, msg(varintField(3, 1000), ev(0, 256, 0x1000, 256),
		ev(5000, 512, 0x3000, 1280), ev(5000, 256, 0x2000, 768), ev(5000, 256, 0x1100, 512)))
	plane := msg(bytesField(2, []byte("/host:CPU")), line, metaEntry(4, evAlloc, "MemoryAllocation"),
		metaEntry(5, sName, "allocator_name"), metaEntry(5, sChunk, "allocation_bytes"), metaEntry(5, sAddr, "addr"),
		metaEntry(5, sInUse, "bytes_allocated"), metaEntry(5, sGPU0, "GPU_0_bfc"))
	p, err := xprof.Read(bytes.NewReader(bytesField(1, plane)), xprof.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range p.Allocators[0].Records {
		got = append(got, r.InUse)
	}
	if fmt.Sprint(got) != "[256 512 768 1280]" {
		t.Errorf("bytes in use in order %v", got)
	}
}

// TestStepMarks: the step id TensorFlow records on each allocation
// becomes a phase mark where it changes (ids of 0, JAX's, give none).
func TestStepMarks(t *testing.T) {
	a := &xprof.Allocator{Name: "GPU_0_bfc", Records: []xprof.Record{
		{Alloc: true, Requested: 100, Chunk: 256, Addr: 0x1000, InUse: 256, Step: 7, Has: xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse},
		{Alloc: true, Requested: 100, Chunk: 256, Addr: 0x2000, InUse: 512, Step: 0, Has: xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse},
		{Alloc: true, Requested: 100, Chunk: 256, Addr: 0x3000, InUse: 768, Step: 7, Has: xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse},
		{Alloc: true, Requested: 100, Chunk: 256, Addr: 0x4000, InUse: 1024, Step: -8, Has: xprof.HasRequested | xprof.HasChunk | xprof.HasAddr | xprof.HasInUse},
	}}
	evs, _, err := xprof.Events(a)
	if err != nil {
		t.Fatal(err)
	}
	var marks []string
	for _, e := range evs {
		if e.Op == traces.OpMark {
			marks = append(marks, e.Label)
		}
	}
	if fmt.Sprint(marks) != "[step:7 step:-8]" {
		t.Errorf("marks %v", marks)
	}
}
