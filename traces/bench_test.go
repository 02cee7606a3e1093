package traces

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchTrace is the largest recorded trace (gpt-generate, 94,203 events)
// converted to the native format by this package's reader and writer.
var benchTrace struct {
	once          sync.Once
	text, gz, csv []byte
	events        int
	err           error
}

func loadBenchTrace(b *testing.B) (text, gz, csv []byte, events int) {
	bt := &benchTrace
	bt.once.Do(func() {
		path := filepath.Join(recordedDir, "gpt-generate.csv.gz")
		raw, err := os.ReadFile(path)
		if err != nil {
			bt.err = err
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			bt.err = err
			return
		}
		if bt.csv, bt.err = io.ReadAll(zr); bt.err != nil {
			return
		}
		r, err := Open(path, DefaultOpenOptions)
		if err != nil {
			bt.err = err
			return
		}
		defer r.Close()
		var buf bytes.Buffer
		if bt.events, bt.err = WriteNative(&buf, r, WriterOptions{}); bt.err != nil {
			return
		}
		bt.text = buf.Bytes()
		var zbuf bytes.Buffer
		zw := gzip.NewWriter(&zbuf)
		zw.Write(bt.text)
		zw.Close()
		bt.gz = zbuf.Bytes()
	})
	if bt.err != nil {
		b.Fatal(bt.err)
	}
	return bt.text, bt.gz, bt.csv, bt.events
}

// decodeAll reads every event of r and returns how many there were.
func decodeAll(b *testing.B, r Reader, err error) int {
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	r.Close()
	return n
}

func reportEventsPerSec(b *testing.B, events int) {
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkNativeDecode: native text, in memory, one core.
func BenchmarkNativeDecode(b *testing.B) {
	text, _, _, events := loadBenchTrace(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewNativeReader("gpt-generate", bytes.NewReader(text))
		if n := decodeAll(b, r, err); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}

// BenchmarkNativeDecodeGzip: the same text gzip-compressed.
func BenchmarkNativeDecodeGzip(b *testing.B) {
	_, gz, _, events := loadBenchTrace(b)
	b.SetBytes(int64(len(gz)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewNativeReader("gpt-generate.gz", bytes.NewReader(gz))
		if n := decodeAll(b, r, err); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}

// BenchmarkNativeEncode: writing the same events as native text.
func BenchmarkNativeEncode(b *testing.B) {
	text, _, _, events := loadBenchTrace(b)
	r, err := NewNativeReader("gpt-generate", bytes.NewReader(text))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(io.Discard, r.Meta(), WriterOptions{})
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

// BenchmarkMemtraceDecode: the recorder's CSV, decompressed, in memory.
func BenchmarkMemtraceDecode(b *testing.B) {
	_, _, csv, events := loadBenchTrace(b)
	b.SetBytes(int64(len(csv)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewMemtraceReader("gpt-generate.csv", bytes.NewReader(csv))
		if n := decodeAll(b, r, err); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}

// BenchmarkCheck: the id checks over events already in memory.
func BenchmarkCheck(b *testing.B) {
	text, _, _, events := loadBenchTrace(b)
	r, err := NewNativeReader("gpt-generate", bytes.NewReader(text))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := decodeAll(b, Check(&SliceReader{Events: evs}), nil); n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportEventsPerSec(b, events)
}
