package harness

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"membench/traces"
)

// cachedSource is a source whose trace is n events in memory.
func cachedSource(name string, n int) *Source {
	return &Source{Name: name, events: make([]traces.Event, n)}
}

func TestDispatchOrderLongestFirst(t *testing.T) {
	short, long, mid := cachedSource("short", 10), cachedSource("long", 1000), cachedSource("mid", 100)
	streamed := &Source{Name: "streamed"} // too long to cache
	empty := cachedSource("empty", 0)
	jobs := []Job{
		{Index: 0, Source: short}, {Index: 1, Source: long}, {Index: 2, Source: mid},
		{Index: 3, Source: short}, {Index: 4, Source: streamed}, {Index: 5, Source: long},
		{Index: 6, Source: empty}, {Index: 7, Source: streamed},
	}
	got := dispatchOrder(jobs)
	want := []int{4, 7, 1, 5, 2, 0, 3, 6}
	if !slices.Equal(got, want) {
		t.Fatalf("dispatchOrder = %v, want %v (longest first, job order among equals)", got, want)
	}
	if got := dispatchOrder(nil); len(got) != 0 {
		t.Fatalf("dispatchOrder(nil) = %v", got)
	}
}

// TestRunJobs checks what callers rely on whatever the workers and the
// dispatch order: each job runs once, outcomes come back in job order,
// progress counts every job once in increasing order, and the error
// returned is the first in job order, not the first to happen.
func TestRunJobs(t *testing.T) {
	sizes := []int{5, 500, 50, 5000, 50, 5, 0, 500, 7}
	var jobs []Job
	for i, n := range sizes {
		jobs = append(jobs, Job{Index: i, Source: cachedSource(fmt.Sprint("t", i), n)})
	}
	for _, workers := range []int{0, 1, 2, 3, len(jobs), 2 * len(jobs)} {
		for _, failing := range [][]int{nil, {7}, {2, 7}, {8, 0}} {
			t.Run(fmt.Sprintf("workers=%d/failing=%v", workers, failing), func(t *testing.T) {
				var mu sync.Mutex
				runs := make([]int, len(jobs))
				var started, progress []int
				out, err := RunJobs(jobs, workers, func(j Job) (string, error) {
					mu.Lock()
					runs[j.Index]++
					started = append(started, j.Index)
					mu.Unlock()
					if slices.Contains(failing, j.Index) {
						return "", fmt.Errorf("job %d: %w", j.Index, errors.ErrUnsupported)
					}
					return j.Source.Name, nil
				}, func(done int) { progress = append(progress, done) })
				for i, n := range runs {
					if n != 1 {
						t.Errorf("job %d ran %d times", i, n)
					}
				}
				for i, o := range out {
					if want := fmt.Sprint("t", i); o != want && !slices.Contains(failing, i) {
						t.Errorf("out[%d] = %q, want %q", i, o, want)
					}
				}
				for i, d := range progress {
					if d != i+1 {
						t.Fatalf("progress = %v, want 1..%d", progress, len(jobs))
					}
				}
				if len(progress) != len(jobs) {
					t.Errorf("progress called %d times, want %d", len(progress), len(jobs))
				}
				if len(failing) == 0 {
					if err != nil {
						t.Fatal(err)
					}
				} else if want := fmt.Sprintf("job %d: ", slices.Min(failing)); err == nil || err.Error()[:len(want)] != want {
					t.Errorf("err = %v, want the first failing job in job order (%s…)", err, want)
				}
				if workers <= 1 && !slices.Equal(started, dispatchOrder(jobs)) {
					t.Errorf("one worker started %v, want dispatchOrder %v", started, dispatchOrder(jobs))
				}
			})
		}
	}
	if out, err := RunJobs(nil, 2, func(Job) (int, error) { t.Fatal("ran a job of none"); return 0, nil }, nil); err != nil || len(out) != 0 {
		t.Fatalf("no jobs: %v, %v", out, err)
	}
}
