package traces

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
	"membench/internal/sharedtraces"
)

// toBinary encodes events and meta in the binary format.
func toBinary(t testing.TB, meta Meta, evs []Event, opts WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if opts.Version == 0 {
		opts.Version = needVersion(evs)
	}
	w, err := NewBinaryWriter(&buf, meta, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	return buf.Bytes()
}

func readBinary(t testing.TB, data []byte) ([]Event, Meta, error) {
	t.Helper()
	r, err := NewBinaryReader("b", bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	evs, err := ReadAll(r)
	return evs, r.Meta(), err
}

// textToBinaryToText converts canonical text to binary and back, through
// Open's detection, and checks the text comes back byte for byte.
func textToBinaryToText(t *testing.T, text []byte) {
	t.Helper()
	for _, gz := range []bool{false, true} {
		r, err := NewNativeReader("text", bytes.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		var bin bytes.Buffer
		if _, err := WriteBinary(&bin, r, WriterOptions{Gzip: gz}); err != nil {
			t.Fatal(err)
		}
		format, gzipped, err := Detect(bytes.NewReader(bin.Bytes()))
		if format != FormatBinary || gzipped != gz || err != nil {
			t.Fatalf("Detect = %q, %v, %v", format, gzipped, err)
		}
		br, err := OpenReader("bin", bytes.NewReader(bin.Bytes()), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		if _, err := WriteNative(&back, br, WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		br.Close()
		if !bytes.Equal(back.Bytes(), text) {
			a, b := back.Bytes(), text
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			lo := max(0, i-80)
			t.Fatalf("text -> binary -> text differs (gzip %v) at byte %d:\n  %q\nwant\n  %q", gz, i, a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
		}
		if !gz && len(text) > 1<<20 {
			t.Logf("%d bytes of text, %d of binary", len(text), bin.Len())
		}
	}
}

// TestBinaryRealTraces: every real trace of testdata, as canonical text,
// survives text -> binary -> text byte for byte.
func TestBinaryRealTraces(t *testing.T) {
	// PyTorch snapshots are decoded in the torch house; their round trip
	// is TestBinaryRoundTripReal in torchlike/snapshot.
	var files []string
	dirs := []string{recordedDir}
	if d := sharedtraces.Dir(); d != "" {
		dirs = append(dirs, filepath.Join(d, "lifetimes"))
	}
	for _, dir := range dirs {
		for _, pat := range []string{"*.gz", "*.csv", "*.log"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			files = append(files, m...)
		}
	}
	if len(files) < len(dirs)*2 {
		t.Fatalf("only %d test traces found: %v", len(files), files)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := Open(path, DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if _, err := WriteNative(&text, r, WriterOptions{}); err != nil {
				t.Fatal(err)
			}
			r.Close()
			textToBinaryToText(t, text.Bytes())
		})
	}
}

func TestBinaryEdgeCases(t *testing.T) {
	text := "membench-trace 1\n" +
		"meta source hand-written\n" +
		"meta empty\n" +
		"meta spaced a  value with  spaces\n" +
		"a 18446744073709551615 1125899906842624 -9223372036854775808 @9223372036854775807\n" +
		"a 0 1 9223372036854775807 @0\n" +
		"a 1 2\n" +
		"a 1 3 9223372036854775807\n" +
		"f 0\n" +
		"f 18446744073709551615 @9223372036854775807\n" +
		"f 5 @3\n" +
		"m forward @1\n" +
		"m forward\n" +
		"m \"step 1 done\" @2\n" +
		"m \"\"\n" +
		"m \"\\x00\\xffé\"\n" +
		"m forward @1\n"
	textToBinaryToText(t, []byte(text))

	// More distinct labels than the table keeps, each seen twice; a
	// label longer than the read buffer.
	var b strings.Builder
	b.WriteString("membench-trace 1\n")
	for i := range 2*maxBinaryLabels + 10 {
		fmt.Fprintf(&b, "m l%d @%d\n", i%(maxBinaryLabels+5), i)
	}
	fmt.Fprintf(&b, "m %s @5\nm %s\na 1 1\n", strings.Repeat("x", maxBinaryString), strings.Repeat("y", bufSize+1))
	textToBinaryToText(t, []byte(b.String()))

	// Empty traces.
	textToBinaryToText(t, []byte("membench-trace 1\n"))
	textToBinaryToText(t, []byte("membench-trace 1\nmeta k v\n"))
}

// TestBinaryLayout pins the encoding documented in doc.go.
func TestBinaryLayout(t *testing.T) {
	evs := []Event{
		{Op: OpAlloc, ID: 1, Size: 4096, Time: 1500},                  // next id, time +1500
		{Op: OpAlloc, ID: 5, Size: 1, Stream: 7, Time: NoTime},        // id +4, stream 0 -> 7
		{Op: OpFree, ID: 1, Time: 1400},                               // free id +1, time -100
		{Op: OpMark, Label: "fw", Time: NoTime},                       // new label
		{Op: OpMark, Label: "fw", Time: NoTime},                       // label 0
		{Op: OpAlloc, ID: 6, Size: 300, Stream: 7, Time: NoTime},      // next id, same stream
		{Op: OpFree, ID: 0, Time: NoTime},                             // free id -1
		{Op: OpAlloc, ID: 2, Size: 2, Stream: 0, Time: NoTime},        // id -4, stream 7 -> 0
		{Op: OpAlloc, ID: 3, Size: 2, Stream: 0, Time: 1<<63 - 1},     // big time
		{Op: OpFree, ID: 1<<64 - 1, Time: NoTime},                     // id 0 -> 2^64-1: delta -1
		{Op: OpAlloc, ID: 0, Size: 1 << 50, Stream: -1, Time: NoTime}, // id 3 -> 0
	}
	got := toBinary(t, Meta{{"k", "v"}, {"e", ""}}, evs, WriterOptions{})
	want := []byte(BinaryMagic + "\x01" + "\x02" + "\x01k\x01v" + "\x01e\x00")
	want = append(want,
		0x14, 0x80, 0x20, 0xb8, 0x17, // alloc N T, size 4096, time zigzag(1500)=3000
		0x08, 0x08, 0x01, 0x0e, // alloc S, id zigzag(4)=8, size 1, stream zigzag(7)=14
		0x05, 0x02, 0xc7, 0x01, // free T, id zigzag(1)=2, time zigzag(-100)=199
		0x02, 0x04, 'f', 'w', // mark, new label of 2 bytes
		0x02, 0x01, // mark, label 0
		0x10, 0xac, 0x02, // alloc N, size 300
		0x01, 0x01, // free, id zigzag(-1)=1
		0x08, 0x07, 0x02, 0x0d, // alloc S, id zigzag(-4)=7, size 2, stream zigzag(-7)=13
	)
	want = append(want, 0x14, 0x02)
	want = binary.AppendUvarint(want, zigzag(1<<63-1-1400))
	want = append(want, 0x01, 0x01) // free, id delta -1 from 0
	want = append(want, 0x08, 0x05) // alloc S, id delta -3
	want = binary.AppendUvarint(want, 1<<50)
	want = append(want, 0x01)                 // stream 0 -> -1: zigzag(-1) = 1
	want = append(want, 0x03, byte(len(evs))) // end, count
	if !bytes.Equal(got, want) {
		t.Errorf("encoding\n  %x\nwant\n  %x", got, want)
	}
	back, meta, err := readBinary(t, got)
	if err != nil || !reflect.DeepEqual(back, evs) || !reflect.DeepEqual(meta, Meta{{"k", "v"}, {"e", ""}}) {
		t.Errorf("decoded %v\n  %+v\n  %q", err, back, meta)
	}
}

// TestBinaryTruncated cuts a binary trace at every length: each prefix
// but the whole fails with a *PosError naming the file, the byte offset
// and the event, never a panic or a silent EOF.
func TestBinaryTruncated(t *testing.T) {
	text := "membench-trace 1\nmeta k v\na 1 4096 @1500\na 7 8 3 @1600\nm forward @1700\nf 1\nm forward\nf 7 @2000\n"
	r, _ := NewNativeReader("t", strings.NewReader(text))
	evs, _ := ReadAll(r)
	full := toBinary(t, r.Meta(), evs, WriterOptions{})
	headerLen := len(toBinary(t, r.Meta(), nil, WriterOptions{})) - 2 // less the end record
	for n := 0; n < len(full); n++ {
		r, err := NewBinaryReader("cut.bin", bytes.NewReader(full[:n]))
		got := 0
		if err == nil {
			for {
				_, err = r.Next()
				if err != nil {
					break
				}
				got++
			}
		}
		var pe *PosError
		if !errors.As(err, &pe) || pe.File != "cut.bin" || !strings.Contains(err.Error(), "at byte ") {
			t.Fatalf("cut at %d: err = %v, want a *PosError with the byte offset", n, err)
		}
		if n < len(BinaryMagic) {
			continue // not a binary trace yet: "missing header"
		}
		if !strings.Contains(err.Error(), "truncated binary trace") {
			t.Errorf("cut at %d: err = %v", n, err)
		}
		if (pe.Event >= 0) != (n >= headerLen) || pe.Event >= 0 && pe.Event != got {
			t.Errorf("cut at %d: event %d after %d events: %v", n, pe.Event, got, err)
		}
	}
	if got, _, err := readBinary(t, full); err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("whole: %v", err)
	}

	gz := toBinary(t, r.Meta(), evs, WriterOptions{Gzip: true})
	r2, err := NewBinaryReader("cut.bin.gz", bytes.NewReader(gz[:len(gz)-6]))
	if err == nil {
		_, err = ReadAll(r2)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "cut.bin.gz") || !strings.Contains(err.Error(), "truncated gzip stream") {
		t.Errorf("truncated gzip: %v", err)
	}
}

func TestBinaryCorrupt(t *testing.T) {
	head := BinaryMagic + "\x01\x00" // no meta
	cases := []struct {
		name, in, want string
		is             error
	}{
		{"not binary", "membench-trace 1\n", `c.bin: at byte 0: missing header: a binary trace starts with "membench-trace-bin"`, nil},
		{"version", BinaryMagic + "\x03\x00\x03\x00", "c.bin: at byte 18: unsupported binary format version 3 (this reader reads versions 1 and 2)", nil},
		{"meta count", BinaryMagic + "\x01\xff\xff\xff\xff\x0f", "c.bin: at byte 19: corrupt binary trace: 4294967295 meta entries", nil},
		{"meta key", BinaryMagic + "\x01\x01\x03a b\x00\x03\x00", `c.bin: at byte 20: corrupt binary trace: meta key "a b"`, nil},
		{"meta value", BinaryMagic + "\x01\x01\x01k\x02v\n\x03\x00", `c.bin: at byte 22: corrupt binary trace: meta value "v\n"`, nil},
		{"meta length", BinaryMagic + "\x01\x01\xff\xff\x7f", "c.bin: at byte 20: corrupt binary trace: a meta key of 2097151 bytes", nil},
		{"varint overflow", BinaryMagic + "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "c.bin: at byte 19: corrupt binary trace: the meta count overflows 64 bits", nil},
		{"tag flags", head + "\x10\x01\x20\x03\x01", "c.bin (event 1): at byte 22: corrupt binary trace: record tag 0x20 has unknown flags", nil},
		{"free flags", head + "\x09\x01\x03\x01", "c.bin (event 0): at byte 20: corrupt binary trace: record tag 0x09 has unknown flags", nil},
		{"end flags", head + "\x07\x00", "c.bin (event 0): at byte 20: corrupt binary trace: record tag 0x07 has unknown flags", nil},
		{"size 0", head + "\x10\x00\x03\x01", "c.bin (event 0): at byte 21: bad size: alloc size 0", ErrBadSize},
		{"size big", head + "\x10\x81\x80\x80\x80\x80\x80\x80\x02\x03\x01", "c.bin (event 0): at byte 21: bad size: alloc size 1125899906842625", ErrBadSize},
		{"id overflow", head + "\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "c.bin (event 0): at byte 21: corrupt binary trace: an alloc id overflows 64 bits", nil},
		{"label ref", head + "\x02\x04ab\x02\x03\x03\x02", "c.bin (event 1): at byte 25: corrupt binary trace: mark label reference 1, but 1 labels were defined", nil},
		{"label length", head + "\x02\xfe\xff\xff\x01", "c.bin (event 0): at byte 21: corrupt binary trace: mark label of 2097151 bytes", nil},
		{"negative time", head + "\x14\x01\x01\x03\x01", "c.bin (event 0): at byte 22: corrupt binary trace: negative or overflowing time", nil},
		{"time overflow", head + "\x14\x01\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01\x14\x01\x02\x03\x02", "c.bin (event 1): at byte 34: corrupt binary trace: negative or overflowing time", nil},
		{"count", head + "\x10\x01\x03\x02", "c.bin (event 1): at byte 22: corrupt binary trace: the end record counts 2 events, but 1 were read", nil},
		{"trailing", head + "\x10\x01\x03\x01\x00", "c.bin (event 1): at byte 24: corrupt binary trace: data after the end record", nil},
		{"no end", head + "\x10\x01", "c.bin (event 1): at byte 22: truncated binary trace: the content ends inside the event records (no end record)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewBinaryReader("c.bin", strings.NewReader(c.in))
			if err == nil {
				_, err = ReadAll(r)
				if _, err2 := r.Next(); err2 != err {
					t.Errorf("error not sticky: %v then %v", err, err2)
				}
			}
			var pe *PosError
			if !errors.As(err, &pe) || pe.File != "c.bin" {
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

func TestBinaryWriterErrors(t *testing.T) {
	if _, err := NewBinaryWriter(io.Discard, Meta{{"a b", "v"}}, WriterOptions{}); err == nil {
		t.Error("bad meta key accepted")
	}
	if _, err := NewBinaryWriter(io.Discard, Meta{{"k", strings.Repeat("v", maxBinaryString+1)}}, WriterOptions{}); err == nil {
		t.Error("long meta value accepted")
	}
	w, err := NewBinaryWriter(io.Discard, nil, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{
		{Op: OpAlloc, ID: 1, Size: 0},
		{Op: OpAlloc, ID: 1, Size: MaxSize + 1},
		{Op: OpFree, ID: 1, Time: -5},
		{Op: 9},
		{Op: OpMark, Label: strings.Repeat("x", maxBinaryString+1)},
	} {
		if err := w.Write(ev); err == nil || !strings.Contains(err.Error(), "writing event 0") {
			t.Errorf("Write(%+v) = %v", ev, err)
		}
	}
	w.Close()
	if err := w.Write(Event{Op: OpFree, ID: 1}); err == nil {
		t.Error("Write after Close accepted")
	}
}

// TestBinaryMetaLikeText: meta values are normalised as the text writer
// does, so that both formats give the same Meta back.
func TestBinaryMetaLikeText(t *testing.T) {
	meta := Meta{{"a", " two\nlines \r"}, {"b", "x"}, {"a", "again"}}
	_, fromBin, err := readBinary(t, toBinary(t, meta, nil, WriterOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	WriteNative(&text, &SliceReader{M: meta}, WriterOptions{})
	r, err := NewNativeReader("t", &text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromBin, r.Meta()) {
		t.Errorf("binary meta %q, text meta %q", fromBin, r.Meta())
	}
}

func FuzzBinary(f *testing.F) {
	for _, text := range []string{
		"membench-trace 1\n",
		"membench-trace 1\nmeta k v\na 1 4096 @1500\na 7 8 3 @1600\nm forward @1700\nf 1\nm forward\nf 7 @2000\n",
		"membench-trace 1\na 18446744073709551615 1125899906842624 -9223372036854775808 @9223372036854775807\nf 0\nm \"\\x00\"\n",
		"membench-trace 2\na 1 1048576 eager\na 2 4096 device_put @5\nb train_step @100\na 3 4096 parameter\na 4 8 7 output\na 5 1048576 output donor=1\na 6 65536 temp\ne train_step @180\nf 6\nf 3\nf 1\nb train_step\na 0 8 output donor=18446744073709551615\ne train_step\n",
	} {
		r, err := NewNativeReader("seed", strings.NewReader(text))
		if err != nil {
			f.Fatal(err)
		}
		evs, err := ReadAll(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(toBinary(f, r.Meta(), evs, WriterOptions{}))
	}
	f.Add([]byte(BinaryMagic + "\x01\x00\x02\x04ab\x02\x03\x03\x02"))
	f.Add([]byte("membench-trace 1\nmeta a b\na 1 2 -3 @4\nf 1 @2\nm \"x y\"\nm x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			// Input that reads as text: its canonical text goes through
			// binary and comes back byte for byte.
			if r, err := NewNativeReader("fuzz.txt", bytes.NewReader(data)); err == nil {
				if evs, err := ReadAll(r); err == nil {
					var text, bin, back bytes.Buffer
					v := FormatVersion(r)
					if _, err := WriteNative(&text, &SliceReader{Events: evs, M: r.Meta(), Version: v}, WriterOptions{}); err != nil {
						t.Fatal(err)
					}
					if _, err := WriteBinary(&bin, &SliceReader{Events: evs, M: r.Meta(), Version: v}, WriterOptions{}); err != nil {
						t.Fatal(err)
					}
					br, err := NewBinaryReader("fuzz.bin", &bin)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := WriteNative(&back, br, WriterOptions{}); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(back.Bytes(), text.Bytes()) {
						t.Fatalf("text -> binary -> text:\n  %q\n  %q", text.Bytes(), back.Bytes())
					}
				}
				return
			}
			evs, meta, err := readBinary(t, data)
			if err != nil {
				var pe *PosError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), "at byte ") && !strings.Contains(err.Error(), "gzip") {
					t.Fatalf("error %T %v is not a *PosError with an offset", err, err)
				}
				return
			}
			// Round trip: what reads writes back as a binary trace that
			// reads as the same events and meta, and is a fixed point.
			bin := toBinary(t, meta, evs, WriterOptions{})
			evs2, meta2, err := readBinary(t, bin)
			if err != nil {
				t.Fatalf("re-reading: %v", err)
			}
			if len(evs) != len(evs2) || len(evs) > 0 && !reflect.DeepEqual(evs, evs2) || len(meta) != len(meta2) || len(meta) > 0 && !reflect.DeepEqual(meta, meta2) {
				t.Fatalf("binary round trip differs:\n  %+v %q\n  %+v %q", evs, meta, evs2, meta2)
			}
			if again := toBinary(t, meta2, evs2, WriterOptions{}); !bytes.Equal(again, bin) {
				t.Fatalf("binary is not a fixed point:\n  %x\n  %x", bin, again)
			}
			// And the same trace has a text form.
			roundTrip(t, meta, evs)
		})
	})
}

// loadBenchBinary is the largest recorded trace (bench_test.go) in the
// binary format.
func loadBenchBinary(b *testing.B, gz bool) ([]byte, int) {
	text, _, _, events := loadBenchTrace(b)
	r, err := NewNativeReader("gpt-generate", bytes.NewReader(text))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := WriteBinary(&buf, r, WriterOptions{Gzip: gz}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), events
}

// BenchmarkBinaryDecode: native binary, in memory, one core.
func BenchmarkBinaryDecode(b *testing.B) {
	bin, events := loadBenchBinary(b, false)
	b.SetBytes(int64(len(bin)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewBinaryReader("gpt-generate.bin", bytes.NewReader(bin))
		if n := decodeAll(b, r, err); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}

// BenchmarkBinaryDecodeGzip: the same, gzip-compressed.
func BenchmarkBinaryDecodeGzip(b *testing.B) {
	bin, events := loadBenchBinary(b, true)
	b.SetBytes(int64(len(bin)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewBinaryReader("gpt-generate.bin.gz", bytes.NewReader(bin))
		if n := decodeAll(b, r, err); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}

// BenchmarkBinaryEncode: writing the same events in the binary format.
func BenchmarkBinaryEncode(b *testing.B) {
	bin, events := loadBenchBinary(b, false)
	r, err := NewBinaryReader("gpt-generate.bin", bytes.NewReader(bin))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bin)))
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewBinaryWriter(io.Discard, r.Meta(), WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			if err := w.Write(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	reportEventsPerSec(b, events)
}

// TestWriteBinaryNamesInput: a valid text trace the binary format cannot
// hold (a mark label over its bound, which a text line may exceed) is
// refused at the input's file, line and event, not only at "event 0"
// of the output, which did not say where in the input to look.
func TestWriteBinaryNamesInput(t *testing.T) {
	text := "membench-trace 1\na 1 4096\n# a comment\nm " + strings.Repeat("x", maxBinaryString+1) + "\nf 1\n"
	r, err := NewNativeReader("in.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	_, err = WriteBinary(io.Discard, r, WriterOptions{})
	var pe *PosError
	if !errors.As(err, &pe) || pe.File != "in.txt" || pe.Line != 4 || pe.Event != 1 || !strings.Contains(err.Error(), "label of") {
		t.Errorf("error %v, want it at in.txt:4 (event 1)", err)
	}
}
