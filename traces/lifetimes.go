package traces

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// The lifetime-table formats are documented in doc.go ("Lifetime tables").

// LifetimesCSVHeader is the header line of a MiniMalloc/idealloc lifetime
// CSV; LifetimesCSVSolutionHeader that of a MiniMalloc solution, which adds
// each buffer's offset (ignored: the trace is the problem, not a solution).
const (
	LifetimesCSVHeader         = "id,lower,upper,size"
	LifetimesCSVSolutionHeader = "id,lower,upper,size,offset"
)

// maxLifetimeRows bounds a lifetime table: the whole table is held in
// memory and sorted (reading 2^20 rows allocates about 200 MB and takes
// under a second), ids are implicit, so a gzipped allocatorSim log of
// identical rows compresses a thousandfold, and every buffer may be live
// at once in a replay. The largest real table the project has seen holds
// 18,692 buffers. maxLifetimeLine bounds the line numbers a row records
// (blank lines count too). Variables so that a test can lower them.
var (
	maxLifetimeRows       = 1 << 20
	maxLifetimeLine int64 = 1<<32 - 1
)

// lifetimeRow is one buffer: live on [lower, upper) in logical time.
type lifetimeRow struct {
	lower, upper, size int64
	line               uint32 // line of the row in the file
	id                 uint32 // event id: rank of the alloc in the stream
}

// lifetimeReader serves a lifetime table as events: an alloc at each
// buffer's lower instant, a free at its upper instant, frees before allocs
// at the same instant, ties in file order.
//
// The table is read whole by the embedded lineReader, whose errors name no
// event (the order of the events is known only once every row is read);
// afterwards it keeps the position: Pos's line is the row of the last event.
type lifetimeReader struct {
	lineReader
	meta   Meta
	rows   []lifetimeRow
	allocs []uint32 // row indices in alloc order
	frees  []uint32 // row indices in free order
	ai, fi int
}

// NewLifetimesCSVReader imports a MiniMalloc/idealloc lifetime CSV (header
// "id,lower,upper,size", one buffer per row, live on [lower, upper) in
// logical time) from r, gzip-compressed or not. It reads and checks the
// whole table before returning. name is used in error messages. Close does
// not close r.
func NewLifetimesCSVReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newLifetimeReader(name, br, gz, nil, FormatLifetimesCSV)
}

// NewAllocatorSimReader imports an allocatorSim input log (one buffer per
// line, "alloc_op free_op size", live on [alloc_op, free_op) in logical
// time) from r, gzip-compressed or not. It reads and checks the whole
// table before returning. name is used in error messages. Close does not
// close r.
func NewAllocatorSimReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newLifetimeReader(name, br, gz, nil, FormatAllocatorSim)
}

func newLifetimeReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer, format string) (*lifetimeReader, error) {
	r := &lifetimeReader{lineReader: newLineReader(name, br, gz, closer)}
	r.header = true
	defer r.Close() // the table is read whole: nothing is read after this
	var err error
	if format == FormatLifetimesCSV {
		err = r.readCSV()
	} else {
		err = r.readSim()
	}
	if err != nil {
		return nil, err
	}
	r.order()
	if err := r.Close(); err != nil {
		return nil, &PosError{File: name, Event: -1, Err: err}
	}
	r.header, r.err = false, nil
	peak := r.peak()
	if format == FormatLifetimesCSV {
		r.meta = Meta{
			{"format", FormatLifetimesCSV},
			{"source", "MiniMalloc/idealloc lifetime table id,lower,upper,size: each buffer live on [lower, upper)"},
		}
	} else {
		r.meta = Meta{
			{"format", FormatAllocatorSim},
			{"source", "allocatorSim log alloc_op free_op size: each buffer live on [alloc_op, free_op)"},
		}
	}
	r.meta = append(r.meta,
		KV{"time-unit", "logical"},
		KV{"time", "event times are the table's logical instants, not nanoseconds; frees come before allocs at the same instant, ties in file order"},
		KV{"ids", "one id per buffer, sequential from 1 in the order of the allocs in the stream"},
		KV{"buffers", strconv.Itoa(len(r.rows))},
		KV{"peak-live-bytes", strconv.FormatInt(peak, 10)},
	)
	return r, nil
}

// nextRow returns the next non-blank line with trailing blanks removed, or
// io.EOF.
func (r *lifetimeReader) nextRow() ([]byte, error) {
	for {
		line, err := r.next()
		if err != nil {
			return nil, err
		}
		line = trimRight(line)
		i := 0
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i < len(line) {
			return line, nil
		}
	}
}

// addRow checks the row just read and appends it.
func (r *lifetimeReader) addRow(lower, upper, size int64) error {
	if upper <= lower {
		return r.fail("empty lifetime: upper %d <= lower %d (a buffer is live on [lower, upper))", upper, lower)
	}
	if len(r.rows) >= maxLifetimeRows {
		return r.fail("more than %d rows: too large for a lifetime table", maxLifetimeRows)
	}
	if int64(r.line) > maxLifetimeLine {
		return r.fail("a row after line %d: too long for a lifetime table", maxLifetimeLine)
	}
	r.rows = append(r.rows, lifetimeRow{lower: lower, upper: upper, size: size, line: uint32(r.line)})
	return nil
}

func (r *lifetimeReader) readCSV() error {
	line, err := r.next()
	if err == io.EOF {
		return r.failAt(1, fmt.Errorf("empty input: missing header %q", LifetimesCSVHeader))
	}
	if err != nil {
		return err
	}
	cols := 4
	switch string(trimRight(line)) {
	case LifetimesCSVHeader:
	case LifetimesCSVSolutionHeader:
		cols = 5
	default:
		return r.fail("missing header %q (or %q)", LifetimesCSVHeader, LifetimesCSVSolutionHeader)
	}
	seen := make(map[uint64]uint32)
	var f [5][]byte
	for {
		line, err := r.nextRow()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		k := 0
		for rest := line; ; k++ {
			c := bytes.IndexByte(rest, ',')
			if k < len(f) {
				if c < 0 {
					f[k] = trimBlanks(rest)
				} else {
					f[k] = trimBlanks(rest[:c])
				}
			}
			if c < 0 {
				break
			}
			rest = rest[c+1:]
		}
		if k+1 != cols {
			return r.fail("row has %d columns, want %d (%s)", k+1, cols, LifetimesCSVHeader)
		}
		id, err := lifetimeUint(f[0], "id")
		if err != nil {
			return r.failErr(err)
		}
		lower, upper, size, err := lifetimeNums(f[1], f[2], f[3], "lower", "upper")
		if err != nil {
			return r.failErr(err)
		}
		if cols == 5 {
			if _, err := lifetimeUint(f[4], "offset"); err != nil {
				return r.failErr(err)
			}
		}
		if first, dup := seen[id]; dup {
			return r.fail("duplicate id %d (first on line %d)", id, first)
		}
		seen[id] = uint32(r.line)
		if err := r.addRow(lower, upper, size); err != nil {
			return err
		}
	}
}

func (r *lifetimeReader) readSim() error {
	for {
		line, err := r.nextRow()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var f [3][]byte
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
		if k != 3 {
			return r.fail("line has %d fields, want 3 (alloc_op free_op size)", k)
		}
		lower, upper, size, err := lifetimeNums(f[0], f[1], f[2], "alloc_op", "free_op")
		if err != nil {
			return r.failErr(err)
		}
		if err := r.addRow(lower, upper, size); err != nil {
			return err
		}
	}
}

// lifetimeNums parses the start, end and size of a row.
func lifetimeNums(lo, up, sz []byte, loName, upName string) (lower, upper, size int64, err error) {
	if lower, err = lifetimeInt(lo, loName); err != nil {
		return
	}
	if upper, err = lifetimeInt(up, upName); err != nil {
		return
	}
	if size, err = lifetimeInt(sz, "size"); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %w", ErrBadSize, err)
	}
	if size == 0 || size > MaxSize {
		return 0, 0, 0, fmt.Errorf("%w: size %d (want 1..%d)", ErrBadSize, size, MaxSize)
	}
	return lower, upper, size, nil
}

// lifetimeUint parses a non-negative decimal uint64.
func lifetimeUint(tok []byte, what string) (uint64, error) {
	if v, ok := parseUint(tok); ok {
		return v, nil
	}
	return 0, numError(tok, what, "uint64")
}

// lifetimeInt parses a non-negative decimal int64.
func lifetimeInt(tok []byte, what string) (int64, error) {
	if v, ok := parseUint(tok); ok && v <= 1<<63-1 {
		return int64(v), nil
	}
	return 0, numError(tok, what, "int64")
}

// numError says what is wrong with tok, which should have been a
// non-negative decimal integer that fits typ.
func numError(tok []byte, what, typ string) error {
	switch {
	case len(tok) == 0:
		return fmt.Errorf("missing %s", what)
	case tok[0] == '-' && allDigits(tok[1:]):
		return fmt.Errorf("negative %s %s", what, tok)
	case allDigits(tok):
		return fmt.Errorf("%s %s overflows %s", what, tok, typ)
	}
	return fmt.Errorf("%s %q is not a non-negative decimal integer", what, tok)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// trimBlanks drops leading and trailing spaces, tabs and carriage returns.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (isBlank(b[0]) || b[0] == '\r') {
		b = b[1:]
	}
	return trimRight(b)
}

// order sorts the allocs by (lower, file order) and the frees by (upper,
// file order), and numbers the buffers in alloc order.
func (r *lifetimeReader) order() {
	n := len(r.rows)
	r.allocs = make([]uint32, n)
	r.frees = make([]uint32, n)
	for i := range n {
		r.allocs[i], r.frees[i] = uint32(i), uint32(i)
	}
	rows := r.rows
	// Indices break ties, so that an unstable sort gives file order.
	slices.SortFunc(r.allocs, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(rows[a].lower, rows[b].lower), cmp.Compare(a, b))
	})
	slices.SortFunc(r.frees, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(rows[a].upper, rows[b].upper), cmp.Compare(a, b))
	})
	for rank, i := range r.allocs {
		rows[i].id = uint32(rank + 1)
	}
}

// peak is the largest sum of live sizes over the stream.
func (r *lifetimeReader) peak() int64 {
	var live, peak int64
	fi := 0
	for _, a := range r.allocs {
		for fi < len(r.frees) && r.rows[r.frees[fi]].upper <= r.rows[a].lower {
			live -= r.rows[r.frees[fi]].size
			fi++
		}
		live += r.rows[a].size
		peak = max(peak, live)
	}
	return peak
}

func (r *lifetimeReader) Next() (Event, error) {
	switch {
	case r.fi < len(r.frees) && (r.ai == len(r.allocs) || r.rows[r.frees[r.fi]].upper <= r.rows[r.allocs[r.ai]].lower):
		row := &r.rows[r.frees[r.fi]]
		r.fi++
		r.returned(int(row.line))
		return Event{Op: OpFree, ID: uint64(row.id), Time: row.upper}, nil
	case r.ai < len(r.allocs):
		row := &r.rows[r.allocs[r.ai]]
		r.ai++
		r.returned(int(row.line))
		return Event{Op: OpAlloc, ID: uint64(row.id), Size: row.size, Time: row.lower}, nil
	}
	return Event{}, io.EOF
}

func (r *lifetimeReader) Meta() Meta { return r.meta }

var _ Reader = (*lifetimeReader)(nil)
