package strategies

import (
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "24GiB": 24 << 30, "512MiB": 512 << 20, "1.5GiB": 3 << 29, "16GB": 16e9, "2 MiB": 2 << 20, "0": 0,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "1e40GiB", "GiB", "9999999999999999999"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestParseDevice(t *testing.T) {
	for _, name := range PresetNames() {
		d, err := ParseDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Capacity <= 0 || d.Capacity >= d.Total || d.Free != d.Capacity || d.Granularity <= 0 || len(d.Notes) < 2 || d.HBMBytesPerSec <= 0 {
			t.Errorf("%s: implausible preset %+v", name, d)
		}
		if (d.Kind == TPU) != strings.HasPrefix(name, "tpu") || d.Relocatable != (d.Kind == TPU) {
			t.Errorf("%s: kind %v relocatable %v", name, d.Kind, d.Relocatable)
		}
		if d.Kind == GPU && d.ComputeMajor < 8 {
			t.Errorf("%s: compute capability %d", name, d.ComputeMajor)
		}
	}
	// A unit, even B, says the user means the number; 1 MiB and up
	// needs none.
	for spec, want := range map[string]int64{"gpu:capacity=24B": 24, "gpu:capacity=2097152": 2 << 20, "gpu:capacity=1.5GiB": 3 << 29} {
		if d, err := ParseDevice(spec); err != nil || d.Capacity != want {
			t.Errorf("ParseDevice(%q): capacity %d, %v; want %d", spec, d.Capacity, err, want)
		}
	}
	d, err := ParseDevice("a100-40g:capacity=24GiB,malloc-sec=0.001")
	if err != nil || d.Total != 24<<30 || d.Capacity != 24<<30 || d.MallocSec != 0.001 || d.ComputeMajor != 8 {
		t.Errorf("override: %+v %v", d, err)
	}
	if d.Label() != "a100-40g:capacity=24GiB,malloc-sec=0.001" {
		t.Errorf("label %q", d.Label())
	}
	d, err = ParseDevice("gpu:capacity=16GiB")
	if err != nil || d.Total != 16<<30 || d.Kind != GPU {
		t.Errorf("gpu: %+v %v", d, err)
	}
	for spec, want := range map[string]string{
		"v100":                             "unknown device",
		"a100-40g:capacty=1GiB":            "valid keys: capacity, cc,",
		"a100-40g:capacity=lots":           "bad size",
		"a100-80g:capacity=24":             "did you mean 24GiB?",
		"a100-80g:capacity=0.5":            "did you mean 0.5GiB?",
		"a100-80g:total=80,capacity=40GiB": "did you mean 80GiB?",
		"a100-80g:free=100":                "did you mean 100GiB?",
		"a100-80g:capacity=800000":         "give a unit",
		"a100-40g:capacity=1GiB,free=2GiB": "free <= total",
		"a100-40g:granularity=3000":        "power of two",
	} {
		if _, err := ParseDevice(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDevice(%q): %v, want %q", spec, err, want)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]string{
		"torch":                          "torch",
		"torch:expandable_segments=true": "torch:expandable_segments=true",
		"torch:expandable_segments:True,max_split_size_mb:128":                        "torch:expandable_segments=True,max_split_size_mb=128",
		"torch:roundup_power2_divisions:[256:1,>:4],garbage_collection_threshold:0.6": "torch:roundup_power2_divisions=[256:1,>:4],garbage_collection_threshold=0.6",
		" jax:mem_fraction=0.9 ": "jax:mem_fraction=0.9",
	} {
		sp, err := ParseSpec(in)
		if err != nil || sp.String() != want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", in, sp.String(), err, want)
		}
	}
	for _, bad := range []string{"", ":x=1", "torch:novalue"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
	sp, _ := ParseSpec("torch:a=1,b=2")
	if err := sp.CheckKeys("a", "c"); err == nil || !strings.Contains(err.Error(), `unknown key "b" (valid keys: a, c)`) {
		t.Errorf("CheckKeys: %v", err)
	}
}

func TestMemory(t *testing.T) {
	d, _ := ParseDevice("gpu:capacity=10MiB")
	m := NewMemory(&d)
	a1, ok := m.Malloc(6 << 20)
	if !ok || a1 == 0 {
		t.Fatal("first malloc")
	}
	if _, ok := m.Malloc(6 << 20); ok {
		t.Error("malloc beyond capacity succeeded")
	}
	a2, ok := m.Malloc(4 << 20)
	if !ok || a2 < a1+6<<20 {
		t.Errorf("second malloc at %#x overlaps the first at %#x", a2, a1)
	}
	m.Free(6 << 20)
	if m.Reserved() != 4<<20 || m.Peak() != 10<<20 || m.Mallocs() != 2 || m.Frees() != 1 {
		t.Errorf("reserved %d peak %d mallocs %d frees %d", m.Reserved(), m.Peak(), m.Mallocs(), m.Frees())
	}
	// 2 mallocs at 50 µs + 1 free at 20 µs, exactly.
	if got := m.Seconds(); got != 120e-6 {
		t.Errorf("modelled %v s", got)
	}
	m.Limit = 5 << 20
	if _, ok := m.Malloc(2 << 20); ok {
		t.Error("Limit not honoured")
	}
}

// TestHitsCharged checks that cache hits, counted and charged when the
// time is read, cost what charging each at once would: exactly, between
// device calls, and saturating with them rather than wrapping.
func TestHitsCharged(t *testing.T) {
	d, err := ParseDevice("gpu:malloc-sec=5e-5,free-sec=2e-5,hit-sec=3e-7")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory(&d)
	var want int64 // picoseconds, charged one by one
	for i := range 1000 {
		switch i % 7 {
		case 0:
			if _, ok := m.Malloc(1 << 20); ok {
				want += 50_000_000
			}
		case 3:
			m.Free(1 << 20)
			want += 20_000_000
		default:
			m.Hit()
			want += 300_000
		}
	}
	if got := m.Seconds(); got != float64(want)/1e12 {
		t.Errorf("modelled %v s, want %v", got, float64(want)/1e12)
	}
	// Saturation: hits past the largest time, and hits on top of a
	// saturated time, read as the largest time, never negative.
	d, err = ParseDevice("gpu:hit-sec=1")
	if err != nil {
		t.Fatal(err)
	}
	m = NewMemory(&d)
	for range 10_000_000 { // 10^19 ps
		m.Hit()
	}
	if got := m.Seconds(); got != float64(math.MaxInt64)/1e12 {
		t.Errorf("hits past the largest time: %v s", got)
	}
	m = NewMemory(&d)
	m.Hit()
	m.charge(math.MaxInt64 - 1)
	if got := m.Seconds(); got != float64(math.MaxInt64)/1e12 {
		t.Errorf("a hit on a saturated time: %v s", got)
	}
}

// TestDeviceFiguresBounded: NaN, infinite, negative or absurd device
// figures are refused, and the modelled time saturates instead of turning
// negative (issue 11, defect 10).
func TestDeviceFiguresBounded(t *testing.T) {
	for _, spec := range []string{
		"gpu:malloc-sec=NaN", "gpu:malloc-sec=Inf", "gpu:free-sec=-1", "gpu:map-sec=1e300",
		"gpu:hit-sec=+Inf", "gpu:hbm-bw=0", "gpu:hbm-bw=NaN", "gpu:host-bw=1e300",
		"gpu:capacity=NaN", "gpu:capacity=NaNGiB", "gpu:capacity=InfGiB", "gpu:total=-Inf",
	} {
		if _, err := ParseDevice(spec); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
	d, err := ParseDevice("gpu:malloc-sec=1,hbm-bw=1e6")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory(&d)
	for range 20_000_000 / 1000 {
		m.charge(1e12 * 1000) // 1000 calls of a second each
	}
	m.Move(1<<56, false)
	m.Move(1<<56, false)
	if s := m.Seconds(); !(s > 0) {
		t.Errorf("modelled time %v after saturation", s)
	}
}

// TestReserveSurvivesOverrides: a capacity override keeps the family's
// reserve (CUDA context, TPU runtime), so a capacity search on it still
// names a card that holds one.
func TestReserveSurvivesOverrides(t *testing.T) {
	for spec, want := range map[string]int64{"gpu:capacity=3300MiB": 512 * MiB, "a100-40g": 512 * MiB, "tpu-v5e:capacity=8GiB": 258 * MiB} {
		d, err := ParseDevice(spec)
		if err != nil {
			t.Fatal(err)
		}
		if d.Reserve != want {
			t.Errorf("%s: reserve %d, want %d", spec, d.Reserve, want)
		}
	}
}

// TestTPUPresets: the TPU presets are the GiB the runtime reports with
// each generation's reserve (allocator-spec §6.4), the v6e's limit exactly
// as recorded, and the recorded 128 B granule.
func TestTPUPresets(t *testing.T) {
	for name, want := range map[string]struct{ total, capacity int64 }{
		"tpu-v6e": {32 * GiB, 33550237696},      // recorded limit
		"tpu-v5e": {16 * GiB, 16*GiB - 258*MiB}, // 15.75G usable
		"tpu-v5p": {96 * GiB, 96*GiB - 266*MiB}, // 95.74G available
		"tpu-v4":  {32 * GiB, 32*GiB - 1280*MiB},
	} {
		d, err := ParseDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Total != want.total || d.Capacity != want.capacity || d.Free != d.Capacity || d.Reserve != d.Total-d.Capacity || d.Granularity != 128 {
			t.Errorf("%s: total %d capacity %d free %d reserve %d granularity %d; want total %d capacity %d", name, d.Total, d.Capacity, d.Free, d.Reserve, d.Granularity, want.total, want.capacity)
		}
	}
}

// TestCapacityThenTotal: capacity makes a card of that size, and a total
// or free given beside it wins whatever the order of the keys.
func TestCapacityThenTotal(t *testing.T) {
	for _, spec := range []string{"a100-80g:total=3GiB,capacity=2.5GiB,free=2.5GiB", "a100-80g:capacity=2.5GiB,total=3GiB,free=2.5GiB"} {
		d, err := ParseDevice(spec)
		if err != nil || d.Total != 3<<30 || d.Capacity != 5<<29 || d.Free != 5<<29 {
			t.Errorf("%s: total %d capacity %d free %d, %v", spec, d.Total, d.Capacity, d.Free, err)
		}
	}
}

// TestContextNoteSaysWhatIsReplayed: the GPU presets' note on the CUDA
// context says capacity = total − 512 MiB; a spec that sets the memory
// otherwise (capacity=700MiB: total, capacity and free all 700 MiB) is
// replayed with no context beside the allocator, and its notes say that,
// not the preset's relation, while a capacity search on it still adds the
// context to name a card.
func TestContextNoteSaysWhatIsReplayed(t *testing.T) {
	for spec, want := range map[string]string{
		"a100-40g":                                   "context overhead 512 MiB (capacity = total - 512 MiB, free = capacity): assumption",
		"a100-40g:capacity=24GiB,total=24.5GiB":      "context overhead 512 MiB (capacity = total - 512 MiB, free = capacity): assumption",
		"a100-40g:capacity=700MiB":                   "context overhead 512 MiB on a card of this family: assumption; this spec replays total 700 MiB, capacity 700 MiB, free 700 MiB (0 B beside the allocator), and a capacity search on it names a card of the capacity found plus 512 MiB",
		"gpu:total=3GiB,capacity=2.5GiB,free=2.5GiB": "context overhead 512 MiB (capacity = total - 512 MiB, free = capacity): assumption",
		"gpu:capacity=2GiB,total=3GiB":               "context overhead 512 MiB on a card of this family: assumption; this spec replays total 3 GiB, capacity 2 GiB, free 2 GiB (1 GiB beside the allocator), and a capacity search on it names a card of the capacity found plus 1 GiB",
	} {
		d, err := ParseDevice(spec)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range d.Notes {
			if strings.HasPrefix(n, "context overhead") {
				got = append(got, n)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: context notes %q, want %q", spec, got, want)
		}
	}
}

// TestRelocatableGPURefused: no GPU allocator modelled here moves a live
// buffer (relocatable only sets the TPU runtime model's default defrag),
// so relocatable=true on a GPU would be accepted with no effect while the
// report's device table showed it; it is refused, naming the knob that
// asks the what-if. On a TPU either value is a setting of the model.
func TestRelocatableGPURefused(t *testing.T) {
	if _, err := ParseDevice("gpu:relocatable=true"); err == nil || !strings.Contains(err.Error(), "defrag=true") {
		t.Errorf("gpu:relocatable=true: %v", err)
	}
	for _, ok := range []string{"a100-40g:relocatable=false", "tpu-v5e:relocatable=false", "tpu:relocatable=true"} {
		if _, err := ParseDevice(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
