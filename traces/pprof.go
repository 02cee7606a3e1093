package traces

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// The JAX device memory profile import is documented in doc.go ("JAX
// device memory profiles").

// Bounds on what a profile may cost (doc.go, "JAX device memory
// profiles"). maxPprofBytes bounds the (decompressed) size of a profile:
// it is read whole. maxPprofDecoded bounds the memory the pprof package
// would take to decode it, estimated from the profile's counts of samples,
// labels, values and other records before decoding (decoded, a profile
// takes 15 to 45 times its encoded size). maxPprofAllocs bounds the
// allocations a profile may stand for: a sample is a count, so a file of
// 155 bytes can claim 50 M buffers, and since a live set has no frees
// every one of them is live at once in a replay (some 300 bytes each).
const (
	maxPprofBytes   = 64 << 20
	maxPprofDecoded = 256 << 20
	maxPprofAllocs  = 1 << 19
)

// maxPprofListed bounds how many devices or kinds a meta value or an
// error message lists.
const maxPprofListed = 32

// pprofAlloc is a sample of the selected device: count allocations of
// size bytes, the first extra of them one byte larger.
type pprofAlloc struct {
	count, size, extra int64
}

// pprofReader serves the live set of one device of a pprof memory profile
// as allocs.
type pprofReader struct {
	name   string
	meta   Meta
	allocs []pprofAlloc
	i      int   // current sample
	k      int64 // allocations of allocs[i] already returned
	nextID uint64
}

// NewJAXPprofReader imports a device memory profile written by JAX's
// jax.profiler.save_device_memory_profile (a pprof protobuf, gzipped or
// not) from r: the live buffers of the device opts.Device selects, as one
// alloc each. It reads the whole profile before returning. name is used in
// error messages. Close does not close r.
func NewJAXPprofReader(name string, r io.Reader, opts OpenOptions) (Reader, error) {
	br, gz, err := openInput(name, r)
	if err != nil {
		return nil, err
	}
	defer closeGzip(gz)
	return openPprof(name, br, gz != nil, opts)
}

// readPprof reads the whole content and decodes it as a pprof protobuf.
// Content that does not decode gives an error wrapping ErrUnknownFormat.
func readPprof(name string, br *bufio.Reader, gzipped bool) (*profile.Profile, error) {
	data, err := io.ReadAll(io.LimitReader(br, maxPprofBytes+1))
	if err != nil {
		if gzipped && err == io.ErrUnexpectedEOF {
			err = errTruncatedGzip
		} else if gzipped {
			err = fmt.Errorf("gzip: %w", err)
		}
		return nil, &PosError{File: name, Event: -1, Err: err}
	}
	if len(data) > maxPprofBytes {
		what := ""
		if gzipped {
			what = " (after gzip decompression)"
		}
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("pprof profile larger than %d bytes%s", maxPprofBytes, what)}
	}
	if est := pprofDecodedEstimate(data); est > maxPprofDecoded {
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("pprof profile too large to decode: its %d bytes hold samples, labels and records that would take about %d MiB decoded (at most %d MiB)",
			len(data), est>>20, maxPprofDecoded>>20)}
	}
	p, err := parsePprof(data)
	if err != nil {
		what := ""
		if gzipped {
			what = " (after gzip decompression)"
		}
		return nil, &PosError{File: name, Event: -1, Err: fmt.Errorf("%w: content%s starts like a protobuf but is not a pprof profile (%v); %s",
			ErrUnknownFormat, what, err, acceptedFormats)}
	}
	return p, nil
}

// parsePprof decodes an uncompressed pprof protobuf and checks it. It uses
// profile.ParseUncompressed rather than profile.ParseData: the content is
// already decompressed, and ParseData's fallback to the legacy text
// profile formats would accept text that is not a protobuf at all.
func parsePprof(data []byte) (p *profile.Profile, err error) {
	defer func() {
		if e := recover(); e != nil {
			p, err = nil, fmt.Errorf("decoding panicked: %v", e)
		}
	}()
	p, err = profile.ParseUncompressed(data)
	if err != nil {
		return nil, err
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("malformed profile: %w", err)
	}
	return p, nil
}

func openPprof(name string, br *bufio.Reader, gzipped bool, opts OpenOptions) (Reader, error) {
	p, err := readPprof(name, br, gzipped)
	if err != nil {
		return nil, err
	}
	return pprofLiveSet(name, p, opts.Device)
}

// pprofValueIndex picks the bytes and count sample types of a memory
// profile; count is -1 when every sample is one allocation.
func pprofValueIndex(p *profile.Profile) (bytesIdx, countIdx int, err error) {
	find := func(typ, unit string) int {
		return slices.IndexFunc(p.SampleType, func(vt *profile.ValueType) bool { return vt.Type == typ && vt.Unit == unit })
	}
	bytesIdx, countIdx = -1, -1
	switch {
	case find("space", "bytes") >= 0:
		bytesIdx, countIdx = find("space", "bytes"), find("allocations", "count")
	case find("inuse_space", "bytes") >= 0:
		bytesIdx, countIdx = find("inuse_space", "bytes"), find("inuse_objects", "count")
	default:
		for i, vt := range p.SampleType {
			if vt.Unit == "bytes" {
				if bytesIdx >= 0 {
					return -1, -1, fmt.Errorf("pprof profile has more than one bytes sample type (%s) and none is space/bytes", pprofTypes(p))
				}
				bytesIdx = i
			}
		}
	}
	if bytesIdx < 0 {
		return -1, -1, fmt.Errorf("pprof profile is not a memory profile: its sample types are %s; want space/bytes (as JAX writes), inuse_space/bytes or one other */bytes type", pprofTypes(p))
	}
	return bytesIdx, countIdx, nil
}

func pprofTypes(p *profile.Profile) string {
	if len(p.SampleType) == 0 {
		return "(none)"
	}
	s := make([]string, len(p.SampleType))
	for i, vt := range p.SampleType {
		s[i] = vt.Type + "/" + vt.Unit
	}
	return strings.Join(s, " ")
}

func pprofLabel(s *profile.Sample, key string) string {
	if v := s.Label[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// pprofLiveSet selects the samples of one device and checks them.
// maxPprofLiveBytes bounds a profile's live set: a byte count far beyond
// any device (2^62 B, 4 EiB) that keeps every sum of it clear of int64
// overflow.
const maxPprofLiveBytes = 1 << 62

func pprofLiveSet(name string, p *profile.Profile, device int) (Reader, error) {
	fail := func(event int, format string, args ...any) (Reader, error) {
		return nil, &PosError{File: name, Event: event, Err: fmt.Errorf(format, args...)}
	}
	bytesIdx, countIdx, err := pprofValueIndex(p)
	if err != nil {
		return fail(-1, "%v", err)
	}
	var devs []string
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if d := pprofLabel(s, "device"); !seen[d] {
			seen[d] = true
			devs = append(devs, d)
		}
	}
	slices.Sort(devs)
	if len(devs) == 0 {
		return fail(-1, "the pprof profile holds no samples: no live buffers on any device")
	}
	if device >= len(devs) {
		return fail(-1, "device %d is not in the pprof profile: it has %d device(s), %s (OpenOptions.Device is an index into this sorted list)",
			device, len(devs), quoteList(devs))
	}
	if device < 0 {
		device = 0
	}
	dev := devs[device]
	r := &pprofReader{name: name, nextID: 1}
	var total, liveBytes int64
	skipped := 0
	kinds := map[string]int64{}
	for si, s := range p.Sample {
		if pprofLabel(s, "device") != dev {
			continue
		}
		b, c := s.Value[bytesIdx], int64(1)
		if countIdx >= 0 {
			c = s.Value[countIdx]
		}
		switch {
		case b < 0 || c < 0:
			return fail(int(total), "sample %d: negative value (%d bytes, %d allocations)", si, b, c)
		case b == 0:
			skipped++
			continue
		case c == 0:
			c = 1 // bytes without a count: one buffer
		}
		if b/c == 0 {
			return fail(int(total), "%w: sample %d: %d bytes over %d allocations is less than one byte each", ErrBadSize, si, b, c)
		}
		size, extra := b/c, b%c
		if size+min(extra, 1) > MaxSize {
			return fail(int(total), "%w: sample %d: allocations of %d bytes (at most %d)", ErrBadSize, si, size+min(extra, 1), MaxSize)
		}
		if c > maxPprofAllocs-total {
			return fail(int(total), "sample %d (%d allocations of %d bytes): the profile stands for more than %d allocations on device %s, %d before this sample (a live set replays as that many simultaneous allocations; the limit bounds a replay's memory)",
				si, c, b, maxPprofAllocs, strconv.Quote(dev), total)
		}
		if b > maxPprofLiveBytes-liveBytes {
			return fail(int(total), "%w: sample %d: the live set exceeds %d bytes (%d before this sample of %d)", ErrBadSize, si, int64(maxPprofLiveBytes), liveBytes, b)
		}
		total += c
		liveBytes += b
		kinds[pprofLabel(s, "kind")] += c
		r.allocs = append(r.allocs, pprofAlloc{count: c, size: size, extra: extra})
	}
	var kindList []string
	for k, n := range kinds {
		if k == "" {
			k = "(no kind label)"
		}
		kindList = append(kindList, k+"="+strconv.FormatInt(n, 10))
	}
	slices.Sort(kindList)
	if n := len(kindList); n > maxPprofListed {
		kindList = append(kindList[:maxPprofListed], fmt.Sprintf("(and %d more kinds)", n-maxPprofListed))
	}
	devName := dev
	if devName == "" {
		devName = "(no device label)"
	}
	r.meta = Meta{
		{"format", FormatJAXPprof},
		{"source", "JAX device memory profile (jax.profiler.save_device_memory_profile, pprof protobuf)"},
		{"live-set-only", "true"},
		{"snapshot", "the buffers live on one device when the profile was taken, not a history: allocs only, no frees, no times"},
		{"device", devName},
		{"devices", quoteList(devs)},
		{"sample-types", pprofTypes(p)},
		{"value", pprofValueDoc(p, bytesIdx, countIdx)},
		{"ids", "one id per allocation, sequential from 1 in sample order"},
		{"buffers", strconv.FormatInt(total, 10)},
		{"live-bytes", strconv.FormatInt(liveBytes, 10)},
	}
	if len(kindList) > 0 {
		r.meta = append(r.meta, KV{"kinds", strings.Join(kindList, " ")})
	}
	if skipped > 0 {
		r.meta = append(r.meta, KV{"skipped-samples", strconv.Itoa(skipped) + " (0 bytes)"})
	}
	if p.TimeNanos != 0 {
		r.meta = append(r.meta, KV{"time-nanos", strconv.FormatInt(p.TimeNanos, 10) + " (when the profile was taken, Unix nanoseconds)"})
	}
	// Values quote the profile's strings; make them what a written and
	// re-read trace would hold (no newline, no leading or trailing blanks).
	for i := range r.meta {
		r.meta[i].Value = metaValue(r.meta[i].Value)
	}
	return r, nil
}

func pprofValueDoc(p *profile.Profile, bytesIdx, countIdx int) string {
	bt := p.SampleType[bytesIdx]
	if countIdx < 0 {
		return fmt.Sprintf("%s/%s: one allocation per sample", bt.Type, bt.Unit)
	}
	ct := p.SampleType[countIdx]
	return fmt.Sprintf("%s/%s over %s/%s: a sample of n allocations and b bytes is n allocs of b/n bytes, the first b mod n of them one byte more",
		bt.Type, bt.Unit, ct.Type, ct.Unit)
}

// quoteList quotes the strings of ss, the first maxPprofListed of them,
// and says how many more there are.
func quoteList(ss []string) string {
	q := make([]string, min(len(ss), maxPprofListed))
	for i := range q {
		q[i] = strconv.Quote(ss[i])
	}
	if len(ss) > len(q) {
		q = append(q, fmt.Sprintf("and %d more", len(ss)-len(q)))
	}
	return strings.Join(q, ", ")
}

func (r *pprofReader) Next() (Event, error) {
	for r.i < len(r.allocs) {
		a := &r.allocs[r.i]
		if r.k == a.count {
			r.i, r.k = r.i+1, 0
			continue
		}
		ev := Event{Op: OpAlloc, ID: r.nextID, Size: a.size, Time: NoTime}
		if r.k < a.extra {
			ev.Size++
		}
		r.k++
		r.nextID++
		return ev, nil
	}
	return Event{}, io.EOF
}

func (r *pprofReader) Meta() Meta   { return r.meta }
func (r *pprofReader) Close() error { return nil }

// Pos has the name and the index of the last event returned (ids count
// the events from 1); a profile has no lines.
func (r *pprofReader) Pos() Pos { return Pos{File: r.name, Event: int(r.nextID) - 2} }

var _ Reader = (*pprofReader)(nil)

// looksLikePprof reports whether p, the start of some content (all of it
// when shorter than sniffLen), reads as the start of a pprof Profile
// protobuf: a first field 1 (sample_type, length-delimited) whose
// ValueType holds only varint fields 1-3, then only fields 1-15 of the
// Profile message with their wire types, lengths within the content. It
// decodes a few varints, so that content of other formats is turned away
// cheaply before anything parses the whole profile.
func looksLikePprof(p []byte) bool {
	// JAX writes sample_type (field 1) first; Go's runtime/pprof starts
	// with time_nanos (9) or period_type (11). Any Profile field may open
	// the message; what follows must decode as Profile fields throughout.
	if len(p) < 2 {
		return false
	}
	complete := len(p) < sniffLen
	cut := func(n int) bool { return n == 0 && !complete } // p ends inside a varint
	for i, first := 0, true; i < len(p); first = false {
		tag, n := binary.Uvarint(p[i:])
		if n <= 0 {
			return cut(n)
		}
		i += n
		field, wire := tag>>3, tag&7
		switch wire {
		case 0:
			if !(field >= 7 && field <= 10 || field >= 12 && field <= 15) {
				return false
			}
			_, n := binary.Uvarint(p[i:])
			if n <= 0 {
				return cut(n)
			}
			i += n
		case 2:
			if !(field >= 1 && field <= 6 || field == 11 || field == 13) {
				return false
			}
			l, n := binary.Uvarint(p[i:])
			if n <= 0 {
				return cut(n)
			}
			i += n
			partial := l > uint64(len(p)-i) // the message goes on past p
			if partial && complete {
				return false
			}
			end := len(p)
			if !partial {
				end = i + int(l)
			}
			if first && (field == 1 || field == 11) && !looksLikeValueType(p[i:end], partial) {
				return false
			}
			if partial {
				return true
			}
			i = end
		default:
			return false
		}
	}
	return true
}

// looksLikeValueType reports whether b (cut short of the message's end if
// partial) holds only varint fields 1-3.
func looksLikeValueType(b []byte, partial bool) bool {
	for i := 0; i < len(b); {
		tag, n := binary.Uvarint(b[i:])
		if n <= 0 {
			return n == 0 && partial
		}
		i += n
		if tag&7 != 0 || tag>>3 < 1 || tag>>3 > 3 {
			return false
		}
		_, n = binary.Uvarint(b[i:])
		if n <= 0 {
			return n == 0 && partial
		}
		i += n
	}
	return true
}

// Estimated bytes the pprof package takes per element when it decodes a
// profile (measured with Go 1.26 and pprof's profile package; see
// TestPprofDecodedEstimate): a sample and its label map, a label, one
// value or location reference, a mapping, location or function, a line of
// a location, a string's header.
const (
	pprofCostSample = 240
	pprofCostLabel  = 320
	pprofCostLabels = 256
	pprofCostValue  = 16
	pprofCostRecord = 200
	pprofCostLine   = 64
	pprofCostString = 32
)

// pprofDecodedEstimate estimates the memory the pprof package would take
// to decode data, an uncompressed Profile protobuf, by walking its wire
// format once without allocating. A malformed field ends the walk (the
// decoder then reports it).
func pprofDecodedEstimate(data []byte) int64 {
	var est int64
	pbWalk(data, func(field, wire uint64, v []byte) {
		switch {
		case field == 2 && wire == 2: // sample
			est += pprofCostSample
			labels := false
			pbWalk(v, func(field, wire uint64, v []byte) {
				switch {
				case (field == 1 || field == 2) && wire == 2: // packed location ids, values
					est += pprofCostValue * pbCountVarints(v)
				case field == 1 || field == 2:
					est += pprofCostValue
				case field == 3: // label
					est += pprofCostLabel
					if !labels {
						est += pprofCostLabels
						labels = true
					}
				}
			})
		case field == 4 && wire == 2: // location
			est += pprofCostRecord
			pbWalk(v, func(field, wire uint64, v []byte) {
				if field == 4 {
					est += pprofCostLine
				}
			})
		case field == 6: // string table
			est += pprofCostString + int64(len(v))
		case field == 13 && wire == 2: // packed comments
			est += pprofCostValue * pbCountVarints(v)
		case field == 1 || field == 3 || field == 5 || field == 11 || field == 13:
			est += pprofCostRecord
		}
	})
	return est
}

// pbWalk calls fn for each field of the protobuf message b, in order: its
// number, its wire type and, for a length-delimited field, its bytes. It
// stops at the first malformed field or at a group (which pprof does not
// use).
func pbWalk(b []byte, fn func(field, wire uint64, v []byte)) {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return
		}
		b = b[n:]
		field, wire := tag>>3, tag&7
		var v []byte
		switch wire {
		case 0:
			if _, n = binary.Uvarint(b); n <= 0 {
				return
			}
		case 1:
			n = 8
		case 5:
			n = 4
		case 2:
			l, m := binary.Uvarint(b)
			if m <= 0 || l > uint64(len(b)-m) {
				return
			}
			v, n = b[m:m+int(l)], m+int(l)
		default:
			return
		}
		if n > len(b) {
			return
		}
		fn(field, wire, v)
		b = b[n:]
	}
}

// pbCountVarints is the number of varints in b, a packed repeated field.
func pbCountVarints(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}
