package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"membench/harness"
)

func capacityCommand() *cli.Command {
	return &cli.Command{
		Name:  "capacity",
		Usage: "find the smallest device capacity at which each strategy replays a trace without OOM",
		Description: "For each trace x strategy x device family, bisects the device capacity in steps of the device's\n" +
			"granularity, verifies the answer by replays at it (no OOM) and one granule below (OOM), and prints\n" +
			"min-capacity-B beside peak-live-B and their ratio. See harness.MinCapacity for how the search guards\n" +
			"against capacities where fitting is not monotone.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			strategyFlag(""),
			&cli.StringSliceFlag{Name: "device", Usage: "device family to search, repeatable (default: a100-80g and tpu-v4); only its granularity, costs and kind matter, the capacity is what is searched"},
			outFlag, formatFlag, shardFlag, jobsFlag,
		},
		Action: func(c *cli.Context) error {
			p, err := newPlan(c, strategySpecs(c), true, "a100-80g", "tpu-v4")
			if err != nil {
				return err
			}
			defer p.abort()
			tick, clear := progress(c.App.ErrWriter, len(p.jobs), "capacity searches")
			results, err := harness.RunJobs(p.jobs, workers(c), func(j harness.Job) (*harness.CapacityResult, error) {
				return harness.MinCapacity(j.Source, j.Spec, j.Device)
			}, tick)
			clear()
			if err != nil {
				return err
			}
			var rows []harness.Row
			for _, r := range results {
				if r.Unreachable {
					fmt.Fprintf(c.App.ErrWriter, "%s/%s/%s: no capacity up to %d B fits\n", r.Trace, r.Device, r.Strategy, harness.MaxSearchCapacity)
					continue
				}
				if r.NonMonotone {
					fmt.Fprintf(c.App.ErrWriter, "note: %s/%s/%s: fitting is not monotone in capacity here; the answer is above every failing capacity the search found\n", r.Trace, r.Device, r.Strategy)
				}
				rows = append(rows, harness.CapacityRow(r))
			}
			if err := harness.WriteRows(p.out, p.format, rows); err != nil {
				return err
			}
			writeNotes(c.App.ErrWriter, p.jobs)
			return p.commit()
		},
	}
}
