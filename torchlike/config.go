package torchlike

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"membench/strategies"
)

// Constants of CUDACachingAllocator.cpp (allocator-spec §1.1).
const (
	kMinBlockSize  int64 = 512
	kSmallSize     int64 = 1 << 20
	kSmallBuffer   int64 = 2 << 20
	kLargeBuffer   int64 = 20 << 20
	kMinLargeAlloc int64 = 10 << 20
	kRoundLarge    int64 = 2 << 20
	mb             int64 = 1 << 20
	// unlimited stands for SIZE_MAX, max_split_size's default.
	unlimited int64 = math.MaxInt64
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
	// page size; kLargeBuffer (20 MiB) before it existed.
	LargeSegmentSize int64
}

// DefaultConfig is PyTorch's behaviour with no environment set.
func DefaultConfig() Config {
	return Config{MaxSplitSize: unlimited, MaxNonSplitRounding: kLargeBuffer, LargeSegmentSize: kLargeBuffer}
}

// Keys lists the knobs a torch strategy spec accepts. The names are
// PYTORCH_CUDA_ALLOC_CONF's, plus per_process_memory_fraction for
// torch.cuda.set_per_process_memory_fraction and
// PYTORCH_NO_CUDA_MEMORY_CACHING. Settings that change nothing a
// single-process replay can see (pinned host memory, lock release around
// cudaMalloc, graph capture) are accepted and ignored so that a user's real
// configuration string parses whole.
var Keys = []string{
	"backend", "max_split_size_mb", "max_non_split_rounding_mb",
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
	return c, nil
}

func (c *Config) set(k, v string) error {
	switch k {
	case "backend":
		if v != "native" {
			return fmt.Errorf("only the native backend is modelled (cudaMallocAsync is the driver's own pool)")
		}
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
	default: // accepted, no effect on a replay
		if _, err := strategies.ParseBool(v); err != nil {
			return err
		}
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

// roundSize is round_size (allocator-spec §1.2).
func (c *Config) roundSize(n int64) int64 {
	if n < kMinBlockSize {
		return kMinBlockSize
	}
	d := c.divisionsFor(n)
	if c.LegacyRoundup && d == 1 && n > kMinBlockSize {
		return n
	}
	if d > 1 && n > kMinBlockSize*d {
		return roundupPower2NextDivision(n, d)
	}
	return (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize
}

func (c *Config) divisionsFor(n int64) int64 {
	idx := bits.Len64(uint64(n)) - 1 - 20
	idx = max(0, min(idx, 15))
	return c.Divisions[idx]
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
	case rounded <= kSmallSize:
		return kSmallBuffer
	case rounded < kMinLargeAlloc:
		return c.LargeSegmentSize
	}
	return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge
}
