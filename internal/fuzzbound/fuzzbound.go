package fuzzbound

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// Bounds is what one run of a fuzz body may cost.
type Bounds struct {
	Time  time.Duration // wall-clock time of one run
	Alloc uint64        // bytes allocated by one run (TotalAlloc growth)
}

// Default is the bound of every fuzz target in membench: one input may
// take at most 1 s and allocate at most 256 MiB.
var Default = Bounds{Time: time.Second, Alloc: 256 << 20}

const (
	// Runs is how many times a body over a bound is run before Check
	// fails.
	Runs = 3
	// RaceTimeFactor scales the time bound under the race detector.
	RaceTimeFactor = 10
	// HardFactor is how far past a bound the watchdog lets one run go
	// before it ends the process.
	HardFactor = 10
)

// Check runs fn under Default; see Bounds.Check.
func Check(t testing.TB, fn func()) { Default.Check(t, fn) }

// Within is Bounds{Time: d, Alloc: n}: a regression test's bound on one
// hostile input.
func Within(d time.Duration, n uint64) Bounds { return Bounds{Time: d, Alloc: n} }

// Check runs fn and fails t if every one of up to Runs runs exceeded the
// time or the memory bound; it returns what the run within the bounds
// cost, for tests that report it. If fn stops the test (t.Fatal), Check
// does not measure it. fn may run more than once (after a run that a
// loaded machine slowed past the bound), so it must start from scratch
// each time: make its input reader inside it, or rewind it.
func (b Bounds) Check(t testing.TB, fn func()) (time.Duration, uint64) {
	t.Helper()
	if raceEnabled {
		b.Time *= RaceTimeFactor
	}
	var worst []string
	for range Runs {
		d, a := b.measure(fn)
		if d <= b.Time && a <= b.Alloc {
			return d, a
		}
		worst = append(worst, fmt.Sprintf("%v and %s", d.Round(time.Millisecond), mib(a)))
	}
	t.Fatalf("fuzzbound: one input exceeded the bounds (%v, %s) in each of %d runs: %v",
		b.Time, mib(b.Alloc), Runs, worst)
	return 0, 0
}

// Measure runs fn once and returns the wall-clock time it took and the
// bytes it allocated.
func Measure(fn func()) (time.Duration, uint64) { return Bounds{}.measure(fn) }

// measure runs fn once under the watchdog (when b has bounds).
func (b Bounds) measure(fn func()) (time.Duration, uint64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	stop := b.watch(m0.TotalAlloc)
	defer stop() // also when fn stops the test or panics
	start := time.Now()
	fn()
	d := time.Since(start)
	stop()
	runtime.ReadMemStats(&m1)
	return d, m1.TotalAlloc - m0.TotalAlloc
}

// watch starts the watchdog of one run that began with base bytes
// allocated; the returned function stops it.
func (b Bounds) watch(base uint64) (stop func()) {
	if b.Time <= 0 && b.Alloc == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var once sync.Once
	go func() {
		const poll = 20 * time.Millisecond
		tick := time.NewTicker(poll)
		defer tick.Stop()
		start := time.Now()
		sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if el := time.Since(start); b.Time > 0 && el > HardFactor*b.Time {
				hardStop(fmt.Sprintf("fuzzbound: one input still running after %v (bound %v)", el.Round(time.Millisecond), b.Time))
				return
			}
			if b.Alloc > 0 {
				metrics.Read(sample)
				if a := sample[0].Value.Uint64(); a > base && a-base > HardFactor*b.Alloc {
					hardStop(fmt.Sprintf("fuzzbound: one input has allocated %s and is still running (bound %s)", mib(a-base), mib(b.Alloc)))
					return
				}
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// hardStop ends the process when a run goes far past its bounds; tests
// replace it.
var hardStop = func(msg string) { panic(msg) }

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
