package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Format names, as Detect returns them.
const (
	FormatNative         = "native"           // membench native text ("membench-trace 1" header)
	FormatMemtraceCSV    = "memtrace-csv"     // the team's recorder's CSV ("t_ns,op,addr,size,name" header)
	FormatSnapshotPickle = "snapshot-pickle"  // PyTorch memory snapshot, pickled
	FormatSnapshotJSON   = "snapshot-json"    // PyTorch memory snapshot as a JSON object
	FormatBinary         = "native-binary"    // membench native binary (BinaryMagic and a version byte)
	FormatLifetimesCSV   = "lifetimes-csv"    // MiniMalloc/idealloc lifetime table ("id,lower,upper,size" header)
	FormatAllocatorSim   = "allocatorsim-log" // allocatorSim input log ("alloc_op free_op size" lines)
	FormatSTAlloc        = "stalloc-log"      // STAlloc/Megatron allocator log ("1 ptr size stream", "0 ptr" lines)
	FormatJAXPprof       = "jax-pprof"        // JAX device memory profile (pprof protobuf)
	FormatXSpace         = "xprof-xspace"     // TensorBoard / XProf profile (*.xplane.pb, an XSpace protobuf)
	// FormatMemoryProfileJSON is the memory_profile.json TensorBoard
	// writes beside a profile (a MemoryProfile message as JSON).
	FormatMemoryProfileJSON = "xprof-memory-profile-json"
)

// ErrUnknownFormat is wrapped by the error of Open, OpenReader and Detect
// for content that is none of the accepted formats.
var ErrUnknownFormat = errors.New("unknown trace format")

// acceptedFormats ends the unknown-format message.
const acceptedFormats = `accepted: membench native text (first line "membench-trace 1"), ` +
	`membench native binary (starting "membench-trace-bin"), ` +
	`memtrace CSV (first line "t_ns,op,addr,size,name"), ` +
	`PyTorch memory snapshot (pickle, or a JSON object), ` +
	`MiniMalloc/idealloc lifetime CSV (first line "id,lower,upper,size"), ` +
	`allocatorSim log (lines "alloc_op free_op size"), ` +
	`STAlloc/Megatron allocator log (lines "1 ptr size stream" and "0 ptr"), ` +
	`JAX device memory profile (pprof protobuf), ` +
	`TensorBoard / XProf profile (*.xplane.pb, or the memory_profile.json beside it), ` +
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
	if opts.Device >= 0 && !multiDevice(format) {
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("device %d asked for, but a %s trace holds one device's events (devices can be chosen in PyTorch snapshots, JAX device memory profiles and XProf profiles)", opts.Device, format)}
	}
	if opts.Allocator != "" && format != FormatXSpace && format != FormatMemoryProfileJSON {
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("allocator %q asked for, but a %s trace holds one allocator's events (allocators can be chosen in XProf profiles)", opts.Allocator, format)}
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
	case FormatBinary:
		bin, err := newBinaryReader(name, br, gz, closer)
		if err != nil {
			gz, closer = nil, nil // closed by newBinaryReader
			return nil, err
		}
		return bin, nil
	case FormatLifetimesCSV, FormatAllocatorSim:
		// The table is read whole; newLifetimeReader closes the input.
		lr, err := newLifetimeReader(name, br, gz, closer, format)
		gz, closer = nil, nil
		if err != nil {
			return nil, err
		}
		return lr, nil
	case FormatSTAlloc:
		return newSTAllocReader(name, br, gz, closer), nil
	case FormatJAXPprof:
		pr, err := openPprof(name, br, gz != nil, opts)
		if err != nil {
			return nil, err
		}
		return &closingReader{Reader: pr, name: name, gz: gz, closer: closer}, nil
	}
	open := openers[format]
	if open == nil {
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("%w: %s content, but no reader for it is linked into this program (import its package, such as membench/torchlike/snapshot)", ErrUnknownFormat, format)}
	}
	sr, err := open(name, br, opts)
	if err != nil {
		return nil, err
	}
	return &closingReader{Reader: sr, name: name, gz: gz, closer: closer}, nil
}

// multiDevice reports whether a format can hold several devices' events,
// so that OpenOptions.Device means something for it.
func multiDevice(format string) bool {
	switch format {
	case FormatSnapshotPickle, FormatSnapshotJSON, FormatJAXPprof, FormatXSpace, FormatMemoryProfileJSON:
		return true
	}
	return false
}

// An Opener reads a trace whose format traces detects but does not itself
// decode: r is positioned at the start of the (decompressed) content, and
// name is for error messages. The returned Reader need not close anything;
// Open wraps it so that closing it closes the file and the gzip stream.
type Opener func(name string, r io.Reader, opts OpenOptions) (Reader, error)

// openers holds the readers of formats that belong to a framework's house
// (a PyTorch snapshot is PyTorch's knowledge, kept in torchlike/snapshot).
// Detection stays here, so that one function names every format from the
// content alone; decoding is linked in by the package that knows the format,
// as image.RegisterFormat does for image decoders.
var openers = map[string]Opener{}

// RegisterFormat installs the reader of format (one of the Format
// constants that Detect returns but this package does not decode). It is
// meant to be called from an init function; a second registration of the
// same format panics, as it is a programming error.
func RegisterFormat(format string, open Opener) {
	if _, dup := openers[format]; dup {
		panic("traces: RegisterFormat called twice for " + format)
	}
	openers[format] = open
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
	case bytes.HasPrefix(p, []byte(BinaryMagic)):
		return FormatBinary
	case firstLineIs(p, MemtraceHeader):
		return FormatMemtraceCSV
	case firstLineIs(p, LifetimesCSVHeader) || firstLineIs(p, LifetimesCSVSolutionHeader):
		return FormatLifetimesCSV
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
			if firstKeyIs(p, "memoryProfilePerAllocator") {
				return FormatMemoryProfileJSON
			}
			return FormatSnapshotJSON
		}
		break
	}
	if f := detectLines(p); f != "" {
		return f
	}
	if looksLikeXSpace(p) {
		return FormatXSpace
	}
	if looksLikePprof(p) {
		// Only a prefix is checked here; the whole content is decoded
		// when the trace is opened (or by Detect).
		return FormatJAXPprof
	}
	return ""
}

// firstLineIs reports whether p starts with the line line ('\n' or "\r\n"
// after it, or nothing).
func firstLineIs(p []byte, line string) bool {
	if !bytes.HasPrefix(p, []byte(line)) {
		return false
	}
	rest := p[len(line):]
	return len(rest) == 0 || rest[0] == '\n' || rest[0] == '\r'
}

// detectLines recognises the headerless line formats from the complete
// lines of p (the content's start, all of it when shorter than sniffLen):
// every non-blank line three decimal integers (allocatorSim log), or every
// non-blank line "1 ptr size stream", "0 ptr" or "0 ptr size stream"
// (STAlloc log). Blank lines are skipped; at least one line must be there.
func detectLines(p []byte) string {
	if len(p) == 0 || !(p[0] >= '0' && p[0] <= '9' || isLineSpace(p[0])) {
		return ""
	}
	if len(p) >= sniffLen {
		// The last line may be cut short: look at the complete ones.
		i := bytes.LastIndexByte(p, '\n')
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
	sim, st, lines := true, true, 0
	for len(p) > 0 && (sim || st) {
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		var f [5][]byte
		k, i := 0, 0
		for line = trimRight(line); k < len(f); k++ {
			if f[k], i = field(line, i); len(f[k]) == 0 {
				break
			}
		}
		if k == 0 {
			continue
		}
		lines++
		sim = sim && k == 3 && allDigits(f[0]) && allDigits(f[1]) && allDigits(f[2])
		st = st && (k == 2 || k == 4) && (string(f[0]) == "0" || string(f[0]) == "1" && k == 4) &&
			addrToken(f[1]) && (k == 2 || allDigits(f[2]) && (addrToken(f[3]) || f[3][0] == '-' && allDigits(f[3][1:])))
	}
	switch {
	case lines == 0:
		return ""
	case sim:
		return FormatAllocatorSim
	case st:
		return FormatSTAlloc
	}
	return ""
}

// addrToken reports whether b can be an STAlloc address or stream: digits
// and hex letters, with an optional 0x prefix.
func addrToken(b []byte) bool {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return len(b) > 0
}

func isLineSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Detect reads the start of r and names its trace format: one of the
// Format constants; gzipped reports whether the content was
// gzip-compressed (the format is that of the decompressed content).
// Detection looks only at the content, never at a name: a gzip magic
// number, then the native header line, the binary magic, the memtrace CSV
// header line, the lifetime CSV header line, a pickle's first opcode (0x80
// PROTO, or '(' ']' '}' for protocols 0 and 1), a JSON object's '{' after
// optional white space, lines of three decimal integers (allocatorSim) or
// of STAlloc records, an XProf XSpace (a first plane that opens with its
// printable name), and last a pprof protobuf (a first byte 0x0a whose
// fields decode as a pprof Profile's; then, and only then, the whole
// content is read and decoded with the pprof package to confirm it). See
// doc.go, "Detection". Content that is none of these gives an error
// wrapping ErrUnknownFormat that lists the accepted formats. Detect
// consumes r.
func Detect(r io.Reader) (format string, gzipped bool, err error) {
	br, gz, err := openInput("", r)
	if err != nil {
		return "", false, err
	}
	defer closeGzip(gz)
	format, err = sniff("", br, gz != nil)
	if err == nil && format == FormatJAXPprof {
		if _, err := readPprof("", br, gz != nil); err != nil {
			return "", gz != nil, err
		}
	}
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

// Pos is the wrapped reader's, named after the file if it has no name.
func (c *closingReader) Pos() Pos {
	p := c.Reader.Pos()
	if p.File == "" {
		p.File = c.name
	}
	return p
}

// FormatVersion passes the wrapped reader's on.
func (c *closingReader) FormatVersion() int { return FormatVersion(c.Reader) }

// Close closes the wrapped reader, then the gzip stream and the file (which
// the snapshot reader may have closed already if it was an io.Closer; that
// is not an error).
func (c *closingReader) Close() error {
	err := c.Reader.Close()
	in := input{c.gz, c.closer}
	c.gz, c.closer = nil, nil
	if ierr := in.Close(); err == nil {
		err = ierr
	}
	return err
}

// looksLikeXSpace reports whether p starts an XSpace protobuf as the
// profiler writes it: field 1 (planes, length-delimited), whose XPlane
// opens with an optional id (field 1, varint) and then its name (field 2)
// in printable text: "/host:CPU", "/device:GPU:0", "/host:metadata",
// "Task Environment". A pprof profile also opens with field 1, but its
// ValueType holds varints only, so the name field tells them apart.
func looksLikeXSpace(p []byte) bool {
	if len(p) < 4 || p[0] != 0x0a {
		return false
	}
	_, n := binary.Uvarint(p[1:])
	if n <= 0 {
		return false
	}
	i := 1 + n
	if i < len(p) && p[i] == 0x08 { // XPlane.id
		_, m := binary.Uvarint(p[i+1:])
		if m <= 0 {
			return false
		}
		i += 1 + m
	}
	if i >= len(p) || p[i] != 0x12 { // XPlane.name
		return false
	}
	l, m := binary.Uvarint(p[i+1:])
	if m <= 0 || l == 0 || l > 256 {
		return false
	}
	name := p[i+1+m:]
	if uint64(len(name)) < l {
		return false
	}
	for _, c := range name[:l] {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// firstKeyIs reports whether the JSON object that p starts (after white
// space) opens with key: proto3's JSON mapping writes fields in number
// order, so a MemoryProfile opens with memoryProfilePerAllocator.
func firstKeyIs(p []byte, key string) bool {
	p = bytes.TrimLeft(p, " \t\r\n")
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = bytes.TrimLeft(p[1:], " \t\r\n")
	return bytes.HasPrefix(p, []byte(`"`+key+`"`))
}
