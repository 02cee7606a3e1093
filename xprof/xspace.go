package xprof

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of tsl/profiler/protobuf/xplane.proto, the schema of
// *.xplane.pb files (restated in ../shared/traces/README.md, profiler/).
const (
	spacePlanes = 1 // XSpace.planes

	planeID        = 1 // XPlane.id
	planeName      = 2 // XPlane.name
	planeLines     = 3 // XPlane.lines
	planeEventMeta = 4 // XPlane.event_metadata, map<int64, XEventMetadata>
	planeStatMeta  = 5 // XPlane.stat_metadata, map<int64, XStatMetadata>

	lineTimestampNs = 3 // XLine.timestamp_ns
	lineEvents      = 4 // XLine.events

	eventMetadataID = 1 // XEvent.metadata_id
	eventOffsetPs   = 2 // XEvent.offset_ps
	eventStats      = 4 // XEvent.stats

	statMetadataID = 1 // XStat.metadata_id
	statDouble     = 2 // XStat.double_value
	statUint64     = 3 // XStat.uint64_value
	statInt64      = 4 // XStat.int64_value
	statStr        = 5 // XStat.str_value
	statBytes      = 6 // XStat.bytes_value
	statRef        = 7 // XStat.ref_value: an id in stat_metadata, whose name is the value

	metaName = 2 // XEventMetadata.name and XStatMetadata.name

	mapKey   = 1 // a map entry's key
	mapValue = 2 // a map entry's value
)

// Limits bound what a hostile or damaged file can cost. A plane is the
// unit read into memory (its event names come after its lines, so a line
// cannot be understood before the plane's end); records are what is kept
// of each allocator event.
type Limits struct {
	MaxPlaneBytes int // largest plane read into memory
	MaxRecords    int // allocator events kept, all allocators together
}

// DefaultLimits are far above every real profile seen (the largest
// public one holds a 3 MB plane and 3,000 allocator events) and keep a
// hostile file under a few hundred MB: records take about 120 bytes each.
var DefaultLimits = Limits{MaxPlaneBytes: 256 << 20, MaxRecords: 1 << 21}

// ErrNotXSpace is wrapped by the error of content that does not decode as
// an XSpace.
var ErrNotXSpace = errors.New("not a profiler XSpace (xplane.pb)")

// Record is one MemoryAllocation or MemoryDeallocation event as the
// allocator recorded it (TSL's BFCAllocator::AddTraceMe; the TPU runtime
// writes the same names). Fields the event did not carry are zero and
// flagged in Has.
type Record struct {
	Time      int64  // picoseconds: the line's timestamp_ns × 1000 + the event's offset_ps
	Alloc     bool   // MemoryAllocation (else MemoryDeallocation)
	Requested int64  // requested_bytes: what the caller asked for
	Chunk     int64  // allocation_bytes: the chunk the allocator handed out or took back
	Addr      uint64 // addr: the chunk's address
	InUse     int64  // bytes_allocated: bytes in use after the event
	Reserved  int64  // bytes_reserved
	Available int64  // bytes_available
	Peak      int64  // peak_bytes_in_use
	Step      int64  // id: the step id
	Op        string // tf_op
	Shape     string // shape
	Region    string // region_type
	Has       Has
	// Seq is the record's place in the file (plane, line, event order),
	// which breaks ties of Time.
	Seq int
}

// Has flags the stats a record carried.
type Has uint16

const (
	HasRequested Has = 1 << iota
	HasChunk
	HasAddr
	HasInUse
	HasReserved
	HasAvailable
	HasPeak
)

// Limit is the allocator's memory limit as the record states it:
// bytes_available + bytes_allocated + bytes_reserved (TSL AddTraceMe
// computes available as limit − reserved − in use), or -1 when one of the
// three is missing.
func (r *Record) Limit() int64 {
	const need = HasAvailable | HasInUse | HasReserved
	if r.Has&need != need {
		return -1
	}
	return r.Available + r.InUse + r.Reserved
}

// Allocator is the records of one allocator in one profile, in time order.
type Allocator struct {
	// Name is the recorded allocator_name (GPU_0_bfc, gpu_host_bfc), or
	// for a TPU chip, whose events carry index_on_host instead, "TPU:N".
	Name string
	// Device is the TPU chip index (index_on_host), or the N of a GPU
	// allocator named GPU_N_bfc; -1 for others (host allocators).
	Device  int
	Plane   string // the plane that held the events (/host:CPU)
	Records []Record
}

// TPU reports whether the allocator is a TPU chip's runtime allocator.
func (a *Allocator) TPU() bool { return strings.HasPrefix(a.Name, "TPU:") }

// Limit is the memory limit of the allocator's first record that states
// one, or -1.
func (a *Allocator) Limit() int64 {
	for i := range a.Records {
		if l := a.Records[i].Limit(); l >= 0 {
			return l
		}
	}
	return -1
}

// Profile is the allocators of one XSpace, sorted by name (TPU chips by
// index).
type Profile struct {
	Allocators []*Allocator
}

// Names lists the allocators' names in order.
func (p *Profile) Names() []string {
	s := make([]string, len(p.Allocators))
	for i, a := range p.Allocators {
		s[i] = a.Name
	}
	return s
}

// Find returns the allocator called name, or nil.
func (p *Profile) Find(name string) *Allocator {
	for _, a := range p.Allocators {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Device returns the allocator of device n: the TPU chip n or the GPU
// allocator GPU_n_bfc, or nil.
func (p *Profile) Device(n int) *Allocator {
	for _, a := range p.Allocators {
		if a.Device == n {
			return a
		}
	}
	return nil
}

// OffsetError is a decoding error at a byte offset of the (decompressed)
// content.
type OffsetError struct {
	Offset int64
	Err    error
}

func (e *OffsetError) Error() string { return fmt.Sprintf("byte %d: %v", e.Offset, e.Err) }
func (e *OffsetError) Unwrap() error { return e.Err }

// Read decodes the allocator events of an XSpace. It reads one plane at a
// time (planes are the XSpace's only field that matters), keeps only
// MemoryAllocation and MemoryDeallocation events, and skips every other
// field without looking into it, so memory is bounded by the largest plane
// and the records kept.
func Read(r io.Reader, lim Limits) (*Profile, error) {
	br, ok := r.(io.ByteReader)
	if !ok {
		b := bufio.NewReaderSize(r, 64<<10)
		br, r = b, b
	}
	d := decoder{lim: lim, byName: map[string]*Allocator{}}
	var off int64
	var buf []byte
	for planes := 0; ; {
		tag, n, err := readUvarint(br)
		if err == io.EOF && n == 0 {
			break
		}
		if err != nil {
			return nil, &OffsetError{off, fmt.Errorf("%w: field tag: %v", ErrNotXSpace, err)}
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType || num < 1 {
			return nil, &OffsetError{off, fmt.Errorf("%w: field %d of wire type %d (an XSpace holds only length-delimited fields)", ErrNotXSpace, num, typ)}
		}
		off += int64(n)
		size, n, err := readUvarint(br)
		if err != nil {
			return nil, &OffsetError{off, fmt.Errorf("%w: field length: %w", ErrNotXSpace, unexpected(err))}
		}
		off += int64(n)
		if num != spacePlanes {
			// errors, warnings, hostnames: skipped.
			if _, err := io.CopyN(io.Discard, r, int64(min(size, math.MaxInt64))); err != nil {
				return nil, &OffsetError{off, fmt.Errorf("field %d of %d bytes: %w", num, size, unexpected(err))}
			}
			off += int64(size)
			continue
		}
		if size > uint64(lim.MaxPlaneBytes) {
			return nil, &OffsetError{off, fmt.Errorf("plane %d is %d bytes, more than the limit of %d", planes, size, lim.MaxPlaneBytes)}
		}
		// Read what is there, growing the buffer as it arrives, so that a
		// length larger than the file costs nothing.
		buf = buf[:0]
		w := sliceWriter{&buf}
		if _, err := io.CopyN(w, r, int64(size)); err != nil {
			return nil, &OffsetError{off, fmt.Errorf("plane %d of %d bytes: %w", planes, size, unexpected(err))}
		}
		if err := d.plane(buf, off); err != nil {
			return nil, err
		}
		off += int64(size)
		planes++
	}
	return d.finish(), nil
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readUvarint reads a protobuf varint, returning the bytes read.
func readUvarint(br io.ByteReader) (uint64, int, error) {
	var x uint64
	for i := 0; i < 10; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return 0, i, err
		}
		if i == 9 && b > 1 {
			return 0, i + 1, errors.New("varint overflows 64 bits")
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, 10, errors.New("varint overflows 64 bits")
}

// decoder gathers records across planes.
type decoder struct {
	lim     Limits
	byName  map[string]*Allocator
	records int
	seq     int
}

// field is one decoded protobuf field of a message.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint, fixed32, fixed64
	b   []byte // length-delimited
	at  int    // offset of the field's tag in the message
}

// fields calls f for each field of msg, stopping at the first error.
// Groups (deprecated, never written by the profiler) are an error.
func fields(msg []byte, f func(fl field) error) error {
	for at := 0; at < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[at:])
		if n < 0 {
			return &msgError{at, fmt.Errorf("field tag: %v", protowire.ParseError(n))}
		}
		fl := field{num: num, typ: typ, at: at}
		rest := msg[at+n:]
		switch typ {
		case protowire.VarintType:
			fl.v, n = protowire.ConsumeVarint(rest)
		case protowire.Fixed64Type:
			fl.v, n = protowire.ConsumeFixed64(rest)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(rest)
			fl.v = uint64(v)
		case protowire.BytesType:
			fl.b, n = protowire.ConsumeBytes(rest)
		default:
			return &msgError{at, fmt.Errorf("field %d has wire type %d, which no XSpace field uses", num, typ)}
		}
		if n < 0 {
			return &msgError{at, fmt.Errorf("field %d: %v", num, protowire.ParseError(n))}
		}
		at += len(msg[at:]) - len(rest) + n
		if err := f(fl); err != nil {
			return err
		}
	}
	return nil
}

// msgError is an error at an offset within a message; plane adds the
// plane's own offset.
type msgError struct {
	at  int
	err error
}

func (e *msgError) Error() string { return e.err.Error() }

// within turns an error of a nested message at base into one at the outer
// message's offset.
func within(base int, err error) error {
	var me *msgError
	if errors.As(err, &me) {
		return &msgError{base + me.at, me.err}
	}
	return err
}

// want checks a field's wire type.
func (fl field) want(typ protowire.Type, what string) error {
	if fl.typ != typ {
		return &msgError{fl.at, fmt.Errorf("%s (field %d) has wire type %d, want %d", what, fl.num, fl.typ, typ)}
	}
	return nil
}

// plane decodes one XPlane, which starts at byte off of the content.
func (d *decoder) plane(msg []byte, off int64) error {
	var name string
	var lines []field
	memEvents := map[uint64]bool{} // event metadata ids: true for MemoryAllocation
	statNames := map[uint64]string{}
	err := fields(msg, func(fl field) error {
		switch fl.num {
		case planeName:
			if err := fl.want(protowire.BytesType, "XPlane.name"); err != nil {
				return err
			}
			name = string(fl.b)
		case planeLines:
			if err := fl.want(protowire.BytesType, "XPlane.lines"); err != nil {
				return err
			}
			lines = append(lines, fl)
		case planeEventMeta, planeStatMeta:
			if err := fl.want(protowire.BytesType, "XPlane metadata map entry"); err != nil {
				return err
			}
			id, mname, err := mapEntry(fl.b)
			if err != nil {
				return within(fl.at, err)
			}
			if fl.num == planeStatMeta {
				statNames[id] = mname
			} else if mname == "MemoryAllocation" || mname == "MemoryDeallocation" {
				memEvents[id] = mname == "MemoryAllocation"
			}
		}
		return nil
	})
	if err == nil && len(memEvents) > 0 {
		pl := planeCtx{d: d, name: name, mem: memEvents, stats: statNames}
		for _, l := range lines {
			if err = within(l.at, pl.line(l.b)); err != nil {
				break
			}
		}
	}
	if err != nil {
		var me *msgError
		if errors.As(err, &me) {
			return &OffsetError{off + int64(me.at), fmt.Errorf("plane %q: %w", name, me.err)}
		}
		return &OffsetError{off, fmt.Errorf("plane %q: %w", name, err)}
	}
	return nil
}

// mapEntry decodes an event_metadata or stat_metadata entry: the id and
// the metadata's name.
func mapEntry(b []byte) (id uint64, name string, err error) {
	err = fields(b, func(fl field) error {
		switch fl.num {
		case mapKey:
			if err := fl.want(protowire.VarintType, "map key"); err != nil {
				return err
			}
			id = fl.v
		case mapValue:
			if err := fl.want(protowire.BytesType, "map value"); err != nil {
				return err
			}
			return within(fl.at, fields(fl.b, func(m field) error {
				if m.num == metaName {
					if err := m.want(protowire.BytesType, "metadata name"); err != nil {
						return err
					}
					name = string(m.b)
				}
				return nil
			}))
		}
		return nil
	})
	return id, name, err
}

// planeCtx is what decoding one plane's lines needs.
type planeCtx struct {
	d     *decoder
	name  string
	mem   map[uint64]bool
	stats map[uint64]string
}

// line decodes one XLine, keeping its allocator events.
func (p *planeCtx) line(msg []byte) error {
	var ts int64
	var events []field
	err := fields(msg, func(fl field) error {
		switch fl.num {
		case lineTimestampNs:
			if err := fl.want(protowire.VarintType, "XLine.timestamp_ns"); err != nil {
				return err
			}
			ts = int64(fl.v)
		case lineEvents:
			if err := fl.want(protowire.BytesType, "XLine.events"); err != nil {
				return err
			}
			events = append(events, fl)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ts < 0 || ts > math.MaxInt64/1000 {
		return fmt.Errorf("line timestamp %d ns is out of range", ts)
	}
	for _, e := range events {
		if err := within(e.at, p.event(e.b, ts*1000)); err != nil {
			return err
		}
	}
	return nil
}

// event decodes one XEvent, keeping it when it is an allocator event.
func (p *planeCtx) event(msg []byte, base int64) error {
	var rec Record
	var isMem bool
	var stats []field
	err := fields(msg, func(fl field) error {
		switch fl.num {
		case eventMetadataID:
			if err := fl.want(protowire.VarintType, "XEvent.metadata_id"); err != nil {
				return err
			}
			rec.Alloc, isMem = p.mem[fl.v]
		case eventOffsetPs:
			if err := fl.want(protowire.VarintType, "XEvent.offset_ps"); err != nil {
				return err
			}
			if int64(fl.v) < 0 || int64(fl.v) > math.MaxInt64-base {
				return &msgError{fl.at, fmt.Errorf("event offset %d ps is out of range", fl.v)}
			}
			rec.Time = base + int64(fl.v)
		case eventStats:
			if err := fl.want(protowire.BytesType, "XEvent.stats"); err != nil {
				return err
			}
			stats = append(stats, fl)
		}
		return nil
	})
	if err != nil || !isMem {
		return err
	}
	if rec.Time == 0 {
		rec.Time = base
	}
	alloc := ""
	device := -1
	for _, s := range stats {
		if err := within(s.at, p.stat(s.b, &rec, &alloc, &device)); err != nil {
			return err
		}
	}
	name := alloc
	if name == "" {
		if device < 0 {
			return errors.New("allocator event names no allocator (neither allocator_name nor index_on_host)")
		}
		name = "TPU:" + strconv.Itoa(device)
	} else if device < 0 {
		device = gpuIndex(name)
	}
	return p.d.add(name, device, p.name, rec)
}

// gpuIndex is N of an allocator named GPU_N_bfc (TensorFlow's and XLA's
// names for device N's BFC), or -1.
func gpuIndex(name string) int {
	rest, ok := strings.CutPrefix(name, "GPU_")
	if !ok {
		return -1
	}
	num, ok := strings.CutSuffix(rest, "_bfc")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 1<<20 {
		return -1
	}
	return n
}

// stat decodes one XStat of an allocator event into rec.
func (p *planeCtx) stat(msg []byte, rec *Record, alloc *string, device *int) error {
	var id uint64
	var kind protowire.Number
	var num uint64
	var str []byte
	err := fields(msg, func(fl field) error {
		switch fl.num {
		case statMetadataID:
			id = fl.v
		case statDouble, statUint64, statInt64, statRef:
			kind, num = fl.num, fl.v
		case statStr, statBytes:
			kind, str = fl.num, fl.b
		}
		return nil
	})
	if err != nil {
		return err
	}
	sname := p.stats[id]
	text := func() string {
		switch kind {
		case statStr, statBytes:
			return string(str)
		case statRef:
			return p.stats[num]
		case statUint64:
			return strconv.FormatUint(num, 10)
		case statInt64:
			return strconv.FormatInt(int64(num), 10)
		}
		return ""
	}
	integer := func(flag Has, dst *int64) error {
		var v int64
		switch kind {
		case statUint64:
			if num > math.MaxInt64 {
				return fmt.Errorf("stat %s = %d is out of range", sname, num)
			}
			v = int64(num)
		case statInt64:
			v = int64(num)
		default:
			return fmt.Errorf("stat %s is not an integer", sname)
		}
		if v < 0 || v > maxBytes {
			return fmt.Errorf("stat %s = %d is out of range (0..%d)", sname, v, int64(maxBytes))
		}
		*dst = v
		if rec != nil {
			rec.Has |= flag
		}
		return nil
	}
	switch sname {
	case "allocator_name":
		*alloc = text()
	case "index_on_host":
		var v int64
		if err := integer(0, &v); err != nil {
			return err
		}
		if v > 1<<20 {
			return fmt.Errorf("index_on_host %d is out of range", v)
		}
		*device = int(v)
	case "requested_bytes":
		return integer(HasRequested, &rec.Requested)
	case "allocation_bytes":
		return integer(HasChunk, &rec.Chunk)
	case "addr":
		if kind != statUint64 && kind != statInt64 {
			return fmt.Errorf("stat addr is not an integer")
		}
		rec.Addr = num
		rec.Has |= HasAddr
	case "bytes_allocated":
		return integer(HasInUse, &rec.InUse)
	case "bytes_reserved":
		return integer(HasReserved, &rec.Reserved)
	case "bytes_available":
		return integer(HasAvailable, &rec.Available)
	case "peak_bytes_in_use":
		return integer(HasPeak, &rec.Peak)
	case "id":
		if kind == statInt64 || kind == statUint64 {
			rec.Step = int64(num)
		}
	case "tf_op":
		rec.Op = text()
	case "shape":
		rec.Shape = text()
	case "region_type":
		rec.Region = text()
	}
	return nil
}

// maxBytes bounds every byte figure: 1 PiB, as traces.MaxSize, so that
// sums stay far inside int64.
const maxBytes = 1 << 50

func (d *decoder) add(name string, device int, plane string, rec Record) error {
	if d.records >= d.lim.MaxRecords {
		return fmt.Errorf("more than %d allocator events (the limit of a profile)", d.lim.MaxRecords)
	}
	d.records++
	a := d.byName[name]
	if a == nil {
		a = &Allocator{Name: name, Device: device, Plane: plane}
		d.byName[name] = a
	}
	rec.Seq = d.seq
	d.seq++
	a.Records = append(a.Records, rec)
	return nil
}

// finish orders allocators and their records.
func (d *decoder) finish() *Profile {
	p := &Profile{}
	for _, a := range d.byName {
		// Events of one allocator are recorded under its lock, so time
		// order is the allocator's order; the file order breaks ties.
		slices.SortStableFunc(a.Records, func(x, y Record) int {
			return cmp.Or(cmp.Compare(x.Time, y.Time), cmp.Compare(x.Seq, y.Seq))
		})
		untie(a.Records)
		p.Allocators = append(p.Allocators, a)
	}
	slices.SortFunc(p.Allocators, func(x, y *Allocator) int {
		if x.TPU() && y.TPU() {
			return cmp.Compare(x.Device, y.Device)
		}
		return cmp.Compare(x.Name, y.Name)
	})
	return p
}

// untie orders records of equal time (the clock's resolution is a
// nanosecond, and the events of one allocator come from many threads) by
// the allocator's own accounting: bytes in use after each event differ
// from the previous event's by exactly its chunk. Within a run of equal
// times it picks, greedily, the next record that continues the count, and
// keeps the file order where none does or where the chunk is not known.
func untie(recs []Record) {
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].Time == recs[i].Time {
			j++
		}
		if j-i > 1 && i > 0 {
			for k := i; k < j-1; k++ {
				prev := &recs[k-1]
				for m := k; m < j; m++ {
					if continues(prev, &recs[m]) {
						recs[k], recs[m] = recs[m], recs[k]
						// keep the others in file order
						slices.SortStableFunc(recs[k+1:j], func(x, y Record) int { return cmp.Compare(x.Seq, y.Seq) })
						break
					}
				}
			}
		}
		i = j
	}
}

// continues reports whether r's bytes in use follow from prev's by r's
// chunk.
func continues(prev, r *Record) bool {
	const need = HasInUse | HasChunk
	if prev.Has&HasInUse == 0 || r.Has&need != need {
		return false
	}
	d := r.InUse - prev.InUse
	if r.Alloc {
		return d == r.Chunk
	}
	return d == -r.Chunk
}
