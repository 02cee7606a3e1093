package traces

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
)

// metaText is a native trace with n meta lines key<i % keys> and values
// of vlen bytes, then one event.
func metaText(n, keys, vlen int) []byte {
	var b bytes.Buffer
	b.WriteString("membench-trace 1\n")
	v := strings.Repeat("v", vlen)
	for i := range n {
		fmt.Fprintf(&b, "meta k%d %s\n", i%keys, v)
	}
	b.WriteString("a 1 1\n")
	return b.Bytes()
}

// TestMetaBounds: meta lines cost linear time and are bounded in number
// and bytes (issue 11, item 6: 200,000 keys took 48 s).
func TestMetaBounds(t *testing.T) {
	repro := metaText(200_000, 200_000, 1)
	fuzzbound.Check(t, func() {
		_, err := NewNativeReader("meta.txt", bytes.NewReader(repro))
		want := fmt.Sprintf("meta.txt:%d: meta: more than %d meta entries (the limit of a trace's meta)", maxMetaEntries+2, maxMetaEntries)
		if err == nil || err.Error() != want {
			t.Fatalf("200k meta lines: err = %v\nwant %s", err, want)
		}
	})
	// At the bound, with repeated keys: the value is replaced in place.
	fuzzbound.Check(t, func() {
		r, err := NewNativeReader("meta.txt", bytes.NewReader(metaText(maxMetaEntries, 1000, 200)))
		if err != nil {
			t.Fatal(err)
		}
		if m := r.Meta(); len(m) != 1000 || m[0].Key != "k0" || m[999].Key != "k999" {
			t.Fatalf("meta of %d keys, first %v", len(m), m[0])
		}
	})
	// Bytes: a 1 MiB line is fine alone, not after another.
	big := metaText(2, 2, maxLineLen-16)
	_, err := NewNativeReader("big.txt", bytes.NewReader(big))
	if err == nil || err.Error() != fmt.Sprintf("big.txt:3: meta: more than %d bytes of meta keys and values (the limit of a trace's meta)", maxMetaBytes) {
		t.Fatalf("2 MiB of meta: err = %v", err)
	}
	if _, err := NewNativeReader("big.txt", bytes.NewReader(metaText(1, 1, maxLineLen-16))); err != nil {
		t.Fatal(err)
	}

	// Writers refuse what readers would refuse.
	many := make(Meta, maxMetaEntries+1)
	for i := range many {
		many[i] = KV{fmt.Sprint("k", i), "v"}
	}
	heavy := Meta{{"a", strings.Repeat("x", 100<<10)}}
	for range 10 {
		heavy = append(heavy, heavy[0])
	}
	for _, m := range []Meta{many, heavy} {
		if _, err := NewWriter(&bytes.Buffer{}, m, WriterOptions{}); err == nil || !strings.Contains(err.Error(), "(at most") {
			t.Errorf("NewWriter with %d entries: err = %v", len(m), err)
		}
		if _, err := NewBinaryWriter(&bytes.Buffer{}, m, WriterOptions{}); err == nil || !strings.Contains(err.Error(), "(at most") {
			t.Errorf("NewBinaryWriter with %d entries: err = %v", len(m), err)
		}
	}
	if _, err := NewWriter(&bytes.Buffer{}, many[:maxMetaEntries], WriterOptions{}); err != nil {
		t.Errorf("NewWriter at the bound: %v", err)
	}
}

// TestBinaryMetaBounds: the binary meta section has the same bounds,
// found before it is read.
func TestBinaryMetaBounds(t *testing.T) {
	head := func(count int) []byte {
		b := append([]byte(BinaryMagic), BinaryVersion)
		return binary.AppendUvarint(b, uint64(count))
	}
	entry := func(b []byte, k, v string) []byte {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	_, err := NewBinaryReader("m.bin", bytes.NewReader(head(65536)))
	if err == nil || err.Error() != fmt.Sprintf("m.bin: at byte 19: corrupt binary trace: 65536 meta entries (at most %d)", maxMetaEntries) {
		t.Fatalf("65536 entries: err = %v", err)
	}
	b := head(9)
	v := strings.Repeat("v", maxBinaryString)
	for i := range 9 {
		b = entry(b, fmt.Sprint("k", i), v)
	}
	fuzzbound.Check(t, func() {
		_, err := NewBinaryReader("m.bin", bytes.NewReader(b))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("corrupt binary trace: more than %d bytes of meta keys and values", maxMetaBytes)) {
			t.Fatalf("1.1 MiB of meta: err = %v", err)
		}
	})
	// Repeated keys replace in place, as in text.
	b = head(3)
	b = entry(entry(entry(b, "a", "1"), "b", "2"), "a", "3")
	b = append(b, binKindEnd, 0)
	r, err := NewBinaryReader("m.bin", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Meta(); len(m) != 2 || m[0] != (KV{"a", "3"}) || m[1] != (KV{"b", "2"}) {
		t.Fatalf("meta %q", m)
	}
}

// TestLongLabelsNotRetained: a reader keeps repeated labels to share them
// (the text readers' interner, the binary label table), but only short
// ones: a file of many distinct huge labels, which gzip shrinks to almost
// nothing, must not make a reader hold them all (before: up to 4096
// labels of 1 MiB in text, 128 KiB in binary).
func TestLongLabelsNotRetained(t *testing.T) {
	const n, size = 400, 100 << 10
	evs := make([]Event, 0, 2*n+2)
	for i := range n {
		evs = append(evs, Event{Op: OpMark, Label: fmt.Sprintf("%06d%s", i, strings.Repeat("x", size)), Time: NoTime})
	}
	evs = append(evs, Event{Op: OpMark, Label: "short", Time: NoTime}, Event{Op: OpMark, Label: "short", Time: NoTime})
	evs = append(evs, evs[:n]...)
	// One buffer, sized once and reused for each format: grown by
	// doubling, the two files took half a gigabyte of fresh memory,
	// seconds of page faults.
	var buf bytes.Buffer
	buf.Grow(len(evs)*(size+64) + 1<<10)
	for _, f := range []struct {
		name  string
		write func(io.Writer, Reader, WriterOptions) (int, error)
	}{{"text", WriteNative}, {"binary", WriteBinary}} {
		// Uncompressed: gzipped, such a file now stops at the
		// decompression-bomb bound (TestGzipBomb) before labels matter.
		buf.Reset()
		if _, err := f.write(&buf, &SliceReader{Events: evs}, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		r, err := OpenReader(f.name, bytes.NewReader(data), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Label != evs[i].Label {
				t.Fatalf("%s: event %d: label of %d bytes, want %d", f.name, i, len(ev.Label), len(evs[i].Label))
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); held > 8<<20 {
			t.Errorf("%s: %d-byte file of %d distinct %d-byte labels: the reader holds %d bytes", f.name, len(data), n, size, held)
		}
		runtime.KeepAlive(r)
		r.Close()
	}
}
