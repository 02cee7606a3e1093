package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/charts"
	"membench/harness"
	"membench/strategies"
)

// reportCommand replays like `run`, through the same job runner, and
// writes the HTML report (package charts) instead of benchfmt lines.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a self-contained HTML report with charts",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			strategyFlag("; the first is the baseline of the comparison tables"),
			deviceFlag,
			&cli.StringSliceFlag{Name: "results", Usage: "benchfmt `FILE` to include: `membench run` output for the tables, `membench capacity` output (min-capacity-B) for the capacity chart"},
			&cli.StringFlag{Name: "out", Value: "report.html", Usage: "write the page to `FILE`"},
			jobsFlag,
			colocateFlag, rateFlag,
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("colocate") {
				return reportColocate(c)
			}
			strats := strategySpecs(c)
			// Each job opens its trace twice (the replay, then the layout
			// at peak live): standard input is spooled.
			m, err := newMatrix(c, strats, false, true, strategies.DefaultDevice)
			if err != nil {
				return err
			}
			defer m.close()
			// The output is checked (not an input) and opened before any
			// replay; it replaces the destination only when all succeeded.
			out := c.String("out")
			f, err := createOutput(c, out, append(c.StringSlice("trace"), c.StringSlice("results")...))
			if err != nil {
				return err
			}
			defer f.Abort()
			rep := &charts.Report{Command: reportCommandLine(c)}
			// Results files first: a bad file should fail before minutes
			// of replay.
			for _, p := range c.StringSlice("results") {
				var in io.ReadCloser = io.NopCloser(os.Stdin)
				if p != "-" {
					f, err := os.Open(p)
					if err != nil {
						return err
					}
					in = f
				}
				ms, err := charts.ReadResults(in, p)
				in.Close()
				if err != nil {
					return err
				}
				rep.Measurements = append(rep.Measurements, ms...)
				rep.Sources = append(rep.Sources, charts.Source{Name: p, Results: len(ms)})
			}
			opts := harness.DefaultOptions
			opts.FindPeakReserved = true
			tick, clear := progress(c.App.ErrWriter, len(m.jobs), "replays")
			rep.Runs, err = harness.RunJobs(m.jobs, workers(c), func(j harness.Job) (charts.Run, error) {
				return reportRun(j, opts)
			}, tick)
			clear()
			if err != nil {
				return err
			}
			// Unless capacity results were given, the verdict's card
			// answers are measured here for traces kept in memory: the
			// smallest card of each strategy and of the knob that
			// helps most (the rows `membench capacity` would print).
			if len(c.StringSlice("results")) == 0 {
				advice, err := adviseSmall(c, m.jobs)
				if err != nil {
					return err
				}
				if ms, err := adviceMeasurements(advice); err != nil {
					return err
				} else if len(ms) > 0 {
					rep.Measurements = append(rep.Measurements, ms...)
					rep.Sources = append(rep.Sources, charts.Source{Name: "capacity searches of this report", Results: len(ms)})
				}
			}
			n, err := writePage(f, rep)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "report: wrote %s (%d bytes): %d traces × %d devices, %d replays\n", out, n, len(m.srcs), len(m.devs), len(m.jobs))
			writeNotes(c.App.ErrWriter, m.jobs)
			return nil
		},
	}
}

// reportRun is one job of the report: the replay, and the layouts at its
// peak-live and peak-footprint events, or when it has neither (nothing
// was ever live) at peak reserved (a preallocated region's layout at
// peak reserved is its first event).
func reportRun(j harness.Job, opts harness.Options) (charts.Run, error) {
	res, err := harness.ReplayJob(j, opts)
	if err != nil {
		return charts.Run{}, err
	}
	run := charts.Run{Result: res, Device: j.Device}
	if res.PeakLive > 0 {
		run.LiveLayout, err = harness.LayoutAtJob(j, res.PeakLiveEvent)
	}
	if err == nil && res.PeakFootprintEvent != res.PeakLiveEvent {
		run.FootprintLayout, err = harness.LayoutAtJob(j, res.PeakFootprintEvent)
	}
	if err == nil && run.LiveLayout == nil && run.FootprintLayout == nil && res.PeakReservedEvent >= 0 {
		// The state map's last resort (charts.Run).
		res.PeakLayout, err = harness.LayoutAtJob(j, res.PeakReservedEvent)
	}
	return run, err
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

// adviceMeasurements turns measured card answers into the report's
// measurements, through the same benchfmt rows `membench capacity` prints.
func adviceMeasurements(advice []*harness.Advice) ([]charts.Measurement, error) {
	var rows []harness.Row
	seen := map[string]bool{}
	for _, a := range advice {
		if a == nil {
			continue
		}
		for _, r := range []*harness.CapacityResult{a.Default, a.Placement, a.Knob} {
			if r == nil || r.Unreachable {
				continue
			}
			row := harness.CapacityRow(r)
			if !seen[row.BenchName()] {
				seen[row.BenchName()] = true
				rows = append(rows, row)
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := harness.WriteRows(&b, harness.FormatBenchfmt, rows); err != nil {
		return nil, err
	}
	return charts.ReadResults(&b, "capacity searches of this report")
}

// reportColocate is `report --colocate`: the shared device's page.
func reportColocate(c *cli.Context) error {
	if c.IsSet("trace") || c.IsSet("strategy") || c.IsSet("results") {
		return fmt.Errorf("--colocate names each tenant's trace and strategy (TRACE@STRATEGY): leave out --trace, --strategy and --results")
	}
	ts, inputs, dev, closeAll, err := colocated(c)
	if err != nil {
		return err
	}
	defer closeAll()
	out := c.String("out")
	f, err := createOutput(c, out, inputs)
	if err != nil {
		return err
	}
	defer f.Abort()
	rs, err := harness.Colocate(ts, dev, c.Float64("rate"))
	if err != nil {
		return err
	}
	cmd := []string{"membench", "report"}
	for _, v := range c.StringSlice("colocate") {
		cmd = append(cmd, "--colocate", shellQuote(v))
	}
	for _, v := range c.StringSlice("device") {
		cmd = append(cmd, "--device", shellQuote(v))
	}
	rep := &charts.Report{Command: strings.Join(cmd, " "), Colocation: &charts.Colocation{Device: dev, Rate: c.Float64("rate"), Tenants: rs}}
	n, err := writePage(f, rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "report: wrote %s (%d bytes): %d tenants on %s\n", out, n, len(rs), dev.Label())
	// As report without --colocate, and run --colocate, say them.
	writeNotes(c.App.ErrWriter, tenantJobs(ts, dev))
	return nil
}

// writePage writes the report's page to f and moves it into place; it
// returns the page's size.
func writePage(f *outFile, rep *charts.Report) (int, error) {
	var page bytes.Buffer
	if err := charts.Write(&page, rep); err != nil {
		return 0, err
	}
	if _, err := f.Write(page.Bytes()); err != nil {
		return 0, err
	}
	return page.Len(), f.Commit()
}
