package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
)

func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:  "sweep",
		Usage: "replay traces under a grid of knob values of one strategy",
		Description: "Every combination of the --param values becomes a strategy spec (NAME:k1=v1,k2=v2), in the order\n" +
			"the parameters and values are given; the replays run in parallel and print in that order, ready for\n" +
			"`membench compare -col /strategy` or `go tool benchstat -col /strategy`.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			&cli.StringFlag{Name: "strategy", Usage: "strategy `NAME` (" + strings.Join(harness.Strategies(), ", ") + "), optionally with fixed knobs: NAME:key=value,...", Required: true},
			&cli.StringSliceFlag{Name: "param", Usage: "`key=v1,v2,...`: values of one knob, repeatable"},
			deviceFlag, outFlag, formatFlag, shardFlag, jobsFlag,
		},
		Action: func(c *cli.Context) error {
			specs, err := grid(c.String("strategy"), c.StringSlice("param"))
			if err != nil {
				return err
			}
			p, err := newPlan(c, specs, true, strategies.DefaultDevice)
			if err != nil {
				return err
			}
			defer p.abort()
			tick, clear := progress(c.App.ErrWriter, len(p.jobs), "replays")
			results, err := harness.RunJobs(p.jobs, workers(c), func(j harness.Job) (*harness.Result, error) {
				return harness.ReplayJob(j, harness.Options{Samples: 1})
			}, tick)
			clear()
			if err != nil {
				return err
			}
			rows := make([]harness.Row, len(results))
			for i, r := range results {
				rows[i] = harness.ResultRow(r)
			}
			if err := harness.WriteRows(p.out, p.format, rows); err != nil {
				return err
			}
			writeNotes(c.App.ErrWriter, p.jobs)
			return p.commit()
		},
	}
}

// grid expands a base strategy and knob value lists into specs, the
// first parameter varying slowest.
func grid(base string, params []string) ([]string, error) {
	sp, err := strategies.ParseSpec(base)
	if err != nil {
		return nil, err
	}
	specs := []string{sp.String()}
	for _, p := range params {
		k, vs, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.TrimSpace(vs) == "" {
			return nil, fmt.Errorf("--param %q: want key=v1,v2,...", p)
		}
		var next []string
		for _, s := range specs {
			for _, v := range strategies.SplitList(vs) {
				sep := ","
				if !strings.Contains(s, ":") {
					sep = ":"
				}
				next = append(next, s+sep+k+"="+strings.TrimSpace(v))
			}
		}
		specs = next
	}
	return specs, nil
}
