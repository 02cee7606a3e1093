package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
	"membench/traces"
)

// exitCode is an error that carries only an exit status (its message was
// already printed), as validate's disagreement does.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is the whole command, kept apart from main so that tests drive the
// real CLI with their own writers.
func run(stdout, stderr io.Writer, args []string) error {
	app := &cli.App{
		Name:      "membench",
		Usage:     "replay allocation traces through JAX, TensorFlow and PyTorch allocator models",
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
			tracesCommand(),
			compareCommand(),
			capacityCommand(),
			sweepCommand(),
			reportCommand(),
		},
	}
	return app.Run(args)
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "replay traces and print benchfmt results",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			&cli.StringSliceFlag{Name: "strategy", Usage: "strategy spec, e.g. torch:expandable_segments=true, repeatable (default: jax, tf, torch)"},
			deviceFlag, outFlag, formatFlag, shardFlag, jobsFlag,
			&cli.BoolFlag{Name: "check", Usage: "run the allocators' invariant checks after every event (slow)"},
		},
		Action: func(c *cli.Context) error {
			strats := c.StringSlice("strategy")
			if len(strats) == 0 {
				strats = harness.DefaultStrategies()
			}
			p, err := newPlan(c, strats, false, strategies.DefaultDevice)
			if err != nil {
				return err
			}
			defer p.close()
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
			for i, res := range results {
				rows[i] = harness.ResultRow(res)
				if res.OOMCount > 0 {
					o := res.OOMs[0]
					fmt.Fprintf(c.App.ErrWriter, "%s: %d allocations failed; first at event %d: %s\n", res.BenchName(), res.OOMCount, o.Event, o.Message)
				}
			}
			if err := harness.WriteRows(p.out, p.format, rows); err != nil {
				return err
			}
			writeAssumptions(c.App.ErrWriter, p.devs, strats)
			return p.close()
		},
	}
}

// writeAssumptions says, on stderr so that the results stay pure benchfmt,
// which figures behind the results are assumptions rather than published
// facts: the devices' and, on a TPU, the runtime model's.
func writeAssumptions(w io.Writer, devs []strategies.Device, strats []string) {
	for _, d := range devs {
		for _, n := range d.Notes {
			if strings.Contains(n, "assumption") {
				fmt.Fprintf(w, "note: device %s: %s\n", d.Label(), n)
			}
		}
		if d.Kind == strategies.TPU {
			for _, s := range strats {
				if strings.HasPrefix(s, "jax") || strings.HasPrefix(s, "tf") {
					fmt.Fprintf(w, "note: %s on %s: the TPU runtime's allocator is closed source; modelled as one best-fit heap of the whole HBM less the runtime reserve, defragmenting by relocation when a request fails with enough free memory (assumption; knobs defrag, defrag_via_host)\n", s, d.Label())
				}
			}
		}
	}
}

// openTrace resolves a corpus name or a file path (see
// harness.ResolveTrace) and opens it.
func openTrace(t string) (traces.Reader, error) {
	src, err := harness.ResolveTrace(t)
	if err != nil {
		return nil, err
	}
	return src.Open()
}

// traceName is the trace's name in results.
func traceName(t string) string {
	if src, err := harness.ResolveTrace(t); err == nil {
		return src.Name
	}
	return t
}
