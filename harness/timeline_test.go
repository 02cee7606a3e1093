package harness

import (
	"math/rand/v2"
	"slices"
	"testing"

	"membench/strategies"
	"membench/traces"
)

// replayTimeline feeds n events' values to tl as ReplayWith's loop does:
// the open bucket's maxima in locals, closed when the next bucket opens
// and at the end.
func replayTimeline(tl *timeline, live, reserved, times []int64) []Sample {
	var end, bl, br int64
	for i := range int64(len(live)) {
		if i < end {
			bl, br = max(bl, live[i]), max(br, reserved[i])
			continue
		}
		tl.close(bl, br)
		bl, br = live[i], reserved[i]
		tl.open(i, times[i], bl, br)
		end = tl.end
	}
	tl.close(bl, br)
	return tl.samples
}

// TestTimelineForLength: a timeline told the replay's length in advance
// (newTimelineFor) ends with exactly the samples of one that doubles its
// width as the events come, for every length around the halving points
// and for random ones, at several sample budgets. The lengths straddle
// each 2·max·2^k, where an off-by-one in widthFor would start one width
// too wide or too narrow.
func TestTimelineForLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, max := range []int{1, 2, 3, 8, 1024} {
		var lengths []int64
		for w := int64(1); int64(2*max)*w <= 1<<17; w *= 2 {
			edge := int64(2*max) * w
			lengths = append(lengths, edge-1, edge, edge+1)
		}
		lengths = append(lengths, 0, 1, 2)
		for range 20 {
			lengths = append(lengths, rng.Int64N(1<<17))
		}
		for _, n := range lengths {
			live, reserved, times := make([]int64, n), make([]int64, n), make([]int64, n)
			for i := range n {
				live[i], reserved[i], times[i] = rng.Int64N(1<<40), rng.Int64N(1<<40), i*3+rng.Int64N(3)
			}
			want := replayTimeline(newTimeline(max), live, reserved, times)
			got := replayTimeline(newTimelineFor(max, n), live, reserved, times)
			if !slices.Equal(got, want) {
				t.Fatalf("max %d, %d events: %d samples from the length, %d by doubling; first difference at %d",
					max, n, len(got), len(want), firstSampleDiff(got, want))
			}
		}
	}
}

func firstSampleDiff(a, b []Sample) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestReplayTimelineAnyReader: a torch replay read from memory (a
// SliceReader, which tells its length) and the same events read one by one
// through a reader that does not tell it give the same timeline, on three
// corpus traces of different lengths.
func TestReplayTimelineAnyReader(t *testing.T) {
	for _, name := range []string{"gpt-train", "encoder-infer-varlen", "gpt-generate"} {
		evs := loadCorpus(t, name)
		dev := device(t, strategies.DefaultDevice)
		for _, samples := range []int{1, 7, DefaultOptions.Samples} {
			opts := Options{Samples: samples}
			a, err := Replay(name, &traces.SliceReader{Events: evs}, "torch", dev, opts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Replay(name, unsized{&traces.SliceReader{Events: evs}}, "torch", dev, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Timeline, b.Timeline) {
				t.Errorf("%s, %d samples: timelines differ at sample %d (%d and %d samples)", name, samples, firstSampleDiff(a.Timeline, b.Timeline), len(a.Timeline), len(b.Timeline))
			}
		}
	}
}

// unsized hides a reader's length (and its batches).
type unsized struct{ traces.Reader }
