package traces

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
)

// The STAlloc/Megatron allocator log is documented in doc.go ("STAlloc
// allocator logs").

// stallocReader imports the allocator log written by STAlloc's Megatron
// integration: "1 ptr size stream" per malloc, "0 ptr" or "0 ptr size
// stream" per free. Addresses become fresh sequential ids, one per malloc.
type stallocReader struct {
	lineReader
	meta   Meta
	live   map[uint64]uint64 // address → id of the live allocation there
	nextID uint64
}

// NewSTAllocReader imports an STAlloc/Megatron allocator log from r,
// gzip-compressed or not. name is used in error messages. Close does not
// close r.
func NewSTAllocReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newSTAllocReader(name, br, gz, nil), nil
}

func newSTAllocReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer) *stallocReader {
	return &stallocReader{
		lineReader: newLineReader(name, br, gz, closer),
		live:       make(map[uint64]uint64),
		nextID:     1,
		meta: Meta{
			{"format", FormatSTAlloc},
			{"source", "STAlloc/Megatron allocator log: \"1 ptr size stream\" per malloc, \"0 ptr [size stream]\" per free"},
			{"ids", "one fresh id per malloc, sequential from 1 (logged addresses are reused)"},
			{"time", "the log has no clock: every event time is NoTime"},
		},
	}
}

func (r *stallocReader) Meta() Meta { return r.meta }

func (r *stallocReader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.next()
		if err != nil {
			return Event{}, err
		}
		line = trimRight(line)
		var f [4][]byte
		k, i := 0, 0
		for {
			tok, j := field(line, i)
			if len(tok) == 0 {
				break
			}
			if k < len(f) {
				f[k] = tok
			}
			k, i = k+1, j
		}
		if k == 0 {
			continue // blank line
		}
		ev, err := r.parse(f, k)
		if err != nil {
			return Event{}, err
		}
		r.returned(r.line)
		return ev, nil
	}
}

// parse decodes one line of k fields, the first four in f.
func (r *stallocReader) parse(f [4][]byte, k int) (Event, error) {
	ev := Event{Time: NoTime}
	switch string(f[0]) {
	case "1":
		if k != 4 {
			return ev, r.fail("malloc line has %d fields, want 4 (1 ptr size stream)", k)
		}
	case "0":
		if k != 2 && k != 4 {
			return ev, r.fail("free line has %d fields, want 2 or 4 (0 ptr [size stream])", k)
		}
	default:
		return ev, r.fail("unknown op %q (want 1 for malloc or 0 for free)", f[0])
	}
	addr, ok := parseAddr(f[1])
	if !ok {
		return ev, r.fail("bad ptr %q (want a hexadecimal or decimal address that fits 64 bits)", f[1])
	}
	var size int64
	if k == 4 {
		s, ok := parseInt(f[2])
		if !ok || s <= 0 || s > MaxSize {
			return ev, r.failErr(fmt.Errorf("%w: size %q (want a decimal integer in 1..%d)", ErrBadSize, f[2], MaxSize))
		}
		size = s
		if ev.Stream, ok = parseStream(f[3]); !ok {
			return ev, r.fail("bad stream %q (want a hexadecimal or decimal integer that fits 64 bits)", f[3])
		}
	}
	if f[0][0] == '1' {
		if id, ok := r.live[addr]; ok {
			return ev, r.failErr(fmt.Errorf("%w: malloc at address %#x, still live as id %d (a free is missing)", ErrLiveID, addr, id))
		}
		ev.Op, ev.ID, ev.Size = OpAlloc, r.nextID, size
		r.live[addr] = r.nextID
		r.nextID++
		return ev, nil
	}
	id, ok := r.live[addr]
	if !ok {
		return ev, r.failErr(fmt.Errorf("%w: free of address %#x, which is not live", ErrUnknownID, addr))
	}
	delete(r.live, addr)
	ev.Op, ev.ID, ev.Stream = OpFree, id, 0
	return ev, nil
}

// isHexToken reports whether an address token is hexadecimal: it has a
// 0x prefix or a letter a-f.
func isHexToken(b []byte) bool {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		return true
	}
	for _, c := range b {
		if (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') {
			return true
		}
	}
	return false
}

// parseAddr parses an address token: hexadecimal (1 to 16 digits, with or
// without 0x) when isHexToken says so, else a decimal uint64.
func parseAddr(b []byte) (uint64, bool) {
	if !isHexToken(b) {
		return parseUint(b)
	}
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	return parseHex(b)
}

// parseHex parses 1 to 16 hexadecimal digits (no prefix): the addresses of
// the memtrace and STAlloc formats.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var a uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		a = a<<4 | uint64(d)
	}
	return a, true
}

// parseStream parses a stream token: a hexadecimal handle (its 64 bits
// taken as an int64) or a decimal int64.
func parseStream(b []byte) (int64, bool) {
	if isHexToken(b) {
		u, ok := parseAddr(b)
		return int64(u), ok
	}
	return parseInt(b)
}

var _ Reader = (*stallocReader)(nil)
