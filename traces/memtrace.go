package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
)

// The memtrace CSV format is documented in doc.go ("memtrace CSV").

// MemtraceHeader is the header line of a memtrace CSV file.
const MemtraceHeader = "t_ns,op,addr,size,name"

// memtraceReader imports the CSV written by the team's LD_PRELOAD recorder
// (shared/traces/recorder/memtrace.c). Recorded addresses become fresh
// sequential ids, one per alloc, because the C library reuses addresses.
type memtraceReader struct {
	lineReader
	meta   Meta
	live   map[uint64]uint64 // address → id of the live allocation there
	nextID uint64
	t0     int64 // t_ns of the first row: Time is relative to it
	labels interner
}

// NewMemtraceReader imports a memtrace CSV trace from r, gzip-compressed or
// not (detected from the content). It reads the header and the first row
// before returning. name is used in error messages. Close does not close r.
func NewMemtraceReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newMemtraceReader(name, br, gz, nil)
}

func newMemtraceReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer) (*memtraceReader, error) {
	r := &memtraceReader{
		lineReader: newLineReader(name, br, gz, closer),
		live:       make(map[uint64]uint64),
		nextID:     1,
	}
	if err := r.readHeader(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *memtraceReader) readHeader() error {
	r.header = true
	line, err := r.next()
	if err != nil && err != io.EOF {
		return err
	}
	if string(trimCR(line)) != MemtraceHeader {
		return r.failAt(1, fmt.Errorf("missing memtrace CSV header %q", MemtraceHeader))
	}
	r.header = false
	r.meta = Meta{
		{"format", FormatMemtraceCSV},
		{"recorder", "memtrace LD_PRELOAD shim: PyTorch CPU allocator requests (posix_memalign, 64-byte alignment) and their frees"},
		{"ids", "one fresh id per alloc, sequential from 1 (recorded addresses are reused)"},
	}
	// The first row fixes the time origin; keep it for Next.
	for {
		line, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = trimCR(line)
		if len(line) == 0 {
			continue
		}
		r.unread(line)
		comma := bytes.IndexByte(line, ',')
		if comma < 0 {
			comma = len(line)
		}
		t, ok := parseInt(line[:comma])
		if !ok || t < 0 {
			return r.fail("bad t_ns %q (want a non-negative decimal integer)", line[:comma])
		}
		r.t0 = t
		r.meta = append(r.meta, KV{"time-origin-ns", strconv.FormatInt(t, 10) + " (t_ns of the first row; event times count from it)"})
		return nil
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

func (r *memtraceReader) Meta() Meta { return r.meta }

func (r *memtraceReader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.nextLine(trimCR)
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			continue
		}
		ev, err := r.parse(line)
		if err != nil {
			return Event{}, err
		}
		r.returned(r.line)
		return ev, nil
	}
}

// parse decodes one row "t_ns,op,addr,size,name". The name is the rest of
// the line after the fourth comma (the recorder writes it unquoted, so it
// may hold commas); a name in double quotes is unquoted CSV-style.
func (r *memtraceReader) parse(line []byte) (Event, error) {
	var f [4][]byte
	rest := line
	for k := range f {
		c := bytes.IndexByte(rest, ',')
		if c < 0 {
			return Event{}, r.fail("row has %d fields, want 5 (%s)", k+1, MemtraceHeader)
		}
		f[k], rest = rest[:c], rest[c+1:]
	}
	tns, addrF, sizeF, name := f[0], f[2], f[3], rest
	t, ok := parseInt(tns)
	if !ok || t < 0 {
		return Event{}, r.fail("bad t_ns %q (want a non-negative decimal integer)", tns)
	}
	if t < r.t0 {
		return Event{}, r.fail("t_ns %d is before the first row's %d", t, r.t0)
	}
	ev := Event{Time: t - r.t0}
	switch string(f[1]) {
	case "a":
		ev.Op = OpAlloc
		addr, err := r.addr(addrF)
		if err != nil {
			return ev, err
		}
		size, ok := parseInt(sizeF)
		if !ok || size <= 0 || size > MaxSize {
			return ev, r.failErr(fmt.Errorf("%w: alloc size %q (want a decimal integer in 1..%d)", ErrBadSize, sizeF, MaxSize))
		}
		if len(name) != 0 {
			return ev, r.fail("alloc row with a name %q (only mark rows have one)", name)
		}
		if id, ok := r.live[addr]; ok {
			return ev, r.failErr(fmt.Errorf("%w: alloc at address %#x, still live as id %d (a free is missing)", ErrLiveID, addr, id))
		}
		ev.ID, ev.Size = r.nextID, size
		r.live[addr] = r.nextID
		r.nextID++
	case "f":
		ev.Op = OpFree
		addr, err := r.addr(addrF)
		if err != nil {
			return ev, err
		}
		if len(sizeF) != 0 || len(name) != 0 {
			return ev, r.fail("free row with a size or a name (want t_ns,f,addr,,)")
		}
		id, ok := r.live[addr]
		if !ok {
			return ev, r.failErr(fmt.Errorf("%w: free of address %#x, which is not live", ErrUnknownID, addr))
		}
		delete(r.live, addr)
		ev.ID = id
	case "mark":
		ev.Op = OpMark
		if len(addrF) != 0 || len(sizeF) != 0 {
			return ev, r.fail("mark row with an address or a size (want t_ns,mark,,,name)")
		}
		if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
			ev.Label = string(bytes.ReplaceAll(name[1:len(name)-1], []byte(`""`), []byte(`"`)))
		} else {
			ev.Label = r.labels.get(name)
		}
	default:
		return ev, r.fail("unknown op %q (want a, f or mark)", f[1])
	}
	return ev, nil
}

// addr parses a hexadecimal address "0x...".
func (r *memtraceReader) addr(b []byte) (uint64, error) {
	if len(b) >= 3 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		if a, ok := parseHex(b[2:]); ok {
			return a, nil
		}
	}
	return 0, r.fail("bad address %q (want 0x and 1 to 16 hex digits)", b)
}

var _ Reader = (*memtraceReader)(nil)
