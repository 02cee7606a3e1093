package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
	"membench/traces"
	"membench/traces/corpus"
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
			&cli.StringSliceFlag{Name: "trace", Usage: "trace file or corpus name (default: the embedded corpus)"},
			&cli.StringSliceFlag{Name: "strategy", Usage: "strategy spec, e.g. torch:expandable_segments=true (default: jax, tf, torch)"},
			&cli.StringSliceFlag{Name: "device", Usage: "device preset or override, e.g. a100-40g:capacity=24GiB (default: " + strategies.DefaultDevice + ")"},
			&cli.StringFlag{Name: "out", Usage: "write results to `FILE` instead of stdout"},
			&cli.BoolFlag{Name: "check", Usage: "run the allocators' invariant checks after every event (slow)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("run: unexpected argument %q (flags must come first; use --trace for traces)", c.Args().First())
			}
			trs := c.StringSlice("trace")
			if len(trs) == 0 {
				trs = corpus.Names()
			}
			strats := c.StringSlice("strategy")
			if len(strats) == 0 {
				strats = harness.DefaultStrategies()
			}
			devNames := c.StringSlice("device")
			if len(devNames) == 0 {
				devNames = []string{strategies.DefaultDevice}
			}
			var devs []strategies.Device
			for _, n := range devNames {
				d, err := strategies.ParseDevice(n)
				if err != nil {
					return err
				}
				devs = append(devs, d)
			}
			// Check every strategy spec before replaying anything.
			for _, s := range strats {
				mem := strategies.NewMemory(&devs[0])
				if _, _, err := harness.NewAllocator(s, mem); err != nil {
					return err
				}
			}
			out := c.App.Writer
			if p := c.String("out"); p != "" {
				f, err := os.Create(p)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			if err := harness.WriteUnits(out); err != nil {
				return err
			}
			opts := harness.DefaultOptions
			opts.Check = c.Bool("check")
			for _, t := range trs {
				name := traceName(t)
				for _, d := range devs {
					for _, s := range strats {
						r, err := openTrace(t)
						if err != nil {
							return err
						}
						res, err := harness.Replay(name, r, s, d, opts)
						r.Close()
						if err != nil {
							return err
						}
						if err := harness.WriteResult(out, res); err != nil {
							return err
						}
						if res.OOMCount > 0 {
							o := res.OOMs[0]
							fmt.Fprintf(c.App.ErrWriter, "%s: %d allocations failed; first at event %d: %s\n", res.BenchName(), res.OOMCount, o.Event, o.Message)
						}
					}
				}
			}
			writeAssumptions(c.App.ErrWriter, devs, strats)
			return nil
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

// openTrace resolves a corpus name or a file path. A path that exists wins
// over a corpus name of the same spelling.
func openTrace(t string) (traces.Reader, error) {
	if _, err := os.Stat(t); err == nil {
		return traces.Open(t, traces.DefaultOpenOptions)
	}
	if _, ok := corpus.Lookup(t); ok {
		return corpus.Open(t)
	}
	return nil, fmt.Errorf("trace %q: no such file, and no corpus trace of that name (corpus: %s)", t, strings.Join(corpus.Names(), ", "))
}

// traceName is the trace's name in results: a corpus name, or the file's
// base name less its extensions.
func traceName(t string) string {
	if _, err := os.Stat(t); err != nil {
		return t
	}
	b := filepath.Base(t)
	if i := strings.IndexByte(b, '.'); i > 0 {
		b = b[:i]
	}
	return b
}
