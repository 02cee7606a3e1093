package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/internal/units"
)

func capacityCommand() *cli.Command {
	return &cli.Command{
		Name:  "capacity",
		Usage: "find the smallest device capacity at which each strategy replays a trace without OOM",
		Description: "For each trace x strategy x device family, bisects the device capacity in steps of the device's\n" +
			"granularity, verifies the answer by replays at it (no OOM) and one granule below (OOM), and prints\n" +
			"min-capacity-B (what the allocator could obtain) and min-card-B (the card, with the CUDA context or\n" +
			"runtime reserve) beside peak-live-B. See harness.MinCapacity for how the search guards against\n" +
			"capacities where fitting is not monotone. Where the framework has a reservation policy, a second row\n" +
			"gives the smallest allocator limit its placement alone needs (the fraction at 1), and the setting\n" +
			"its house suggests that brings the card down most is measured and printed (a row and a knob line).\n" +
			"--no-advice searches only the strategies as given.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			traceFlag,
			strategyFlag(""),
			&cli.StringSliceFlag{Name: "device", Usage: "device family to search, repeatable (default: a100-80g and tpu-v4); only its granularity, costs and kind matter, the capacity is what is searched"},
			&cli.BoolFlag{Name: "no-advice", Usage: "search only the strategies as given: no placement-alone row and no knob"},
			outFlag, formatFlag, shardFlag, jobsFlag,
			colocateFlag, rateFlag,
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("colocate") {
				if c.IsSet("format") || c.IsSet("shard") || c.IsSet("out") || c.IsSet("trace") || c.IsSet("strategy") {
					return fmt.Errorf("--colocate names each tenant (TRACE@STRATEGY) and prints one line per device: --trace, --strategy, --format, --shard and --out are not supported with it")
				}
				return capacityColocate(c)
			}
			p, err := newPlan(c, strategySpecs(c), true, "a100-80g", "tpu-v4")
			if err != nil {
				return err
			}
			defer p.abort()
			tick, clear := progress(c.App.ErrWriter, len(p.jobs), "capacity searches")
			advice := !c.Bool("no-advice")
			results, err := harness.RunJobs(p.jobs, workers(c), func(j harness.Job) (*harness.Advice, error) {
				if !advice {
					r, err := harness.MinCapacity(j.Source, j.Spec, j.Device)
					return &harness.Advice{Default: r}, err
				}
				return harness.Advise(j.Source, j.Spec, j.Device)
			}, tick)
			clear()
			if err != nil {
				return err
			}
			// A configuration reached twice (given, and as another's
			// knob) is one benchmark: its row is printed once.
			var rows []harness.Row
			printed := map[string]bool{}
			for _, a := range results {
				if line := knobLine(a); line != "" {
					fmt.Fprintln(c.App.ErrWriter, line)
				}
				for _, r := range []*harness.CapacityResult{a.Default, a.Placement, a.Knob} {
					if r == nil {
						continue
					}
					if r.Unreachable {
						fmt.Fprintf(c.App.ErrWriter, "%s/%s/%s: no capacity up to %d B fits\n", r.Trace, r.Device, r.Strategy, harness.MaxSearchCapacity)
						continue
					}
					if r.NonMonotone {
						fmt.Fprintf(c.App.ErrWriter, "note: %s/%s/%s: fitting is not monotone in capacity here; the answer is above every failing capacity the search found\n", r.Trace, r.Device, r.Strategy)
					}
					row := harness.CapacityRow(r)
					if printed[row.BenchName()] {
						continue
					}
					printed[row.BenchName()] = true
					rows = append(rows, row)
				}
			}
			if err := harness.WriteRows(p.out, p.format, rows); err != nil {
				return err
			}
			writeNotes(c.App.ErrWriter, p.jobs)
			return p.commit()
		},
	}
}

// knobLine is the answer in one line: the card at the strategy as given,
// the limit its placement alone needs, and the knob that helps most with
// the card it needs.
func knobLine(a *harness.Advice) string {
	d := a.Default
	if d == nil || d.Unreachable || (a.Placement == nil && a.Knob == nil) {
		return ""
	}
	line := fmt.Sprintf("capacity: %s on %s: %s needs a %s card", d.Trace, d.Device, d.Strategy, units.Bytes(float64(d.MinCard()), 2))
	if p := a.Placement; p != nil {
		line += fmt.Sprintf("; its placement alone needs an allocator limit of %s (%s)", units.Bytes(float64(p.MinCapacity), 2), p.Strategy)
	}
	if k := a.Knob; k != nil {
		line += fmt.Sprintf("; knob: %s (measured: a %s card)", a.KnobLine, units.Bytes(float64(k.MinCard()), 2))
	} else {
		line += "; no knob measured brings the card down"
	}
	return line
}
