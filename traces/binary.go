package traces

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// The binary native format is documented in doc.go ("Native binary
// format"); this file is its reader and writer.

// BinaryMagic opens every binary native trace; BinaryVersion, the byte that
// follows it, is the version this package reads and writes.
// Version 1 is read and written as it always was; version 2 adds
// launches, kinds and donations (doc.go), and a writer uses it only when
// asked (WriterOptions.Version).
const (
	BinaryMagic   = "membench-trace-bin"
	BinaryVersion = 2
)

// Record tags: the low two bits are the kind, the others flags.
const (
	binKindAlloc = 0
	binKindFree  = 1
	binKindMark  = 2
	binKindEnd   = 3
	binKindMask  = 3

	binTime    = 0x04 // a time delta follows
	binStream  = 0x08 // alloc: a stream delta follows (else the previous alloc's stream)
	binNextID  = 0x10 // alloc: the id is the previous alloc's id + 1 (no id field)
	binAllocOK = binKindMask | binTime | binStream | binNextID
	binOtherOK = binKindMask | binTime

	// Version 2.
	binKind     = 0x20 // alloc: a kind byte follows the stream
	binDonor    = 0x40 // alloc: a donor delta follows the kind
	binLaunch   = 0x08 // mark: the record is a launch (OpLaunch)
	binEnd      = 0x10 // mark: the record is a launch end (OpLaunchEnd)
	binAllocOK2 = binAllocOK | binKind | binDonor
	binMarkOK2  = binOtherOK | binLaunch | binEnd
)

// Limits of the binary format, chosen so that every binary trace also has
// a text form that the text reader accepts (a line is at most 1 MiB, and a
// quoted label takes at most 4 bytes per byte).
const (
	maxBinaryString = 128 << 10                      // a mark label, a meta key or a meta value
	maxBinaryLabels = 4096                           // labels in the table of repeated labels
	maxTableLabel   = 1024                           // bytes of a label that joins the table (and that a text reader interns)
	binMaxRecord    = 1 + 10 + 10 + 10 + 1 + 10 + 10 // tag, id, size, stream, kind, donor, time
)

// binaryReader streams a binary native trace. It decodes records in place
// in its buffer and allocates nothing per event except the string of a
// mark label not seen before.
type binaryReader struct {
	input
	name   string
	src    io.Reader // the (decompressed) content
	buf    []byte
	r, w   int   // buf[r:w] is read but not decoded
	off    int64 // offset in the content of buf[0]
	eof    bool  // src is exhausted (or failed: srcErr)
	srcErr error

	meta    Meta
	version byte // the header's: 1 or 2
	n       int  // events returned so far

	prevAlloc, prevFree  uint64
	prevStream, prevTime int64
	labels               []string

	done bool  // the end record was read
	err  error // sticky
}

// NewBinaryReader reads a binary native trace from r, gzip-compressed or
// not (detected from the content). It reads the header and the meta before
// returning. name is used in error messages. Close does not close r.
func NewBinaryReader(name string, r io.Reader) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	return newBinaryReader(name, br, gz, nil)
}

func newBinaryReader(name string, br *bufio.Reader, gz *gzip.Reader, closer io.Closer) (*binaryReader, error) {
	r := &binaryReader{input: input{gz, closer}, name: name, src: br, buf: make([]byte, bufSize)}
	if err := r.readHeader(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// fill reads until buf[r:w] holds at least need bytes or the content ends.
func (r *binaryReader) fill(need int) {
	if r.eof {
		return
	}
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.off += int64(r.r)
		r.r, r.w = 0, n
	}
	if need > len(r.buf) {
		nb := make([]byte, max(need, 2*len(r.buf)))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for r.w < need {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		if err != nil {
			r.eof = true
			if err != io.EOF {
				r.srcErr = err
			}
			return
		}
	}
}

// ensure makes buf[r:w] hold at least need bytes, or reports why not.
func (r *binaryReader) ensure(need int, what string) error {
	if r.w-r.r >= need {
		return nil
	}
	r.fill(need)
	if r.w-r.r >= need {
		return nil
	}
	return r.truncated(what)
}

// truncated is the error for content that ends (or fails) inside a record.
func (r *binaryReader) truncated(what string) error {
	var err error
	switch {
	case r.srcErr == io.ErrUnexpectedEOF && r.gz != nil:
		err = errTruncatedGzip
	case r.srcErr != nil && r.gz != nil:
		err = fmt.Errorf("gzip: %w", r.srcErr)
	case r.srcErr != nil:
		err = r.srcErr
	default:
		err = fmt.Errorf("truncated binary trace: the content ends inside %s", what)
	}
	return r.failAt(r.off+int64(r.w), err)
}

func (r *binaryReader) event() int {
	if r.meta == nil && r.n == 0 && !r.done {
		return -1
	}
	return r.n
}

func (r *binaryReader) failAt(off int64, err error) error {
	r.err = &PosError{File: r.name, Event: r.event(), Err: fmt.Errorf("at byte %d: %w", off, err)}
	return r.err
}

func (r *binaryReader) corrupt(off int64, format string, args ...any) error {
	return r.failAt(off, fmt.Errorf("corrupt binary trace: "+format, args...))
}

// readUvarint decodes a varint at buf[r] and consumes it.
func (r *binaryReader) readUvarint(what string) (uint64, error) {
	if err := r.ensure(1, what); err != nil {
		return 0, err
	}
	if r.w-r.r < binary.MaxVarintLen64 {
		r.fill(binary.MaxVarintLen64)
	}
	v, i := varintAt(r.buf[r.r:r.w], 0)
	if i < 0 {
		return 0, r.badVarint(r.buf[r.r:r.w], 0, what)
	}
	r.r += i
	return v, nil
}

// readString decodes a length-prefixed string and consumes it.
func (r *binaryReader) readString(what string) (string, error) {
	at := r.off + int64(r.r)
	n, err := r.readUvarint(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxBinaryString {
		return "", r.corrupt(at, "%s of %d bytes (at most %d)", what, n, maxBinaryString)
	}
	if err := r.ensure(int(n), what); err != nil {
		return "", err
	}
	s := string(r.buf[r.r : r.r+int(n)])
	r.r += int(n)
	return s, nil
}

func (r *binaryReader) readHeader() error {
	hl := len(BinaryMagic) + 1
	r.fill(hl)
	if r.w < len(BinaryMagic) || string(r.buf[:len(BinaryMagic)]) != BinaryMagic {
		if r.srcErr != nil {
			return r.truncated("the header")
		}
		return r.failAt(0, fmt.Errorf("missing header: a binary trace starts with %q and a version byte", BinaryMagic))
	}
	if r.w < hl {
		return r.truncated("the header")
	}
	r.version = r.buf[len(BinaryMagic)]
	if r.version != 1 && r.version != 2 {
		return r.failAt(int64(len(BinaryMagic)), fmt.Errorf("unsupported binary format version %d (this reader reads versions 1 and 2)", r.version))
	}
	r.r = hl
	at := r.off + int64(r.r)
	count, err := r.readUvarint("the meta count")
	if err != nil {
		return err
	}
	if count > maxMetaEntries {
		return r.corrupt(at, "%d meta entries (at most %d)", count, maxMetaEntries)
	}
	var mb metaBuilder
	for range count {
		at := r.off + int64(r.r)
		k, err := r.readString("a meta key")
		if err != nil {
			return err
		}
		if !validMetaKey(k) {
			return r.corrupt(at, "meta key %q (want printable characters without spaces)", k)
		}
		at = r.off + int64(r.r)
		v, err := r.readString("a meta value")
		if err != nil {
			return err
		}
		if metaValue(v) != v {
			return r.corrupt(at, "meta value %q has a newline or leading or trailing blanks", v)
		}
		if err := mb.set(k, v); err != nil {
			return r.corrupt(at, "%v", err)
		}
	}
	r.meta = mb.meta
	if r.meta == nil {
		r.meta = Meta{} // non-nil: the header is read (see event)
	}
	return nil
}

func (r *binaryReader) Meta() Meta { return r.meta }

// FormatVersion is the header's version (see traces.FormatVersion).
func (r *binaryReader) FormatVersion() int { return int(r.version) }

// Pos has the name and the index of the last event returned; a binary
// trace has no lines (its errors give the byte offset instead).
func (r *binaryReader) Pos() Pos { return Pos{File: r.name, Event: r.n - 1} }

// Next decodes one record. Varints are decoded inline, one byte at a
// time while the high bit is set (most fields fit one or two bytes); any
// varint that ends past the buffer or overflows goes to badVarint, which
// tells which it was.
func (r *binaryReader) Next() (Event, error) {
	var ev Event
	err := r.decode(&ev)
	return ev, err
}

// decode is Next into *ev, which it overwrites (NextBatch decodes into
// its batch without a copy).
func (r *binaryReader) decode(ev *Event) error {
	if r.err != nil {
		*ev = Event{}
		return r.err
	}
	if r.done {
		*ev = Event{}
		return io.EOF
	}
	if r.w-r.r < binMaxRecord {
		r.fill(binMaxRecord)
	}
	b := r.buf[r.r:r.w]
	if len(b) == 0 {
		*ev = Event{}
		return r.truncated("the event records (no end record)")
	}
	tag := b[0]
	i := 1
	*ev = Event{Time: NoTime}
	var d uint64
	switch tag & binKindMask {
	case binKindAlloc:
		if tag&^binAllocOK != 0 && (r.version == 1 || tag&^binAllocOK2 != 0) {
			return r.badTag(tag)
		}
		ev.Op = OpAlloc
		if tag&binNextID != 0 {
			r.prevAlloc++
		} else {
			if i < len(b) && b[i] < 0x80 {
				d, i = uint64(b[i]), i+1
			} else if d, i = varintMore(b, i); i < 0 {
				return r.badVarint(b, 1, "an alloc id")
			}
			r.prevAlloc += uint64(unzigzag(d))
		}
		ev.ID = r.prevAlloc
		s := i
		if i < len(b) && b[i] < 0x80 {
			d, i = uint64(b[i]), i+1
		} else if d, i = varintMore(b, i); i < 0 {
			return r.badVarint(b, s, "an alloc size")
		}
		if d == 0 || d > uint64(MaxSize) {
			return r.failAt(r.off+int64(r.r+s), fmt.Errorf("%w: alloc size %d (want 1..%d)", ErrBadSize, d, MaxSize))
		}
		ev.Size = int64(d)
		if tag&binStream != 0 {
			s := i
			if i < len(b) && b[i] < 0x80 {
				d, i = uint64(b[i]), i+1
			} else if d, i = varintMore(b, i); i < 0 {
				return r.badVarint(b, s, "an alloc stream")
			}
			r.prevStream += unzigzag(d)
		}
		ev.Stream = r.prevStream
		if tag&(binKind|binDonor) != 0 {
			var err error
			if i, err = r.allocV2(ev, tag, b, i); err != nil {
				return err
			}
		}
	case binKindFree:
		if tag&^binOtherOK != 0 {
			return r.badTag(tag)
		}
		ev.Op = OpFree
		if i < len(b) && b[i] < 0x80 {
			d, i = uint64(b[i]), i+1
		} else if d, i = varintMore(b, i); i < 0 {
			return r.badVarint(b, 1, "a free id")
		}
		r.prevFree += uint64(unzigzag(d))
		ev.ID = r.prevFree
	case binKindMark:
		if tag&^binOtherOK != 0 && (r.version == 1 || tag&^binMarkOK2 != 0 || tag&(binLaunch|binEnd) == binLaunch|binEnd) {
			return r.badTag(tag)
		}
		ev.Op = OpMark
		if tag&binLaunch != 0 {
			ev.Op = OpLaunch
		} else if tag&binEnd != 0 {
			ev.Op = OpLaunchEnd
		}
		var err error
		if b, i, err = r.mark(ev, b); err != nil {
			return err
		}
	default: // binKindEnd
		*ev = Event{}
		_, err := r.end(tag)
		return err
	}
	if tag&binTime != 0 {
		s := i
		if i < len(b) && b[i] < 0x80 {
			d, i = uint64(b[i]), i+1
		} else if d, i = varintMore(b, i); i < 0 {
			return r.badVarint(b, s, "a time")
		}
		t := r.prevTime + unzigzag(d)
		if t < 0 {
			return r.corrupt(r.off+int64(r.r+s), "negative or overflowing time")
		}
		r.prevTime, ev.Time = t, t
	}
	r.r += i
	r.n++
	return nil
}

// NextBatch implements BatchReader (a binary trace has no lines): each
// event decoded in place in buf, with no interface call or copy.
func (r *binaryReader) NextBatch(buf []Event) ([]Event, error) {
	for n := range buf {
		if err := r.decode(&buf[n]); err != nil {
			return buf[:n], err
		}
	}
	return buf, nil
}

// allocV2 decodes the kind and the donor of an alloc record (tag has
// binKind or binDonor) from b[i:], and returns the index after them.
// A donor needs the kind output (so binDonor needs binKind).
func (r *binaryReader) allocV2(ev *Event, tag byte, b []byte, i int) (int, error) {
	if tag&binKind != 0 {
		if i >= len(b) {
			return i, r.truncated("an alloc kind")
		}
		k := Kind(b[i])
		if k == KindNone || k >= numKinds {
			return i, r.corrupt(r.off+int64(r.r+i), "alloc kind %d (want 1..%d)", b[i], numKinds-1)
		}
		ev.Kind = k
		i++
	}
	if tag&binDonor != 0 {
		s := i
		d, j := varintAt(b, i)
		if j < 0 {
			return i, r.badVarint(b, s, "an alloc donor")
		}
		ev.Donated, ev.Donor, i = true, ev.ID+uint64(unzigzag(d)), j
		if ev.Kind != KindOutput {
			return i, r.failAt(r.off+int64(r.r+s), fmt.Errorf("corrupt binary trace: %w: a %v alloc has a donor (only an output aliases a donated input)", ErrBadDonor, ev.Kind))
		}
		if ev.Donor == ev.ID {
			return i, r.failAt(r.off+int64(r.r+s), fmt.Errorf("corrupt binary trace: %w: alloc %d names itself as its donor", ErrBadDonor, ev.ID))
		}
	}
	return i, nil
}

// varintAt decodes the varint at b[i] and returns it with the index after
// it, or i < 0 if b ends inside it or it overflows. Small enough to be
// inlined: the one-byte case costs a compare.
func varintAt(b []byte, i int) (uint64, int) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return varintMore(b, i)
}

// varintMore is varintAt past the one-byte case, which Next inlines by
// hand (varintAt is a little over the compiler's inlining budget).
func varintMore(b []byte, i int) (uint64, int) {
	if i+1 < len(b) && b[i+1] < 0x80 {
		return uint64(b[i]&0x7f) | uint64(b[i+1])<<7, i + 2
	}
	if i+2 < len(b) && b[i+2] < 0x80 {
		return uint64(b[i]&0x7f) | uint64(b[i+1]&0x7f)<<7 | uint64(b[i+2])<<14, i + 3
	}
	if i >= len(b) {
		return 0, -1
	}
	v, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// mark decodes a mark record's label into ev. b is the buffer from the
// record's tag; it returns b (which may have moved: a long label is read
// into the buffer) and the index after the label.
func (r *binaryReader) mark(ev *Event, b []byte) ([]byte, int, error) {
	x, i := varintAt(b, 1)
	if i < 0 {
		return b, i, r.badVarint(b, 1, "a mark label")
	}
	if x&1 != 0 {
		k := x >> 1
		if k >= uint64(len(r.labels)) {
			return b, i, r.corrupt(r.off+int64(r.r+1), "mark label reference %d, but %d labels were defined", k, len(r.labels))
		}
		ev.Label = r.labels[k]
		return b, i, nil
	}
	l := x >> 1
	if l > maxBinaryString {
		return b, i, r.corrupt(r.off+int64(r.r+1), "mark label of %d bytes (at most %d)", l, maxBinaryString)
	}
	// The label and a time after it must be in the buffer.
	if need := i + int(l) + binary.MaxVarintLen64; len(b) < need {
		r.fill(need)
		b = r.buf[r.r:r.w]
		if len(b) < i+int(l) {
			return b, i, r.truncated("a mark label")
		}
	}
	ev.Label = string(b[i : i+int(l)])
	if len(r.labels) < maxBinaryLabels && l <= maxTableLabel {
		r.labels = append(r.labels, ev.Label)
	}
	return b, i + int(l), nil
}

func (r *binaryReader) badTag(tag byte) error {
	return r.corrupt(r.off+int64(r.r), "record tag %#02x has unknown flags", tag)
}

// badVarint reports the varint at b[i] (b starting at buf[r]), which is
// cut short or overflows.
func (r *binaryReader) badVarint(b []byte, i int, what string) error {
	if _, n := binary.Uvarint(b[min(i, len(b)):]); n < 0 {
		return r.corrupt(r.off+int64(r.r+i), "%s overflows 64 bits", what)
	}
	return r.truncated(what)
}

// end reads the end record: the tag, the event count, then nothing.
func (r *binaryReader) end(tag byte) (Event, error) {
	at := r.off + int64(r.r)
	if tag != binKindEnd {
		return Event{}, r.badTag(tag)
	}
	r.r++
	count, err := r.readUvarint("the end record's event count")
	if err != nil {
		return Event{}, err
	}
	if count != uint64(r.n) {
		return Event{}, r.corrupt(at, "the end record counts %d events, but %d were read", count, r.n)
	}
	r.fill(1)
	if r.srcErr != nil {
		return Event{}, r.truncated("the end record")
	}
	if r.w > r.r {
		return Event{}, r.corrupt(r.off+int64(r.r), "data after the end record")
	}
	r.done = true
	return Event{}, io.EOF
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// BinaryWriter writes the binary native format (see doc.go). It takes the
// same meta and events as Writer, with the same checks, so a trace has a
// text form exactly when it has a binary one; in addition a mark label, a
// meta key and a meta value may be at most 128 KiB.
type BinaryWriter struct {
	sink
	version int
	buf     []byte
	n       int

	prevAlloc, prevFree  uint64
	prevStream, prevTime int64
	labels               map[string]uint64
}

// NewBinaryWriter starts a binary native trace on w and writes its header
// and meta. Meta is written as Writer writes it (a newline in a value
// becomes a space, leading and trailing blanks are dropped), so text and
// binary give the same Meta back. opts.Gzip compresses the output. Close
// writes the end record and flushes; it does not close w.
func NewBinaryWriter(w io.Writer, meta Meta, opts WriterOptions) (*BinaryWriter, error) {
	if err := checkMetaKeys(meta); err != nil {
		return nil, err
	}
	for _, kv := range meta {
		if len(kv.Key) > maxBinaryString || len(metaValue(kv.Value)) > maxBinaryString {
			return nil, fmt.Errorf("traces: meta entry %q longer than %d bytes", kv.Key, maxBinaryString)
		}
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
	bw := &BinaryWriter{sink: out, version: version, buf: make([]byte, 0, 128), labels: make(map[string]uint64)}
	b := append(bw.buf[:0], BinaryMagic...)
	b = append(b, byte(version))
	b = binary.AppendUvarint(b, uint64(len(meta)))
	for _, kv := range meta {
		v := metaValue(kv.Value)
		b = binary.AppendUvarint(b, uint64(len(kv.Key)))
		b = append(b, kv.Key...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	if _, err := bw.bw.Write(b); err != nil {
		return nil, err
	}
	return bw, nil
}

// Write appends one event. Only the fields that matter to the event's Op
// are written, as by Writer. An alloc's size must be in 1..MaxSize, a time
// NoTime or non-negative, and a mark label at most 128 KiB.
func (w *BinaryWriter) Write(ev Event) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if err := checkEvent(w.version, w.n, &ev); err != nil {
		return err
	}
	var tag byte
	if ev.Time != NoTime {
		if ev.Time < 0 {
			return fmt.Errorf("traces: writing event %d: negative time %d", w.n, ev.Time)
		}
		tag |= binTime
	}
	switch ev.Op {
	case OpAlloc:
		if ev.Size <= 0 || ev.Size > MaxSize {
			return fmt.Errorf("traces: writing event %d: %w: alloc size %d (want 1..%d)", w.n, ErrBadSize, ev.Size, MaxSize)
		}
		tag |= binKindAlloc
		if ev.ID == w.prevAlloc+1 {
			tag |= binNextID
		}
		if ev.Stream != w.prevStream {
			tag |= binStream
		}
		if ev.Kind != KindNone {
			tag |= binKind
		}
		if ev.Donated {
			tag |= binDonor
		}
		b = append(b, tag)
		if tag&binNextID == 0 {
			b = binary.AppendUvarint(b, zigzag(int64(ev.ID-w.prevAlloc)))
		}
		b = binary.AppendUvarint(b, uint64(ev.Size))
		if tag&binStream != 0 {
			b = binary.AppendUvarint(b, zigzag(ev.Stream-w.prevStream))
		}
		if tag&binKind != 0 {
			b = append(b, byte(ev.Kind))
		}
		if tag&binDonor != 0 {
			b = binary.AppendUvarint(b, zigzag(int64(ev.Donor-ev.ID)))
		}
		w.prevAlloc, w.prevStream = ev.ID, ev.Stream
	case OpFree:
		b = append(b, tag|binKindFree)
		b = binary.AppendUvarint(b, zigzag(int64(ev.ID-w.prevFree)))
		w.prevFree = ev.ID
	case OpMark, OpLaunch, OpLaunchEnd:
		if len(ev.Label) > maxBinaryString {
			return fmt.Errorf("traces: writing event %d: %v label of %d bytes (at most %d)", w.n, ev.Op, len(ev.Label), maxBinaryString)
		}
		switch ev.Op {
		case OpLaunch:
			tag |= binLaunch
		case OpLaunchEnd:
			tag |= binEnd
		}
		b = append(b, tag|binKindMark)
		if k, ok := w.labels[ev.Label]; ok {
			b = binary.AppendUvarint(b, k<<1|1)
		} else {
			b = binary.AppendUvarint(b, uint64(len(ev.Label))<<1)
			b = append(b, ev.Label...)
			if len(w.labels) < maxBinaryLabels && len(ev.Label) <= maxTableLabel {
				w.labels[ev.Label] = uint64(len(w.labels))
			}
		}
	default:
		return fmt.Errorf("traces: writing event %d: unknown op %v", w.n, ev.Op)
	}
	if tag&binTime != 0 {
		b = binary.AppendUvarint(b, zigzag(ev.Time-w.prevTime))
		w.prevTime = ev.Time
	}
	w.buf = b
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	w.n++
	return nil
}

// Close writes the end record (the event count), flushes buffered output
// and ends the gzip stream if there is one. It does not close the
// io.Writer given to NewBinaryWriter. Closing twice is a no-op; writing
// after Close is an error.
func (w *BinaryWriter) Close() error {
	if w.err != nil {
		return w.close(nil)
	}
	b := append(w.buf[:0], binKindEnd)
	return w.close(binary.AppendUvarint(b, uint64(w.n)))
}

// WriteBinary writes every event of r, with r's meta, to w in the binary
// native format, and returns how many events it wrote. It does not close
// r or w.
func WriteBinary(w io.Writer, r Reader, opts WriterOptions) (int, error) {
	if opts.Version == 0 {
		opts.Version = FormatVersion(r)
	}
	bw, err := NewBinaryWriter(w, r.Meta(), opts)
	if err != nil {
		return 0, err
	}
	return copyEvents(bw, r)
}

var _ Reader = (*binaryReader)(nil)
