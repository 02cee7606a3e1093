package traces

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestDetect(t *testing.T) {
	native := []byte("membench-trace 1\na 1 2\n")
	csv := []byte("t_ns,op,addr,size,name\n1,a,0x1,8,\n")
	cases := []struct {
		name    string
		in      []byte
		format  string
		gzipped bool
		err     string // substring of the error, "" for none
	}{
		{"native", native, FormatNative, false, ""},
		{"native gzip", gzipped(t, native), FormatNative, true, ""},
		{"native header only", []byte("membench-trace"), FormatNative, false, ""},
		{"native bad version", []byte("membench-trace 9\n"), FormatNative, false, ""},
		{"csv", csv, FormatMemtraceCSV, false, ""},
		{"csv crlf", []byte("t_ns,op,addr,size,name\r\n"), FormatMemtraceCSV, false, ""},
		{"csv gzip", gzipped(t, csv), FormatMemtraceCSV, true, ""},
		{"pickle proto", []byte{0x80, 0x04, 0x95}, FormatSnapshotPickle, false, ""},
		{"pickle proto gzip", gzipped(t, []byte{0x80, 0x02, '}', 'q'}), FormatSnapshotPickle, true, ""},
		{"pickle mark", []byte("(dp0\n"), FormatSnapshotPickle, false, ""},
		{"pickle empty dict", []byte("}q\x00"), FormatSnapshotPickle, false, ""},
		{"pickle empty list", []byte("]q\x00"), FormatSnapshotPickle, false, ""},
		{"json", []byte(`{"segments": []}`), FormatSnapshotJSON, false, ""},
		{"json spaced", []byte(" \n\t{\"a\":1}"), FormatSnapshotJSON, false, ""},
		{"empty", nil, "", false, "unknown trace format: empty content; accepted:"},
		{"empty gzip", gzipped(t, nil), "", true, "unknown trace format: empty content (after gzip decompression); accepted:"},
		{"csv other columns", []byte("t_ns,op,addr,size\n"), "", false, `unknown trace format: content starting "t_ns,op,addr,siz"`},
		{"json array", []byte(`[{"a":1}]`), "", false, "unknown trace format"},
		{"magic prefix", []byte("membench-traces 1\n"), "", false, "unknown trace format"},
		{"gzip in gzip", gzipped(t, gzipped(t, native)), "", true, "unknown trace format: gzip inside gzip (after gzip decompression)"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "", false, "gzip: truncated gzip stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			format, gz, err := Detect(bytes.NewReader(c.in))
			if format != c.format || gz != c.gzipped {
				t.Errorf("Detect = %q, %v; want %q, %v", format, gz, c.format, c.gzipped)
			}
			if c.err == "" {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("err = %v, want it to contain %q", err, c.err)
			}
		})
	}
}

func TestOpenUnknownFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.csv.gz") // the name says nothing
	if err := os.WriteFile(path, []byte("hello, world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, DefaultOpenOptions)
	want := path + `: unknown trace format: content starting "hello, world\n"; ` + acceptedFormats
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("error does not wrap ErrUnknownFormat")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), DefaultOpenOptions); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

// TestOpenIgnoresName: a native trace named .csv.gz, gzipped, opens as native.
func TestOpenIgnoresName(t *testing.T) {
	text := "membench-trace 1\nmeta k v\na 1 2\nf 1\n"
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"looks.csv.gz": gzipped(t, []byte(text)),
		"looks.pickle": []byte(text),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, DefaultOpenOptions)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs, err := ReadAll(r)
		if err != nil || len(evs) != 2 || r.Meta().Get("k") != "v" {
			t.Errorf("%s: %v %v", name, evs, err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// closeCounter is a caller's input that records whether it was closed.
type closeCounter struct {
	*bytes.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestReadersCloseTheFile: every reader Open returns closes the file, on
// Close and when opening fails; OpenReader never closes the caller's input.
func TestReadersCloseTheFile(t *testing.T) {
	native := []byte("membench-trace 1\na 1 2\n")
	csv := []byte("t_ns,op,addr,size,name\n1,a,0x1,8,\n")
	for name, in := range map[string][]byte{
		"native": native, "native gzip": gzipped(t, native),
		"csv": csv, "csv gzip": gzipped(t, csv),
	} {
		f := &closeCounter{Reader: bytes.NewReader(in)}
		r, err := openReader(name, f, f, DefaultOpenOptions)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := ReadAll(r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.closed != 0 {
			t.Errorf("%s: closed before Close", name)
		}
		r.Close()
		if f.closed != 1 {
			t.Errorf("%s: Close closed the file %d times, want 1", name, f.closed)
		}

		g := &closeCounter{Reader: bytes.NewReader(in)}
		r, err = OpenReader(name, g, DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if g.closed != 0 {
			t.Errorf("%s: OpenReader's Close closed the caller's reader", name)
		}
	}
	// Failing opens leave nothing open (Open closes the file itself).
	for name, in := range map[string][]byte{
		"bad header": []byte("membench-trace 3\n"),
		"bad csv":    []byte("t_ns,op,addr,size,name\nx,a,0x1,8,\n"),
	} {
		f := &closeCounter{Reader: bytes.NewReader(in)}
		if _, err := openReader(name, f, f, DefaultOpenOptions); err == nil {
			t.Errorf("%s: no error", name)
		}
		if f.closed != 1 {
			t.Errorf("%s: file closed %d times on failure, want 1", name, f.closed)
		}
	}
}

// TestClosingReader: the wrapper that gives a snapshot reader's file to
// Close tolerates a reader that closed it already.
func TestClosingReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("x"), 0o644)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	inner := &fileClosingReader{f: f}
	c := &closingReader{Reader: inner, name: "f", closer: f}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if c.Pos().File != "f" {
		t.Errorf("Name = %q", c.Pos().File)
	}
}

type fileClosingReader struct {
	SliceReader
	f *os.File
}

func (r *fileClosingReader) Close() error { return r.f.Close() }

// TestDeviceOfSingleDeviceFormat: FILE#device=N on a format that holds one
// device's events is an error naming the file, not silently ignored.
func TestDeviceOfSingleDeviceFormat(t *testing.T) {
	for _, in := range []string{"membench-trace 1\na 1 8\n", MemtraceHeader + "\n5,a,0x10,8,\n", "0 5 8\n"} {
		_, err := OpenReader("f", strings.NewReader(in), OpenOptions{Device: 1})
		if err == nil || !strings.Contains(err.Error(), "f: ") || !strings.Contains(err.Error(), "device 1") {
			t.Errorf("%q with device 1: %v", in, err)
		}
	}
}
