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

// MaxMemoryProfileBytes bounds a memory_profile.json: it is decoded whole.
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
		Snapshots []struct {
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
		} `json:"memoryProfileSnapshots"`
		Sampled json.RawMessage `json:"sampledTimelineSnapshots"`
	} `json:"memoryProfilePerAllocator"`
	Version json.RawMessage `json:"version"`
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
func ReadMemoryProfile(r io.Reader, lim Limits) (*Profile, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxMemoryProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxMemoryProfileBytes {
		return nil, fmt.Errorf("memory profile larger than %d bytes (the limit of a memory_profile.json, which is decoded whole)", MaxMemoryProfileBytes)
	}
	var mp memoryProfileJSON
	if err := json.Unmarshal(data, &mp); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &OffsetError{se.Offset, err}
		}
		return nil, err
	}
	if mp.PerAllocator == nil {
		return nil, errors.New("no memoryProfilePerAllocator: not a TensorBoard memory profile")
	}
	d := decoder{lim: lim, byName: map[string]*Allocator{}}
	for _, name := range slices.Sorted(maps.Keys(mp.PerAllocator)) {
		pa := mp.PerAllocator[name]
		if len(pa.Sampled) > 0 && string(pa.Sampled) != "null" && string(pa.Sampled) != "[]" || len(mp.Version) > 0 {
			return nil, fmt.Errorf("allocator %s: %w; read the .xplane.pb it was made from", name, ErrSampled)
		}
		device := gpuIndex(name)
		for i, s := range pa.Snapshots {
			fail := func(err error) (*Profile, error) {
				return nil, fmt.Errorf("allocator %s, snapshot %d: %w", name, i, err)
			}
			var rec Record
			switch s.Activity.MemoryActivity {
			case "ALLOCATION", "1":
				rec.Alloc = true
			case "DEALLOCATION", "2":
			default:
				return fail(fmt.Errorf("memory activity %q: only ALLOCATION and DEALLOCATION are allocator events", s.Activity.MemoryActivity))
			}
			if s.TimeOffsetPs.neg || s.TimeOffsetPs.v > 1<<62 {
				return fail(errors.New("time offset out of range"))
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
					return fail(err)
				}
				*f.dst = v
				rec.Has |= f.flag
			}
			if s.Activity.Address.set && !s.Activity.Address.neg {
				rec.Addr, rec.Has = s.Activity.Address.v, rec.Has|HasAddr
			}
			rec.Step = int64(s.Activity.StepID.v)
			rec.Op, rec.Region, rec.Shape = s.Activity.TfOpName, s.Activity.RegionType, s.Activity.TensorShape
			if err := d.add(name, device, "memory_profile.json", rec); err != nil {
				return fail(err)
			}
		}
	}
	return d.finish(), nil
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
