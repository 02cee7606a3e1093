package pickle

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"membench/internal/fuzzbound"
)

// repeatReader serves head, then body repeated n times, then tail, without
// holding the whole input in memory.
type repeatReader struct {
	head, body, tail string
	n                int
	cur              string
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		switch {
		case r.head != "":
			r.cur, r.head = r.head, ""
		case r.n > 0:
			r.cur, r.n = r.body, r.n-1
		case r.tail != "":
			r.cur, r.tail = r.tail, ""
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// TestHostile feeds the reproducers of issue 11 (and their relatives) to
// Decode: each must end, within 2 s of CPU and 256 MiB, with the right
// value or an error naming the offset and the limit.
func TestHostile(t *testing.T) {
	for _, c := range []struct {
		name string
		in   io.Reader
		want string // error text; "" = decodes
		off  int64  // the error's offset (-1: any)
	}{
		// Defect 1: a tuple key nested 40 deep was hashed in 2^40 steps.
		{"tuple key 40 deep", strings.NewReader("\x80\x02})" + strings.Repeat("\x85", 40) + "Ns."), "", 0},
		{"tuple key 200 deep", strings.NewReader("\x80\x02})" + strings.Repeat("\x85", 200) + "Ns."), "dict key too deeply nested", -1},
		// Defect 1: 5 MB of nesting overflowed the Go stack.
		{"5M nested tuples", &repeatReader{head: "\x80\x02N", body: "\x85", n: 5 << 20, tail: "."}, "nesting depth 1001 exceeds the limit of 1000", 1003},
		{"5M nested lists", &repeatReader{head: "\x80\x02", body: "]", n: 5 << 20, tail: "."}, "exceeds the limit of 262144", -1},
		{"5M marks", &repeatReader{head: "\x80\x02", body: "(", n: 5 << 20, tail: "."}, "exceeds the limit of 262144", -1},
		{"nested via APPEND", &repeatReader{head: "\x80\x02", body: "]", n: 2000, tail: strings.Repeat("a", 1999) + "."}, "nesting depth 1001 exceeds the limit of 1000", -1},
		// A list stored in the memo before it is filled (as Python
		// stores every container) and referenced afterwards: the memo's
		// copy must have its depth, or 900 levels, then 900 more around
		// a reference to it, decode at 1801.
		{"nested through the memo", strings.NewReader("\x80\x04]\x94" + strings.Repeat("]", 900) + strings.Repeat("a", 900) + "0" +
			strings.Repeat("]", 900) + "h\x00" + strings.Repeat("a", 900) + "."), "nesting depth 1001 exceeds the limit of 1000", -1},
		// The same with a tuple built in between: a tuple's depth must
		// not land on the memo copy of the generic container that holds
		// object 0 (it did, from the tuple's Val before its object was
		// assigned), which let the 1801 levels through ...
		{"nested through the memo, a tuple between", strings.NewReader("\x80\x04]\x94" + strings.Repeat("]", 900) + strings.Repeat("a", 900) + "0" +
			"N\x850" + strings.Repeat("]", 900) + "h\x00" + strings.Repeat("a", 900) + "."), "nesting depth 1001 exceeds the limit of 1000", -1},
		// ... and refused a valid pickle: an empty list at object 0 in
		// the memo, a tuple 1000 deep (allowed), then [the list].
		{"a deep tuple beside a memoized list", strings.NewReader("\x80\x04]\x940" + strings.Repeat("]", 999) + strings.Repeat("a", 998) + "\x850" +
			"]h\x00a."), "", -1},
		// A list put in 100,000 others, then deepened 900 times
		// through the memo: each level reaches every holder, so that
		// the links followed, not the time, run out (MaxItems).
		{"fan-out", &repeatReader{head: "\x80\x04]\x94", body: "]h\x00a0", n: 100000, tail: deepenTail(900)}, "links followed to update the nesting depth", -1},
		// A cycle through 502 lists: found at the APPEND that closes it.
		{"long cycle", strings.NewReader("\x80\x04]\x94" + strings.Repeat("]", 500) + "h\x00" + strings.Repeat("a", 501) + "."), "the list contains itself", 1006},
		// Defect 4: no bound on the stack or the memo.
		{"stack of Nones", &repeatReader{head: "\x80\x02", body: "N", n: 1 << 30}, "stack of 262144 values and marks exceeds the limit of 262144", -1},
		{"memo of Nones", &repeatReader{head: "\x80\x02N", body: "\x94", n: 1 << 30}, "memo of 1048577 entries exceeds the limit of 1048576", -1},
		{"sparse memo", &repeatReader{head: "\x80\x02N", body: "r\x00\x00\x00\x7f" + "r\x01\x02\x03\x40", n: 1 << 20}, "", -2},
		{"items", &repeatReader{head: "\x80\x02]", body: "Na", n: 1 << 30}, "2097153 generic containers and items exceed the limit of 2097152", -1},
		{"text", &repeatReader{head: "\x80\x04", body: "\x8d\x00\x00\x10\x00\x00\x00\x00\x00" + strings.Repeat("x", 1<<20) + "0", n: 1 << 10}, "decoded text", -1},
		{"long int text", strings.NewReader("L" + strings.Repeat("9", 100000) + "\n."), "integer literal of 100000 digits exceeds the limit", 0},
		{"long LONG4", strings.NewReader("\x80\x02\x8b\x00\x00\x01\x00" + strings.Repeat("\x01", 1<<16) + "."), "exceeds the limit of 1800 bytes", 2},
	} {
		var err error
		var v any
		// Check runs the decode again when a run exceeded the bounds
		// (a loaded machine): each run reads the input from its start.
		var fresh func() io.Reader
		switch r := c.in.(type) {
		case *repeatReader:
			orig := *r
			fresh = func() io.Reader { cp := orig; return &cp }
		case *strings.Reader:
			fresh = func() io.Reader { r.Seek(0, io.SeekStart); return r }
		default:
			t.Fatalf("%s: an input of type %T cannot be read again", c.name, c.in)
		}
		used, alloc := fuzzbound.Within(2*time.Second, 256<<20).Check(t, func() { v, err = Decode(fresh()) })
		t.Logf("%s: %v CPU, %d MiB: %v", c.name, used.Round(time.Millisecond), alloc>>20, err)
		switch {
		case c.off == -2: // the sparse memo repeats two indices: it just runs out of input
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrLimit) {
				t.Errorf("%s: %v", c.name, err)
			}
		case c.want == "":
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		default:
			var pe *Error
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &pe) {
				t.Errorf("%s: got %v, want an *Error containing %q", c.name, err, c.want)
			} else if c.off >= 0 && pe.Offset != c.off {
				t.Errorf("%s: offset %d, want %d", c.name, pe.Offset, c.off)
			}
		}
		_ = v
	}
	// The 40-deep key decodes to what Python builds.
	v, err := Decode(strings.NewReader("\x80\x02})" + strings.Repeat("\x85", 40) + "Ns."))
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*Dict)
	k := d.Keys()[0]
	for i := 0; i < 40; i++ {
		k = k.(Tuple)[0]
	}
	if len(k.(Tuple)) != 0 || d.Len() != 1 {
		t.Errorf("40-deep key decoded wrong")
	}
	if _, ok := d.Lookup(d.Keys()[0]); !ok {
		t.Errorf("40-deep key cannot be looked up")
	}
}

// deepenTail is n steps that each append a new list to the last one (the
// first is memo slot 0) through the memo and store it in the next slot.
func deepenTail(n int) string {
	var b strings.Builder
	for i := range n {
		b.Write([]byte{'j', byte(i), byte(i >> 8), 0, 0, ']', 0x94, 'a', '0'})
	}
	return b.String() + "N."
}
