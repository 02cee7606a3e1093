package xprof

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxMemoryProfileBytes bounds a memory_profile.json, which is read in
// time linear in it.
const MaxMemoryProfileBytes = 512 << 20

// ErrSampled is wrapped by the error of a memory_profile.json that no
// longer holds every event: XProf's converter (memory_profile.cc,
// SaveActiveAllocationSnapshots) rewrites memoryProfileSnapshots to the
// allocations live at the peak and keeps a sampled timeline of at most
// 1,000 points beside it, so only files written before that change (no
// "version", no sampled timeline) hold the whole sequence.
var ErrSampled = errors.New("this memory_profile.json holds only the allocations live at the peak and a sampled timeline, not every event")

// memoryProfileJSON is the MemoryProfile message
// (tensorflow/core/profiler/protobuf/memory_profile.proto) in proto3's
// JSON mapping, as TensorBoard writes it: camelCase names, 64-bit integers
// as strings.
type memoryProfileJSON struct {
	PerAllocator map[string]struct {
		Snapshots []memorySnapshotJSON `json:"memoryProfileSnapshots"`
		Sampled   json.RawMessage      `json:"sampledTimelineSnapshots"`
	} `json:"memoryProfilePerAllocator"`
	Version json.RawMessage `json:"version"`
}

// memorySnapshotJSON is one MemoryProfileSnapshot.
type memorySnapshotJSON struct {
	TimeOffsetPs jsonInt `json:"timeOffsetPs"`
	Stats        struct {
		StackReservedBytes jsonInt `json:"stackReservedBytes"`
		HeapAllocatedBytes jsonInt `json:"heapAllocatedBytes"`
		FreeMemoryBytes    jsonInt `json:"freeMemoryBytes"`
		PeakBytesInUse     jsonInt `json:"peakBytesInUse"`
	} `json:"aggregationStats"`
	Activity struct {
		MemoryActivity  string  `json:"memoryActivity"`
		RequestedBytes  jsonInt `json:"requestedBytes"`
		AllocationBytes jsonInt `json:"allocationBytes"`
		Address         jsonInt `json:"address"`
		TfOpName        string  `json:"tfOpName"`
		StepID          jsonInt `json:"stepId"`
		RegionType      string  `json:"regionType"`
		TensorShape     string  `json:"tensorShape"`
	} `json:"activityMetadata"`
}

// jsonInt reads an integer written as a JSON number or, as proto3's JSON
// mapping writes 64-bit integers, a string.
type jsonInt struct {
	v   uint64 // the value, two's complement when negative
	neg bool
	set bool
}

func (j *jsonInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" {
		return nil
	}
	if len(s) > 21 {
		return fmt.Errorf("integer of %d digits", len(s))
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		j.v, j.neg, j.set = uint64(n), n < 0, true
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %.40s", s)
	}
	j.v, j.set = v, true
	return nil
}

func (j jsonInt) bytes(what string) (int64, error) {
	if j.neg || j.v > maxBytes {
		return 0, fmt.Errorf("%s = %d is out of range (0..%d)", what, int64(j.v), int64(maxBytes))
	}
	return int64(j.v), nil
}

// ReadMemoryProfile decodes the memory_profile.json TensorBoard writes
// beside a profile (gzip already removed) into the same records as Read.
//
// It streams: each snapshot is decoded and made a record as it is read,
// and values it does not use are skipped token by token, so that memory
// is the records' (bounded by Limits.MaxRecords) and not the file's
// decoded whole, which cost about eight times the file (a 73 MB profile
// took 600 MB, one at the 512 MiB bound would have taken 4 GB). What it
// accepts, and the records and their order, are as json.Unmarshal of the
// whole file gave them: keys match as encoding/json matches them, a
// repeated allocator or snapshot list replaces the earlier one, and the
// allocators are taken in the order of their names.
func ReadMemoryProfile(r io.Reader, lim Limits) (*Profile, error) {
	lr := &io.LimitedReader{R: r, N: MaxMemoryProfileBytes + 1}
	m := &memoryProfileReader{dec: json.NewDecoder(lr), lim: lim}
	err := m.top()
	if err == nil {
		if _, terr := m.dec.Token(); terr != io.EOF {
			err = fmt.Errorf("invalid data after the top-level value (offset %d)", m.dec.InputOffset())
			if terr != nil {
				err = terr
			}
		}
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("memory profile larger than %d bytes (the limit of a memory_profile.json)", MaxMemoryProfileBytes)
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &OffsetError{se.Offset, err}
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if m.per == nil {
		return nil, errors.New("no memoryProfilePerAllocator: not a TensorBoard memory profile")
	}
	d := decoder{lim: lim, byName: map[string]*Allocator{}}
	for _, name := range slices.Sorted(maps.Keys(m.per)) {
		a := m.per[name]
		if len(a.sampled) > 0 && string(a.sampled) != "null" && string(a.sampled) != "[]" || m.version {
			return nil, fmt.Errorf("allocator %s: %w; read the .xplane.pb it was made from", name, ErrSampled)
		}
		if a.err != nil {
			return nil, fmt.Errorf("allocator %s, snapshot %d: %w", name, len(a.recs), a.err)
		}
		device := gpuIndex(name)
		for i, rec := range a.recs {
			if err := d.add(name, device, "memory_profile.json", rec); err != nil {
				return nil, fmt.Errorf("allocator %s, snapshot %d: %w", name, i, err)
			}
		}
	}
	return d.finish(), nil
}

// memoryProfileReader is ReadMemoryProfile's state: the allocators read
// so far by name, whether a version was given, and how many records are
// held.
type memoryProfileReader struct {
	dec     *json.Decoder
	lim     Limits
	per     map[string]*memoryAllocator
	version bool
	records int
}

// memoryAllocator is one allocator's snapshots as records, up to the first
// that is not an allocator event (err, at index len(recs)).
type memoryAllocator struct {
	recs    []Record
	err     error
	sampled json.RawMessage
}

// delim reads the next token and reports whether it is null, and else
// whether it is the delimiter want; anything else is an error of the kind
// json.Unmarshal gives.
func (m *memoryProfileReader) delim(want json.Delim, what string) (null bool, err error) {
	tok, err := m.dec.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case nil:
		return true, nil
	case want:
		return false, nil
	}
	return false, fmt.Errorf("%s: want %v, got %v (offset %d)", what, want, tok, m.dec.InputOffset())
}

// key reads an object's next key.
func (m *memoryProfileReader) key() (string, error) {
	tok, err := m.dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("object key is not a string (offset %d)", m.dec.InputOffset())
	}
	return k, nil
}

// skip consumes the next value token by token, without building it.
func (m *memoryProfileReader) skip() error {
	depth := 0
	for {
		tok, err := m.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// end reads the closing delimiter of an object or array.
func (m *memoryProfileReader) end() error {
	_, err := m.dec.Token()
	return err
}

// fields reads the members of an object whose opening delimiter has been
// read, calling field with each key to read its value, and then the
// closing delimiter.
func (m *memoryProfileReader) fields(field func(key string) error) error {
	for m.dec.More() {
		k, err := m.key()
		if err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
	}
	return m.end()
}

func (m *memoryProfileReader) top() error {
	if _, err := m.delim('{', "memory profile"); err != nil {
		return err
	}
	return m.fields(func(k string) error {
		switch {
		case strings.EqualFold(k, "memoryProfilePerAllocator"):
			return m.perAllocator()
		case strings.EqualFold(k, "version"):
			// Any value, null too, is the mark of a rewritten file
			// (a json.RawMessage holds "null").
			m.version = true
		}
		return m.skip()
	})
}

func (m *memoryProfileReader) perAllocator() error {
	null, err := m.delim('{', "memoryProfilePerAllocator")
	if err != nil {
		return err
	}
	if null {
		m.per, m.records = nil, 0 // as Unmarshal sets the map to nil
		return nil
	}
	if m.per == nil {
		m.per = map[string]*memoryAllocator{}
	}
	return m.fields(func(name string) error {
		// A repeated name replaces the allocator (a map element is
		// decoded afresh).
		if old := m.per[name]; old != nil {
			m.records -= len(old.recs)
		}
		a := &memoryAllocator{}
		m.per[name] = a
		return m.allocator(a)
	})
}

func (m *memoryProfileReader) allocator(a *memoryAllocator) error {
	null, err := m.delim('{', "allocator")
	if err != nil || null {
		return err
	}
	return m.fields(func(k string) error {
		switch {
		case strings.EqualFold(k, "memoryProfileSnapshots"):
			return m.snapshots(a)
		case strings.EqualFold(k, "sampledTimelineSnapshots"):
			a.sampled = nil
			return m.dec.Decode(&a.sampled)
		}
		return m.skip()
	})
}

func (m *memoryProfileReader) snapshots(a *memoryAllocator) error {
	// A repeated list replaces the earlier one.
	m.records -= len(a.recs)
	a.recs, a.err = nil, nil
	null, err := m.delim('[', "memoryProfileSnapshots")
	if err != nil || null {
		return err
	}
	for m.dec.More() {
		var s memorySnapshotJSON
		if err := m.dec.Decode(&s); err != nil {
			return err
		}
		if a.err != nil {
			continue // the allocator is refused at its first bad snapshot
		}
		rec, err := s.record()
		if err != nil {
			a.err = err
			continue
		}
		if m.records >= m.lim.MaxRecords {
			return fmt.Errorf("snapshot %d: more than %d allocator events (the limit of a profile)", len(a.recs), m.lim.MaxRecords)
		}
		m.records++
		a.recs = append(a.recs, rec)
	}
	return m.end()
}

// record is the snapshot as an allocator event.
func (s *memorySnapshotJSON) record() (Record, error) {
	var rec Record
	switch s.Activity.MemoryActivity {
	case "ALLOCATION", "1":
		rec.Alloc = true
	case "DEALLOCATION", "2":
	default:
		return rec, fmt.Errorf("memory activity %q: only ALLOCATION and DEALLOCATION are allocator events", s.Activity.MemoryActivity)
	}
	if s.TimeOffsetPs.neg || s.TimeOffsetPs.v > 1<<62 {
		return rec, errors.New("time offset out of range")
	}
	rec.Time = int64(s.TimeOffsetPs.v)
	fields := []struct {
		v    jsonInt
		dst  *int64
		flag Has
		name string
	}{
		{s.Activity.RequestedBytes, &rec.Requested, HasRequested, "requestedBytes"},
		{s.Activity.AllocationBytes, &rec.Chunk, HasChunk, "allocationBytes"},
		{s.Stats.HeapAllocatedBytes, &rec.InUse, HasInUse, "heapAllocatedBytes"},
		{s.Stats.StackReservedBytes, &rec.Reserved, HasReserved, "stackReservedBytes"},
		{s.Stats.FreeMemoryBytes, &rec.Available, HasAvailable, "freeMemoryBytes"},
		{s.Stats.PeakBytesInUse, &rec.Peak, HasPeak, "peakBytesInUse"},
	}
	for _, f := range fields {
		if !f.v.set {
			continue
		}
		v, err := f.v.bytes(f.name)
		if err != nil {
			return rec, err
		}
		*f.dst = v
		rec.Has |= f.flag
	}
	if s.Activity.Address.set && !s.Activity.Address.neg {
		rec.Addr, rec.Has = s.Activity.Address.v, rec.Has|HasAddr
	}
	rec.Step = int64(s.Activity.StepID.v)
	rec.Op, rec.Region, rec.Shape = s.Activity.TfOpName, s.Activity.RegionType, s.Activity.TensorShape
	return rec, nil
}

// ReadAny reads either kind of profile: a memory_profile.json (its content
// opens with '{', after white space) or an XSpace (whose first byte, 0x0a,
// is also a newline: nothing is consumed before the choice).
func ReadAny(r io.Reader, lim Limits) (*Profile, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	p, err := br.Peek(512)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, err
	}
	if len(bytes.TrimLeft(p, " \t\r\n")) == 0 && len(p) < 512 {
		return nil, errors.New("empty profile")
	}
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return ReadMemoryProfile(br, lim)
	}
	return Read(br, lim)
}
