package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/internal/units"
	"membench/strategies"
)

func tuneCommand() *cli.Command {
	return &cli.Command{
		Name:  "tune",
		Usage: "search each framework's allocator knobs for the setting with the smallest card that fits, then the least reserved",
		Description: "For one trace and one device, tries the settings each framework's house lists (torch: expandable_segments,\n" +
			"max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold with a memory fraction; jax: the\n" +
			"memory fraction, preallocation, the platform allocator; tf: allow_growth, garbage collection, the memory\n" +
			"fraction, cuda_malloc), each by a capacity search (the smallest card it fits on) and a replay on the device\n" +
			"(whether it fits there and what it reserves). It prints the table of what was tried, best first, and for\n" +
			"each framework the line to paste into the environment.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "trace file or corpus name", Required: true},
			&cli.StringFlag{Name: "device", Value: strategies.DefaultDevice, Usage: "the device to tune for"},
			&cli.StringSliceFlag{Name: "framework", Usage: "framework to tune, repeatable: torch, jax, tf (default: every one modelled on the device)"},
			jobsFlag,
		},
		Action: func(c *cli.Context) error {
			src, err := harness.ResolveTrace(c.String("trace"))
			if err != nil {
				return err
			}
			defer src.Close()
			src.Cache(harness.DefaultCacheEvents)
			dev, err := strategies.ParseDevice(c.String("device"))
			if err != nil {
				return err
			}
			fws := c.StringSlice("framework")
			named := len(fws) > 0
			if !named {
				fws = harness.DefaultStrategies()
			}
			jobs, rows, skipped, err := harness.TuneJobs(src, dev, fws)
			if err != nil {
				return err
			}
			for _, fw := range skipped {
				if named {
					return fmt.Errorf("tune: %s has no model on %s (PyTorch on a TPU runs through PyTorch/XLA, on the TPU runtime)", fw, dev.Label())
				}
				fmt.Fprintf(c.App.ErrWriter, "note: %s left out: no model of it on %s\n", fw, dev.Label())
			}
			tick, clear := progress(c.App.ErrWriter, len(jobs), "settings tried")
			out, err := harness.RunJobs(jobs, workers(c), harness.TuneOne, tick)
			clear()
			if err != nil {
				return err
			}
			for i, o := range out {
				rows[i].Capacity, rows[i].Fits, rows[i].Reserved, rows[i].ModeledSec = o.Capacity, o.Fits, o.Reserved, o.ModeledSec
			}
			// A snapshot taken under other settings than a framework's
			// defaults: its "(defaults)" row is not the recording,
			// and the note names the spec that is (rows and jobs in
			// step until RankTune orders the rows).
			if m, ok := src.Meta(); ok {
				for i, r := range rows {
					if r.Order == 0 {
						if n := harness.RecordedNote(jobs[i].Spec, m); n != "" {
							fmt.Fprintf(c.App.ErrWriter, "note: %s: %s (defaults): %s\n", src.Name, r.Framework, n)
						}
					}
				}
			}
			harness.RankTune(rows)
			writeTune(c.App.Writer, src.Name, dev, rows)
			return nil
		},
	}
}

// writeTune prints the settings tried, each framework's best first, then
// the lines to paste.
func writeTune(w io.Writer, trace string, dev strategies.Device, rows []harness.TuneRow) {
	fmt.Fprintf(w, "tune: %s on %s: %d settings tried\n\n", trace, dev.Label(), len(rows))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tframework\tsetting\tsmallest card\tmin-capacity / peak-live\ton "+dev.Label()+"\treserved there\tallocation time there\t")
	for _, r := range rows {
		mark, card, ratio := "", "none up to 1 PiB", "–"
		if r.Best {
			mark = "★"
		}
		if !r.Capacity.Unreachable {
			card = units.Bytes(float64(r.Capacity.MinCard()), 2)
			ratio = fmt.Sprintf("%.3f", r.Capacity.Ratio())
		}
		fit := "fits"
		if !r.Fits {
			fit = "OOM"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", mark, r.Framework, r.Knob.Line, card, ratio, fit, units.Bytes(float64(r.Reserved), 2), units.Seconds(r.ModeledSec))
	}
	tw.Flush()
	fmt.Fprintln(w)
	defaults := map[string]harness.TuneRow{}
	for _, r := range rows {
		if r.Order == 0 {
			defaults[r.Framework] = r
		}
	}
	for _, r := range rows {
		if !r.Best {
			continue
		}
		line := r.Knob.Line
		if r.Order == 0 {
			line = "its defaults (no setting measured does better)"
		}
		fmt.Fprintf(w, "%s: %s — smallest card %s", r.Framework, line, units.Bytes(float64(r.Capacity.MinCard()), 2))
		if !r.Fits {
			fmt.Fprintf(w, "; it does not fit on %s", dev.Label())
		}
		// The defaults' time compares only if their replay fit: one cut
		// short by failed allocations did less and would read as cheaper.
		if d, ok := defaults[r.Framework]; ok && r.Order != 0 && !d.Fits {
			fmt.Fprintf(w, "; its defaults do not fit on %s", dev.Label())
		} else if ok && r.Order != 0 && r.ModeledSec > 2*d.ModeledSec {
			fmt.Fprintf(w, "; at a cost: %s of modelled allocation time on %s against %s at its defaults", units.Seconds(r.ModeledSec), dev.Label(), units.Seconds(d.ModeledSec))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nThe card is the allocator's smallest capacity plus what the device keeps outside its reach (see `membench capacity`); allocation times use the device's latencies, which are assumptions (see `membench run`'s notes).")
}
