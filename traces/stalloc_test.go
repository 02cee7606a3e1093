package traces

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
)

// No real STAlloc/Megatron log is available to the project: these inputs
// are written by hand from the format's description (doc.go).

func TestSTAlloc(t *testing.T) {
	log := "1 0x7f0000000000 4096 0\n" + // hex with 0x
		"1 7f0000001000 512 0x55d0c0ffee00\n" + // hex without 0x (letters), hex stream
		"1 140000 8 7\n" + // decimal
		"\n" +
		"0 0x7f0000000000\n" + // free, short form
		"1 0X7F0000000000 100 0\n" + // the address again, upper case: a new id
		"0 7f0000001000 512 0x55d0c0ffee00\n" + // free, long form
		"0\t140000\r\n" +
		"0 0x7f0000000000 100 0\n"
	want := []Event{
		{Op: OpAlloc, ID: 1, Size: 4096, Time: NoTime},
		{Op: OpAlloc, ID: 2, Size: 512, Stream: 0x55d0c0ffee00, Time: NoTime},
		{Op: OpAlloc, ID: 3, Size: 8, Stream: 7, Time: NoTime},
		{Op: OpFree, ID: 1, Time: NoTime},
		{Op: OpAlloc, ID: 4, Size: 100, Time: NoTime},
		{Op: OpFree, ID: 2, Time: NoTime},
		{Op: OpFree, ID: 3, Time: NoTime},
		{Op: OpFree, ID: 4, Time: NoTime},
	}
	for _, in := range [][]byte{[]byte(log), gzipped(t, []byte(log))} {
		format, _, err := Detect(bytes.NewReader(in))
		if format != FormatSTAlloc || err != nil {
			t.Fatalf("Detect = %q, %v", format, err)
		}
		r, err := OpenReader("s.log", bytes.NewReader(in), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadAll(Check(r))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("events\n  %+v\nwant\n  %+v", got, want)
		}
		if r.Meta().Get("format") != FormatSTAlloc {
			t.Errorf("meta %q", r.Meta())
		}
		if l := r.Pos().Line; l != 9 {
			t.Errorf("Line() = %d after the last event, want 9", l)
		}
		r.Close()
	}
}

func TestSTAllocParseAddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0x10", 16, true},
		{"10", 10, true},
		{"1a", 26, true},
		{"DEADBEEF", 0xdeadbeef, true},
		{"0xffffffffffffffff", 1<<64 - 1, true},
		{"ffffffffffffffff", 1<<64 - 1, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"0x1ffffffffffffffff", 0, false},
		{"0x", 0, false},
		{"0xg", 0, false},
		{"1g", 0, false},
		{"-1", 0, false},
	} {
		got, ok := parseAddr([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseAddr(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSTAllocErrors(t *testing.T) {
	const m = "1 0x10 8 0\n"
	cases := []struct {
		name, in, want string
		is             error
	}{
		{"free unknown", m + "0 0x20\n", "s:2 (event 1): free of unknown id: free of address 0x20, which is not live", ErrUnknownID},
		{"double free", m + "0 0x10\n0 16\n", "s:3 (event 2): free of unknown id: free of address 0x10", ErrUnknownID},
		{"live", m + "1 16 4 0\n", "s:2 (event 1): alloc of an id that is still live: malloc at address 0x10, still live as id 1", ErrLiveID},
		{"malloc 2 fields", "1 0x10\n", "s:1 (event 0): malloc line has 2 fields, want 4", nil},
		{"malloc 3 fields", "1 0x10 8\n", "s:1 (event 0): malloc line has 3 fields, want 4", nil},
		{"free 3 fields", m + "0 0x10 8\n", "s:2 (event 1): free line has 3 fields, want 2 or 4", nil},
		{"5 fields", "1 0x10 8 0 9\n", "s:1 (event 0): malloc line has 5 fields", nil},
		{"op", "2 0x10 8 0\n", `s:1 (event 0): unknown op "2"`, nil},
		{"ptr", "1 0xzz 8 0\n", `s:1 (event 0): bad ptr "0xzz"`, nil},
		{"ptr overflow", "1 0x10000000000000000 8 0\n", `s:1 (event 0): bad ptr`, nil},
		{"size 0", "1 0x10 0 0\n", `s:1 (event 0): bad size: size "0"`, ErrBadSize},
		{"size negative", "1 0x10 -8 0\n", `s:1 (event 0): bad size: size "-8"`, ErrBadSize},
		{"size overflow", "1 0x10 99999999999999999999 0\n", `s:1 (event 0): bad size`, ErrBadSize},
		{"size hex", "1 0x10 0x8 0\n", `s:1 (event 0): bad size: size "0x8"`, ErrBadSize},
		{"stream", "1 0x10 8 s\n", `s:1 (event 0): bad stream "s"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewSTAllocReader("s", strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadAll(r)
			var pe *PosError
			if !errors.As(err, &pe) || pe.Line == 0 || pe.Event < 0 {
				t.Fatalf("err = %#v, want a *PosError with line and event", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %q, want it to start %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("err = %v, want it to wrap %v", err, c.is)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("error not sticky: %v then %v", err, err2)
			}
		})
	}
}

func FuzzSTAlloc(f *testing.F) {
	for _, s := range []string{
		"1 0x7f0000000000 4096 0\n1 7f0000001000 512 0x55d0c0ffee00\n0 0x7f0000000000\n0 7f0000001000 512 0\n",
		"1 140000 8 7\n0\t140000\r\n",
		"1 16 8 -1\n0 0x10\n",
		"0 0x10\n",
		"1 0x10 8 0\n1 0x10 8 0\n",
		"1 ffffffffffffffff 1125899906842624 ffffffffffffffff\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := NewSTAllocReader("fuzz.log", bytes.NewReader(data))
			if err != nil { // a bad gzip header: nothing else is read before Next
				var pe *PosError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T %v is not a *PosError", err, err)
				}
				return
			}
			evs, err := ReadAll(r)
			if err != nil {
				var pe *PosError
				if !errors.As(err, &pe) || pe.Line == 0 {
					t.Fatalf("error %T %v is not a *PosError with a line", err, err)
				}
			}
			// Whatever the importer lets through has consistent ids.
			c := Check(&SliceReader{Events: evs})
			for {
				_, cerr := c.Next()
				if cerr == io.EOF {
					break
				}
				if cerr != nil {
					t.Fatalf("importer let an inconsistent event through: %v", cerr)
				}
			}
			if err == nil {
				roundTrip(t, r.Meta(), evs)
			}
		})
	})
}
