package traces

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"membench/internal/fuzzbound"
)

// TestPprofExpansionBound: a sample is a count, so a tiny profile can
// stand for tens of millions of live buffers (issue 11, item 8: 155 bytes
// for 50 M allocations, some 14 GB per replay). The bound is
// maxPprofAllocs allocations; a profile at it reads, one past it is
// refused at once with the sample, its values and the device.
func TestPprofExpansionBound(t *testing.T) {
	repro := pprofBytes(t, jaxProfile(t, jaxSample{50_000_000, 50_000_000 * 256, "buffer", "cuda:0"}), true)
	if len(repro) > 200 {
		t.Fatalf("the reproducer is %d bytes", len(repro))
	}
	fuzzbound.Check(t, func() {
		_, err := OpenReader("repro.prof", bytes.NewReader(repro), DefaultOpenOptions)
		want := `repro.prof (event 0): sample 0 (50000000 allocations of 12800000000 bytes): the profile stands for more than 524288 allocations on device "cuda:0", 0 before this sample`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("%d-byte profile of 50 M allocations: err = %v\nwant %q", len(repro), err, want)
		}
	})

	// Split over samples: the running total is what counts.
	over := pprofBytes(t, jaxProfile(t,
		jaxSample{maxPprofAllocs - 1, maxPprofAllocs - 1, "buffer", "d"},
		jaxSample{1, 1, "buffer", "other"},
		jaxSample{2, 2, "buffer", "d"}), false)
	_, err := OpenReader("over.prof", bytes.NewReader(over), DefaultOpenOptions)
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf(`over.prof (event %d): sample 2 (2 allocations of 2 bytes): the profile stands for more than %d allocations`, maxPprofAllocs-1, maxPprofAllocs)) {
		t.Fatalf("one past the bound: err = %v", err)
	}

	// At the bound: every allocation streams out of one sample record,
	// without materialising them.
	at := pprofBytes(t, jaxProfile(t, jaxSample{maxPprofAllocs, 3 * maxPprofAllocs, "buffer", "d"}), true)
	var n int
	d, alloc := fuzzbound.Measure(func() {
		r, err := OpenReader("at.prof", bytes.NewReader(at), DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if ev.Size != 3 {
				t.Fatalf("event %d: %+v", n, ev)
			}
			n++
		}
	})
	if n != maxPprofAllocs {
		t.Fatalf("%d events, want %d", n, maxPprofAllocs)
	}
	if alloc > 4<<20 {
		t.Errorf("reading %d allocations allocated %d bytes: they are not streamed", n, alloc)
	}
	t.Logf("%d allocations from a %d-byte profile: %v, %d bytes allocated", n, len(at), d, alloc)
}

// TestPprofManyDevices: device labels are collected in linear time, and
// lists of devices and kinds in meta and errors are cut short.
func TestPprofManyDevices(t *testing.T) {
	var samples []jaxSample
	for i := range 50_000 {
		samples = append(samples, jaxSample{1, 1, fmt.Sprintf("k%d", i), fmt.Sprintf("dev%05d", i)})
	}
	data := pprofBytes(t, jaxProfile(t, samples...), false)
	fuzzbound.Check(t, func() {
		_, err := OpenReader("many.prof", bytes.NewReader(data), OpenOptions{Device: 50_000})
		want := `many.prof: device 50000 is not in the pprof profile: it has 50000 device(s), "dev00000", "dev00001",`
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), `"dev00031", and 49968 more (OpenOptions.Device is an index into this sorted list)`) {
			t.Fatalf("err = %v", err)
		}
	})
	samples = samples[:100]
	for i := range samples {
		samples[i].device = "d"
	}
	r, err := OpenReader("kinds.prof", bytes.NewReader(pprofBytes(t, jaxProfile(t, samples...), false)), DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	if k := r.Meta().Get("kinds"); !strings.HasSuffix(k, "(and 68 more kinds)") || strings.Count(k, "=") != maxPprofListed {
		t.Errorf("kinds %q", k)
	}
}

// TestPprofDecodedEstimate: the estimate of what decoding a profile takes
// is not below what the pprof package allocates, nor far above it, for
// profiles of each shape, and a profile whose estimate passes the bound
// is refused before it is decoded. Under the race detector only the
// refusal is checked (raceEnabled).
func TestPprofDecodedEstimate(t *testing.T) {
	vt := []*profile.ValueType{{Type: "allocations", Unit: "count"}, {Type: "space", Unit: "bytes"}}
	shapes := map[string]func() *profile.Profile{
		"bare samples": func() *profile.Profile {
			p := &profile.Profile{SampleType: vt}
			for range 20_000 {
				p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1, 1}})
			}
			return p
		},
		"one label": func() *profile.Profile {
			p := &profile.Profile{SampleType: vt}
			for range 20_000 {
				p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1, 1}, Label: map[string][]string{"device": {"d"}}})
			}
			return p
		},
		"labels": func() *profile.Profile {
			p := &profile.Profile{SampleType: vt}
			for range 10_000 {
				p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1, 1},
					Label: map[string][]string{"a": {"b"}, "c": {"d"}, "e": {"f"}}, NumLabel: map[string][]int64{"n": {1}}})
			}
			return p
		},
		"deep stacks": func() *profile.Profile {
			fn := &profile.Function{ID: 1, Name: "f"}
			loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 1}}}
			s := &profile.Sample{Value: []int64{1, 1}}
			for range 100_000 {
				s.Location = append(s.Location, loc)
			}
			return &profile.Profile{SampleType: vt, Function: []*profile.Function{fn}, Location: []*profile.Location{loc}, Sample: []*profile.Sample{s}}
		},
		"locations": func() *profile.Profile {
			p := &profile.Profile{SampleType: vt}
			for i := range 10_000 {
				fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprint("f", i), Filename: "x.py"}
				loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn, Line: 1}, {Function: fn, Line: 2}}}
				p.Function = append(p.Function, fn)
				p.Location = append(p.Location, loc)
				p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1, 1}, Location: []*profile.Location{loc}})
			}
			return p
		},
	}
	for name, mk := range shapes {
		data := pprofBytes(t, mk(), false)
		est := pprofDecodedEstimate(data)
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		p, err := parsePprof(data)
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(p)
		got := int64(m1.TotalAlloc - m0.TotalAlloc)
		t.Logf("%s: %d bytes, decoding allocates %d, estimate %d (%.2f)", name, len(data), got, est, float64(est)/float64(got))
		if !raceEnabled && (est < got*9/10 || est > 4*got) {
			t.Errorf("%s: estimate %d for %d bytes allocated decoding", name, est, got)
		}
	}

	// 4 M samples of 6 bytes each, 24 MiB, within maxPprofBytes: decoded,
	// about 1 GB. Compressed, it is a few tens of kilobytes.
	one := pprofBytes(t, &profile.Profile{SampleType: vt, Sample: []*profile.Sample{{Value: []int64{1, 1}}}}, false)
	var sample []byte
	pbWalk(one, func(field, wire uint64, v []byte) {
		if field == 2 {
			sample = append([]byte{0x12, byte(len(v))}, v...)
		}
	})
	bomb := bytes.Clone(one)
	bomb = append(bomb, bytes.Repeat(sample, 4<<20)...)
	gz := gzipped(t, bomb)
	start := time.Now()
	fuzzbound.Check(t, func() {
		// Plain, the estimate refuses it; gzipped (a thousandfold), the
		// decompression-bomb bound does first.
		_, err := OpenReader("bomb.prof", bytes.NewReader(bomb), DefaultOpenOptions)
		if err == nil || !strings.Contains(err.Error(), "bomb.prof: pprof profile too large to decode: its 25165880 bytes hold samples, labels and records that would take about") {
			t.Fatalf("err = %v", err)
		}
		_, err = OpenReader("bomb.prof", bytes.NewReader(gz), DefaultOpenOptions)
		if err == nil || !strings.Contains(err.Error(), "bomb.prof") || !errors.Is(err, errGzipBomb) {
			t.Fatalf("gzipped: err = %v", err)
		}
	})
	t.Logf("%d-byte gzip of %d bytes refused in %v", len(gz), len(bomb), time.Since(start))
}
