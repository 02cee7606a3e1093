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
	in := &countingReader{r: br}
	gz, err = gzip.NewReader(in)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = errTruncatedGzip
		}
		return nil, nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("gzip: %w", err)}
	}
	return bufio.NewReaderSize(&gzipGuard{gz: gz, in: in}, bufSize), gz, nil
}

// Decompression bombs: gzip can expand about a thousandfold, so a small
// file can stand for gigabytes that take minutes to read. Content may
// grow at most maxGzipRatio times its compressed bytes once past
// gzipRatioSlack; real traces grow 1–50×.
const (
	maxGzipRatio   = 256
	gzipRatioSlack = 16 << 20
)

// errGzipBomb is wrapped by the error of content that grows past the bound.
var errGzipBomb = errors.New("gzip content grows more than 256 times its compressed size (a decompression bomb?); decompress it yourself if it is genuine")

// countingReader counts the compressed bytes the gzip reader consumes.
// It is an io.ByteReader so that flate reads it directly.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// gzipGuard refuses content that grows past maxGzipRatio.
type gzipGuard struct {
	gz  io.Reader
	in  *countingReader
	out int64
}

func (g *gzipGuard) Read(p []byte) (int, error) {
	n, err := g.gz.Read(p)
	g.out += int64(n)
	if g.out > gzipRatioSlack && g.out > maxGzipRatio*g.in.n {
		return n, fmt.Errorf("%w (%d bytes from %d)", errGzipBomb, g.out, g.in.n)
	}
	return n, err
}

// OpenInput is the content of r whatever its compression: gzip is
// undone transparently, within the decompression-bomb bound every trace
// format has. close releases the gzip stream (not r). Commands that read
// recordings themselves (validate) use it.
func OpenInput(name string, r io.Reader) (content *bufio.Reader, close func() error, err error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, nil, err
	}
	return br, func() error {
		if gz != nil {
			return gz.Close()
		}
		return nil
	}, nil
}

var errTruncatedGzip = errors.New("truncated gzip stream")

// errNoFinalNewline is the error of a text input whose last line has no
// newline (lineReader.next says why). It names both ways on: a recording
// that stopped part-way (a process killed, a disk that filled) replays
// what it holds once the cut line is deleted, and only a file known to be
// complete should have its newline added, which would make the cut line
// parse.
var errNoFinalNewline = errors.New("the last line has no newline: the file looks cut short (delete that line to replay the rest; if the file is complete, end it with a newline)")

// input is what a reader owns under the content it decodes: the gzip
// stream, when the content was compressed, and the file Open opened (nil
// for a caller's io.Reader, which the caller closes).
type input struct {
	gz     *gzip.Reader
	closer io.Closer
}

// Close closes the gzip stream, then the file, once. A file closed already
// (by a reader that owned it) is not an error.
func (in *input) Close() error {
	var err error
	if in.gz != nil {
		err = in.gz.Close()
		in.gz = nil
	}
	if in.closer != nil {
		if cerr := in.closer.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		in.closer = nil
	}
	return err
}

// lineReader is the part every text reader embeds: it hands out the lines
// of the input, counts the events the reader returns and remembers the line
// of the last one (Pos), and latches the first error (failAt), so that the
// readers of the line formats position and repeat their errors alike.
//
// A line is a slice of the read buffer, valid until the next call of next.
type lineReader struct {
	input
	name string
	br   *bufio.Reader
	line int    // number (1-based) of the last line read
	long []byte // gathers a line longer than the read buffer

	// pending is a line read ahead (the first event line, met while
	// reading a header) and given out again by nextLine.
	pending []byte
	hasPend bool

	header bool  // reading a header or a whole table: errors name no event
	n      int   // events returned so far
	evLine int   // line of the last event returned
	err    error // the first error (io.EOF at the end); Next returns it again
}

func newLineReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer) lineReader {
	return lineReader{input: input{gz, closer}, name: name, br: br}
}

// unread gives line back: the next nextLine returns it again.
func (l *lineReader) unread(line []byte) { l.pending, l.hasPend = line, true }

// nextLine returns the line given back by unread, or else the next line
// trimmed by trim.
func (l *lineReader) nextLine(trim func([]byte) []byte) ([]byte, error) {
	if l.hasPend {
		line := l.pending
		l.pending, l.hasPend = nil, false
		return line, nil
	}
	line, err := l.next()
	if err != nil {
		return nil, err
	}
	return trim(line), nil
}

// Pos returns the name, and the line and index of the last event returned.
func (l *lineReader) Pos() Pos { return Pos{File: l.name, Line: l.evLine, Event: l.n - 1} }

// returned records that Next returns an event read from line.
func (l *lineReader) returned(line int) {
	l.evLine = line
	l.n++
}

// event is the index an error names: the event being read, or -1 while
// reading a header.
func (l *lineReader) event() int {
	if l.header {
		return -1
	}
	return l.n
}

// fail latches an error at the current line; failErr takes it formatted.
func (l *lineReader) fail(format string, args ...any) error {
	return l.failErr(fmt.Errorf(format, args...))
}

func (l *lineReader) failErr(err error) error {
	return l.failAt(l.line, err)
}

// failAt latches err as a *PosError at line and the event being read, and
// returns it; Next returns it from then on.
func (l *lineReader) failAt(line int, err error) error {
	l.err = &PosError{File: l.name, Line: line, Event: l.event(), Err: err}
	return l.err
}

// next returns the next line without its '\n', io.EOF at the end, or a
// read error as a *PosError. The error is latched like fail's.
//
// A final line without its '\n' is an error (errNoFinalNewline), not a
// line: every writer of these formats ends each line with one, and a file
// cut short (a copy that stopped, a disk that filled) most often ends in
// the middle of a line that still parses — an allocation with its size or
// time shortened — so accepting it would replay a different trace without
// a word. A hand-written file needs only its newline added.
func (l *lineReader) next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	line, err := l.br.ReadSlice('\n')
	if err == nil {
		l.line++
		return line[:len(line)-1], nil
	}
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			l.long = append(l.long, line...)
			if len(l.long) > maxLineLen {
				return nil, l.failAt(l.line+1, fmt.Errorf("line longer than %d bytes (is this a binary file?)", maxLineLen))
			}
		}
		if err == nil {
			l.line++
			return l.long[:len(l.long)-1], nil
		}
		line = l.long
	}
	if err == io.EOF {
		if len(line) == 0 {
			l.err = io.EOF
			return nil, io.EOF
		}
		return nil, l.failAt(l.line+1, errNoFinalNewline)
	}
	switch {
	case err == io.ErrUnexpectedEOF && l.gz != nil:
		err = errTruncatedGzip
	case l.gz != nil:
		err = fmt.Errorf("gzip: %w", err)
	}
	return nil, l.failAt(l.line+1, err)
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
// so that a trace's marks cost one allocation per distinct label, up to
// bounds that keep a trace of unique or huge labels from growing the
// table: at most maxInterned labels of at most maxTableLabel bytes each.
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
	if len(*t) < maxInterned && len(b) <= maxTableLabel {
		(*t)[s] = s
	}
	return s
}
