package fuzzbound

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

var sink []byte

// scale is how Check scales a time bound in this build.
func scale() time.Duration {
	if raceEnabled {
		return RaceTimeFactor
	}
	return 1
}

func TestCheckPasses(t *testing.T) {
	r := &recorder{TB: t}
	runs := 0
	Check(r, func() { runs++; sink = make([]byte, 1<<20) })
	if r.failed != "" || runs != 1 {
		t.Fatalf("a cheap body: failed %q after %d runs", r.failed, runs)
	}
}

func TestCheckAlloc(t *testing.T) {
	r := &recorder{TB: t}
	runs := 0
	Bounds{Time: time.Hour, Alloc: 1 << 20}.Check(r, func() {
		runs++
		for range 8 {
			sink = make([]byte, 1<<20)
		}
	})
	if runs != Runs || !strings.Contains(r.failed, "exceeded the bounds") || !strings.Contains(r.failed, "1.0 MiB") {
		t.Fatalf("a body allocating 8 MiB against 1 MiB: %d runs, failure %q", runs, r.failed)
	}
}

func TestCheckTime(t *testing.T) {
	r := &recorder{TB: t}
	runs := 0
	Bounds{Time: time.Millisecond, Alloc: 1 << 40}.Check(r, func() {
		runs++
		time.Sleep(5 * time.Millisecond * scale())
	})
	if runs != Runs || !strings.Contains(r.failed, "exceeded the bounds") {
		t.Fatalf("a slow body: %d runs, failure %q", runs, r.failed)
	}
}

// A hiccup in one run is forgiven when a later run is within the bounds.
func TestCheckRetries(t *testing.T) {
	r := &recorder{TB: t}
	runs := 0
	Bounds{Time: 20 * time.Millisecond, Alloc: 1 << 40}.Check(r, func() {
		runs++
		if runs == 1 {
			time.Sleep(30 * time.Millisecond * scale())
		}
	})
	if r.failed != "" || runs != 2 {
		t.Fatalf("one slow run: failed %q after %d runs", r.failed, runs)
	}
}

func TestWatchdog(t *testing.T) {
	var mu sync.Mutex
	var msgs []string
	tripped := make(chan struct{}, 2)
	hardStop = func(msg string) {
		mu.Lock()
		msgs = append(msgs, msg)
		mu.Unlock()
		tripped <- struct{}{}
	}
	defer func() { hardStop = func(msg string) { panic(msg) } }()
	wait := func() {
		select {
		case <-tripped:
		case <-time.After(10 * time.Second):
			t.Error("the watchdog did not stop a run far past its bound")
		}
	}
	// Time: 10 × 2 ms.
	Measure(func() {}) // no bounds, no watchdog
	Bounds{Time: 2 * time.Millisecond}.measure(wait)
	// Memory: allocate until the watchdog trips.
	Bounds{Alloc: 1 << 20}.measure(func() {
		for {
			select {
			case <-tripped:
				return
			case <-time.After(10 * time.Second):
				t.Error("the watchdog did not stop a run allocating far past its bound")
				return
			default:
				sink = make([]byte, 1<<20)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 2 || !strings.Contains(msgs[0], "still running after") || !strings.Contains(msgs[1], "has allocated") {
		t.Fatalf("watchdog messages %q", msgs)
	}
}
