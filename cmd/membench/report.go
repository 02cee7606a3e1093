package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/charts"
	"membench/harness"
	"membench/strategies"
	"membench/traces/corpus"
)

// reportCommand replays like `run` and writes the HTML report (package
// charts) instead of benchfmt lines.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a self-contained HTML report with charts",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trace", Usage: "trace file or corpus name (default: the embedded corpus)"},
			&cli.StringSliceFlag{Name: "strategy", Usage: "strategy spec, e.g. torch:expandable_segments=true (default: jax, tf, torch); the first is the baseline of the comparison tables"},
			&cli.StringSliceFlag{Name: "device", Usage: "device preset or override, e.g. a100-40g:capacity=24GiB (default: " + strategies.DefaultDevice + ")"},
			&cli.StringSliceFlag{Name: "results", Usage: "benchfmt `FILE` to include: `membench run` output for the tables, `membench capacity` output (min-capacity-B) for the capacity chart"},
			&cli.StringFlag{Name: "out", Value: "report.html", Usage: "write the page to `FILE`"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("report: unexpected argument %q (flags must come first; use --trace for traces)", c.Args().First())
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
			for _, s := range strats {
				mem := strategies.NewMemory(&devs[0])
				if _, _, err := harness.NewAllocator(s, mem); err != nil {
					return err
				}
			}
			rep := &charts.Report{Command: reportCommandLine(c)}
			// Results files first: a bad file should fail before minutes
			// of replay.
			for _, p := range c.StringSlice("results") {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				ms, err := charts.ReadResults(f, p)
				f.Close()
				if err != nil {
					return err
				}
				rep.Measurements = append(rep.Measurements, ms...)
				rep.Sources = append(rep.Sources, charts.Source{Name: p, Results: len(ms)})
			}
			opts := harness.DefaultOptions
			opts.KeepLayout = true
			for _, t := range trs {
				name := traceName(t)
				for _, d := range devs {
					for _, s := range strats {
						run, err := replayForReport(t, name, s, d, opts)
						if err != nil {
							return err
						}
						rep.Runs = append(rep.Runs, run)
					}
				}
			}
			var page bytes.Buffer
			if err := charts.Write(&page, rep); err != nil {
				return err
			}
			out := c.String("out")
			if err := os.WriteFile(out, page.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "report: wrote %s (%d bytes): %d traces × %d devices × %d strategies\n", out, page.Len(), len(trs), len(devs), len(strats))
			writeAssumptions(c.App.ErrWriter, devs, strats)
			return nil
		},
	}
}

// replayForReport replays one trace × device × strategy keeping the
// layout at peak reserved, then replays the trace up to its peak-live
// event for the layout at that moment.
func replayForReport(t, name, spec string, d strategies.Device, opts harness.Options) (charts.Run, error) {
	r, err := openTrace(t)
	if err != nil {
		return charts.Run{}, err
	}
	res, err := harness.Replay(name, r, spec, d, opts)
	r.Close()
	if err != nil {
		return charts.Run{}, err
	}
	run := charts.Run{Result: res, Device: d}
	if res.PeakLive > 0 {
		r, err := openTrace(t)
		if err != nil {
			return run, err
		}
		run.LiveLayout, err = harness.LayoutAt(name, r, spec, d, res.PeakLiveEvent)
		r.Close()
		if err != nil {
			return run, err
		}
	}
	return run, nil
}

// reportCommandLine is the command as the page shows it: the flags that
// shape the report, in a fixed order, without --out (the same inputs
// must give the same page wherever it is written).
func reportCommandLine(c *cli.Context) string {
	parts := []string{"membench", "report"}
	for _, f := range []string{"trace", "strategy", "device", "results"} {
		for _, v := range c.StringSlice(f) {
			parts = append(parts, "--"+f, shellQuote(v))
		}
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r)) {
			safe = false
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
