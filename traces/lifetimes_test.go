package traces

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
	"membench/internal/sharedtraces"
)

// The real lifetime tables are read in place from the shared collection
// (../shared/traces/lifetimes; origins and licences in its README).

// peakLive replays evs through Check and returns the peak of the summed
// sizes of live allocations and the number of allocs.
func peakLive(t *testing.T, r Reader) (peak int64, allocs int) {
	t.Helper()
	c := Check(r)
	sizes := map[uint64]int64{}
	var live int64
	for {
		ev, err := c.Next()
		if err == io.EOF {
			return peak, allocs
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Op {
		case OpAlloc:
			sizes[ev.ID] = ev.Size
			live += ev.Size
			peak = max(peak, live)
			allocs++
		case OpFree:
			live -= sizes[ev.ID]
			delete(sizes, ev.ID)
		}
	}
}

// TestLifetimeFiles checks the real tables against the figures of the
// shared traces README.
func TestLifetimeFiles(t *testing.T) {
	for _, c := range []struct {
		file    string
		format  string
		peak    int64
		buffers int
	}{
		{"pangu-2.6b-somas.csv", FormatLifetimesCSV, 5_530_099_775, 18_692},
		{"alexnet-train.log", FormatAllocatorSim, 1_443_669_632, 193},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := sharedtraces.Path(t, "lifetimes/"+c.file)
			r, err := Open(path, DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			m := r.Meta()
			if m.Get("format") != c.format || m.Get("time-unit") != "logical" {
				t.Errorf("meta %q", m)
			}
			if got := m.Get("buffers"); got != fmt.Sprint(c.buffers) {
				t.Errorf("meta buffers = %s, want %d", got, c.buffers)
			}
			if got := m.Get("peak-live-bytes"); got != fmt.Sprint(c.peak) {
				t.Errorf("meta peak-live-bytes = %s, want %d", got, c.peak)
			}
			peak, allocs := peakLive(t, r)
			if peak != c.peak || allocs != c.buffers {
				t.Errorf("peak %d over %d buffers, want %d over %d", peak, allocs, c.peak, c.buffers)
			}
		})
	}
}

// TestLifetimeOrder: allocs at lower, frees at upper, frees first at an
// instant, ties in file order, ids in stream order of the allocs.
func TestLifetimeOrder(t *testing.T) {
	csv := "id,lower,upper,size\n" +
		"7,5,9,70\n" + // row 1
		"3,0,5,30\n" + // row 2
		"9,0,5,90\n" + // row 3
		"1,5,6,10\n" + // row 4
		"\n" +
		"2,6,9,20\r\n" // row 5
	want := []Event{
		{Op: OpAlloc, ID: 1, Size: 30, Time: 0},
		{Op: OpAlloc, ID: 2, Size: 90, Time: 0},
		{Op: OpFree, ID: 1, Time: 5},
		{Op: OpFree, ID: 2, Time: 5},
		{Op: OpAlloc, ID: 3, Size: 70, Time: 5},
		{Op: OpAlloc, ID: 4, Size: 10, Time: 5},
		{Op: OpFree, ID: 4, Time: 6},
		{Op: OpAlloc, ID: 5, Size: 20, Time: 6},
		{Op: OpFree, ID: 3, Time: 9},
		{Op: OpFree, ID: 5, Time: 9},
	}
	wantLines := []int{3, 4, 3, 4, 2, 5, 5, 7, 2, 7}
	r, err := NewLifetimesCSVReader("t.csv", strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	var lines []int
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		lines = append(lines, r.Pos().Line)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events\n  %+v\nwant\n  %+v", got, want)
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("lines %v, want %v", lines, wantLines)
	}
	if p := r.Meta().Get("peak-live-bytes"); p != "120" {
		t.Errorf("peak %s, want 120", p)
	}

	// The same table as an allocatorSim log, gzipped, through Open's
	// detection, and a MiniMalloc solution with offsets.
	sim := "5 9 70\n0 5 30\n0\t5 90\n5 6 10\n\n6 9 20\r\n"
	sol := "id,lower,upper,size,offset\n7,5,9,70,0\n3,0,5,30,0\n9,0,5,90,30\n1,5,6,10,70\n2,6,9,20,70\n"
	for _, in := range [][]byte{gzipped(t, []byte(sim)), []byte(sol)} {
		r, err := OpenReader("x", bytes.NewReader(in), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadAll(r)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v\n  %+v", in, err, got)
		}
	}
}

func TestLifetimeErrors(t *testing.T) {
	const h = "id,lower,upper,size\n"
	cases := []struct {
		name, in, want string
		is             error
	}{
		{"csv no header", "0,1,2,3\n", "t:1: missing header", nil},
		{"csv empty", "", "t:1: empty input", nil},
		{"csv 3 columns", h + "0,1,2,3\n1,1,2\n", "t:3: row has 3 columns, want 4", nil},
		{"csv 5 columns", h + "0,1,2,3,4\n", "t:2: row has 5 columns, want 4", nil},
		{"solution 4 columns", "id,lower,upper,size,offset\n0,1,2,3\n", "t:2: row has 4 columns, want 5", nil},
		{"csv not integer", h + "0,1,x,3\n", `t:2: upper "x" is not a non-negative decimal integer`, nil},
		{"csv float", h + "0,1,2,3.5\n", `t:2: bad size: size "3.5" is not`, ErrBadSize},
		{"csv empty field", h + "0,,2,3\n", "t:2: missing lower", nil},
		{"csv negative lower", h + "0,-1,2,3\n", "t:2: negative lower -1", nil},
		{"csv negative size", h + "0,1,2,-3\n", "t:2: bad size: negative size -3", ErrBadSize},
		{"csv negative id", h + "-4,1,2,3\n", "t:2: negative id -4", nil},
		{"csv overflow id", h + "18446744073709551616,1,2,3\n", "t:2: id 18446744073709551616 overflows uint64", nil},
		{"csv overflow upper", h + "0,1,9223372036854775808,3\n", "t:2: upper 9223372036854775808 overflows int64", nil},
		{"csv size 0", h + "0,1,2,0\n", "t:2: bad size: size 0 (want 1..1125899906842624)", ErrBadSize},
		{"csv size too big", h + "0,1,2,1125899906842625\n", "t:2: bad size: size 1125899906842625", ErrBadSize},
		{"csv upper = lower", h + "0,1,2,3\n1,4,4,3\n", "t:3: empty lifetime: upper 4 <= lower 4", nil},
		{"csv upper < lower", h + "0,5,4,3\n", "t:2: empty lifetime: upper 4 <= lower 5", nil},
		{"csv duplicate id", h + "0,1,2,3\n\n5,1,2,3\n0,1,2,3\n", "t:5: duplicate id 0 (first on line 2)", nil},
		{"sim 2 fields", "0 1 2\n1 2\n", "t:2: line has 2 fields, want 3", nil},
		{"sim 4 fields", "0 1 2 3\n", "t:1: line has 4 fields, want 3", nil},
		{"sim comma", "0,1,2\n", "t:1: line has 1 fields, want 3", nil},
		{"sim negative", "0 1 2\n-1 2 3\n", "t:2: negative alloc_op -1", nil},
		{"sim overflow", "0 99999999999999999999 2\n", "t:1: free_op 99999999999999999999 overflows int64", nil},
		{"sim size 0", "0 1 0\n", "t:1: bad size: size 0", ErrBadSize},
		{"sim free before alloc", "3 2 1\n", "t:1: empty lifetime: upper 2 <= lower 3", nil},
		{"sim hex", "0 1 0x10\n", `t:1: bad size: size "0x10" is not`, ErrBadSize},
		{"csv cut short", h + "0,1,2,3\n1,1,2,3", "t:3: " + errNoFinalNewline.Error(), errNoFinalNewline},
		{"sim cut short", "0 1 2\n1 2 3", "t:2: " + errNoFinalNewline.Error(), errNoFinalNewline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if strings.HasPrefix(c.name, "sim") {
				_, err = NewAllocatorSimReader("t", strings.NewReader(c.in))
			} else {
				_, err = NewLifetimesCSVReader("t", strings.NewReader(c.in))
			}
			var pe *PosError
			if !errors.As(err, &pe) || pe.File != "t" || pe.Line == 0 {
				t.Fatalf("err = %#v, want a *PosError with file and line", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %q, want it to start %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("err = %v, want it to wrap %v", err, c.is)
			}
		})
	}
}

func TestLifetimeRowLimit(t *testing.T) {
	defer func(n int) { maxLifetimeRows = n }(maxLifetimeRows)
	maxLifetimeRows = 3
	_, err := NewAllocatorSimReader("big", strings.NewReader("0 1 1\n0 1 1\n0 1 1\n0 1 1\n0 1 1\n"))
	if err == nil || err.Error() != "big:4: more than 3 rows: too large for a lifetime table" {
		t.Errorf("err = %v", err)
	}
	if _, err := NewAllocatorSimReader("ok", strings.NewReader("0 1 1\n0 1 1\n0 1 1\n")); err != nil {
		t.Error(err)
	}
	// Line numbers are kept in 32 bits: a row past that is refused rather
	// than given a wrong line.
	defer func(n int64) { maxLifetimeLine = n }(maxLifetimeLine)
	maxLifetimeLine = 4
	_, err = NewLifetimesCSVReader("long", strings.NewReader("id,lower,upper,size\n\n\n0,1,2,1\n\n1,1,2,1\n"))
	if err == nil || err.Error() != "long:6: a row after line 4: too long for a lifetime table" {
		t.Errorf("err = %v", err)
	}
}

// TestLifetimeBombBound: a gzipped allocatorSim log of identical rows
// (ids are implicit) stands for as many buffers as it has lines; 50 M
// rows were accepted before (300 MB of text, a 2.6 MB gzip file, gigabytes
// to read). Now the table stops at maxLifetimeRows, quickly.
func TestLifetimeBombBound(t *testing.T) {
	gz := gzipped(t, bytes.Repeat([]byte("0 1 1\n"), maxLifetimeRows+1))
	fuzzbound.Check(t, func() {
		_, err := OpenReader("bomb.log.gz", bytes.NewReader(gz), DefaultOpenOptions)
		if err == nil || err.Error() != fmt.Sprintf("bomb.log.gz:%d: more than %d rows: too large for a lifetime table", maxLifetimeRows+1, maxLifetimeRows) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLifetimeTruncatedGzip(t *testing.T) {
	gz := gzipped(t, []byte(strings.Repeat("0 1 1\n", 1000)))
	_, err := NewAllocatorSimReader("cut.gz", bytes.NewReader(gz[:len(gz)-12]))
	if err == nil || !strings.Contains(err.Error(), "truncated gzip stream") || !strings.HasPrefix(err.Error(), "cut.gz:") {
		t.Errorf("err = %v", err)
	}
}

// fuzzLifetimes checks what a lifetime reader accepts: every buffer is
// allocated once and freed once, later; frees precede allocs at an
// instant; times never go back; ids are sequential; the peak in the meta
// is the replay's.
func fuzzLifetimes(t *testing.T, r Reader, err error) {
	if err != nil {
		var pe *PosError
		if !errors.As(err, &pe) || pe.Line == 0 && !strings.Contains(err.Error(), "gzip") {
			t.Fatalf("error %T %v is not a *PosError with a line", err, err)
		}
		return
	}
	evs, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstModel(t, evs)
	last := int64(0)
	lastOp := OpFree
	next := uint64(1)
	for _, ev := range evs {
		if ev.Time < last || ev.Time == last && ev.Op == OpFree && lastOp == OpAlloc {
			t.Fatalf("event %+v out of order", ev)
		}
		if ev.Op == OpAlloc {
			if ev.ID != next {
				t.Fatalf("alloc id %d, want %d", ev.ID, next)
			}
			next++
		}
		last, lastOp = ev.Time, ev.Op
	}
	if 2*(next-1) != uint64(len(evs)) {
		t.Fatalf("%d events for %d buffers", len(evs), next-1)
	}
	peak, _ := peakLive(t, &SliceReader{Events: evs})
	if fmt.Sprint(peak) != r.Meta().Get("peak-live-bytes") {
		t.Fatalf("peak %d, meta %q", peak, r.Meta().Get("peak-live-bytes"))
	}
	roundTrip(t, r.Meta(), evs)
}

func FuzzLifetimesCSV(f *testing.F) {
	for _, s := range []string{
		"id,lower,upper,size\n0,0,5,30\n1,0,5,90\n2,5,9,70\n",
		"id,lower,upper,size\r\n7,5,9,70\r\n3,0,5,30\r\n\r\n",
		"id,lower,upper,size,offset\n0,0,1,1,0\n",
		"id,lower,upper,size\n0,0,9223372036854775807,1125899906842624\n",
		"id,lower,upper,size\n0,1,1,1\n",
		"id,lower,upper,size\n0,1,2,1\n0,1,2,1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := NewLifetimesCSVReader("fuzz.csv", bytes.NewReader(data))
			fuzzLifetimes(t, r, err)
		})
	})
}

func FuzzAllocatorSim(f *testing.F) {
	for _, s := range []string{
		"0 381 92928\n1 379 256\n2 377 1228800\n",
		"5 9 70\n0 5 30\n0\t5 90\n\n5 6 10\r\n",
		"0 1 0\n",
		"3 2 1\n",
		"0 9223372036854775807 1125899906842624\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := NewAllocatorSimReader("fuzz.log", bytes.NewReader(data))
			fuzzLifetimes(t, r, err)
		})
	})
}
