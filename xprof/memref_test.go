package xprof

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
)

// readMemoryProfileWhole is ReadMemoryProfile as it was, decoding the
// file whole with json.Unmarshal: the reference of TestMemoryProfileStreamed.
func readMemoryProfileWhole(r io.Reader, lim Limits) (*Profile, error) {
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
			// The snapshot's conversion is the reader's own
			// (record): what the reference checks is the stream
			// against the whole file, key by key and cut by cut.
			rec, err := s.record()
			if err != nil {
				return fail(err)
			}
			if err := d.add(name, device, "memory_profile.json", rec); err != nil {
				return fail(err)
			}
		}
	}
	return d.finish(), nil
}

// TestMemoryProfileStreamed: the streaming reader accepts and refuses
// what decoding the file whole did, and gives the same records in the
// same order, on profiles built to stress how encoding/json decodes:
// repeated and case-folded keys, nulls, unknown values of every shape, a
// version, sampled timelines, bad snapshots in several allocators, and
// the same cut at many points.
func TestMemoryProfileStreamed(t *testing.T) {
	snap := func(i int, act string) string {
		return fmt.Sprintf(`{"timeOffsetPs": "%d", "aggregationStats": {"heapAllocatedBytes": "%d", "x": [1, {"y": null}]}, "activityMetadata": {"memoryActivity": %q, "requestedBytes": "100", "allocationBytes": "256", "address": "%d", "tfOpName": "op%d", "stepId": "%d"}}`, 1000-i*7%13, 256*i, act, 4096+i*256, i, i%3)
	}
	list := func(n int, act string) string {
		var s []string
		for i := range n {
			a := act
			if a == "" {
				a = []string{"ALLOCATION", "DEALLOCATION", "1", "2"}[i%4]
			}
			s = append(s, snap(i, a))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	inputs := []string{
		`{"memoryProfilePerAllocator": {"GPU_0_bfc": {"memoryProfileSnapshots": ` + list(40, "") + `}}}`,
		`{"junk": {"a": [1, 2, {"b": "c"}]}, "memoryProfilePerAllocator": {"GPU_1_bfc": {"memoryProfileSnapshots": ` + list(5, "") + `, "other": [[]]}, "GPU_0_bfc": {"memoryProfileSnapshots": ` + list(7, "") + `}}, "numHosts": 1}`,
		`{"memoryProfilePerAllocator": {"x": {"memoryProfileSnapshots": ` + list(5, "") + `}, "x": {"memoryProfileSnapshots": ` + list(3, "") + `}}}`,
		`{"memoryProfilePerAllocator": {"x": {"memoryProfileSnapshots": ` + list(5, "") + `, "memoryProfileSnapshots": ` + list(2, "") + `}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `}}, "memoryProfilePerAllocator": {"b": {"memoryProfileSnapshots": ` + list(3, "") + `}}}`,
		`{"MEMORYPROFILEPERALLOCATOR": {"a": {"MemoryProfileSnapshots": ` + list(4, "") + `}}}`,
		`{"memoryProfilePerAllocator": {"a": null, "b": {"memoryProfileSnapshots": null}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `}}, "memoryProfilePerAllocator": null}`,
		`{"memoryProfilePerAllocator": null}`,
		`{"other": 1}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `}}, "version": null}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `, "sampledTimelineSnapshots": []}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `, "sampledTimelineSnapshots": [ ]}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": ` + list(2, "") + `, "sampledTimelineSnapshots": null}}}`,
		`{"memoryProfilePerAllocator": {"b": {"memoryProfileSnapshots": ` + list(3, "RESERVATION") + `}, "a": {"memoryProfileSnapshots": [` + snap(1, "ALLOCATION") + `, ` + snap(2, "FREE") + `]}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": [{"timeOffsetPs": "-5", "activityMetadata": {"memoryActivity": "ALLOCATION"}}]}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": [{"activityMetadata": {"memoryActivity": "ALLOCATION", "requestedBytes": "-5"}}]}}}`,
		`{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": 5}}}`,
		`{"memoryProfilePerAllocator": [1]}`,
	}
	base := inputs[1]
	for cut := 1; cut < len(base); cut += 37 {
		inputs = append(inputs, base[:cut])
	}
	inputs = append(inputs, base+" x", base+" {}", base+"  \n")
	for i, in := range inputs {
		want, werr := readMemoryProfileWhole(strings.NewReader(in), DefaultLimits)
		got, gerr := ReadMemoryProfile(strings.NewReader(in), DefaultLimits)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("input %d (%.80s...): whole: %v; streamed: %v", i, in, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		if w, g := fmt.Sprintf("%+v", profileRecords(want)), fmt.Sprintf("%+v", profileRecords(got)); w != g {
			t.Errorf("input %d: records differ:\nwhole    %s\nstreamed %s", i, w, g)
		}
	}
	// The record limit holds while reading.
	lim := DefaultLimits
	lim.MaxRecords = 10
	if _, err := ReadMemoryProfile(strings.NewReader(inputs[0]), lim); err == nil || !strings.Contains(err.Error(), "more than 10 allocator events") {
		t.Errorf("40 events under a limit of 10: %v", err)
	}
}

func profileRecords(p *Profile) []string {
	var out []string
	for _, a := range p.Allocators {
		out = append(out, fmt.Sprintf("%s/%d/%s: %+v", a.Name, a.Device, a.Plane, a.Records))
	}
	return out
}
