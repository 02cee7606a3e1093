package traces

import (
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// recordedDir holds the team's recorded CPU traces (testdata/recorded/README.md).
const recordedDir = "../testdata/recorded"

// traceStats are the figures shared/traces/README.md gives per trace.
type traceStats struct {
	allocs, frees, marks int
	peakLive             int64
}

func statsOf(t testing.TB, r Reader) traceStats {
	t.Helper()
	var s traceStats
	sizes := make(map[uint64]int64)
	var live int64
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return s
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Op {
		case OpAlloc:
			s.allocs++
			sizes[ev.ID] = ev.Size
			live += ev.Size
			s.peakLive = max(s.peakLive, live)
		case OpFree:
			s.frees++
			live -= sizes[ev.ID]
			delete(sizes, ev.ID)
		case OpMark:
			s.marks++
		}
	}
}

// TestMemtraceRecordedFigures checks the importer against the figures of
// shared/traces/README.md (allocs, frees, peak live bytes) exactly. The
// mark counts are the rows with op "mark" in each file.
func TestMemtraceRecordedFigures(t *testing.T) {
	want := map[string]traceStats{
		"resnet50-train.csv.gz":       {allocs: 16947, frees: 16947, marks: 12, peakLive: 948391936},
		"gpt-train.csv.gz":            {allocs: 5524, frees: 5524, marks: 12, peakLive: 686272540},
		"gpt-generate.csv.gz":         {allocs: 47005, frees: 47005, marks: 193, peakLive: 139275288},
		"encoder-infer-varlen.csv.gz": {allocs: 4901, frees: 4901, marks: 60, peakLive: 393957864},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(recordedDir, name)
			r, err := Open(path, DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Meta().Get("format"); got != FormatMemtraceCSV {
				t.Errorf("meta format = %q", got)
			}
			// Check on top: ids are consistent and times never decrease.
			got := statsOf(t, &monotonic{t: t, r: Check(r)})
			if got != w {
				t.Errorf("got %+v, want %+v", got, w)
			}
		})
	}
}

// monotonic fails the test if event times decrease or ids are not
// sequential from 1.
type monotonic struct {
	t      testing.TB
	r      Reader
	last   int64
	nextID uint64
}

func (m *monotonic) Next() (Event, error) {
	ev, err := m.r.Next()
	if err != nil {
		return ev, err
	}
	if ev.Time < m.last {
		m.t.Fatalf("time %d after %d", ev.Time, m.last)
	}
	m.last = ev.Time
	if ev.Op == OpAlloc {
		if m.nextID == 0 {
			m.nextID = 1
		}
		if ev.ID != m.nextID {
			m.t.Fatalf("alloc id %d, want %d", ev.ID, m.nextID)
		}
		m.nextID++
	}
	return ev, nil
}
func (m *monotonic) Meta() Meta   { return m.r.Meta() }
func (m *monotonic) Pos() Pos     { return m.r.Pos() }
func (m *monotonic) Close() error { return m.r.Close() }

func TestMemtraceSmall(t *testing.T) {
	in := "t_ns,op,addr,size,name\r\n" +
		"1000,a,0x10,64,\r\n" +
		"1100,a,0x20,8,\n" +
		"\n" +
		"1200,f,0x10,,\n" +
		"1300,mark,,,step:0\n" +
		"1400,a,0x10,32,\n" + // address reused: a fresh id
		"1500,mark,,,with, commas\n" +
		"1600,mark,,,\"quo\"\"ted\"\n" +
		"1700,f,0X10,,\n" +
		"1800,f,0x20,,\n"
	r, err := NewMemtraceReader("m.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Op: OpAlloc, ID: 1, Size: 64, Time: 0},
		{Op: OpAlloc, ID: 2, Size: 8, Time: 100},
		{Op: OpFree, ID: 1, Time: 200},
		{Op: OpMark, Label: "step:0", Time: 300},
		{Op: OpAlloc, ID: 3, Size: 32, Time: 400},
		{Op: OpMark, Label: "with, commas", Time: 500},
		{Op: OpMark, Label: `quo"ted`, Time: 600},
		{Op: OpFree, ID: 3, Time: 700},
		{Op: OpFree, ID: 2, Time: 800},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
	if got := r.Meta().Get("time-origin-ns"); !strings.HasPrefix(got, "1000 ") {
		t.Errorf("time-origin-ns = %q", got)
	}
	if got := r.Meta().Get("format"); got != "memtrace-csv" {
		t.Errorf("format = %q", got)
	}

	// Header only: no events, no error.
	r, err = NewMemtraceReader("m.csv", strings.NewReader(MemtraceHeader+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := ReadAll(r); len(evs) != 0 || err != nil {
		t.Errorf("header only: %v, %v", evs, err)
	}
}

func TestMemtraceErrors(t *testing.T) {
	const h = MemtraceHeader + "\n"
	cases := []struct {
		name, in, want string
		is             error
	}{
		{"empty", "", `m.csv:1: missing memtrace CSV header "t_ns,op,addr,size,name"`, nil},
		{"wrong header", "t,op,addr,size,name\n", `m.csv:1: missing memtrace CSV header "t_ns,op,addr,size,name"`, nil},
		{"free unknown", h + "5,a,0x10,8,\n6,f,0x20,,\n", `m.csv:3 (event 1): free of unknown id: free of address 0x20, which is not live`, ErrUnknownID},
		{"double free", h + "5,a,0x10,8,\n6,f,0x10,,\n7,f,0x10,,\n", `m.csv:4 (event 2): free of unknown id: free of address 0x10, which is not live`, ErrUnknownID},
		{"alloc live", h + "5,a,0x10,8,\n6,a,0x10,8,\n", `m.csv:3 (event 1): alloc of an id that is still live: alloc at address 0x10, still live as id 1 (a free is missing)`, ErrLiveID},
		{"size zero", h + "5,a,0x10,0,\n", `m.csv:2 (event 0): bad size: alloc size "0" (want a decimal integer in 1..1125899906842624)`, ErrBadSize},
		{"size empty", h + "5,a,0x10,,\n", `m.csv:2 (event 0): bad size: alloc size "" (want a decimal integer in 1..1125899906842624)`, ErrBadSize},
		{"size huge", h + "5,a,0x10,1125899906842625,\n", `m.csv:2 (event 0): bad size: alloc size "1125899906842625" (want a decimal integer in 1..1125899906842624)`, ErrBadSize},
		{"few fields", h + "5,a,0x10,8,\n6,f,0x10\n", `m.csv:3 (event 1): row has 3 fields, want 5 (t_ns,op,addr,size,name)`, nil},
		{"bad time", h + "5,a,0x10,8,\nx,f,0x10,,\n", `m.csv:3 (event 1): bad t_ns "x" (want a non-negative decimal integer)`, nil},
		{"bad first time", h + "-5,a,0x10,8,\n", `m.csv:2 (event 0): bad t_ns "-5" (want a non-negative decimal integer)`, nil},
		{"time before origin", h + "5,a,0x10,8,\n4,f,0x10,,\n", `m.csv:3 (event 1): t_ns 4 is before the first row's 5`, nil},
		{"bad op", h + "5,x,0x10,8,\n", `m.csv:2 (event 0): unknown op "x" (want a, f or mark)`, nil},
		{"bad addr", h + "5,a,10,8,\n", `m.csv:2 (event 0): bad address "10" (want 0x and 1 to 16 hex digits)`, nil},
		{"bad hex", h + "5,a,0x1g,8,\n", `m.csv:2 (event 0): bad address "0x1g" (want 0x and 1 to 16 hex digits)`, nil},
		{"long addr", h + "5,a,0x11112222333344445,8,\n", `m.csv:2 (event 0): bad address "0x11112222333344445" (want 0x and 1 to 16 hex digits)`, nil},
		{"alloc name", h + "5,a,0x10,8,x\n", `m.csv:2 (event 0): alloc row with a name "x" (only mark rows have one)`, nil},
		{"free size", h + "5,a,0x10,8,\n6,f,0x10,8,\n", `m.csv:3 (event 1): free row with a size or a name (want t_ns,f,addr,,)`, nil},
		{"mark addr", h + "5,mark,0x10,,x\n", `m.csv:2 (event 0): mark row with an address or a size (want t_ns,mark,,,name)`, nil},
		{"cut short", h + "5,a,0x10,8,\n6,a,0x20,81", `m.csv:3 (event 1): ` + errNoFinalNewline.Error(), errNoFinalNewline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			r, err := NewMemtraceReader("m.csv", strings.NewReader(c.in))
			if err == nil {
				_, err = ReadAll(r)
			}
			if err == nil {
				t.Fatalf("no error, want %s", c.want)
			}
			if err.Error() != c.want {
				t.Errorf("error:\n got %s\nwant %s", err, c.want)
			}
			var pe *PosError
			if !errors.As(err, &pe) {
				t.Errorf("%T is not a *PosError", err)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not wrap %v", c.is)
			}
		})
	}
}
