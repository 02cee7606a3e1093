package pickle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// MaxLen is the largest length prefix (of a string, bytes or long) that
// Decode accepts: a larger one means a corrupt file, and refusing it keeps a
// few bytes of input from asking for gigabytes of memory.
const MaxLen = 1 << 30

// maxProtocol is the highest pickle protocol that Decode knows.
const maxProtocol = 5

// ErrRefused is wrapped by the error for an opcode that would build an
// object from a global or call code.
var ErrRefused = errors.New("opcode refused: pickles that build objects or call code are not decoded")

// Error is a decoding error with the byte offset of the opcode that failed.
type Error struct {
	Offset int64  // byte offset of the opcode in the input
	Op     string // opcode name, or "" when the failure is not an opcode's
	Msg    string
	Err    error // wrapped cause (io.ErrUnexpectedEOF, ErrRefused, ...), may be nil
}

func (e *Error) Error() string {
	s := fmt.Sprintf("pickle: offset %d", e.Offset)
	if e.Op != "" {
		s += ": " + e.Op
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Opcodes, named as in Python's pickletools; exported for tests that
// shape pickles by hand.
const (
	OpMark           = '('
	OpStop           = '.'
	OpPop            = '0'
	OpPopMark        = '1'
	OpDup            = '2'
	OpFloat          = 'F'
	OpInt            = 'I'
	OpBinInt         = 'J'
	OpBinInt1        = 'K'
	OpLong           = 'L'
	OpBinInt2        = 'M'
	OpNone           = 'N'
	OpPersID         = 'P'
	OpBinPersID      = 'Q'
	OpReduce         = 'R'
	OpString         = 'S'
	OpBinString      = 'T'
	OpShortBinString = 'U'
	OpUnicode        = 'V'
	OpBinUnicode     = 'X'
	OpAppend         = 'a'
	OpBuild          = 'b'
	OpGlobal         = 'c'
	OpDict           = 'd'
	OpEmptyDict      = '}'
	OpAppends        = 'e'
	OpGet            = 'g'
	OpBinGet         = 'h'
	OpInst           = 'i'
	OpLongBinGet     = 'j'
	OpList           = 'l'
	OpEmptyList      = ']'
	OpObj            = 'o'
	OpPut            = 'p'
	OpBinPut         = 'q'
	OpLongBinPut     = 'r'
	OpSetItem        = 's'
	OpTuple          = 't'
	OpEmptyTuple     = ')'
	OpSetItems       = 'u'
	OpBinFloat       = 'G'
	OpBinBytes       = 'B'
	OpShortBinBytes  = 'C'

	OpProto           = 0x80
	OpNewObj          = 0x81
	OpExt1            = 0x82
	OpExt2            = 0x83
	OpExt4            = 0x84
	OpTuple1          = 0x85
	OpTuple2          = 0x86
	OpTuple3          = 0x87
	OpNewTrue         = 0x88
	OpNewFalse        = 0x89
	OpLong1           = 0x8a
	OpLong4           = 0x8b
	OpShortBinUnicode = 0x8c
	OpBinUnicode8     = 0x8d
	OpBinBytes8       = 0x8e
	OpEmptySet        = 0x8f
	OpAddItems        = 0x90
	OpFrozenSet       = 0x91
	OpNewObjEx        = 0x92
	OpStackGlobal     = 0x93
	OpMemoize         = 0x94
	OpFrame           = 0x95
	OpByteArray8      = 0x96
	OpNextBuffer      = 0x97
	OpReadonlyBuffer  = 0x98
)

var opNames = [256]string{
	OpMark: "MARK", OpStop: "STOP", OpPop: "POP", OpPopMark: "POP_MARK", OpDup: "DUP",
	OpFloat: "FLOAT", OpInt: "INT", OpBinInt: "BININT", OpBinInt1: "BININT1", OpLong: "LONG",
	OpBinInt2: "BININT2", OpNone: "NONE", OpPersID: "PERSID", OpBinPersID: "BINPERSID",
	OpReduce: "REDUCE", OpString: "STRING", OpBinString: "BINSTRING",
	OpShortBinString: "SHORT_BINSTRING", OpUnicode: "UNICODE", OpBinUnicode: "BINUNICODE",
	OpAppend: "APPEND", OpBuild: "BUILD", OpGlobal: "GLOBAL", OpDict: "DICT",
	OpEmptyDict: "EMPTY_DICT", OpAppends: "APPENDS", OpGet: "GET", OpBinGet: "BINGET",
	OpInst: "INST", OpLongBinGet: "LONG_BINGET", OpList: "LIST", OpEmptyList: "EMPTY_LIST",
	OpObj: "OBJ", OpPut: "PUT", OpBinPut: "BINPUT", OpLongBinPut: "LONG_BINPUT",
	OpSetItem: "SETITEM", OpTuple: "TUPLE", OpEmptyTuple: "EMPTY_TUPLE", OpSetItems: "SETITEMS",
	OpBinFloat: "BINFLOAT", OpBinBytes: "BINBYTES", OpShortBinBytes: "SHORT_BINBYTES",
	OpProto: "PROTO", OpNewObj: "NEWOBJ", OpExt1: "EXT1", OpExt2: "EXT2", OpExt4: "EXT4",
	OpTuple1: "TUPLE1", OpTuple2: "TUPLE2", OpTuple3: "TUPLE3", OpNewTrue: "NEWTRUE",
	OpNewFalse: "NEWFALSE", OpLong1: "LONG1", OpLong4: "LONG4",
	OpShortBinUnicode: "SHORT_BINUNICODE", OpBinUnicode8: "BINUNICODE8",
	OpBinBytes8: "BINBYTES8", OpEmptySet: "EMPTY_SET", OpAddItems: "ADDITEMS",
	OpFrozenSet: "FROZENSET", OpNewObjEx: "NEWOBJ_EX", OpStackGlobal: "STACK_GLOBAL",
	OpMemoize: "MEMOIZE", OpFrame: "FRAME", OpByteArray8: "BYTEARRAY8",
	OpNextBuffer: "NEXT_BUFFER", OpReadonlyBuffer: "READONLY_BUFFER",
}

func opName(op byte) string {
	if n := opNames[op]; n != "" {
		return n
	}
	return fmt.Sprintf("unknown opcode 0x%02x", op)
}

// Decode reads one pickle from r and returns its value, within
// DefaultLimits. It reads exactly up to the STOP opcode plus whatever the
// internal buffer took beyond it. When r reports its size (a *bytes.Reader,
// *strings.Reader, *bytes.Buffer or a regular *os.File), length prefixes
// larger than the rest of the input are rejected before any memory is
// allocated for them.
func Decode(r io.Reader) (any, error) {
	return DecodeLimits(r, DefaultLimits)
}

// DecodeLimits is Decode with explicit resource limits.
func DecodeLimits(r io.Reader, lim Limits) (any, error) {
	m := NewMachine(r, nil, NodeValue, lim)
	v, err := m.Run()
	if err != nil {
		return nil, err
	}
	x, err := m.Any(&v)
	if err != nil {
		return nil, m.errf(err, "")
	}
	return x, nil
}

// memoIndex reads the memo index of a PUT or GET opcode in its encoding:
// a decimal line (protocol 0), one byte, or four; MEMOIZE uses the next
// free index.
func (d *Machine) memoIndex(op byte) (uint64, error) {
	switch op {
	case OpPut, OpGet:
		line, err := d.readLine()
		if err != nil {
			return 0, err
		}
		idx, err := strconv.ParseUint(string(line), 10, 63)
		if err != nil {
			return 0, d.errf(nil, "bad memo index %q", truncate(line))
		}
		return idx, nil
	case OpBinPut, OpBinGet:
		b, err := d.readByte()
		return uint64(b), err
	case OpLongBinPut, OpLongBinGet:
		u, err := d.uint32()
		return uint64(u), err
	}
	return uint64(d.nmemo), nil // OpMemoize
}

// The input is read into a window, d.buf[:d.n], of which d.buf[d.i:] is
// not yet consumed; d.off0 is the input offset of d.buf[0]. Opcodes and
// their arguments are decoded from the window with index arithmetic; the
// window is refilled (its unread tail moved to the front) only when an
// argument reaches past its end, so memory stays bounded by the window
// whatever the input's length.

// windowSize is the window's usual size (it grows for a longer short
// argument, at most to shortMax plus a little).
const windowSize = 64 << 10

// pos is the input offset of the next unread byte.
func (d *Machine) pos() int64 { return d.off0 + int64(d.i) }

// fill reads until at least k bytes are unread in the window or the input
// ends (or fails); it reports whether k bytes are there.
func (d *Machine) fill(k int) bool {
	if d.n-d.i >= k {
		return true
	}
	if d.rerr != nil {
		return false
	}
	if d.i > 0 {
		copy(d.buf, d.buf[d.i:d.n])
		d.off0 += int64(d.i)
		d.n -= d.i
		d.i = 0
	}
	if k > len(d.buf) {
		nb := make([]byte, max(k, 2*len(d.buf)))
		copy(nb, d.buf[:d.n])
		d.buf = nb
	}
	for d.n < k {
		m, err := d.r.Read(d.buf[d.n:])
		d.n += m
		if err != nil {
			d.rerr = err
			return d.n >= k
		}
		if m == 0 {
			d.zero++
			if d.zero > 100 {
				d.rerr = io.ErrNoProgress
				return false
			}
		}
	}
	return true
}

// short is the error of an argument that the input does not hold.
func (d *Machine) short() error {
	if d.rerr == nil || d.rerr == io.EOF {
		return d.truncated()
	}
	return d.errf(d.rerr, "read")
}

func (d *Machine) readByte() (byte, error) {
	if d.i >= d.n && !d.fill(1) {
		return 0, d.short()
	}
	b := d.buf[d.i]
	d.i++
	return b, nil
}

// peekN returns the next n bytes and consumes them; the slice is valid
// until the next read.
func (d *Machine) peekN(n int) ([]byte, error) {
	if d.n-d.i < n && !d.fill(n) {
		return nil, d.short()
	}
	b := d.buf[d.i : d.i+n : d.i+n]
	d.i += n
	return b, nil
}

// checkLen validates a length prefix before anything is allocated.
func (d *Machine) checkLen(n uint64) error {
	if n > MaxLen {
		return d.errf(nil, "length %d exceeds the %d-byte limit", n, MaxLen)
	}
	if d.size >= 0 && int64(n) > d.size-d.pos() {
		return d.errf(io.ErrUnexpectedEOF, "length %d exceeds the %d bytes left in the input", n, d.size-d.pos())
	}
	return nil
}

// readFull fills p from the window, then from the reader itself.
func (d *Machine) readFull(p []byte) error {
	k := copy(p, d.buf[d.i:d.n])
	d.i += k
	if k == len(p) {
		return nil
	}
	// The window is empty: read past it, then start it afresh.
	d.off0 += int64(d.n)
	d.i, d.n = 0, 0
	if d.rerr != nil {
		return d.short()
	}
	m, err := io.ReadFull(d.r, p[k:])
	d.off0 += int64(m)
	if err != nil {
		if err != io.ErrUnexpectedEOF && err != io.EOF {
			d.rerr = err
		} else {
			d.rerr = io.EOF
		}
		return d.short()
	}
	return nil
}

// readData reads n bytes into a new slice, counted as text (Limits). Large
// reads grow the slice as data actually arrives, so a lying length prefix
// on a stream of unknown size costs no more memory than the stream holds.
func (d *Machine) readData(n uint64) ([]byte, error) {
	if err := d.checkLen(n); err != nil {
		return nil, err
	}
	const chunk = 1 << 20
	if n <= chunk {
		if err := d.addText(int(n)); err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		if err := d.readFull(buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	// The buffer doubles, up to n, as data arrives: append's growth of
	// a quarter at a time, with a chunk of zeros made for each append,
	// allocated some six times the text (336 MB for a 60 MB string).
	buf := make([]byte, 0, chunk)
	for uint64(len(buf)) < n {
		m := int(min(n-uint64(len(buf)), chunk))
		if err := d.addText(m); err != nil {
			return nil, err
		}
		if cap(buf)-len(buf) < m {
			nb := make([]byte, len(buf), int(min(uint64(max(2*cap(buf), len(buf)+m)), n)))
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:len(buf)+m]
		if err := d.readFull(buf[len(buf)-m:]); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// readLine reads a protocol-0 argument line and returns it without its
// newline. The slice is only valid until the next read.
func (d *Machine) readLine() ([]byte, error) {
	scanned := 0
	for {
		if k := bytes.IndexByte(d.buf[d.i+scanned:d.n], '\n'); k >= 0 {
			line := d.buf[d.i : d.i+scanned+k]
			d.i += scanned + k + 1
			return line, nil
		}
		scanned = d.n - d.i
		if scanned >= windowSize {
			break // a long line: gather it in d.tmp
		}
		if !d.fill(scanned + 1) {
			d.i = d.n
			return nil, d.short()
		}
	}
	d.tmp = append(d.tmp[:0], d.buf[d.i:d.n]...)
	d.i = d.n
	for {
		if !d.fill(1) {
			return nil, d.short()
		}
		w := d.buf[d.i:d.n]
		k := bytes.IndexByte(w, '\n')
		if k < 0 {
			k = len(w)
		}
		d.tmp = append(d.tmp, w[:k]...)
		if len(d.tmp) > MaxLen {
			return nil, d.errf(nil, "line longer than %d bytes", MaxLen)
		}
		if k < len(w) {
			d.i += k + 1
			return d.tmp, nil
		}
		d.i = d.n
	}
}

func (d *Machine) uint32() (uint32, error) {
	b, err := d.peekN(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *Machine) uint64() (uint64, error) {
	b, err := d.peekN(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// parseInt parses a protocol-0 INT or LONG argument: decimal (or any
// base prefix Python's int(s, 0) accepts), int64 when it fits. Like
// Python's int_max_str_digits, a literal of more than MaxIntDigits digits
// is refused: converting it would cost time quadratic in its length.
func (d *Machine) parseInt(line []byte) (Val, error) {
	if n, err := strconv.ParseInt(string(line), 10, 64); err == nil {
		return IntVal(n), nil
	}
	if len(line) > MaxIntDigits {
		return Val{}, d.limitf("integer literal of %d digits exceeds the limit of %d digits", len(line), MaxIntDigits)
	}
	z, ok := new(big.Int).SetString(string(line), 0)
	if !ok {
		return Val{}, d.errf(nil, "bad integer %q", truncate(line))
	}
	if z.IsInt64() {
		return IntVal(z.Int64()), nil
	}
	return Val{Kind: KindBigInt, N: d.newObj(z)}, nil
}

// long is the value of a LONG1 or LONG4 argument.
func (d *Machine) long(b []byte) Val {
	v, z := decodeLong(b)
	if z != nil {
		return Val{Kind: KindBigInt, N: d.newObj(z)}
	}
	return v
}

// decodeLong decodes a little-endian two's-complement integer (LONG1/LONG4):
// an int, or a *big.Int beyond int64.
func decodeLong(b []byte) (Val, *big.Int) {
	n := len(b)
	if n <= 8 {
		return IntVal(smallLong(b)), nil
	}
	be := make([]byte, n)
	for i := range b {
		be[n-1-i] = b[i]
	}
	z := new(big.Int).SetBytes(be)
	if b[n-1]&0x80 != 0 {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	if z.IsInt64() {
		return IntVal(z.Int64()), nil
	}
	return Val{}, z
}

// smallLong is the little-endian two's-complement integer of at most
// eight bytes b (0 for none), sign-extended.
func smallLong(b []byte) int64 {
	shift := uint(64 - 8*len(b)) // 64 for no bytes: the value is 0
	if cap(b) >= 8 {
		// Eight bytes are behind b (the fast path's window): one load,
		// the bytes past b shifted out.
		return int64(binary.LittleEndian.Uint64(b[:8])<<shift) >> shift
	}
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	return int64(u<<shift) >> shift
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// simpleEscape maps the letter of a one-letter escape (\a … \v) to its byte.
var simpleEscape = [256]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// unquoteString decodes a protocol-0 STRING argument: a Python 2 repr of a
// byte string, quoted with ' or ", with the escapes of Python's
// codecs.escape_decode.
func unquoteString(b []byte) (string, error) {
	if len(b) < 2 || b[0] != b[len(b)-1] || (b[0] != '\'' && b[0] != '"') {
		return "", errors.New("the STRING argument must be quoted")
	}
	b = b[1 : len(b)-1]
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		i++
		switch c = b[i]; c {
		case '\n':
		case '\\', '\'', '"':
			out = append(out, c)
		case 'a', 'b', 'f', 'n', 'r', 't', 'v':
			out = append(out, simpleEscape[c])
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for k := 0; k < 2 && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(b[i]-'0')
			}
			out = append(out, byte(v))
		case 'x':
			if i+2 >= len(b) {
				return "", errors.New("truncated \\x escape in STRING")
			}
			h1, ok1 := unhex(b[i+1])
			h2, ok2 := unhex(b[i+2])
			if !ok1 || !ok2 {
				return "", errors.New("invalid \\x escape in STRING")
			}
			out = append(out, h1<<4|h2)
			i += 2
		default:
			out = append(out, '\\', c)
		}
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// rawUnicodeEscape decodes Python's raw-unicode-escape codec (the UNICODE
// argument): \uXXXX and \UXXXXXXXX escapes, when preceded by an odd number
// of backslashes, give a code point; every other byte is a Latin-1 code
// point. Malformed escapes are kept literally.
func rawUnicodeEscape(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = utf8.AppendRune(out, rune(c))
			continue
		}
		// Count the run of backslashes; only the last one of an odd run
		// can start an escape.
		j := i
		for j < len(b) && b[j] == '\\' {
			j++
		}
		run := j - i
		if run%2 == 0 || j >= len(b) || (b[j] != 'u' && b[j] != 'U') {
			for k := 0; k < run; k++ {
				out = append(out, '\\')
			}
			i = j - 1
			continue
		}
		for k := 0; k < run-1; k++ {
			out = append(out, '\\')
		}
		n := 4
		if b[j] == 'U' {
			n = 8
		}
		var r rune
		ok := j+n < len(b)
		for k := 1; ok && k <= n; k++ {
			h, hok := unhex(b[j+k])
			ok = hok
			r = r<<4 | rune(h)
		}
		if !ok || r > utf8.MaxRune {
			out = append(out, '\\')
			i = j - 1
			continue
		}
		out = utf8.AppendRune(out, r)
		i = j + n
	}
	return string(out)
}
