package traces

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The native text format is documented in doc.go ("Native text format").

// NativeMagic is the first token of a native trace's header line.
const NativeMagic = "membench-trace"

// NativeVersion is the newest version of the native format this package
// reads and writes; the header line is NativeMagic, a space and the
// version. Version 1 (alloc, free, mark) is read and written as it always
// was; version 2 adds executable launches, allocation kinds and donation
// (doc.go), and a writer uses it only when asked (WriterOptions.Version).
const NativeVersion = 2

// nativeReader streams a native text trace. Per event it allocates nothing
// except the string of a mark label not seen before.
type nativeReader struct {
	lineReader
	version int // the header's: 1 or 2
	meta    Meta
	labels  interner
	noFast  bool // tests: parse every line with parse, not fastParse
}

// NewNativeReader reads a native text trace from r, gzip-compressed or
// not (detected from the content). It reads the header and the meta lines
// before returning, so errors in those are returned here. name is used in
// error messages. Close does not close r.
func NewNativeReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newNativeReader(name, br, gz, nil)
}

func newNativeReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer) (*nativeReader, error) {
	r := &nativeReader{lineReader: newLineReader(name, br, gz, closer)}
	if err := r.readHeader(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// readHeader reads the version line, then comments, blank lines and meta
// lines up to the first event line, which it keeps for Next.
func (r *nativeReader) readHeader() error {
	r.header = true
	defer func() { r.header = false }()
	line, err := r.next()
	if err == io.EOF {
		return r.failAt(1, fmt.Errorf("empty input: missing header %q", NativeMagic+" 1"))
	}
	if err != nil {
		return err
	}
	line = trimRight(line)
	magic, i := field(line, 0)
	if i != len(magic) || string(magic) != NativeMagic {
		return r.fail("missing header: a native trace starts with the line %q", NativeMagic+" 1")
	}
	ver, i := field(line, i)
	if len(ver) == 0 {
		return r.fail("header: missing format version (want %q)", NativeMagic+" 1")
	}
	v, ok := parseUint(ver)
	if !ok {
		return r.fail("header: bad format version %q", ver)
	}
	if v != 1 && v != 2 {
		return r.fail("unsupported format version %d (this reader reads versions 1 and 2)", v)
	}
	r.version = int(v)
	if extra, _ := field(line, i); len(extra) > 0 {
		return r.fail("header: unexpected %q after the version", extra)
	}
	var mb metaBuilder
	defer func() { r.meta = mb.meta }()
	for {
		line, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = trimRight(line)
		tok, i := field(line, 0)
		if len(tok) == 0 || tok[0] == '#' {
			continue
		}
		if string(tok) != "meta" {
			r.unread(line)
			return nil
		}
		key, i := field(line, i)
		if len(key) == 0 {
			return r.fail("meta: missing key")
		}
		if !validMetaKey(string(key)) {
			return r.fail("meta: bad key %q (want printable characters without spaces)", key)
		}
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if err := mb.set(string(key), string(line[i:])); err != nil {
			return r.fail("meta: %v", err)
		}
	}
}

// validMetaKey reports whether k can be written as a meta key: non-empty,
// no spaces, no control characters.
func validMetaKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] == 0x7f {
			return false
		}
	}
	return true
}

func (r *nativeReader) Meta() Meta { return r.meta }

// FormatVersion is the header's version (see traces.FormatVersion).
func (r *nativeReader) FormatVersion() int { return r.version }

// needV2 is the error for a version-2 construct in a version-1 trace.
func (r *nativeReader) needV2(what string) error {
	return r.fail("%s needs format version 2 (header %q); this trace is version 1", what, NativeMagic+" 2")
}

func (r *nativeReader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.nextLine(trimRight)
		if err != nil {
			return Event{}, err
		}
		if !r.noFast {
			if ev, ok := fastParse(line); ok {
				r.returned(r.line)
				return ev, nil
			}
		}
		// Skip leading blanks; blank and comment lines carry nothing.
		i := 0
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) || line[i] == '#' {
			continue
		}
		ev, err := r.parse(line, i)
		if err != nil {
			return Event{}, err
		}
		r.returned(r.line)
		return ev, nil
	}
}

// parse decodes one event line; i is the index of its first non-blank byte.
func (r *nativeReader) parse(line []byte, i int) (Event, error) {
	ev := Event{Time: NoTime}
	kind, i := field(line, i)
	var tok []byte
	switch string(kind) {
	case "a":
		ev.Op = OpAlloc
		if tok, i = field(line, i); len(tok) == 0 {
			return ev, r.fail("alloc: missing id (want \"a <id> <size> [<stream>] [@<time_ns>]\")")
		}
		var ok bool
		if ev.ID, ok = parseUint(tok); !ok {
			return ev, r.fail("alloc: bad id %q (want a decimal uint64)", tok)
		}
		if tok, i = field(line, i); len(tok) == 0 {
			return ev, r.fail("alloc: missing size (want \"a <id> <size> [<stream>] [@<time_ns>]\")")
		}
		size, ok := parseInt(tok)
		if !ok || size <= 0 || size > MaxSize {
			return ev, r.failErr(fmt.Errorf("%w: alloc size %q (want a decimal integer in 1..%d)", ErrBadSize, tok, MaxSize))
		}
		ev.Size = size
		if tok, i = field(line, i); len(tok) > 0 && tok[0] != '@' && kindOf(tok) == KindNone && !isDonor(tok) {
			if ev.Stream, ok = parseInt(tok); !ok {
				if r.version == 1 {
					return ev, r.fail("alloc: bad stream %q (want a decimal int64)", tok)
				}
				return ev, r.fail("alloc: bad field %q (want a decimal int64 stream, a kind: parameter, output, temp, constant, device_put or eager, donor=<id>, or @<time_ns>)", tok)
			}
			tok, i = field(line, i)
		}
		if k := kindOf(tok); k != KindNone {
			if r.version == 1 {
				return ev, r.needV2(fmt.Sprintf("alloc kind %q", tok))
			}
			ev.Kind = k
			tok, i = field(line, i)
		}
		if isDonor(tok) {
			if r.version == 1 {
				return ev, r.needV2("a donor")
			}
			if ev.Donor, ok = parseUint(tok[6:]); !ok {
				return ev, r.fail("alloc: bad donor %q (want donor= and a decimal uint64)", tok)
			}
			ev.Donated = true
			if ev.Kind != KindOutput {
				return ev, r.failErr(fmt.Errorf("%w: a %v alloc has a donor (only an output aliases a donated input)", ErrBadDonor, ev.Kind))
			}
			if ev.Donor == ev.ID {
				return ev, r.failErr(fmt.Errorf("%w: alloc %d names itself as its donor", ErrBadDonor, ev.ID))
			}
			tok, i = field(line, i)
		}
		return r.finish(ev, line, tok, i)
	case "f":
		ev.Op = OpFree
		if tok, i = field(line, i); len(tok) == 0 {
			return ev, r.fail("free: missing id (want \"f <id> [@<time_ns>]\")")
		}
		var ok bool
		if ev.ID, ok = parseUint(tok); !ok {
			return ev, r.fail("free: bad id %q (want a decimal uint64)", tok)
		}
		tok, i = field(line, i)
		return r.finish(ev, line, tok, i)
	case "m", "b", "e":
		ev.Op = OpMark
		want := "m <label> [@<time_ns>]"
		if kind[0] != 'm' {
			if r.version == 1 {
				return ev, r.needV2("a launch record")
			}
			ev.Op, want = OpLaunch, "b <executable> [@<time_ns>]"
			if kind[0] == 'e' {
				ev.Op, want = OpLaunchEnd, "e <executable> [@<time_ns>]"
			}
		}
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return ev, r.fail("%s: missing %s (want %q)", ev.Op, labelWord(ev.Op), want)
		}
		if line[i] == '"' {
			end := quotedEnd(line, i)
			if end < 0 {
				return ev, r.fail("%s: unterminated quoted %s %s", ev.Op, labelWord(ev.Op), line[i:])
			}
			if end < len(line) && !isBlank(line[end]) {
				return ev, r.fail("%s: unexpected %q after the quoted %s", ev.Op, line[end:], labelWord(ev.Op))
			}
			s, err := strconv.Unquote(string(line[i:end]))
			if err != nil {
				return ev, r.fail("%s: bad quoted %s %s: %v", ev.Op, labelWord(ev.Op), line[i:end], err)
			}
			ev.Label, i = s, end
		} else {
			tok, i = field(line, i)
			ev.Label = r.labels.get(tok)
		}
		tok, i = field(line, i)
		return r.finish(ev, line, tok, i)
	case "meta":
		return ev, r.fail("meta line after the first event (meta lines must precede every event)")
	default:
		if r.version == 1 {
			return ev, r.fail("unknown record type %q (want a, f, m or meta)", kind)
		}
		return ev, r.fail("unknown record type %q (want a, f, m, b, e or meta)", kind)
	}
}

// labelWord is what the label of a record of op is called in errors.
func labelWord(op Op) string {
	if op == OpMark {
		return "label"
	}
	return "executable name"
}

// isDonor reports whether tok is a donor field ("donor=" and more).
func isDonor(tok []byte) bool { return len(tok) > 6 && string(tok[:6]) == "donor=" }

// kindOf is the Kind the text format spells tok, or KindNone.
func kindOf(tok []byte) Kind {
	for k := KindParameter; k < numKinds; k++ {
		if string(tok) == kindNames[k] {
			return k
		}
	}
	return KindNone
}

// fastParse decodes the common alloc and free lines written in the
// canonical form ("a 12 4096 @5", "f 12"), scanning each number once. It
// reports false for anything else, valid or not, which parse then handles
// (and explains if it is an error); both accept the same language.
func fastParse(line []byte) (Event, bool) {
	if len(line) < 3 || line[1] != ' ' {
		return Event{}, false
	}
	ev := Event{Time: NoTime}
	var ok bool
	var j int
	switch line[0] {
	case 'a':
		ev.Op = OpAlloc
		if ev.ID, j, ok = scanUint(line, 2); !ok || j >= len(line) || line[j] != ' ' {
			return ev, false
		}
		var size uint64
		if size, j, ok = scanUint(line, j+1); !ok || size == 0 || size > uint64(MaxSize) {
			return ev, false
		}
		ev.Size = int64(size)
		if j == len(line) {
			return ev, true
		}
		if line[j] != ' ' || j+1 == len(line) {
			return ev, false
		}
		j++
		if line[j] != '@' {
			neg := line[j] == '-'
			if neg {
				j++
			}
			var st uint64
			if st, j, ok = scanUint(line, j); !ok || st > 1<<63-1 {
				return ev, false // (-1<<63 takes the slow path)
			}
			ev.Stream = int64(st)
			if neg {
				ev.Stream = -ev.Stream
			}
			if j == len(line) {
				return ev, true
			}
			if line[j] != ' ' || j+1 == len(line) || line[j+1] != '@' {
				return ev, false
			}
			j++
		}
	case 'f':
		ev.Op = OpFree
		if ev.ID, j, ok = scanUint(line, 2); !ok {
			return ev, false
		}
		if j == len(line) {
			return ev, true
		}
		if line[j] != ' ' || j+1 == len(line) || line[j+1] != '@' {
			return ev, false
		}
		j++
	default:
		return ev, false
	}
	// line[j] == '@'
	t, j, ok := scanUint(line, j+1)
	if !ok || j != len(line) || t > 1<<63-1 {
		return ev, false
	}
	ev.Time = int64(t)
	return ev, true
}

// scanUint reads the decimal digits at line[i:] and returns their value
// and the index after them; ok is false if there are none, if the number
// overflows, or if it has a leading zero (which parse accepts).
func scanUint(line []byte, i int) (v uint64, j int, ok bool) {
	j = i
	for j < len(line) && line[j]-'0' <= 9 {
		j++
	}
	switch n := j - i; {
	case n == 0 || (n > 1 && line[i] == '0'):
		return 0, j, false
	case n <= 19: // cannot overflow
		for _, c := range line[i:j] {
			v = v*10 + uint64(c-'0')
		}
		return v, j, true
	}
	v, ok = parseUint(line[i:j])
	return v, j, ok
}

// finish parses the optional "@<time_ns>" token tok and checks that nothing
// follows it.
func (r *nativeReader) finish(ev Event, line, tok []byte, i int) (Event, error) {
	if len(tok) > 0 && tok[0] == '@' {
		t, ok := parseUint(tok[1:])
		if !ok || t > 1<<63-1 {
			return ev, r.fail("%s: bad time %q (want @ and a non-negative decimal int64 of nanoseconds)", ev.Op, tok)
		}
		ev.Time = int64(t)
		tok, _ = field(line, i)
	}
	if len(tok) > 0 {
		return ev, r.fail("%s: unexpected field %q", ev.Op, tok)
	}
	return ev, nil
}

// quotedEnd returns the index just past the closing quote of the Go
// double-quoted string that starts at line[i], or -1 if it is unterminated.
func quotedEnd(line []byte, i int) int {
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// WriterOptions configures a native Writer.
type WriterOptions struct {
	// Gzip compresses the output (gzip, default compression level unless
	// GzipLevel says otherwise). Readers decompress transparently.
	Gzip bool
	// GzipLevel is a compress/gzip level; 0 means gzip.DefaultCompression.
	GzipLevel int
	// Version is the native format version to write: 1 (also what 0
	// means, the version every reader since the first accepts) or 2,
	// which launches, kinds and donations need. A version-1 writer
	// refuses an event that uses them, so that no trace silently loses
	// them; WriteNative and WriteBinary take the source's version
	// (FormatVersion) when this is 0.
	Version int
}

// version checks opts.Version and returns the version to write.
func (o WriterOptions) version() (int, error) {
	switch o.Version {
	case 0, 1:
		return 1, nil
	case 2:
		return 2, nil
	}
	return 0, fmt.Errorf("traces: format version %d (want 1 or 2)", o.Version)
}

// checkEvent refuses, for a writer of version v, what the trace could not
// read back: the vocabulary of version 2 in version 1, an unknown kind,
// a bad donation.
func checkEvent(v, n int, ev *Event) error {
	if !ev.version2() {
		return nil
	}
	if v < 2 {
		return fmt.Errorf("traces: writing event %d: a %v with kind %v needs format version 2 (WriterOptions.Version)", n, ev.Op, ev.Kind)
	}
	if err := checkV2(ev); err != nil {
		return fmt.Errorf("traces: writing event %d: %w", n, err)
	}
	return nil
}

// Writer writes the native text format in its canonical form: the header,
// the meta lines in order, then one line per event, each field separated by
// one space, the stream omitted when 0, the time omitted when NoTime, mark
// labels quoted only when they must be. Reading canonical text and writing
// the events back reproduces it byte for byte.
type Writer struct {
	sink
	version int
	buf     []byte
	n       int // events written
}

// sink is the buffered, optionally gzipped output the text and binary
// writers share, with the error that stops them (errWriterClosed once
// closed).
type sink struct {
	bw  *bufio.Writer
	gz  *gzip.Writer
	err error
}

func newSink(w io.Writer, opts WriterOptions) (sink, error) {
	var s sink
	if opts.Gzip {
		level := opts.GzipLevel
		if level == 0 {
			level = gzip.DefaultCompression
		}
		gz, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return s, fmt.Errorf("traces: %w", err)
		}
		s.gz = gz
		w = gz
	}
	s.bw = bufio.NewWriterSize(w, bufSize)
	return s, nil
}

// close writes trailer, flushes and ends the gzip stream; a second close
// does nothing, and an earlier error is returned again.
func (s *sink) close(trailer []byte) error {
	if s.err == errWriterClosed {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	_, err := s.bw.Write(trailer)
	if ferr := s.bw.Flush(); err == nil {
		err = ferr
	}
	if s.gz != nil {
		if gerr := s.gz.Close(); err == nil {
			err = gerr
		}
	}
	if err != nil {
		s.err = err
		return err
	}
	s.err = errWriterClosed
	return nil
}

// checkMetaKeys refuses keys the text format could not read back.
func checkMetaKeys(meta Meta) error {
	for _, kv := range meta {
		if !validMetaKey(kv.Key) {
			return fmt.Errorf("traces: meta key %q: want printable characters without spaces", kv.Key)
		}
	}
	return nil
}

// NewWriter starts a native trace on w and writes its header and meta.
// Meta keys must be non-empty and free of spaces and control characters;
// values are written as the rest of their line, so a newline in a value is
// written as a space and leading blanks and trailing blanks are dropped (the
// reader would not see them). Close flushes the output; it does not close w.
func NewWriter(w io.Writer, meta Meta, opts WriterOptions) (*Writer, error) {
	if err := checkMetaKeys(meta); err != nil {
		return nil, err
	}
	if err := checkMetaLimits(meta); err != nil {
		return nil, err
	}
	version, err := opts.version()
	if err != nil {
		return nil, err
	}
	out, err := newSink(w, opts)
	if err != nil {
		return nil, err
	}
	wr := &Writer{sink: out, version: version, buf: make([]byte, 0, 128)}
	b := fmt.Appendf(wr.buf[:0], "%s %d\n", NativeMagic, version)
	for _, kv := range meta {
		b = append(b, "meta "...)
		b = append(b, kv.Key...)
		if v := metaValue(kv.Value); v != "" {
			b = append(b, ' ')
			b = append(b, v...)
		}
		b = append(b, '\n')
	}
	if _, err := wr.bw.Write(b); err != nil {
		return nil, err
	}
	return wr, nil
}

// metaValue is v as the reader will see it after a round trip.
func metaValue(v string) string {
	if i := indexNewline(v); i >= 0 {
		b := []byte(v)
		for j := range b {
			if b[j] == '\n' {
				b[j] = ' '
			}
		}
		v = string(b)
	}
	for len(v) > 0 && isBlank(v[0]) {
		v = v[1:]
	}
	for len(v) > 0 && (isBlank(v[len(v)-1]) || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
}

func indexNewline(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

// Write appends one event. Only the fields that matter to the event's Op are
// written (ID, Size, Stream, Kind, Donor, Time for an alloc; ID, Time for a
// free; Label, Time for a mark, a launch and a launch end). An alloc's size
// must be in 1..MaxSize and a time must be NoTime or non-negative; a
// launch, a kind or a donation needs a writer of version 2, a donation an
// output that does not name itself.
func (w *Writer) Write(ev Event) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if err := checkEvent(w.version, w.n, &ev); err != nil {
		return err
	}
	switch ev.Op {
	case OpAlloc:
		if ev.Size <= 0 || ev.Size > MaxSize {
			return fmt.Errorf("traces: writing event %d: %w: alloc size %d (want 1..%d)", w.n, ErrBadSize, ev.Size, MaxSize)
		}
		b = append(b, 'a', ' ')
		b = strconv.AppendUint(b, ev.ID, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, ev.Size, 10)
		if ev.Stream != 0 {
			b = append(b, ' ')
			b = strconv.AppendInt(b, ev.Stream, 10)
		}
		if ev.Kind != KindNone {
			b = append(b, ' ')
			b = append(b, kindNames[ev.Kind]...)
		}
		if ev.Donated {
			b = append(b, " donor="...)
			b = strconv.AppendUint(b, ev.Donor, 10)
		}
	case OpFree:
		b = append(b, 'f', ' ')
		b = strconv.AppendUint(b, ev.ID, 10)
	case OpMark, OpLaunch, OpLaunchEnd:
		b = append(b, "mbe"[ev.Op-OpMark], ' ')
		if plainLabel(ev.Label) {
			b = append(b, ev.Label...)
		} else {
			b = strconv.AppendQuote(b, ev.Label)
		}
	default:
		return fmt.Errorf("traces: writing event %d: unknown op %v", w.n, ev.Op)
	}
	if ev.Time != NoTime {
		if ev.Time < 0 {
			return fmt.Errorf("traces: writing event %d: negative time %d", w.n, ev.Time)
		}
		b = append(b, ' ', '@')
		b = strconv.AppendInt(b, ev.Time, 10)
	}
	b = append(b, '\n')
	w.buf = b
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	w.n++
	return nil
}

// plainLabel reports whether a mark label can be written as a bare token:
// non-empty, printable, valid UTF-8, no spaces, not starting with '"' or
// '@' (which would read as a quoted label or a time to a human).
func plainLabel(s string) bool {
	if s == "" || s[0] == '"' || s[0] == '@' || s[0] == '#' {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// Close flushes buffered output and ends the gzip stream if there is one.
// It does not close the io.Writer given to NewWriter. Closing twice is a
// no-op; writing after Close is an error.
func (w *Writer) Close() error { return w.close(nil) }

var errWriterClosed = errors.New("traces: write to a closed Writer")

// WriteNative writes every event of r, with r's meta, to w in the native
// format, and returns how many events it wrote. It does not close r or w.
func WriteNative(w io.Writer, r Reader, opts WriterOptions) (int, error) {
	if opts.Version == 0 {
		opts.Version = FormatVersion(r)
	}
	nw, err := NewWriter(w, r.Meta(), opts)
	if err != nil {
		return 0, err
	}
	return copyEvents(nw, r)
}

// eventWriter is what the text and binary writers have in common.
type eventWriter interface {
	Write(Event) error
	Close() error
}

// copyEvents writes r's events to w and closes w, returning how many it
// wrote. An event w refuses is an error at its place in r.
func copyEvents(w eventWriter, r Reader) (int, error) {
	n := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		if err := w.Write(ev); err != nil {
			// The writer counts its own events; the user needs to
			// know where in the input the event it refused is.
			p := r.Pos()
			return n, &PosError{File: p.File, Line: p.Line, Event: p.Event, Err: err}
		}
		n++
	}
	return n, w.Close()
}

var _ Reader = (*nativeReader)(nil)
