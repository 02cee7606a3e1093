package harness

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
)

// Source is a trace a replay can open as often as it needs: a file, a
// corpus entry, events held in memory, or standard input once spooled.
type Source struct {
	Name string
	open func() (traces.Reader, error)
	// events, when the trace was small enough to keep in memory (see
	// Cache), are replayed from memory instead of reopening the file.
	events []traces.Event
	meta   traces.Meta
	// stdin is the stream a "-" source reads; spool, once Spool has
	// run, its copy in a temporary file of spoolSize bytes.
	mu        sync.Mutex
	stdin     io.Reader
	streamed  bool
	spool     *os.File
	spoolSize int64
	spoolErr  error
	// seen is the meta of the last reader Open returned (seenOK once it
	// has returned one), for the notes a trace carries (Meta).
	seen   traces.Meta
	seenOK bool
}

// Open returns a fresh reader of the trace.
func (s *Source) Open() (traces.Reader, error) {
	if s.events != nil {
		s.see(s.meta)
		return &traces.SliceReader{Events: s.events, M: s.meta}, nil
	}
	r, err := s.open()
	if err == nil {
		s.see(r.Meta())
	}
	return r, err
}

// see records m as the trace's meta.
func (s *Source) see(m traces.Meta) {
	s.mu.Lock()
	s.seen, s.seenOK = m, true
	s.mu.Unlock()
}

// Meta is the trace's meta as the last Open found it, and whether the
// trace has been opened: the CLI reads the notes a trace carries
// (TraceNotes) after the replays, without opening it again (standard
// input can be read only once).
func (s *Source) Meta() (traces.Meta, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen, s.seenOK
}

// StdinSource is the trace read from r, standard input ("-"). Read once,
// it streams: a generator piped into one replay needs no copy, whatever
// the trace's length. A source replayed more than once must be spooled
// first (Spool).
func StdinSource(r io.Reader) *Source {
	s := &Source{Name: "stdin", stdin: r}
	s.open = func() (traces.Reader, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case s.spoolErr != nil:
			return nil, s.spoolErr
		case s.spool != nil:
			return traces.OpenReader("<stdin>", io.NewSectionReader(s.spool, 0, s.spoolSize), traces.DefaultOpenOptions)
		case s.streamed:
			return nil, fmt.Errorf("trace -: standard input was already read (spool it to replay it again)")
		}
		s.streamed = true
		return traces.OpenReader("<stdin>", s.stdin, traces.DefaultOpenOptions)
	}
	return s
}

// Spool makes a standard-input source replayable as often as needed: it
// copies the input, untouched, to a temporary file (in os.TempDir(), so
// bounded by that disk's free space rather than by memory) that later
// Opens read; Close removes it. Other sources need nothing and Spool does
// nothing for them.
func (s *Source) Spool() error {
	if s.stdin == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spool != nil || s.spoolErr != nil {
		return s.spoolErr
	}
	if s.streamed {
		return fmt.Errorf("trace -: standard input was already read")
	}
	f, err := os.CreateTemp("", "membench-stdin-*")
	if err == nil {
		s.spoolSize, err = io.Copy(f, s.stdin)
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	if err != nil {
		s.spoolErr = fmt.Errorf("trace -: copying standard input to a temporary file: %w", err)
		return s.spoolErr
	}
	// Unlinked at once where the system allows it (the open file stays
	// readable), so that nothing is left behind even on a crash; Close
	// removes it elsewhere.
	os.Remove(f.Name())
	s.spool = f
	return nil
}

// Close releases what Spool took: the temporary file. The source must not
// be opened afterwards.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spool == nil {
		return nil
	}
	f := s.spool
	s.spool, s.spoolErr = nil, fmt.Errorf("trace -: source closed")
	err := f.Close()
	os.Remove(f.Name()) // already gone where unlinking an open file works
	return err
}

// ResolveTrace turns a --trace argument into a Source: "-" is standard
// input, FILE#device=N one device of a multi-device trace (the
// lowest device otherwise), and a path that exists wins over a corpus name
// of the same spelling. The trace's name in results
// is the corpus name, or the file's base name less its extensions.
func ResolveTrace(arg string) (*Source, error) {
	if arg == "-" {
		return StdinSource(os.Stdin), nil
	}
	if path, alloc, ok := strings.Cut(arg, "#allocator="); ok {
		// One allocator of an XProf profile: FILE#allocator=GPU_0_bfc.
		if alloc == "" {
			return nil, fmt.Errorf("trace %q: empty allocator name", arg)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("trace %q: %w", arg, err)
		}
		b := traceName(path)
		return &Source{Name: b + "-" + alloc, open: func() (traces.Reader, error) {
			return traces.Open(path, traces.OpenOptions{Device: -1, Allocator: alloc})
		}}, nil
	}
	if path, dev, ok := strings.Cut(arg, "#device="); ok {
		// One device of a multi-device PyTorch snapshot: FILE#device=N.
		n, err := strconv.Atoi(dev)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("trace %q: bad device index %q", arg, dev)
		}
		if _, err := os.Stat(path); err != nil {
			if _, ok := corpus.Lookup(path); ok {
				return nil, fmt.Errorf("trace %q: corpus traces hold one device's events; #device=N selects a device of a multi-device file (a PyTorch snapshot, a JAX memory profile)", arg)
			}
			return nil, fmt.Errorf("trace %q: %w", arg, err)
		}
		b := traceName(path)
		return &Source{Name: fmt.Sprintf("%s-device%d", b, n), open: func() (traces.Reader, error) {
			return traces.Open(path, traces.OpenOptions{Device: n})
		}}, nil
	}
	if _, err := os.Stat(arg); err == nil {
		b := traceName(arg)
		return &Source{Name: b, open: func() (traces.Reader, error) { return traces.Open(arg, traces.DefaultOpenOptions) }}, nil
	}
	if _, ok := corpus.Lookup(arg); ok {
		return &Source{Name: arg, open: func() (traces.Reader, error) { return corpus.Open(arg) }}, nil
	}
	return nil, fmt.Errorf("trace %q: no such file, and no corpus trace of that name (corpus: %s)", arg, strings.Join(corpus.Names(), ", "))
}

// traceExts are the extensions a trace file's name sheds to name it in
// results; other dots stay ("pangu-2.6b-somas.csv" is pangu-2.6b-somas).
var traceExts = []string{".gz", ".mbt", ".pickle", ".pkl", ".csv", ".txt", ".log", ".bin", ".json", ".pb", ".xplane", ".memory_profile", ".pprof", ".trace"}

// traceName is the name of the trace file at path in results: its base
// name less its trace extensions.
func traceName(path string) string {
	b := filepath.Base(path)
	for trimmed := true; trimmed; {
		trimmed = false
		for _, e := range traceExts {
			if len(b) > len(e) && strings.HasSuffix(strings.ToLower(b), e) {
				b, trimmed = b[:len(b)-len(e)], true
			}
		}
	}
	return b
}

// Cache reads the trace into memory if it has at most max events, so that
// sweeps and capacity searches replay it without decoding it again; a
// longer trace stays streamed (memory stays O(live set)). Input errors are
// left for the replay to report with its position.
func (s *Source) Cache(max int) {
	if s.events != nil {
		return
	}
	if s.Spool() != nil {
		return // standard input that cannot be kept: Open says why
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

// Locate places err, a replay's error at an event of s's trace, at that
// event's file and line when the replay read the events from memory
// (Cache), where they have no lines: the trace is read again up to that
// event, which costs a failed command one pass over the file and lets
// capacity, tune and colocation name the line as a streamed replay does.
// Any other error is returned as it is.
func (s *Source) Locate(err error) error {
	var pe *traces.PosError
	if s.events == nil || s.open == nil || !errors.As(err, &pe) || pe.Line > 0 || pe.Event < 0 || pe.Event > len(s.events) {
		return err
	}
	r, oerr := s.open()
	if oerr != nil {
		return err
	}
	defer r.Close()
	// An error found at the end of the trace (a launch that never ends)
	// is at its last event, as a streamed replay reports it.
	for i := 0; i <= min(pe.Event, len(s.events)-1); i++ {
		if _, nerr := r.Next(); nerr != nil {
			return err
		}
	}
	if p := r.Pos(); p.File != "" && p.Line > 0 {
		pe.File, pe.Line = p.File, p.Line
	}
	return err
}

// Cached reports whether the trace's events are in memory (Cache kept
// them), so that many replays of it cost no decoding.
func (s *Source) Cached() bool { return s.events != nil }

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
	// Notes are what the strategy's allocator says of itself on this
	// device (strategies.Noter: its assumptions, knobs without effect),
	// as Plan found them before any replay.
	Notes []string
}

// Plan lists the jobs of trace × device × strategy, in Jobs's order,
// after building every strategy once on every device, so that a bad knob
// or a strategy with no model of a device is reported before anything
// runs; each job carries its allocator's notes. A pair whose strategy
// refuses the device (*strategies.UnsupportedDeviceError: torch on a TPU)
// is left out and reported in skipped, once per strategy and device, so
// that default strategies on a TPU, or a matrix of GPUs and TPUs, keep
// what is modelled; but a strategy the user named (namedSpecs) left with
// no device, or a device the user named (namedDevices) left with no
// strategy, is an error, the refusal that caused it: `--device tpu-v5e
// --strategy torch` asks for nothing the models describe.
func Plan(srcs []*Source, devs []strategies.Device, specs []string, namedSpecs, namedDevices bool) (jobs []Job, skipped []error, err error) {
	type built struct {
		notes []string
		skip  error
	}
	per := make([][]built, len(devs))
	for di := range devs {
		per[di] = make([]built, len(specs))
		for si, sp := range specs {
			d := devs[di]
			a, _, err := NewAllocator(sp, strategies.NewMemory(&d))
			var unsupported *strategies.UnsupportedDeviceError
			switch {
			case errors.As(err, &unsupported):
				per[di][si].skip = err
				// The refusal names the strategy, not the spec: several
				// specs of torch on a TPU are one refusal, said once.
				if !slices.ContainsFunc(skipped, func(e error) bool { return e.Error() == err.Error() }) {
					skipped = append(skipped, err)
				}
			case err != nil:
				return nil, nil, err
			default:
				if n, ok := a.(strategies.Noter); ok {
					per[di][si].notes = n.Notes()
				}
				if rel, ok := a.(strategies.Releaser); ok {
					rel.Release()
				}
			}
		}
	}
	for si := range specs {
		runs := false
		for di := range devs {
			runs = runs || per[di][si].skip == nil
		}
		if !runs && namedSpecs {
			return nil, skipped, per[0][si].skip
		}
	}
	for di := range devs {
		runs := false
		for si := range specs {
			runs = runs || per[di][si].skip == nil
		}
		if !runs && namedDevices && len(specs) > 0 {
			return nil, skipped, per[di][0].skip
		}
	}
	group := 0
	for _, s := range srcs {
		for di, d := range devs {
			for si, sp := range specs {
				if b := per[di][si]; b.skip == nil {
					jobs = append(jobs, Job{Index: len(jobs), Group: group, Source: s, Device: d, Spec: sp, Notes: b.notes})
				}
			}
			group++
		}
	}
	if len(jobs) == 0 && len(skipped) > 0 {
		return nil, skipped, skipped[0]
	}
	return jobs, skipped, nil
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

// ShardFromEnv is --shard auto: the shard an existing engine assigned this
// process, read through getenv (os.Getenv), so that a sweep spreads over a
// Kubernetes Indexed Job or a CI matrix with no scheduler of membench's
// own. It tries, in order: MEMBENCH_SHARD=K/N (set by hand or by a CI
// matrix); a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based; the
// Job does not expose its completions count, so the manifest sets
// MEMBENCH_SHARDS, or JOB_COMPLETIONS, to it); GitLab's parallel jobs
// (CI_NODE_INDEX, 1-based, and CI_NODE_TOTAL); CircleCI
// (CIRCLE_NODE_INDEX, 0-based, CIRCLE_NODE_TOTAL); Buildkite
// (BUILDKITE_PARALLEL_JOB, 0-based, BUILDKITE_PARALLEL_JOB_COUNT). from
// names the variables used, for the message that says which shard ran.
func ShardFromEnv(getenv func(string) string) (sh Shard, from string, err error) {
	if v := getenv("MEMBENCH_SHARD"); v != "" {
		sh, err = ParseShard(v)
		return sh, "MEMBENCH_SHARD=" + v, err
	}
	pair := func(indexVar string, base int, totalVars ...string) (bool, error) {
		idx := getenv(indexVar)
		if idx == "" {
			return false, nil
		}
		for _, tv := range totalVars {
			total := getenv(tv)
			if total == "" {
				continue
			}
			k, err1 := strconv.Atoi(idx)
			n, err2 := strconv.Atoi(total)
			if err1 != nil || err2 != nil || n < 1 || k-base < 0 || k-base >= n {
				return true, fmt.Errorf("--shard auto: %s=%q and %s=%q do not name a shard (index %d-based, below the count)", indexVar, idx, tv, total, base)
			}
			sh, from = Shard{k - base + 1, n}, fmt.Sprintf("%s=%s, %s=%s", indexVar, idx, tv, total)
			return true, nil
		}
		return true, fmt.Errorf("--shard auto: %s=%s is set, but not the number of shards (set %s)", indexVar, idx, strings.Join(totalVars, " or "))
	}
	for _, p := range []struct {
		index  string
		base   int
		totals []string
	}{
		{"JOB_COMPLETION_INDEX", 0, []string{"MEMBENCH_SHARDS", "JOB_COMPLETIONS"}},
		{"CI_NODE_INDEX", 1, []string{"CI_NODE_TOTAL"}},
		{"CIRCLE_NODE_INDEX", 0, []string{"CIRCLE_NODE_TOTAL"}},
		{"BUILDKITE_PARALLEL_JOB", 0, []string{"BUILDKITE_PARALLEL_JOB_COUNT"}},
	} {
		prev, prevFrom := sh, from
		found, err := pair(p.index, p.base, p.totals...)
		if !found {
			continue
		}
		if err != nil {
			return Shard{}, "", err
		}
		if prevFrom != "" && sh != prev {
			// Two schedulers' variables name different shards: taking
			// either would silently run the wrong part.
			return Shard{}, "", fmt.Errorf("--shard auto: the environment names two different shards (%s, and %s): set MEMBENCH_SHARD=K/N to choose", prevFrom, from)
		}
		if prevFrom != "" {
			from = prevFrom + "; " + from
		}
	}
	if from != "" {
		return sh, from, nil
	}
	return Shard{}, "", fmt.Errorf("--shard auto: no shard in the environment (set MEMBENCH_SHARD=K/N, or run as a Kubernetes Indexed Job with MEMBENCH_SHARDS, or as GitLab, CircleCI or Buildkite parallel jobs)")
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
//
// The workers take jobs longest first (dispatchOrder), each from a shared
// counter: a long replay started last would leave the other workers idle
// while it runs, and handing jobs out through a channel costs a wake-up
// of the sending goroutine per job, which the counter does not.
func RunJobs[T any](jobs []Job, workers int, fn func(Job) (T, error), progress func(done int)) ([]T, error) {
	out := make([]T, len(jobs))
	errs := make([]error, len(jobs))
	if workers < 1 {
		workers = 1
	}
	order := dispatchOrder(jobs)
	var mu sync.Mutex
	done := 0
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(order) {
					return
				}
				i := order[k]
				out[i], errs[i] = fn(jobs[i])
				if progress != nil {
					mu.Lock()
					done++
					progress(done)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// dispatchOrder is the order in which RunJobs starts the jobs: by
// expected length, longest first (the classic longest-processing-time
// rule, which keeps the last job to finish short), and in job order among
// equals, so that the order is the same on every run. A cached trace's
// length is its event count; a streamed one was too long to cache, so it
// counts as longer than any cached trace.
func dispatchOrder(jobs []Job) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	length := func(j Job) int {
		if j.Source == nil || j.Source.events == nil {
			return math.MaxInt
		}
		return len(j.Source.events)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(length(jobs[b]), length(jobs[a]))
	})
	return order
}

// ReplayJob replays one job.
func ReplayJob(j Job, opts Options) (*Result, error) {
	r, err := j.Source.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := Replay(j.Source.Name, r, j.Spec, j.Device, opts)
	return res, j.Source.Locate(err)
}
