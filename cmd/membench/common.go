package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
	"membench/traces/corpus"
)

// Flags shared by run, sweep, capacity and report.
var (
	traceFlag  = &cli.StringSliceFlag{Name: "trace", Usage: "trace file or corpus name, repeatable (default: the embedded corpus)"}
	deviceFlag = &cli.StringSliceFlag{Name: "device", Usage: "device preset or override, e.g. a100-40g:capacity=24GiB, repeatable (default: " + strategies.DefaultDevice + ")"}
	outFlag    = &cli.StringFlag{Name: "out", Usage: "write results to `FILE` instead of stdout"}
	formatFlag = &cli.StringFlag{Name: "format", Usage: "benchfmt, table, csv or json (default: table on a terminal, benchfmt otherwise)"}
	shardFlag  = &cli.StringFlag{Name: "shard", Usage: "run only part `K/N` of the jobs (1 <= K <= N), or auto: the part a Kubernetes Indexed Job or a CI matrix assigns (see README); the parts' benchfmt outputs concatenate"}
	jobsFlag   = &cli.IntFlag{Name: "jobs", Usage: "replays to run at once (default: one per core)", Action: func(_ *cli.Context, n int) error {
		// 0 is the default's value; a negative count is no count of
		// workers, and taking it for the default would hide a typo.
		if n < 0 {
			return fmt.Errorf("--jobs %d: the replays to run at once must be 1 or more (or 0, one per core)", n)
		}
		return nil
	}}
)

// strategyFlag is --strategy, repeatable, with the registry's defaults;
// more is added to its usage.
func strategyFlag(more string) *cli.StringSliceFlag {
	return &cli.StringSliceFlag{Name: "strategy", Usage: "strategy `SPEC`, NAME or NAME:key=value,..., repeatable (default: " + strings.Join(harness.DefaultStrategies(), ", ") + ")" + more}
}

func sources(c *cli.Context) ([]*harness.Source, error) {
	args := c.StringSlice("trace")
	if len(args) == 0 {
		args = corpus.Names()
	}
	var out []*harness.Source
	stdin := false
	for _, a := range args {
		if a == "-" {
			if stdin {
				return nil, fmt.Errorf("--trace - given twice: standard input holds one trace")
			}
			stdin = true
		}
		s, err := resolveTrace(c, a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// resolveTrace is harness.ResolveTrace with "-" read from the app's
// standard input.
func resolveTrace(c *cli.Context, arg string) (*harness.Source, error) {
	if arg == "-" {
		return harness.StdinSource(c.App.Reader), nil
	}
	return harness.ResolveTrace(arg)
}

func devices(c *cli.Context, def ...string) ([]strategies.Device, error) {
	names := c.StringSlice("device")
	if len(names) == 0 {
		names = def
	}
	var devs []strategies.Device
	for _, n := range names {
		d, err := strategies.ParseDevice(n)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// output opens --out (or stdout) and picks --format: a human table when
// the results go to a terminal, benchfmt otherwise. commit moves the file
// into place and must be called on success; abort (safe after commit)
// discards it; an --out naming one of the --trace files is refused.
func output(c *cli.Context) (w io.Writer, format string, commit func() error, abort func(), err error) {
	w, commit, abort = c.App.Writer, func() error { return nil }, func() {}
	toTerminal := isTerminal(w)
	if p := c.String("out"); p != "" {
		f, err := createOutput(c, p, c.StringSlice("trace"))
		if err != nil {
			return nil, "", nil, nil, err
		}
		w, commit, abort, toTerminal = f, f.Commit, f.Abort, false
	}
	format = c.String("format")
	if format == "" {
		format = harness.FormatBenchfmt
		if toTerminal {
			format = harness.FormatTable
		}
	}
	switch format {
	case harness.FormatBenchfmt, harness.FormatTable, harness.FormatCSV, harness.FormatJSON:
	default:
		abort()
		return nil, "", nil, nil, fmt.Errorf("--format %q: want benchfmt, table, csv or json", format)
	}
	return w, format, commit, abort, nil
}

func shard(c *cli.Context, jobs []harness.Job) ([]harness.Job, error) {
	s := c.String("shard")
	switch s {
	case "":
		return jobs, nil
	case "auto":
		sh, from, err := harness.ShardFromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c.App.ErrWriter, "shard %d/%d (from %s)\n", sh.K, sh.N, from)
		return sh.Select(jobs), nil
	}
	sh, err := harness.ParseShard(s)
	if err != nil {
		return nil, err
	}
	return sh.Select(jobs), nil
}

func workers(c *cli.Context) int {
	if n := c.Int("jobs"); n > 0 {
		return n
	}
	return harness.Workers()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws a bar on stderr for runs longer than a second, only when
// stderr is a terminal; it returns the callback for RunJobs and a function
// that clears the bar.
func progress(stderr io.Writer, total int, what string) (func(done int), func()) {
	if !isTerminal(stderr) || total == 0 {
		return nil, func() {}
	}
	start := time.Now()
	var mu sync.Mutex
	drawn := false
	update := func(done int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(start) < time.Second {
			return // runs under a second draw nothing
		}
		const width = 30
		n := done * width / total
		fmt.Fprintf(stderr, "\r[%s%s] %d/%d %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total, what)
		drawn = true
	}
	clear := func() {
		mu.Lock()
		defer mu.Unlock()
		if drawn {
			fmt.Fprintf(stderr, "\r%s\r", strings.Repeat(" ", 60+len(what)))
		}
	}
	return update, clear
}

// strategySpecs is --strategy, or the registry's default strategies.
func strategySpecs(c *cli.Context) []string {
	if s := c.StringSlice("strategy"); len(s) > 0 {
		return s
	}
	return harness.DefaultStrategies()
}

// matrix is what run, sweep, capacity and report replay: the traces, the
// devices, and this shard's jobs (trace × device × strategy).
type matrix struct {
	srcs []*harness.Source
	devs []strategies.Device
	jobs []harness.Job
}

// close releases the sources (standard input's temporary copy).
func (m *matrix) close() {
	for _, s := range m.srcs {
		s.Close()
	}
}

// newMatrix resolves the traces, devices and strategy specs of a command
// and plans its jobs (harness.Plan: every spec is built on every device
// before anything runs; a strategy with no model of a device is left out
// there with a note, and is an error when that leaves a strategy or a
// device the user named with nothing to run). It keeps small traces in memory when cache is set
// (sweeps and searches replay them often), and spools standard input
// when it is replayed more than once (reopen: each job opens its trace
// twice, as the report does). The caller closes the matrix.
func newMatrix(c *cli.Context, specs []string, cache, reopen bool, defaultDevices ...string) (*matrix, error) {
	if c.Args().Len() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q (flags must come first; use --trace for traces)", c.Command.Name, c.Args().First())
	}
	srcs, err := sources(c)
	if err != nil {
		return nil, err
	}
	devs, err := devices(c, defaultDevices...)
	if err != nil {
		return nil, err
	}
	all, skipped, err := harness.Plan(srcs, devs, specs, c.IsSet("strategy"), c.IsSet("device"))
	if err != nil {
		return nil, err
	}
	for _, e := range skipped {
		fmt.Fprintf(c.App.ErrWriter, "note: left out: %v\n", e)
	}
	jobs, err := shard(c, all)
	if err != nil {
		return nil, err
	}
	m := &matrix{srcs: srcs, devs: devs, jobs: jobs}
	opens := map[*harness.Source]int{}
	for _, j := range jobs {
		opens[j.Source]++
	}
	for _, s := range srcs {
		if opens[s] > 1 || reopen {
			if err := s.Spool(); err != nil {
				m.close()
				return nil, err
			}
		}
		if cache {
			s.Cache(harness.DefaultCacheEvents)
		}
	}
	return m, nil
}

// plan is what run, sweep and capacity share: their matrix and where and
// how to print its results.
type plan struct {
	*matrix
	out    io.Writer
	format string
	// commit puts the output in place (call it on success); abort
	// discards it (defer it: after commit it does nothing).
	commit func() error
	abort  func()
}

// newPlan is newMatrix and the opened output. abort also closes the
// matrix.
func newPlan(c *cli.Context, specs []string, cache bool, defaultDevices ...string) (*plan, error) {
	m, err := newMatrix(c, specs, cache, false, defaultDevices...)
	if err != nil {
		return nil, err
	}
	out, format, commit, abort, err := output(c)
	if err != nil {
		m.close()
		return nil, err
	}
	return &plan{matrix: m, out: out, format: format, commit: commit, abort: func() { abort(); m.close() }}, nil
}

// writeNotes says, on stderr so that the results stay pure benchfmt, which
// figures behind the results are assumptions rather than published facts
// and which knobs had no effect: for each device its assumption notes,
// then for each strategy on it the notes its allocator gave (Job.Notes,
// as Result.Notes). Before them, what each trace says every run on it
// must repeat (harness.TraceNotes: a compiled trace is an
// approximation), and the settings a snapshot was recorded with when a
// spec replays others (harness.RecordedNote, grouped by recordedGroups),
// from the meta its replays read. Each line is written once, in job
// order.
//
// A note that several specs of one strategy give on a device is written
// once for all of them (noteGroups): a sweep of 16 combinations in which
// a knob has no effect on half says so in one line, naming the knob
// settings those specs share, rather than in eight that differ only in
// the spec.
func writeNotes(w io.Writer, jobs []harness.Job) {
	written := map[string]bool{}
	say := func(line string) {
		if !written[line] {
			written[line] = true
			io.WriteString(w, line)
		}
	}
	rec := recordedNotes(jobs)
	recorded := recordedGroups(jobs, rec)
	for i, j := range jobs {
		if m, ok := j.Source.Meta(); ok {
			for _, n := range harness.TraceNotes(m) {
				say(fmt.Sprintf("note: %s: %s\n", j.Source.Name, n))
			}
		}
		if n := rec[i]; n != "" {
			say(recorded[noteKey{j.Source.Name, specName(j.Spec), n}].recordedLine(j.Source.Name, j.Spec, n))
		}
	}
	groups := noteGroups(jobs)
	for _, j := range jobs {
		dev := j.Device.Label()
		for _, n := range j.Device.Notes {
			if strings.Contains(n, "assumption") {
				say(fmt.Sprintf("note: device %s: %s\n", dev, n))
			}
		}
		for _, n := range j.Notes {
			say(groups[noteKey{dev, specName(j.Spec), n}].line(j.Spec, dev, n))
		}
	}
}

// noteKey is a note as a strategy gives it where it is said (on a device,
// or of a trace), whatever its knobs.
type noteKey struct{ where, name, note string }

// noteGroup is the specs that give one note and, when they are several,
// who says it: "8 of 16 specs, each with defrag_via_host=true", "all 4
// specs" (written once the jobs are counted, noteGroups).
type noteGroup struct {
	specs []string
	who   string
}

// noteGroups groups the jobs' notes by noteKey.
func noteGroups(jobs []harness.Job) map[noteKey]*noteGroup {
	return groupNotes(jobs, func(j harness.Job) string { return j.Device.Label() },
		func(i int) []string { return jobs[i].Notes })
}

// recordedNotes is each job's note on the settings its trace was recorded
// with (harness.RecordedNote, "" for none), from the meta its replay read.
func recordedNotes(jobs []harness.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		if m, ok := j.Source.Meta(); ok {
			out[i] = harness.RecordedNote(j.Spec, m)
		}
	}
	return out
}

// recordedGroups groups the jobs' recorded-settings notes (rec, as
// recordedNotes gives them) as noteGroups groups the allocators' notes,
// by trace instead of device: the note is the trace's, the same for every
// spec of the strategy whose settings differ, so a sweep of 16 torch
// combinations on a snapshot says it once, not 16 times.
func recordedGroups(jobs []harness.Job, rec []string) map[noteKey]*noteGroup {
	return groupNotes(jobs, func(j harness.Job) string { return j.Source.Name },
		func(i int) []string {
			if rec[i] == "" {
				return nil
			}
			return rec[i : i+1]
		})
}

// groupNotes groups the notes each job gives (notes, by the job's index) by where they are
// said (a device, or a trace: noteKey's dev) and strategy name, and says
// who gives each note when several specs do. Membership is kept in sets:
// a sweep's grid may hold 65,536 specs.
func groupNotes(jobs []harness.Job, where func(harness.Job) string, notes func(i int) []string) map[noteKey]*noteGroup {
	type whereName struct{ where, name string }
	specs := map[whereName]map[string]bool{}
	groups := map[noteKey]*noteGroup{}
	in := map[noteKey]map[string]bool{}
	for i, j := range jobs {
		wn := whereName{where(j), specName(j.Spec)}
		if specs[wn] == nil {
			specs[wn] = map[string]bool{}
		}
		specs[wn][j.Spec] = true
		for _, n := range notes(i) {
			k := noteKey{wn.where, wn.name, n}
			g := groups[k]
			if g == nil {
				g = &noteGroup{}
				groups[k], in[k] = g, map[string]bool{}
			}
			if !in[k][j.Spec] {
				in[k][j.Spec] = true
				g.specs = append(g.specs, j.Spec)
			}
		}
	}
	for k, g := range groups {
		if len(g.specs) < 2 {
			continue
		}
		of := len(specs[whereName{k.where, k.name}])
		g.who = fmt.Sprintf("%d of %d specs", len(g.specs), of)
		if len(g.specs) == of {
			g.who = fmt.Sprintf("all %d specs", of)
		}
		if shared := sharedKnobs(g.specs); shared != "" {
			g.who += ", each with " + shared
		}
	}
	return groups
}

// recordedLine is a recorded-settings note's line: "note: TRACE: SPEC:
// note" for one spec, else once for the group, as "note: TRACE: torch,
// all 4 specs: note".
func (g *noteGroup) recordedLine(trace, spec, note string) string {
	if g.who == "" {
		return fmt.Sprintf("note: %s: %s: %s\n", trace, spec, note)
	}
	return fmt.Sprintf("note: %s: %s, %s: %s\n", trace, specName(spec), g.who, note)
}

// line is the note's line: with the spec when one spec gives it, else
// once for the group, as "tf on a100-80g, 8 of 16 specs, each with
// defrag_via_host=true".
func (g *noteGroup) line(spec, dev, note string) string {
	if g.who == "" {
		return fmt.Sprintf("note: %s on %s: %s\n", spec, dev, note)
	}
	return fmt.Sprintf("note: %s on %s, %s: %s\n", specName(spec), dev, g.who, note)
}

// specName is a spec's strategy name; an unparsable spec (Plan has
// refused it before any note) is its own name.
func specName(spec string) string {
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		return spec
	}
	return sp.Name
}

// sharedKnobs is the knob settings every spec has, in the first spec's
// order, comma-separated.
func sharedKnobs(specs []string) string {
	var shared []string
	first, _ := strategies.ParseSpec(specs[0])
	for _, kv := range first.Params {
		all := true
		for _, s := range specs[1:] {
			sp, _ := strategies.ParseSpec(s)
			if !slices.Contains(sp.Params, kv) {
				all = false
				break
			}
		}
		if all {
			shared = append(shared, kv.Key+"="+kv.Value)
		}
	}
	return strings.Join(shared, ",")
}

// writeExecutions says, on stderr, how each replay ran a trace's
// executable launches (harness.Result.Execution): one line per replay of
// a trace with launches, and one per strategy and device for the traces
// without, which replay op by op whatever the strategy.
func writeExecutions(w io.Writer, results []*harness.Result) {
	type key struct{ strategy, device string }
	var order []key
	plain := map[key][]string{}
	notes := map[key]string{}
	for _, res := range results {
		if res == nil || res.Execution == "" {
			continue
		}
		if res.Launches > 0 {
			fmt.Fprintf(w, "note: execution: %s on %s: %s: %s\n", res.Strategy, res.Device, res.Trace, res.Execution)
			continue
		}
		k := key{res.Strategy, res.Device}
		if _, ok := plain[k]; !ok {
			order = append(order, k)
			notes[k] = res.Execution
		}
		plain[k] = append(plain[k], res.Trace)
	}
	for _, k := range order {
		fmt.Fprintf(w, "note: execution: %s on %s: %s: %s\n", k.strategy, k.device, strings.Join(plain[k], ", "), notes[k])
	}
}
