package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// Source is a trace a replay can open as often as it needs: a file, a
// corpus entry, or events held in memory.
type Source struct {
	Name string
	open func() (traces.Reader, error)
	// events, when the trace was small enough to keep in memory (see
	// Cache), are replayed from memory instead of reopening the file.
	events []traces.Event
	meta   traces.Meta
}

// Open returns a fresh reader of the trace.
func (s *Source) Open() (traces.Reader, error) {
	if s.events != nil {
		return &traces.SliceReader{Events: s.events, M: s.meta}, nil
	}
	return s.open()
}

// ResolveTrace turns a --trace argument into a Source: "-" is standard
// input, FILE#device=N one device of a multi-device trace (the
// lowest device otherwise), and a path that exists wins over a corpus name
// of the same spelling. The trace's name in results
// is the corpus name, or the file's base name less its extensions.
func ResolveTrace(arg string) (*Source, error) {
	if arg == "-" {
		// Standard input streams once: a generator piped into a replay
		// needs no file, whatever the trace's length.
		var once sync.Once
		return &Source{Name: "stdin", open: func() (traces.Reader, error) {
			var r traces.Reader
			err := fmt.Errorf("trace -: standard input can be replayed only once (one strategy and one device)")
			once.Do(func() { r, err = traces.OpenReader("<stdin>", os.Stdin, traces.DefaultOpenOptions) })
			return r, err
		}}, nil
	}
	if path, dev, ok := strings.Cut(arg, "#device="); ok {
		// One device of a multi-device PyTorch snapshot: FILE#device=N.
		n, err := strconv.Atoi(dev)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("trace %q: bad device index %q", arg, dev)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("trace %q: %w", arg, err)
		}
		b := filepath.Base(path)
		if i := strings.IndexByte(b, '.'); i > 0 {
			b = b[:i]
		}
		return &Source{Name: fmt.Sprintf("%s-device%d", b, n), open: func() (traces.Reader, error) {
			return traces.Open(path, traces.OpenOptions{Device: n})
		}}, nil
	}
	if _, err := os.Stat(arg); err == nil {
		b := filepath.Base(arg)
		if i := strings.IndexByte(b, '.'); i > 0 {
			b = b[:i]
		}
		return &Source{Name: b, open: func() (traces.Reader, error) { return traces.Open(arg, traces.DefaultOpenOptions) }}, nil
	}
	if _, ok := corpus.Lookup(arg); ok {
		return &Source{Name: arg, open: func() (traces.Reader, error) { return corpus.Open(arg) }}, nil
	}
	return nil, fmt.Errorf("trace %q: no such file, and no corpus trace of that name (corpus: %s)", arg, strings.Join(corpus.Names(), ", "))
}

// Cache reads the trace into memory if it has at most max events, so that
// sweeps and capacity searches replay it without decoding it again; a
// longer trace stays streamed (memory stays O(live set)). Input errors are
// left for the replay to report with its position.
func (s *Source) Cache(max int) {
	if s.events != nil {
		return
	}
	r, err := s.open()
	if err != nil {
		return
	}
	defer r.Close()
	var evs []traces.Event
	for len(evs) <= max {
		ev, err := r.Next()
		if err == io.EOF {
			s.events, s.meta = evs, r.Meta()
			if s.events == nil {
				s.events = []traces.Event{}
			}
			return
		}
		if err != nil {
			return
		}
		evs = append(evs, ev)
	}
}

// DefaultCacheEvents is the largest trace Cache keeps in memory: 4 M
// events, about 250 MB.
const DefaultCacheEvents = 4 << 20

// Job is one replay of a run, sweep or capacity search.
type Job struct {
	Index  int // position in the full (unsharded) job list
	Group  int // index of its trace × device pair
	Source *Source
	Device strategies.Device
	Spec   string
}

// Jobs lists every trace × device × strategy in that nesting order: the
// order results are printed in, whatever order they finish in.
func Jobs(srcs []*Source, devs []strategies.Device, specs []string) []Job {
	var jobs []Job
	group := 0
	for _, s := range srcs {
		for _, d := range devs {
			for _, sp := range specs {
				jobs = append(jobs, Job{Index: len(jobs), Group: group, Source: s, Device: d, Spec: sp})
			}
			group++
		}
	}
	return jobs
}

// Shard is --shard K/N: the K-th of N disjoint parts of a job list, so that
// a sweep too big for one machine splits across machines or CI jobs and
// their benchfmt outputs concatenate into one comparison.
type Shard struct{ K, N int }

// ParseShard reads "K/N" with 1 ≤ K ≤ N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || ni < 1 || ki < 1 || ki > ni {
		return Shard{}, fmt.Errorf("bad shard %q: want K/N with 1 <= K <= N", s)
	}
	return Shard{ki, ni}, nil
}

// Select keeps the jobs of this shard. When there are at least N trace ×
// device pairs, a pair's strategies stay together (pair i goes to shard
// i mod N + 1), so that each shard lists strategies in the same order and
// benchstat's columns come out as in an unsharded run; otherwise job i
// goes to shard i mod N + 1.
func (s Shard) Select(jobs []Job) []Job {
	if s.N <= 1 {
		return jobs
	}
	groups := 0
	for _, j := range jobs {
		groups = max(groups, j.Group+1)
	}
	var out []Job
	for _, j := range jobs {
		k := j.Index
		if groups >= s.N {
			k = j.Group
		}
		if k%s.N == s.K-1 {
			out = append(out, j)
		}
	}
	return out
}

// Workers is the default parallelism: one replay per core.
func Workers() int { return runtime.GOMAXPROCS(0) }

// RunJobs runs fn on every job with up to workers at a time and returns
// the outcomes in job order. progress, if not nil, is called after each
// job with the number done. The first error (in job order) is returned
// after all jobs have stopped.
func RunJobs[T any](jobs []Job, workers int, fn func(Job) (T, error), progress func(done int)) ([]T, error) {
	out := make([]T, len(jobs))
	errs := make([]error, len(jobs))
	if workers < 1 {
		workers = 1
	}
	var mu sync.Mutex
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = fn(jobs[i])
				mu.Lock()
				done++
				if progress != nil {
					progress(done)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ReplayJob replays one job.
func ReplayJob(j Job, opts Options) (*Result, error) {
	r, err := j.Source.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return Replay(j.Source.Name, r, j.Spec, j.Device, opts)
}
