package torchlike

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"membench/asyncpool"
	"membench/strategies"
)

// Constants of CUDACachingAllocator.cpp (allocator-spec §1.1). They are
// exported because the snapshot reconstruction (torchlike/snapshot) and the
// validator (torchlike/validate) apply the same rules to recordings; this
// is the one place they are written down.
const (
	// MinBlockSize (kMinBlockSize): every block size is a multiple of it.
	MinBlockSize int64 = 512
	// SmallSize (kSmallSize): the largest request the small pool serves.
	SmallSize int64 = 1 << 20
	// SmallBuffer (kSmallBuffer): the small pool's segment size, and its
	// expandable page size.
	SmallBuffer int64 = 2 << 20
	// LargeBuffer (kLargeBuffer): the segment size for 1–10 MiB requests
	// before large_segment_size_mb existed, and the large pool's
	// expandable page size by default.
	LargeBuffer int64 = 20 << 20
	// MinLargeAlloc (kMinLargeAlloc): requests from here on get a segment
	// of their own rounded size.
	MinLargeAlloc int64 = 10 << 20
	// RoundLarge (kRoundLarge): the granule of those segments.
	RoundLarge int64 = 2 << 20
	mb         int64 = 1 << 20
	// unlimited stands for SIZE_MAX, max_split_size's default.
	unlimited int64 = math.MaxInt64
)

// Actions of a PyTorch memory snapshot's trace entries
// (allocator-spec §1.12): what the program asked for (alloc, the two
// halves of a free), what the allocator decided (segment_*, oom), and marks.
// The model reports its own decisions through Allocator.OnTrace with these
// names; torchlike/snapshot reads recordings in the same vocabulary.
const (
	ActionAlloc         = "alloc"
	ActionFreeRequested = "free_requested"
	ActionFreeCompleted = "free_completed"
	ActionFree          = "free" // legacy, or MemoryViz's fused free_requested+free_completed
	ActionSegmentAlloc  = "segment_alloc"
	ActionSegmentFree   = "segment_free"
	ActionSegmentMap    = "segment_map"
	ActionSegmentUnmap  = "segment_unmap"
	ActionSnapshot      = "snapshot"
	ActionOOM           = "oom"
	ActionUserDefined   = "user_defined"
)

// Config is the allocator's configuration: PYTORCH_CUDA_ALLOC_CONF's knobs
// plus the two runtime calls that change its behaviour.
type Config struct {
	// MaxSplitSize is max_split_size_mb in bytes; unlimited by default.
	MaxSplitSize int64
	// MaxNonSplitRounding is max_non_split_rounding_mb in bytes (20 MiB):
	// how much larger than a request ≥ MaxSplitSize an oversize block may be.
	MaxNonSplitRounding int64
	// GCThreshold is garbage_collection_threshold; it acts only when
	// MemoryFraction is set (allocator-spec §1.9).
	GCThreshold float64
	// Divisions is roundup_power2_divisions, one entry per power-of-two
	// interval from 1 MiB (index 0) to 32 GiB and above (index 15).
	Divisions [16]int64
	// ExpandableSegments is expandable_segments (allocator-spec §1.10).
	ExpandableSegments bool
	// MemoryFraction is what torch.cuda.set_per_process_memory_fraction
	// was called with, if FractionSet; 0.0 is valid and refuses every
	// device allocation, as upstream.
	MemoryFraction float64
	FractionSet    bool
	// AsyncBackend is backend:cudaMallocAsync: CUDA's stream-ordered pool
	// (package asyncpool) instead of the caching allocator.
	AsyncBackend bool
	// PoolGranularity is the async pool's assumed growth unit
	// (pool_granularity, bytes); 0 means asyncpool's default.
	PoolGranularity    int64
	poolGranularitySet bool
	// NoCaching is PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc and
	// one cudaFree per tensor.
	NoCaching bool
	// LegacyRoundup rounds as PyTorch before 2.4 did (before upstream PR
	// #126830): an interval whose roundup_power2_divisions is 1 left
	// requests above 512 B unrounded. validate uses it when a recording
	// only agrees that way; the snapshot does not record the version.
	LegacyRoundup bool
	// LargeSegmentSize is large_segment_size_mb (newest releases only): the
	// segment size for 1–10 MiB requests and the large pool's expandable
	// page size; LargeBuffer (20 MiB) before it existed.
	LargeSegmentSize int64
	// inert are the settings (key=value) accepted so that a real
	// configuration string parses whole but invisible to a replay; the
	// allocator's Notes name them.
	inert []string
}

// DefaultConfig is PyTorch's behaviour with no environment set.
func DefaultConfig() Config {
	return Config{MaxSplitSize: unlimited, MaxNonSplitRounding: LargeBuffer, LargeSegmentSize: LargeBuffer}
}

// Keys lists the knobs a torch strategy spec accepts. The names are
// PYTORCH_CUDA_ALLOC_CONF's, plus per_process_memory_fraction for
// torch.cuda.set_per_process_memory_fraction and
// PYTORCH_NO_CUDA_MEMORY_CACHING. Settings that change nothing a
// single-process replay can see (pinned host memory, lock release around
// cudaMalloc, graph capture) are accepted and ignored so that a user's real
// configuration string parses whole.
var Keys = []string{
	"backend", "pool_granularity", "max_split_size_mb", "max_non_split_rounding_mb",
	"garbage_collection_threshold", "roundup_power2_divisions",
	"expandable_segments", "per_process_memory_fraction", "large_segment_size_mb",
	"PYTORCH_NO_CUDA_MEMORY_CACHING",
	"release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
	"pinned_num_register_threads", "pinned_use_background_threads",
	"graph_capture_record_stream_reuse",
}

// ParseConfig builds a Config from a strategy spec's knobs, validating each
// as CUDAAllocatorConfig does (upstream c10/core/AllocatorConfig.cpp).
func ParseConfig(sp strategies.Spec) (Config, error) {
	c := DefaultConfig()
	if err := sp.CheckKeys(Keys...); err != nil {
		return c, err
	}
	for _, p := range sp.Params {
		if err := c.set(p.Key, p.Value); err != nil {
			return c, fmt.Errorf("torch: %s=%s: %w", p.Key, p.Value, err)
		}
	}
	// A cudaMalloc segment of large_segment_size, made for a request of
	// just over 1 MiB (the large pool's smallest), splits off a free
	// remainder of large_segment_size less that request; not below
	// max_split_size, it is the oversize block that an allocation failing
	// on the device frees with cudaFree as if it were a segment
	// (release_available_cached_blocks): a CUDA error upstream, the
	// pointer being inside a segment, which the model cannot replay.
	if !c.ExpandableSegments && c.MaxSplitSize != unlimited && c.LargeSegmentSize-SmallSize > c.MaxSplitSize {
		return c, fmt.Errorf("torch: large_segment_size_mb=%d with max_split_size_mb=%d: segments for 1-10 MiB requests leave free blocks split off them not below max_split_size, which PyTorch frees as whole segments when an allocation fails (a CUDA error); not modelled (keep large_segment_size_mb at most max_split_size_mb+1)",
			c.LargeSegmentSize/mb, c.MaxSplitSize/mb)
	}
	return c, nil
}

func (c *Config) set(k, v string) error {
	switch k {
	case "backend":
		switch v {
		case "native":
			c.AsyncBackend = false
		case "cudaMallocAsync":
			c.AsyncBackend = true
		default:
			return fmt.Errorf("valid values: native, cudaMallocAsync")
		}
	case "pool_granularity":
		n, err := strategies.ParseMemorySize(v)
		if err != nil {
			return err
		}
		if n < asyncpool.Alignment || n%asyncpool.Alignment != 0 {
			return fmt.Errorf("%d B is not a multiple of %d B (such as 2MiB)", n, asyncpool.Alignment)
		}
		c.PoolGranularity, c.poolGranularitySet = n, true
	case "max_split_size_mb", "max_non_split_rounding_mb":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 20 {
			return fmt.Errorf("must be an integer >= 20 (MB)")
		}
		n = min(n, unlimited/mb)
		if k == "max_split_size_mb" {
			c.MaxSplitSize = n * mb
		} else {
			c.MaxNonSplitRounding = n * mb
		}
	case "large_segment_size_mb":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 10 || n > unlimited/mb {
			return fmt.Errorf("must be an integer > 10 (MB)")
		}
		c.LargeSegmentSize = n * mb
	case "garbage_collection_threshold":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			return fmt.Errorf("must be in (0.0, 1.0)")
		}
		c.GCThreshold = f
	case "per_process_memory_fraction":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return fmt.Errorf("must be in [0.0, 1.0]")
		}
		c.MemoryFraction, c.FractionSet = f, true
	case "roundup_power2_divisions":
		d, err := ParseDivisions(v)
		if err != nil {
			return err
		}
		c.Divisions = d
	case "expandable_segments":
		b, err := strategies.ParseBool(v)
		if err != nil {
			return err
		}
		c.ExpandableSegments = b
	case "PYTORCH_NO_CUDA_MEMORY_CACHING":
		b, err := strategies.ParseBool(v)
		if err != nil {
			return err
		}
		c.NoCaching = b
	case "pinned_num_register_threads":
		// Upstream: a power of 2, at most pinned_max_register_threads (128).
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n&(n-1) != 0 || n > 128 {
			return fmt.Errorf("must be a power of 2 no larger than 128")
		}
		c.inert = append(c.inert, k+"="+v)
	default: // accepted, no effect on a replay
		if _, err := strategies.ParseBool(v); err != nil {
			return err
		}
		c.inert = append(c.inert, k+"="+v)
	}
	return nil
}

// ParseDivisions parses roundup_power2_divisions: a single power of two for
// every interval, or `[B:v,...,>:v]` with B a power-of-two boundary in MB.
// It follows upstream's parser exactly, including a quirk the spec's prose
// (§1.2) does not mention: `>:v` fills from the last given boundary's own
// slot onwards, so `[256:1,512:2,1024:4,>:8]` leaves 8, not 4, at 1024 MB.
func ParseDivisions(v string) ([16]int64, error) {
	var d [16]int64
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "[") {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n&(n-1) != 0 {
			return d, fmt.Errorf("divisions must be a power of 2")
		}
		for i := range d {
			d[i] = n
		}
		return d, nil
	}
	if !strings.HasSuffix(v, "]") {
		return d, fmt.Errorf("missing ']'")
	}
	first, last := true, 0
	for _, item := range strings.Split(v[1:len(v)-1], ",") {
		b, val, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return d, fmt.Errorf("%q is not boundary:divisions", item)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || n < 0 || (n != 0 && n&(n-1) != 0) {
			return d, fmt.Errorf("divisions %q must be a power of 2 or 0", val)
		}
		b = strings.TrimSpace(b)
		if b == ">" {
			for i := last; i < len(d); i++ {
				d[i] = n
			}
			continue
		}
		bn, err := strconv.ParseUint(b, 10, 64)
		if err != nil || bn == 0 || bn&(bn-1) != 0 {
			return d, fmt.Errorf("interval %q must be a power of 2", b)
		}
		idx := min(bits.Len64(bn)-1, len(d)-1)
		if first {
			for i := 0; i < idx; i++ {
				d[i] = n
			}
			first = false
		}
		d[idx] = n
		last = idx
	}
	return d, nil
}

// roundSize is round_size (allocator-spec §1.2) with this configuration.
func (c *Config) roundSize(n int64) int64 { return RoundSize(n, &c.Divisions, c.LegacyRoundup) }

// RoundSize is the allocator's round_size (allocator-spec §1.2): requests
// below MinBlockSize take MinBlockSize; where the interval of n (powers of
// two from 1 MiB, index 0, to 32 GiB and above, index 15) has a division
// count d > 1 and n > MinBlockSize·d, n rounds up to the next of d equal
// steps of its power-of-two interval; otherwise to a multiple of
// MinBlockSize. legacy is PyTorch before 2.4 (before upstream PR #126830),
// which left a request above MinBlockSize unrounded where d is 1; a
// snapshot does not record the version, so validation tries both readings.
func RoundSize(n int64, divisions *[16]int64, legacy bool) int64 {
	if n < MinBlockSize {
		return MinBlockSize
	}
	idx := bits.Len64(uint64(n)) - 1 - 20 // floor(log2 n) - log2(1 MiB)
	d := divisions[max(0, min(idx, 15))]
	if legacy && d == 1 {
		return n
	}
	if d > 1 && n > MinBlockSize*d {
		return roundupPower2NextDivision(n, d)
	}
	return (n + MinBlockSize - 1) / MinBlockSize * MinBlockSize
}

func roundupPower2NextDivision(n, d int64) int64 {
	if n&(n-1) == 0 {
		return n
	}
	floor := int64(1) << (bits.Len64(uint64(n)) - 1)
	step := floor >> (bits.Len64(uint64(d)) - 1)
	if step == 0 {
		return floor << 1
	}
	lo := n &^ (step - 1)
	if lo == n {
		return n
	}
	return lo + step
}

// allocSize is get_allocation_size (allocator-spec §1.4).
func (c *Config) allocSize(rounded int64) int64 {
	switch {
	case rounded <= SmallSize:
		return SmallBuffer
	case rounded < MinLargeAlloc:
		return c.LargeSegmentSize
	}
	return (rounded + RoundLarge - 1) / RoundLarge * RoundLarge
}

// KnownAction reports whether a snapshot trace action is one of the
// vocabulary above (membench knows what it means, including the ones that
// request nothing: segment_*, snapshot, user_defined).
func KnownAction(a string) bool {
	switch a {
	case ActionAlloc, ActionFreeRequested, ActionFreeCompleted, ActionFree,
		ActionSegmentAlloc, ActionSegmentFree, ActionSegmentMap, ActionSegmentUnmap,
		ActionSnapshot, ActionOOM, ActionUserDefined:
		return true
	}
	return false
}

// Adviser is what PyTorch's caching allocator offers a user short of
// memory: it has no reservation policy (it reserves what its placement
// needs), so there is no placement-alone variant; the knob worth measuring
// is expandable segments (allocator-spec §1.10), which maps pages into one
// reservation per stream instead of caching whole segments.
var Adviser = strategies.Adviser{
	Placement: func(sp strategies.Spec, dev strategies.Device) (strategies.Spec, bool) { return sp, false },
	Knobs: func(sp strategies.Spec, dev strategies.Device, limit int64) []strategies.Knob {
		c, err := ParseConfig(sp)
		if err != nil || c.ExpandableSegments || c.NoCaching || dev.Kind == strategies.TPU {
			return nil
		}
		return []strategies.Knob{{
			Spec: sp.With(strategies.KV{Key: "expandable_segments", Value: "true"}),
			Line: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
		}}
	},
	Tune: tuneGrid,
}

// tuneGrid is what `membench tune` tries for PyTorch: the knobs of
// PYTORCH_CUDA_ALLOC_CONF that change where blocks go (allocator-spec
// §1.2, §1.6, §1.9, §1.10): expandable segments, the split limit for
// large blocks, power-of-two rounding, and the garbage-collection
// threshold, which is a fraction of per_process_memory_fraction's limit
// and does nothing without it (so it is tried with the fraction at 1).
// None of them applies on a TPU, where PyTorch runs through PyTorch/XLA.
func tuneGrid(dev strategies.Device) []strategies.Knob {
	if dev.Kind == strategies.TPU {
		return nil
	}
	var out []strategies.Knob
	add := func(conf ...string) {
		// The spec takes PYTORCH_CUDA_ALLOC_CONF's own spelling.
		sp, err := strategies.ParseSpec("torch:" + strings.Join(conf, ","))
		if len(conf) == 0 {
			sp, err = strategies.Spec{Name: "torch"}, nil
		}
		if err != nil {
			panic("torchlike: tune grid entry " + strings.Join(conf, ",") + ": " + err.Error()) // the grid is a constant
		}
		line := "(defaults)"
		if len(conf) > 0 {
			line = "PYTORCH_CUDA_ALLOC_CONF=" + strings.Join(conf, ",")
		}
		out = append(out, strategies.Knob{Spec: sp, Line: line})
	}
	for _, exp := range []bool{false, true} {
		for _, split := range []string{"", "128", "512"} {
			for _, rp2 := range []string{"", "4"} {
				var conf []string
				if exp {
					conf = append(conf, "expandable_segments:True")
				}
				if split != "" {
					conf = append(conf, "max_split_size_mb:"+split)
				}
				if rp2 != "" {
					conf = append(conf, "roundup_power2_divisions:"+rp2)
				}
				add(conf...)
			}
		}
	}
	add("backend:cudaMallocAsync") // CUDA's stream-ordered pool (allocator-spec §6.3)
	for _, gc := range []string{"0.6", "0.8"} {
		c := len(out)
		add("garbage_collection_threshold:"+gc, "per_process_memory_fraction:1.0")
		out[c].Line = "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:" + gc + " with torch.cuda.set_per_process_memory_fraction(1.0)"
	}
	return out
}

// RecordedSpec is the torch strategy spec that replays the settings a
// snapshot's allocator_settings record (allocator-spec §1.12): the knobs of
// this configuration that differ from PyTorch's defaults among those
// settings, in PyTorch's own form (key:value, as PYTORCH_CUDA_ALLOC_CONF
// writes them), or "torch" when all are the defaults. ok is false when a
// setting has no spec that gives it exactly (a max_split_size that is no
// whole number of MB of at least 20, a division count that is neither 0
// nor a power of two, a garbage_collection_threshold outside (0, 1)): a
// note then names the settings without offering a spec that would replay
// something else, or not parse.
func (c Config) RecordedSpec() (spec string, ok bool) {
	d := DefaultConfig()
	var parts []string
	mbKnob := func(key string, v, def int64, least int64) bool {
		if v == def {
			return true
		}
		if v%mb != 0 || v/mb < least {
			return false
		}
		parts = append(parts, key+":"+strconv.FormatInt(v/mb, 10))
		return true
	}
	ok = mbKnob("max_split_size_mb", c.MaxSplitSize, d.MaxSplitSize, 20) &&
		mbKnob("max_non_split_rounding_mb", c.MaxNonSplitRounding, d.MaxNonSplitRounding, 20) &&
		mbKnob("large_segment_size_mb", c.LargeSegmentSize, d.LargeSegmentSize, 11)
	if c.GCThreshold != d.GCThreshold {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GCThreshold, 'g', -1, 64))
	}
	if c.Divisions != d.Divisions {
		// Every interval written out, so that no entry fills the ones
		// below it (ParseDivisions' first boundary does).
		var b strings.Builder
		b.WriteString("roundup_power2_divisions:[")
		for i, n := range c.Divisions {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d:%d", int64(1)<<i, n)
		}
		b.WriteByte(']')
		parts = append(parts, b.String())
	}
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	if c.FractionSet {
		parts = append(parts, "per_process_memory_fraction:"+strconv.FormatFloat(c.MemoryFraction, 'g', -1, 64))
	}
	spec = "torch"
	if len(parts) > 0 {
		spec += ":" + strings.Join(parts, ",")
	}
	// A value a snapshot can carry but no spec accepts (a division
	// count no power of two, a threshold outside (0, 1) or NaN) would
	// name a spec that does not parse, or replays other settings: the
	// spec is offered only if it reads back to these settings. The
	// defaults' "torch" does, and is not parsed: every snapshot import
	// asks (6 allocations an import).
	if ok && len(parts) > 0 {
		sp, err := strategies.ParseSpec(spec)
		if err != nil {
			return spec, false
		}
		back, err := ParseConfig(sp)
		ok = err == nil && back.SameRecordedSettings(c)
	}
	return spec, ok
}

// SameRecordedSettings reports whether c and o agree on every setting a
// snapshot's allocator_settings record (RecordedSpec's), the ones whose
// difference changes a replay of that snapshot.
func (c Config) SameRecordedSettings(o Config) bool {
	return c.MaxSplitSize == o.MaxSplitSize && c.MaxNonSplitRounding == o.MaxNonSplitRounding &&
		c.LargeSegmentSize == o.LargeSegmentSize && c.GCThreshold == o.GCThreshold &&
		c.Divisions == o.Divisions && c.ExpandableSegments == o.ExpandableSegments &&
		c.FractionSet == o.FractionSet && (!c.FractionSet || c.MemoryFraction == o.MemoryFraction)
}
