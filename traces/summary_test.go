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
