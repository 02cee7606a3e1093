package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// bufSize is the read buffer of every text reader. A line longer than the
// buffer still reads (it is gathered in a side buffer) up to maxLineLen.
const bufSize = 64 << 10

// maxLineLen bounds one line of a text trace, so that a binary file fed to a
// text reader fails quickly instead of growing a buffer without end.
const maxLineLen = 1 << 20

// gzipMagic opens every gzip stream (RFC 1952, ID1 ID2).
var gzipMagic = []byte{0x1f, 0x8b}

// openInput buffers r and, when the content starts with the gzip magic,
// decompresses it. The returned reader serves the (decompressed) content;
// gz is non-nil when the input was compressed, and must be closed.
func openInput(name string, r io.Reader) (br *bufio.Reader, gz *gzip.Reader, err error) {
	br = bufio.NewReaderSize(r, bufSize)
	p, err := br.Peek(len(gzipMagic))
	if err != nil && err != io.EOF {
		return nil, nil, &PosError{File: name, Event: -1, Err: err}
	}
	if !bytes.Equal(p, gzipMagic) {
		return br, nil, nil
	}
	gz, err = gzip.NewReader(br)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = errTruncatedGzip
		}
		return nil, nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("gzip: %w", err)}
	}
	return bufio.NewReaderSize(gz, bufSize), gz, nil
}

var errTruncatedGzip = errors.New("truncated gzip stream")

// lineSource hands out the lines of a text trace without copying them: a
// line is a slice of the read buffer, valid until the next call.
type lineSource struct {
	name   string
	br     *bufio.Reader
	gz     *gzip.Reader // non-nil when the input is compressed
	closer io.Closer    // the file Open opened; nil for a caller's reader
	line   int          // number (1-based) of the last line returned
	long   []byte       // gathers a line longer than the read buffer
}

// next returns the next line without its '\n' (a final line without one is
// returned as is), io.EOF at the end, or a read error as a *PosError.
func (s *lineSource) next(event int) ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == nil {
		s.line++
		return line[:len(line)-1], nil
	}
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
			if len(s.long) > maxLineLen {
				return nil, &PosError{File: s.name, Line: s.line + 1, Event: event,
					Err: fmt.Errorf("line longer than %d bytes (is this a binary file?)", maxLineLen)}
			}
		}
		if err == nil {
			s.line++
			return s.long[:len(s.long)-1], nil
		}
		line = s.long
	}
	if err == io.EOF {
		if len(line) == 0 {
			return nil, io.EOF
		}
		s.line++
		return line, nil
	}
	return nil, s.readError(err, event)
}

func (s *lineSource) readError(err error, event int) error {
	switch {
	case err == io.ErrUnexpectedEOF && s.gz != nil:
		err = errTruncatedGzip
	case s.gz != nil:
		err = fmt.Errorf("gzip: %w", err)
	}
	return &PosError{File: s.name, Line: s.line + 1, Event: event, Err: err}
}

func (s *lineSource) close() error {
	var err error
	if s.gz != nil {
		err = s.gz.Close()
		s.gz = nil
	}
	if s.closer != nil {
		if cerr := s.closer.Close(); err == nil {
			err = cerr
		}
		s.closer = nil
	}
	return err
}

// isBlank reports whether b is a field separator of the text formats.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// trimRight drops trailing spaces, tabs and carriage returns.
func trimRight(b []byte) []byte {
	n := len(b)
	for n > 0 && (b[n-1] == ' ' || b[n-1] == '\t' || b[n-1] == '\r') {
		n--
	}
	return b[:n]
}

// field returns the token of b that starts at or after i (skipping blanks)
// and the index just past it. tok is empty at the end of b.
func field(b []byte, i int) (tok []byte, next int) {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !isBlank(b[j]) {
		j++
	}
	return b[i:j], j
}

// parseUint parses a non-empty run of decimal digits.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if n > (1<<64-1)/10 {
			return 0, false
		}
		n *= 10
		if n+d < n {
			return 0, false
		}
		n += d
	}
	return n, true
}

// parseInt parses an optionally '-'-signed decimal int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// interner shares the strings of repeated labels ("forward", "backward")
// so that a trace's marks cost one allocation per distinct label, up to a
// bound that keeps a trace of unique labels from growing the table.
type interner map[string]string

const maxInterned = 4096

func (t *interner) get(b []byte) string {
	if s, ok := (*t)[string(b)]; ok {
		return s
	}
	s := string(b)
	if *t == nil {
		*t = make(interner)
	}
	if len(*t) < maxInterned {
		(*t)[s] = s
	}
	return s
}
