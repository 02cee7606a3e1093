package traces

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"membench/internal/fuzzbound"
)

// drain reads r to its end; an error other than io.EOF must be a *PosError.
func drain(t *testing.T, r Reader) ([]Event, error) {
	t.Helper()
	evs, err := ReadAll(r)
	if err != nil {
		var pe *PosError
		if !errors.As(err, &pe) {
			t.Fatalf("error %T %v is not a *PosError", err, err)
		}
	}
	return evs, err
}

// roundTrip checks the invariant of the native format: events and meta that
// a reader produced encode to text that reads back as the same events and
// meta, and that text is a fixed point of read-then-write.
func roundTrip(t *testing.T, meta Meta, evs []Event) {
	t.Helper()
	var buf bytes.Buffer
	v := needVersion(evs)
	w, err := NewWriter(&buf, meta, WriterOptions{Version: v})
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatalf("Write(%+v): %v", ev, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	text := bytes.Clone(buf.Bytes())
	r, err := NewNativeReader("again", bytes.NewReader(text))
	if err != nil {
		t.Fatalf("re-reading %q: %v", text, err)
	}
	evs2, err := ReadAll(r)
	if err != nil {
		t.Fatalf("re-reading %q: %v", text, err)
	}
	if len(evs) != len(evs2) || (len(evs) > 0 && !reflect.DeepEqual(evs, evs2)) {
		t.Fatalf("events differ after a round trip:\n  %+v\n  %+v\ntext %q", evs, evs2, text)
	}
	if len(meta) != len(r.Meta()) || (len(meta) > 0 && !reflect.DeepEqual(meta, r.Meta())) {
		t.Fatalf("meta differs after a round trip: %q vs %q", meta, r.Meta())
	}
	buf.Reset()
	if _, err := WriteNative(&buf, &SliceReader{Events: evs2, M: r.Meta(), Version: v}, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), text) {
		t.Fatalf("canonical text is not a fixed point:\n  %q\n  %q", text, buf.Bytes())
	}
}

func FuzzNativeReader(f *testing.F) {
	for _, s := range []string{
		"membench-trace 1\n",
		"membench-trace 1\nmeta a b c\n# c\n\na 1 2 3 @4\nf 1 @5\nm x\nm \"y z\" @6\n",
		"membench-trace 1\r\nmeta k\r\na 18446744073709551615 1125899906842624 -9223372036854775808 @9223372036854775807\r\n",
		"membench-trace 1\nm \"\\x00\\u00e9\\\"\"\nm @1\nm a\"b\n",
		"membench-trace 1\na 1 0\n",
		"membench-trace 1\na 1 2\nmeta k v\n",
		"membench-trace 3\n",
		"membench-trace 1\nm \"unterminated\n",
		"membench-trace 1\nf 1 @\n",
		"membench-trace 1\na 1 2 output\n",
		"membench-trace 1\nb x\n",
		"membench-trace 2\n",
		"membench-trace 2\na 1 1048576 eager\na 2 4096 device_put @5\nb train_step @100\na 3 4096 parameter\na 4 8 7 output\na 5 1048576 output donor=1\na 6 65536 temp\ne train_step @180\nf 6\nf 3\nf 1\n",
		"membench-trace 2\nb \"two words\"\na 1 8 constant\ne \"two words\" @3\nb x\nb y\n",
		"membench-trace 2\na 1 8 temp donor=1\na 2 8 output donor=9\na 3 8 bogus\ne\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(gzipped(f, []byte("membench-trace 1\na 1 2\nf 1\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := NewNativeReader("fuzz", bytes.NewReader(data))
			if err != nil {
				var pe *PosError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T %v is not a *PosError", err, err)
				}
				return
			}
			evs, err := drain(t, r)
			r.Close()
			// The fast path and the general parser agree, on errors too.
			slow, _ := NewNativeReader("fuzz", bytes.NewReader(data))
			slow.(*nativeReader).noFast = true
			evs2, err2 := ReadAll(slow)
			if !reflect.DeepEqual(evs, evs2) || fmt.Sprint(err) != fmt.Sprint(err2) {
				t.Fatalf("fast and slow paths differ:\n  %+v %v\n  %+v %v", evs, err, evs2, err2)
			}
			checkAgainstModel(t, evs)
			if err != nil {
				return
			}
			roundTrip(t, r.Meta(), evs)
		})
	})
}

func FuzzMemtraceCSV(f *testing.F) {
	for _, s := range []string{
		"t_ns,op,addr,size,name\n",
		"t_ns,op,addr,size,name\n5,a,0x10,8,\n6,a,0x20,16,\n7,f,0x10,,\n8,mark,,,step:0\n9,a,0x10,4,\n10,f,0x10,,\n11,f,0x20,,\n",
		"t_ns,op,addr,size,name\r\n1,mark,,,\"a \"\"b\"\"\"\r\n2,mark,,,x,y\r\n",
		"t_ns,op,addr,size,name\n5,f,0x10,,\n",
		"t_ns,op,addr,size,name\n5,a,0x10,8,\n4,f,0x10,,\n",
		"t_ns,op,addr,size,name\n5,a,0xffffffffffffffff,1125899906842624,\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(gzipped(f, []byte("t_ns,op,addr,size,name\n5,a,0x10,8,\n7,f,0x10,,\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := NewMemtraceReader("fuzz.csv", bytes.NewReader(data))
			if err != nil {
				var pe *PosError
				if !errors.As(err, &pe) {
					t.Fatalf("error %T %v is not a *PosError", err, err)
				}
				return
			}
			evs, err := drain(t, r)
			r.Close()
			// Whatever the importer lets through has consistent ids, sizes
			// and times.
			c := Check(&SliceReader{Events: evs})
			for {
				ev, cerr := c.Next()
				if cerr == io.EOF {
					break
				}
				if cerr != nil {
					t.Fatalf("importer let an inconsistent event through: %v", cerr)
				}
				if ev.Time < 0 {
					t.Fatalf("negative time %d", ev.Time)
				}
			}
			if err != nil {
				return
			}
			roundTrip(t, r.Meta(), evs)
		})
	})
}

// needVersion is the format version evs need.
func needVersion(evs []Event) int {
	for i := range evs {
		if evs[i].version2() {
			return 2
		}
	}
	return 1
}

// checkAgainstModel runs Check over evs and compares where and why it stops
// with a plain model built on maps.
func checkAgainstModel(t *testing.T, evs []Event) {
	t.Helper()
	live, seen, donated := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
	open, name := false, ""
	wantAt, wantErr := len(evs), error(io.EOF)
	for i, ev := range evs {
		var err error
		switch ev.Op {
		case OpLaunch:
			if open {
				err = ErrLaunch
			}
			open, name = true, ev.Label
		case OpLaunchEnd:
			if !open || name != ev.Label {
				err = ErrLaunch
			}
			open = false
		case OpAlloc:
			switch {
			case ev.Kind.InLaunch() != open && ev.Kind != KindNone:
				err = ErrLaunch
			case ev.Donated && (!live[ev.Donor] || donated[ev.Donor]):
				err = ErrBadDonor
			case live[ev.ID]:
				err = ErrLiveID
			}
			if ev.Donated {
				donated[ev.Donor] = true
			}
			live[ev.ID], seen[ev.ID] = true, true
		case OpFree:
			switch {
			case live[ev.ID]:
				delete(live, ev.ID)
				delete(donated, ev.ID)
			case seen[ev.ID]:
				err = ErrDoubleFree
			default:
				err = ErrUnknownID
			}
		}
		if err != nil {
			wantAt, wantErr = i, err
			break
		}
	}
	if wantErr == io.EOF && open {
		wantErr = ErrLaunch
	}
	c := Check(&SliceReader{Events: evs})
	for i := 0; ; i++ {
		_, err := c.Next()
		if err == nil {
			continue
		}
		if i != wantAt || !errors.Is(err, wantErr) {
			t.Fatalf("Check stopped at event %d with %v; the model at %d with %v", i, err, wantAt, wantErr)
		}
		return
	}
}
