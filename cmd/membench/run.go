package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
)

// exitCode is an error that carries only an exit status (its message was
// already printed), as validate's disagreement does.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is the whole command, kept apart from main so that tests drive the
// real CLI with their own writers.
func run(stdout, stderr io.Writer, args []string) error {
	return runWithInput(os.Stdin, stdout, stderr, args)
}

// runWithInput is run reading standard input (`--trace -`) from stdin.
func runWithInput(stdin io.Reader, stdout, stderr io.Writer, args []string) error {
	app := &cli.App{
		Name:      "membench",
		Usage:     "replay allocation traces through the allocator models of " + strings.Join(harness.Strategies(), ", "),
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors go back to main, never to os.Exit inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		// Strategy and device specs contain commas; a repeated flag, not a
		// comma, separates values.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			exportCommand(),
			tracesCommand(),
			compareCommand(),
			capacityCommand(),
			tuneCommand(),
			sweepCommand(),
			reportCommand(),
		},
	}
	return app.Run(flagsFirst(app.Commands, args))
}

// flagsFirst moves a command's flags in front of its positional arguments.
// urfave/cli v2 stops parsing flags at the first positional argument, but
// the documented forms put them after (`validate FILE --device-index 1`,
// `traces show NAME --format json`). A flag's value is the next token
// unless the flag is boolean or written --name=value. "--" ends the flags.
func flagsFirst(cmds []*cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	var cmd *cli.Command
	for i < len(args) {
		var next *cli.Command
		for _, c := range cmds {
			if c.Name == args[i] || slices.Contains(c.Aliases, args[i]) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
		out = append(out, args[i])
		cmds = next.Subcommands
		i++
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	isBool := map[string]bool{"help": true, "h": true}
	for _, f := range cmd.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				isBool[n] = true
			}
		}
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !isBool[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(append(out, flags...), pos...)
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "replay traces and print benchfmt results",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			strategyFlag(""),
			deviceFlag, outFlag, formatFlag, shardFlag, jobsFlag,
			&cli.BoolFlag{Name: "check", Usage: "run the allocators' invariant checks after every event (slow)"},
			colocateFlag, rateFlag,
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("colocate") {
				if c.IsSet("trace") || c.IsSet("strategy") {
					return fmt.Errorf("--colocate names each tenant's trace and strategy (TRACE@STRATEGY): leave out --trace and --strategy")
				}
				if c.IsSet("format") || c.IsSet("shard") || c.IsSet("out") {
					return fmt.Errorf("--colocate prints the tenants' table: --format, --shard and --out are not supported with it")
				}
				return runColocate(c)
			}
			p, err := newPlan(c, strategySpecs(c), false, strategies.DefaultDevice)
			if err != nil {
				return err
			}
			defer p.abort()
			opts := harness.DefaultOptions
			opts.Check = c.Bool("check")
			tick, clear := progress(c.App.ErrWriter, len(p.jobs), "replays")
			results, err := harness.RunJobs(p.jobs, workers(c), func(j harness.Job) (*harness.Result, error) {
				return harness.ReplayJob(j, opts)
			}, tick)
			clear()
			if err != nil {
				return err
			}
			rows := make([]harness.Row, len(results))
			noted := map[string]bool{}
			for i, res := range results {
				rows[i] = harness.ResultRow(res)
				if devs := res.Meta.Get("devices"); strings.Contains(devs, ",") && !noted[res.Trace] {
					noted[res.Trace] = true
					fmt.Fprintf(c.App.ErrWriter, "note: %s: the trace holds devices %s; replayed device %s (select one with --trace FILE#device=N)\n", res.Trace, devs, res.Meta.Get("device"))
				}
				if ign := res.Meta.Get("ignored-entries"); ign != "" && !noted[res.Trace+"\x00ignored"] {
					noted[res.Trace+"\x00ignored"] = true
					fmt.Fprintf(c.App.ErrWriter, "note: %s: %s\n", res.Trace, ign)
				}
				if res.OOMCount > 0 {
					o := res.OOMs[0]
					fmt.Fprintf(c.App.ErrWriter, "%s: %d allocations failed; first at event %d: %s\n", res.BenchName(), res.OOMCount, o.Event, o.Message)
				}
			}
			if err := harness.WriteRows(p.out, p.format, rows); err != nil {
				return err
			}
			if p.format == harness.FormatTable {
				// The table's answer in words: what fits, least
				// footprint first; what did not, never ranked; and for
				// traces small enough to search (kept in memory), the
				// smallest card and the knob that helps most, measured.
				advice, err := adviseSmall(c, p.jobs)
				if err != nil {
					return err
				}
				if err := harness.WriteVerdicts(p.out, harness.Verdicts(results, advice...)); err != nil {
					return err
				}
			}
			writeNotes(c.App.ErrWriter, p.jobs)
			writeExecutions(c.App.ErrWriter, results)
			return p.commit()
		},
	}
}

// verdictCacheEvents bounds the traces whose smallest card `run` searches
// for its verdict: a capacity search replays the trace some thirty times,
// which is instant from memory for the corpus and too slow to do unasked
// for a long recording (`membench capacity` does it on request).
const verdictCacheEvents = 1 << 20

// adviseSmall measures the card answers (harness.Advise) for every job
// whose trace fits in verdictCacheEvents; nil for the others, which the
// verdict then leaves to `membench capacity`.
func adviseSmall(c *cli.Context, jobs []harness.Job) ([]*harness.Advice, error) {
	for _, j := range jobs {
		j.Source.Cache(verdictCacheEvents)
	}
	return harness.RunJobs(jobs, workers(c), func(j harness.Job) (*harness.Advice, error) {
		if !j.Source.Cached() {
			return nil, nil
		}
		return harness.Advise(j.Source, j.Spec, j.Device)
	}, nil)
}
