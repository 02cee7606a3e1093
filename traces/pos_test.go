package traces

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestPos: every reader reports its name, the line of the last event it
// returned (text formats) and that event's index, through Open and
// through Check. (The PyTorch snapshot reader, linked in from the torch
// house, is checked in torchlike/snapshot.)
func TestPos(t *testing.T) {
	evs := []Event{{Op: OpAlloc, ID: 1, Size: 8, Time: NoTime}, {Op: OpFree, ID: 1, Time: NoTime}}
	cases := []struct {
		name, in string
		lines    []int // per event; nil: a format without lines
	}{
		{"native", "membench-trace 1\nmeta k v\n\na 1 8\n# c\nf 1\n", []int{4, 6}},
		{"binary", string(toBinary(t, nil, evs, WriterOptions{})), nil},
		{"memtrace", MemtraceHeader + "\n5,a,0x10,8,\n\n7,f,0x10,,\n", []int{2, 4}},
		{"lifetimes", "id,lower,upper,size\n\n0,0,5,8\n", []int{3, 3}},
		{"allocatorsim", "0 5 8\n", []int{1, 1}},
		{"stalloc", "1 0x10 8 0\n\n0 0x10\n", []int{1, 3}},
		{"pprof", string(pprofBytes(t, testJAXProfile(t), false)), nil},
	}
	for _, c := range cases {
		for _, check := range []bool{false, true} {
			r, err := OpenReader(c.name, strings.NewReader(c.in), DefaultOpenOptions)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if check {
				r = Check(r)
			}
			if p := r.Pos(); p.Event != -1 || p.Line != 0 {
				t.Errorf("%s (check %v): Pos before the first event = %+v", c.name, check, p)
			}
			for i := 0; ; i++ {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				want := Pos{File: c.name, Event: i}
				if c.lines != nil {
					want.Line = c.lines[i]
				}
				if p := r.Pos(); p != want {
					t.Errorf("%s (check %v): Pos after event %d = %+v, want %+v", c.name, check, i, p, want)
				}
			}
			r.Close()
		}
	}
	s := &SliceReader{Events: evs}
	s.Next()
	if p := s.Pos(); p != (Pos{Event: 0}) {
		t.Errorf("SliceReader: Pos = %+v", p)
	}
}

// TestTextErrorLatches: after a bad line, a text reader keeps returning the
// same error, and its position stays on the last good event.
func TestTextErrorLatches(t *testing.T) {
	cases := []struct {
		name, in, want string
		line           int // of the first event
	}{
		{"native", "membench-trace 1\na 1 8\nx\na 2 8\n", `t:3 (event 1): unknown record type "x"`, 2},
		{"native long line", "membench-trace 1\na 1 8\n" + strings.Repeat("m ", maxLineLen) + "\na 2 8\n", "t:3 (event 1): line longer than", 2},
		{"memtrace", MemtraceHeader + "\n5,a,0x10,8,\n6,x,,,\n7,a,0x20,8,\n", `t:3 (event 1): unknown op "x"`, 2},
		{"memtrace live address", MemtraceHeader + "\n5,a,0x10,8,\n6,a,0x10,8,\n7,a,0x20,8,\n", "t:3 (event 1): alloc of an id that is still live", 2},
		{"stalloc", "1 0x10 8 0\n1 0x20 0 0\n1 0x30 8 0\n", "t:2 (event 1): bad size", 1},
		{"stalloc unknown address", "1 0x10 8 0\n0 0x20\n1 0x30 8 0\n", "t:2 (event 1): free of unknown id", 1},
	}
	for _, c := range cases {
		for _, gz := range []bool{false, true} {
			in := c.in
			if gz {
				in = string(gzipped(t, []byte(in)))
			}
			r, err := OpenReader("t", strings.NewReader(in), DefaultOpenOptions)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if _, err := r.Next(); err != nil {
				t.Fatalf("%s: first event: %v", c.name, err)
			}
			_, err = r.Next()
			var pe *PosError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("%s (gzip %v): error %v, want %s...", c.name, gz, err, c.want)
			}
			for range 2 {
				if _, again := r.Next(); again != err {
					t.Errorf("%s (gzip %v): error not latched: %v, then %v", c.name, gz, err, again)
				}
			}
			if p := r.Pos(); p != (Pos{File: "t", Line: c.line, Event: 0}) {
				t.Errorf("%s (gzip %v): Pos after the error = %+v", c.name, gz, p)
			}
			r.Close()
		}
	}
}

// TestTextReadErrorLatches: a read error (here a gzip stream cut short) is
// latched like a parse error.
func TestTextReadErrorLatches(t *testing.T) {
	for name, in := range map[string]string{
		"native":   "membench-trace 1\n" + strings.Repeat("a 1 8\nf 1\n", 20000),
		"memtrace": MemtraceHeader + "\n" + strings.Repeat("5,a,0x10,8,\n6,f,0x10,,\n", 20000),
		"stalloc":  strings.Repeat("1 0x10 8 0\n0 0x10\n", 20000),
	} {
		gz := gzipped(t, []byte(in))
		r, err := OpenReader(name, strings.NewReader(string(gz[:len(gz)/2])), DefaultOpenOptions)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, errTruncatedGzip) {
			t.Fatalf("%s: error %v, want a truncated gzip stream", name, err)
		}
		if _, again := r.Next(); again != err {
			t.Errorf("%s: error not latched: %v, then %v", name, err, again)
		}
		r.Close()
	}
}
