package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// Format names, as Detect returns them.
const (
	FormatNative         = "native"          // membench native text ("membench-trace 1" header)
	FormatMemtraceCSV    = "memtrace-csv"    // the team's recorder's CSV ("t_ns,op,addr,size,name" header)
	FormatSnapshotPickle = "snapshot-pickle" // PyTorch memory snapshot, pickled
	FormatSnapshotJSON   = "snapshot-json"   // PyTorch memory snapshot as a JSON object
)

// ErrUnknownFormat is wrapped by the error of Open, OpenReader and Detect
// for content that is none of the accepted formats.
var ErrUnknownFormat = errors.New("unknown trace format")

// acceptedFormats ends the unknown-format message.
const acceptedFormats = `accepted: membench native text (first line "membench-trace 1"), ` +
	`memtrace CSV (first line "t_ns,op,addr,size,name"), ` +
	`PyTorch memory snapshot (pickle, or a JSON object), ` +
	`each plain or gzip-compressed`

// sniffLen is how much of the content detection looks at.
const sniffLen = 512

// Open opens the trace file at path, whatever its format: the format is
// detected from the content, never from the file name (see Detect). The
// returned Reader's Close closes the file.
func Open(path string, opts OpenOptions) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return openReader(path, f, f, opts)
}

// OpenReader reads a trace of any accepted format from r (see Detect). name
// is used in error messages. The Reader's Close does not close r.
func OpenReader(name string, r io.Reader, opts OpenOptions) (Reader, error) {
	return openReader(name, r, nil, opts)
}

// openReader detects the format of r and opens it. The returned reader owns
// closer (closes it on Close); if opening fails, closer is closed at once.
func openReader(name string, r io.Reader, closer io.Closer, opts OpenOptions) (_ Reader, err error) {
	var gz *gzip.Reader
	defer func() {
		if err != nil {
			closeGzip(gz)
			if closer != nil {
				closer.Close()
			}
		}
	}()
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	format, err := sniff(name, br, gz != nil)
	if err != nil {
		return nil, err
	}
	switch format {
	case FormatNative:
		nr, err := newNativeReader(name, br, gz, closer)
		if err != nil {
			gz, closer = nil, nil // closed by newNativeReader
			return nil, err
		}
		return nr, nil
	case FormatMemtraceCSV:
		mr, err := newMemtraceReader(name, br, gz, closer)
		if err != nil {
			gz, closer = nil, nil
			return nil, err
		}
		return mr, nil
	}
	sr, err := openSnapshot(name, br, opts)
	if err != nil {
		return nil, err
	}
	return &closingReader{Reader: sr, name: name, gz: gz, closer: closer}, nil
}

func closeGzip(gz *gzip.Reader) {
	if gz != nil {
		gz.Close()
	}
}

// sniff names the format of the content br serves, without consuming it.
func sniff(name string, br *bufio.Reader, gzipped bool) (string, error) {
	p, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		if gzipped && err == io.ErrUnexpectedEOF {
			err = errTruncatedGzip
		}
		return "", &PosError{File: name, Event: -1, Err: err}
	}
	if f := detect(p); f != "" {
		return f, nil
	}
	what := "content"
	switch {
	case len(p) == 0:
		what = "empty content"
	case bytes.HasPrefix(p, gzipMagic):
		what = "gzip inside gzip"
	default:
		if len(p) > 16 {
			p = p[:16]
		}
		what = fmt.Sprintf("content starting %q", p)
	}
	if gzipped {
		what += " (after gzip decompression)"
	}
	return "", &PosError{File: name, Event: -1, Err: fmt.Errorf("%w: %s; %s", ErrUnknownFormat, what, acceptedFormats)}
}

// detect names the format whose content starts with p, or returns "".
func detect(p []byte) string {
	switch {
	case len(p) == 0:
		return ""
	case bytes.HasPrefix(p, []byte(NativeMagic)) && (len(p) == len(NativeMagic) || isLineSpace(p[len(NativeMagic)])):
		return FormatNative
	case bytes.HasPrefix(p, []byte(MemtraceHeader)) && (len(p) == len(MemtraceHeader) || p[len(MemtraceHeader)] == '\n' || p[len(MemtraceHeader)] == '\r'):
		return FormatMemtraceCSV
	case p[0] == 0x80 || p[0] == '(' || p[0] == ']' || p[0] == '}':
		// Pickle: PROTO (protocol 2+), or MARK / EMPTY_LIST / EMPTY_DICT,
		// which open protocol 0 and 1 pickles of containers.
		return FormatSnapshotPickle
	}
	for _, c := range p {
		if isLineSpace(c) {
			continue
		}
		if c == '{' {
			return FormatSnapshotJSON
		}
		break
	}
	return ""
}

func isLineSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Detect reads the start of r and names its trace format: FormatNative,
// FormatMemtraceCSV, FormatSnapshotPickle or FormatSnapshotJSON; gzipped
// reports whether the content was gzip-compressed (the format is that of the
// decompressed content). Detection looks only at the content: a gzip magic
// number, then the native header line, the memtrace CSV header line, a
// pickle's first opcode (0x80 PROTO, or '(' ']' '}' for protocols 0 and 1),
// or a JSON object's '{' after optional white space. Content that is none of
// these gives an error wrapping ErrUnknownFormat that lists the accepted
// formats. Detect consumes r.
func Detect(r io.Reader) (format string, gzipped bool, err error) {
	br, gz, err := openInput("", r)
	if err != nil {
		return "", false, err
	}
	defer closeGzip(gz)
	format, err = sniff("", br, gz != nil)
	return format, gz != nil, err
}

// closingReader gives a snapshot reader the ownership of the gzip stream and
// the file under it.
type closingReader struct {
	Reader
	name   string
	gz     *gzip.Reader
	closer io.Closer
}

func (c *closingReader) Name() string { return c.name }

func (c *closingReader) Close() error {
	err := c.Reader.Close()
	if c.gz != nil {
		if gerr := c.gz.Close(); err == nil {
			err = gerr
		}
		c.gz = nil
	}
	if c.closer != nil {
		// The snapshot reader may have closed it already if it was an
		// io.Closer; that is not an error.
		if cerr := c.closer.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		c.closer = nil
	}
	return err
}
