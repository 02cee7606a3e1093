package strategies

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kind tells which runtime serves a device's memory.
type Kind uint8

const (
	GPU Kind = iota + 1
	TPU
)

func (k Kind) String() string {
	switch k {
	case GPU:
		return "gpu"
	case TPU:
		return "tpu"
	}
	return "?"
}

const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Device holds the figures of one accelerator that the allocator models
// depend on. Every preset figure cites its source in presets.go or is
// labelled an assumption there; all of them can be overridden
// (`a100-40g:capacity=24GiB`).
type Device struct {
	Name string
	Kind Kind
	// Total is what the driver reports as the device's memory
	// (cudaMemGetInfo total). JAX's 75 % and PyTorch's per-process
	// fraction are fractions of it.
	Total int64
	// Capacity is the memory the framework's allocator can actually
	// obtain: Total less the CUDA context or TPU runtime reservation.
	// Device mallocs beyond it fail.
	Capacity int64
	// Reserve is what a card of this family keeps beyond its allocator's
	// reach: the CUDA context on a GPU, the runtime's reserve on a TPU
	// (both assumptions, presets.go). The presets' Capacity is Total less
	// it; overrides such as `capacity=` keep it, so that a capacity
	// search names a card to buy (Total = capacity + Reserve) on any
	// device spec.
	Reserve int64
	// Free is cudaMemGetInfo's free figure when the framework starts;
	// TensorFlow sizes its default limit from it (allocator-spec §2.8).
	Free int64
	// ComputeMajor is the CUDA compute capability's major number (TF's
	// system-memory reserve depends on it); 0 on TPU.
	ComputeMajor int
	// Granularity is the physical page size: cuMemCreate sizes and the
	// capacity search step are multiples of it. On a TPU it is the
	// runtime's allocation granule, to which the TPU runtime model
	// (tpurt) rounds every buffer.
	Granularity int64
	// Modelled costs in seconds. Nobody publishes authoritative figures
	// for current hardware (allocator-spec §4.1), so they are assumptions
	// exposed as parameters.
	MallocSec       float64 // one cudaMalloc (or TPU runtime allocation)
	FreeSec         float64 // one cudaFree
	MapSec          float64 // cuMemCreate+cuMemMap of one page
	UnmapSec        float64 // cuMemUnmap+release of one page
	HitSec          float64 // an allocation served from the allocator's cache
	HBMBytesPerSec  float64 // device memory bandwidth
	HostBytesPerSec float64 // host link (PCIe/NVLink-C2C) bandwidth
	// Relocatable says the runtime can move live buffers (TPU: yes,
	// allocator-spec §6.4, XLA error E0100; GPU frameworks: no). The TPU
	// runtime model defragments by default only on a relocatable device.
	Relocatable bool
	// Notes lists where each figure came from, printed with results so
	// that assumptions are visible.
	Notes []string
}

// sizeParam parses "24GiB", "512MiB", "1.5GB", "4096".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	units := []struct {
		suf string
		m   int64
	}{{"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"TiB", GiB << 10}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || (mult > 1 && n > (1<<62)/mult) {
			return 0, fmt.Errorf("size %q out of range", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || !(f*float64(mult) <= 1<<62) { // NaN fails both

		return 0, fmt.Errorf("bad size %q (want bytes, or a number with KiB/MiB/GiB/TiB/KB/MB/GB/TB)", s)
	}
	return int64(f * float64(mult)), nil
}

// deviceKeys are the override keys ParseDevice accepts, each with a setter.
var deviceKeys = map[string]func(d *Device, v string) error{
	"capacity": func(d *Device, v string) error {
		n, err := ParseMemorySize(v)
		// A user naming a capacity means a card of that size: total,
		// capacity and free move together unless also given.
		d.Total, d.Capacity, d.Free = n, n, n
		return err
	},
	"total":       memoryKey(func(d *Device) *int64 { return &d.Total }),
	"free":        memoryKey(func(d *Device) *int64 { return &d.Free }),
	"granularity": bytesKey(func(d *Device) *int64 { return &d.Granularity }),
	"cc": func(d *Device, v string) error {
		maj, _, _ := strings.Cut(v, ".")
		n, err := strconv.Atoi(maj)
		if err != nil || n < 0 || n > 99 {
			return fmt.Errorf("bad compute capability %q", v)
		}
		d.ComputeMajor = n
		return nil
	},
	"malloc-sec": secKey(func(d *Device) *float64 { return &d.MallocSec }),
	"free-sec":   secKey(func(d *Device) *float64 { return &d.FreeSec }),
	"map-sec":    secKey(func(d *Device) *float64 { return &d.MapSec }),
	"unmap-sec":  secKey(func(d *Device) *float64 { return &d.UnmapSec }),
	"hit-sec":    secKey(func(d *Device) *float64 { return &d.HitSec }),
	"hbm-bw":     bwKey(func(d *Device) *float64 { return &d.HBMBytesPerSec }),
	"host-bw":    bwKey(func(d *Device) *float64 { return &d.HostBytesPerSec }),
	"relocatable": func(d *Device, v string) error {
		b, err := ParseBool(v)
		d.Relocatable = b
		return err
	},
}

// ParseMemorySize is ParseBytes for a device's memory (the capacity,
// total and free keys, validate's --capacity): a bare number below 1 MiB is refused as a
// forgotten unit (`capacity=24` is no 24-byte card), with the unit it
// probably lacks; a unit, even B, says the user means it.
func ParseMemorySize(v string) (int64, error) {
	n, err := ParseBytes(v)
	if err != nil {
		return n, err
	}
	t := strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(strings.TrimRight(t, "KMGTiB "), 64); err == nil && f == 0 {
		return n, fmt.Errorf("%s: a device memory must be more than 0 bytes", t)
	}
	if last := t[len(t)-1]; n < MiB && (last >= '0' && last <= '9' || last == '.') {
		if n <= 4096 {
			return n, fmt.Errorf("%s bytes is no device memory: did you mean %sGiB? (write %sB if you mean bytes)", t, t, t)
		}
		return n, fmt.Errorf("%s bytes is no device memory: give a unit, KiB, MiB or GiB (write %sB if you mean bytes)", t, t)
	}
	return n, nil
}

func memoryKey(f func(*Device) *int64) func(*Device, string) error {
	return func(d *Device, v string) error {
		n, err := ParseMemorySize(v)
		*f(d) = n
		return err
	}
}

func bytesKey(f func(*Device) *int64) func(*Device, string) error {
	return func(d *Device, v string) error {
		n, err := ParseBytes(v)
		*f(d) = n
		return err
	}
}

// Bounds of the device figures a user may set. A latency above a second
// per device call, or a bandwidth outside 1 MB/s–10 PB/s, is no device
// (the presets are microseconds and 16 GB/s–4.8 TB/s); NaN and infinities
// are refused, so the modelled time can never turn negative.
const (
	maxCallSec = 1.0
	minBW      = 1e6
	maxBW      = 1e16
)

func secKey(f func(*Device) *float64) func(*Device, string) error {
	return floatKey(f, 0, maxCallSec, "seconds")
}

func bwKey(f func(*Device) *float64) func(*Device, string) error {
	return floatKey(f, minBW, maxBW, "bytes per second")
}

func floatKey(f func(*Device) *float64, lo, hi float64, unit string) func(*Device, string) error {
	return func(d *Device, v string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(x >= lo && x <= hi) { // NaN fails
			return fmt.Errorf("bad number %q (want %g to %g %s)", v, lo, hi, unit)
		}
		*f(d) = x
		return nil
	}
}

// ParseBool accepts the spellings the frameworks' own knobs use:
// true/false in any case, 1/0, yes/no.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("bad boolean %q (want true or false)", v)
}

// DeviceKeys lists the override keys, sorted.
func DeviceKeys() []string {
	ks := make([]string, 0, len(deviceKeys))
	for k := range deviceKeys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ParseDevice resolves "a100-40g", "h100-80g:capacity=24GiB" or
// "gpu:capacity=24GiB" (a generic GPU, the a100-80g figures with the
// capacity replaced).
func ParseDevice(spec string) (Device, error) {
	name, rest, _ := strings.Cut(strings.TrimSpace(spec), ":")
	base := name
	if name == "gpu" {
		base = DefaultDevice
	} else if name == "tpu" {
		base = "tpu-v4"
	}
	d, ok := presets[base]
	if !ok {
		return Device{}, fmt.Errorf("unknown device %q (known: gpu, tpu, %s)", name, strings.Join(PresetNames(), ", "))
	}
	d.Name = name
	d.Notes = append([]string(nil), d.Notes...)
	if rest == "" {
		return d, nil
	}
	// capacity sets total, capacity and free together (a card of that
	// size); total or free given beside it override that whatever the
	// order they are written in, so capacity is applied first.
	kvs := strings.Split(rest, ",")
	slices.SortStableFunc(kvs, func(x, y string) int {
		xc, yc := strings.HasPrefix(strings.TrimSpace(x), "capacity="), strings.HasPrefix(strings.TrimSpace(y), "capacity=")
		switch {
		case xc && !yc:
			return -1
		case yc && !xc:
			return 1
		}
		return 0
	})
	given := map[string]bool{}
	for _, kv := range kvs {
		k, v, found := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		set, known := deviceKeys[k]
		if !found || !known {
			return Device{}, fmt.Errorf("device %q: unknown key %q (valid keys: %s)", spec, k, strings.Join(DeviceKeys(), ", "))
		}
		if given[k] {
			// The later value won, under a label naming both.
			return Device{}, fmt.Errorf("device %q: key %q given twice", spec, k)
		}
		given[k] = true
		if err := set(&d, strings.TrimSpace(v)); err != nil {
			return Device{}, fmt.Errorf("device %q: %s: %w", spec, k, err)
		}
		d.Notes = append(d.Notes, k+"="+strings.TrimSpace(v)+": set by the user")
	}
	if d.Total <= 0 || d.Capacity <= 0 || d.Capacity > d.Total || d.Free > d.Total || d.Free <= 0 {
		return Device{}, fmt.Errorf("device %q: need 0 < free <= total and 0 < capacity <= total (total %d, capacity %d, free %d)", spec, d.Total, d.Capacity, d.Free)
	}
	if d.Granularity <= 0 || d.Granularity&(d.Granularity-1) != 0 {
		return Device{}, fmt.Errorf("device %q: granularity %d is not a power of two", spec, d.Granularity)
	}
	if d.Kind == GPU && d.Relocatable {
		// Relocatable only sets the TPU runtime model's default defrag;
		// no GPU allocator modelled here moves a live buffer, so on a
		// GPU it would be accepted and change nothing.
		return Device{}, fmt.Errorf("device %q: relocatable=true on a GPU: no GPU framework's allocator moves live buffers; the what-if of relocation (through host memory) is the strategy knob defrag=true of jax and tf", spec)
	}
	d.Name = strings.TrimSpace(spec)
	d.sayContext()
	return d, nil
}

// contextNote starts the GPU presets' note on the CUDA context (presets.go).
const contextNote = "context overhead "

// sayContext rewrites the GPU presets' context note when the spec sets the
// memory otherwise: `capacity=700MiB` makes total, capacity and free all
// 700 MiB, so its replays have no context beside the allocator (JAX's 75 %
// is of 700 MiB), while a capacity search on it still adds the family's
// context to name a card (Overhead). The preset's "capacity = total −
// 512 MiB" would say something else than what is replayed.
func (d *Device) sayContext() {
	if d.Total-d.Capacity == d.Reserve && d.Free == d.Capacity {
		return
	}
	for i, n := range d.Notes {
		if strings.HasPrefix(n, contextNote) {
			d.Notes[i] = fmt.Sprintf("%s%s on a card of this family: assumption; this spec replays total %s, capacity %s, free %s (%s beside the allocator), and a capacity search on it names a card of the capacity found plus %s",
				contextNote, sizeText(d.Reserve), sizeText(d.Total), sizeText(d.Capacity), sizeText(d.Free), sizeText(d.Total-d.Capacity), sizeText(d.Overhead()))
		}
	}
}

// sizeText writes a byte count in the largest binary unit that divides
// it, as device specs are written (512 MiB, 3 GiB, 1000 B).
func sizeText(n int64) string {
	switch {
	case n != 0 && n%GiB == 0:
		return strconv.FormatInt(n/GiB, 10) + " GiB"
	case n != 0 && n%MiB == 0:
		return strconv.FormatInt(n/MiB, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Overhead is what a card of this device holds beyond its allocator's
// reach: the family's Reserve (kept by overrides such as `capacity=`), or
// Total − Capacity when the spec sets more. A capacity search's card is
// its capacity plus this, whether it searches one trace or colocated
// tenants.
func (d Device) Overhead() int64 { return max(d.Reserve, d.Total-d.Capacity, 0) }

// Label is the device's name as a benchmark-name value: no '/', no spaces.
func (d Device) Label() string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(d.Name)
}
