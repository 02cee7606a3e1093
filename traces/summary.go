package traces

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"unicode/utf8"

	"github.com/montanaflynn/stats"
)

// Summary describes a trace for `membench traces show`: counts, the peak
// of live requested bytes and when it happens, a size histogram, lifetime
// percentiles and the phases marked.
type Summary struct {
	Name          string     `json:"name"`
	Meta          Meta       `json:"meta"`
	Events        int64      `json:"events"`
	Allocs        int64      `json:"allocs"`
	Frees         int64      `json:"frees"`
	Marks         int64      `json:"marks"`
	LiveAtEnd     int64      `json:"live_at_end"`
	PeakLiveBytes int64      `json:"peak_live_bytes"`
	PeakEvent     int64      `json:"peak_event"`
	PeakTime      int64      `json:"peak_time"` // the trace's clock at the peak, or -1
	TotalBytes    int64      `json:"total_alloc_bytes"`
	Streams       int        `json:"streams"`
	SizeHistogram []SizeBin  `json:"size_histogram"`
	Lifetimes     Lifetimes  `json:"lifetime_events"`
	Phases        []PhaseRow `json:"phases"`
	// Launches, Donations and Kinds describe a trace of format version
	// 2: executable launches begun, outputs aliased to a donated input,
	// and allocations per kind (KindNone left out). A trace without them
	// (every version-1 trace) prints and encodes as before.
	Launches  int64            `json:"launches,omitempty"`
	Donations int64            `json:"donations,omitempty"`
	Kinds     map[string]int64 `json:"kinds,omitempty"`
}

// SizeBin counts the allocations with sizes in [Lo, Hi): powers of two.
type SizeBin struct {
	Lo    int64 `json:"lo"`
	Hi    int64 `json:"hi"`
	Count int64 `json:"count"`
	Bytes int64 `json:"bytes"`
}

// Lifetimes are percentiles of allocation lifetimes in events (free index
// minus alloc index), over the allocations freed within the trace. Above
// lifetimeSample lifetimes, they come from a uniform reservoir sample
// (seeded, so the summary is deterministic); Sampled says so.
type Lifetimes struct {
	Count            int64              `json:"count"`
	Sampled          bool               `json:"sampled"`
	Percentiles      map[string]float64 `json:"percentiles"` // "p50", "p90", "p99"
	Max              float64            `json:"max"`
	NeverFreed       int64              `json:"never_freed"`
	PercentileMethod string             `json:"percentile_method"`
}

// PhaseRow is one mark with the live bytes at that point.
type PhaseRow struct {
	Event     int64  `json:"event"`
	Label     string `json:"label"`
	LiveBytes int64  `json:"live_bytes"`
}

const (
	lifetimeSample = 1 << 20
	maxPhases      = 10000
	maxPhaseLabel  = 256 // bytes of a label kept in a PhaseRow
)

// phaseLabel is label as a PhaseRow keeps it: a label longer than
// maxPhaseLabel bytes is cut (at a character boundary) into a new string,
// so that the long one is not retained, and says how long it was.
func phaseLabel(label string) string {
	if len(label) <= maxPhaseLabel {
		return label
	}
	n := maxPhaseLabel
	for n > 0 && !utf8.RuneStart(label[n]) {
		n--
	}
	return label[:n] + fmt.Sprintf("… (%d bytes)", len(label))
}

// Summarize reads r to the end. Its memory is bounded by the live set,
// the lifetime reservoir and the first maxPhases marks (their labels cut
// to maxPhaseLabel bytes), whatever the trace's length. Input errors are reported as the replay would (Check).
func Summarize(name string, r Reader) (*Summary, error) {
	s := &Summary{Name: name, Meta: r.Meta(), PeakTime: -1}
	cr := Check(r)
	type live struct{ at, size int64 }
	var ids Tracker[live]
	var liveBytes int64
	hist := map[int]*SizeBin{}
	streams := map[int64]bool{}
	reservoir := make([]float64, 0, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	var seen int64
	for i := int64(0); ; i++ {
		ev, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		s.Events++
		switch ev.Op {
		case OpAlloc:
			s.Allocs++
			s.TotalBytes += ev.Size
			if ev.Kind != KindNone {
				if s.Kinds == nil {
					s.Kinds = map[string]int64{}
				}
				s.Kinds[ev.Kind.String()]++
			}
			if ev.Donated {
				s.Donations++
			}
			streams[ev.Stream] = true
			if err := ids.Alloc(ev.ID, ev.Size, live{i, ev.Size}); err != nil {
				return s, err
			}
			liveBytes += ev.Size
			if liveBytes > s.PeakLiveBytes {
				s.PeakLiveBytes, s.PeakEvent, s.PeakTime = liveBytes, i, ev.Time
			}
			b := bits.Len64(uint64(ev.Size)) - 1
			h := hist[b]
			if h == nil {
				h = &SizeBin{Lo: 1 << b, Hi: 1 << (b + 1)}
				hist[b] = h
			}
			h.Count++
			h.Bytes += ev.Size
		case OpFree:
			s.Frees++
			l, err := ids.Free(ev.ID)
			if err != nil {
				return s, err
			}
			liveBytes -= l.size
			lt := float64(i - l.at)
			seen++
			if len(reservoir) < lifetimeSample {
				reservoir = append(reservoir, lt)
			} else if j := rng.Int64N(seen); j < lifetimeSample {
				reservoir[j] = lt
			}
		case OpLaunch:
			s.Launches++
		case OpMark:
			s.Marks++
			if len(s.Phases) < maxPhases {
				s.Phases = append(s.Phases, PhaseRow{i, phaseLabel(ev.Label), liveBytes})
			}
		}
	}
	s.LiveAtEnd = int64(ids.Live())
	s.Streams = len(streams)
	keys := make([]int, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		s.SizeHistogram = append(s.SizeHistogram, *hist[k])
	}
	s.Lifetimes = Lifetimes{Count: seen, Sampled: seen > lifetimeSample, NeverFreed: s.LiveAtEnd,
		PercentileMethod: "linear interpolation (NumPy/R type 7)", Percentiles: map[string]float64{}}
	if len(reservoir) > 0 {
		sort.Float64s(reservoir)
		for _, p := range []float64{50, 90, 99} {
			v, err := stats.Percentile(reservoir, p)
			if err != nil {
				return s, fmt.Errorf("lifetime percentile: %w", err)
			}
			// The rank's fraction is a number of hundredths and the
			// lifetimes whole, so the percentile is a number of
			// hundredths: keep the float nearest it. Percentile takes
			// the rank in floating point (0.9 × 4 = 3.6000000000000001),
			// and `traces show` printed p90 865.6000000000001.
			s.Lifetimes.Percentiles[fmt.Sprintf("p%g", p)] = math.Round(v*100) / 100
		}
		s.Lifetimes.Max = reservoir[len(reservoir)-1]
	}
	return s, nil
}
