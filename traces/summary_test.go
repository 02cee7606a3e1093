package traces

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// bigMarks serves n marks with distinct labels of size bytes, each a
// fresh string.
type bigMarks struct {
	SliceReader
	n, size, i int
}

func (b *bigMarks) Next() (Event, error) {
	if b.i == b.n {
		return Event{}, io.EOF
	}
	b.i++
	return Event{Op: OpMark, Label: fmt.Sprintf("%06d", b.i) + strings.Repeat("é", b.size/2), Time: NoTime}, nil
}

// TestSummaryLongLabels: a summary keeps the first maxPhases marks, and
// with them only the start of each label: before, 10,000 labels of up to
// 1 MiB each (a few megabytes of gzip) were all held.
func TestSummaryLongLabels(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := Summarize("big", &bigMarks{n: 200, size: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); held > 4<<20 {
		t.Errorf("a summary of 200 marks of 512 KiB holds %d bytes", held)
	}
	l := s.Phases[7].Label
	want := "000008" + strings.Repeat("é", (maxPhaseLabel-6)/2) + fmt.Sprintf("… (%d bytes)", 6+512<<10)
	if len(s.Phases) != 200 || l != want {
		t.Errorf("%d phases, label 7 %q", len(s.Phases), l)
	}
	runtime.KeepAlive(s)
	if got := phaseLabel("short"); got != "short" {
		t.Errorf("phaseLabel(short) = %q", got)
	}
}

// lifetimeTrace is a trace whose allocations live the given numbers of
// events: each is allocated, then marks pass until its free.
func lifetimeTrace(lifetimes []int64) *SliceReader {
	var evs []Event
	for id, lt := range lifetimes {
		evs = append(evs, Event{Op: OpAlloc, ID: uint64(id), Size: 8, Time: NoTime})
		for range lt - 1 {
			evs = append(evs, Event{Op: OpMark, Label: "x", Time: NoTime})
		}
		evs = append(evs, Event{Op: OpFree, ID: uint64(id), Time: NoTime})
	}
	return &SliceReader{Events: evs}
}

// TestLifetimePercentilesExact: a lifetime percentile is the type-7
// interpolation between two whole event counts, a number of hundredths,
// and is the float nearest it: `traces show` printed the p90 of a
// generated CNN trace as 865.6000000000001 (rank 0.9 × (n−1) in floating
// point) and JSON carried the same digits.
func TestLifetimePercentilesExact(t *testing.T) {
	cases := []struct {
		lifetimes     []int64
		p50, p90, p99 float64
	}{
		{[]int64{1, 2, 3, 865, 866}, 3, 865.6, 865.96},
		{[]int64{1, 2, 3, 4, 5}, 3, 4.6, 4.96},
		{[]int64{7}, 7, 7, 7},
		{[]int64{10, 20}, 15, 19, 19.9},
		{[]int64{1, 1, 1, 1000}, 1, 700.3, 970.03},
	}
	for _, c := range cases {
		s, err := Summarize("t", lifetimeTrace(c.lifetimes))
		if err != nil {
			t.Fatal(err)
		}
		p := s.Lifetimes.Percentiles
		if p["p50"] != c.p50 || p["p90"] != c.p90 || p["p99"] != c.p99 {
			t.Errorf("lifetimes %v: p50 %v p90 %v p99 %v, want %v %v %v", c.lifetimes, p["p50"], p["p90"], p["p99"], c.p50, c.p90, c.p99)
		}
	}
}
