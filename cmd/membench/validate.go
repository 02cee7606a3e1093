package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"membench/strategies"
	"membench/torchlike/snapshot"
	"membench/torchlike/validate"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "replay a PyTorch memory snapshot through torchlike and compare its segment events with the recorded ones",
		ArgsUsage: "SNAPSHOT.pickle...",
		Description: "Exit status 0 only when, for every device validated, the simulated segment_alloc, segment_free,\n" +
			"segment_map, segment_unmap and oom sequence agrees exactly (action, size, order) with the recorded one.",
		Flags: []cli.Flag{
			&cli.IntSliceFlag{Name: "device-index", Usage: "validate only device `N` (repeatable; default: every device)"},
			&cli.StringFlag{Name: "capacity", Usage: "device memory the allocator could obtain, e.g. 40GiB, when no oom is recorded (default: unlimited)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return fmt.Errorf("validate: name at least one snapshot file")
			}
			var opts validate.Options
			if c.IsSet("device-index") {
				opts.Devices = c.IntSlice("device-index")
			}
			if s := c.String("capacity"); s != "" {
				n, err := strategies.ParseBytes(s)
				if err != nil {
					return fmt.Errorf("--capacity: %w", err)
				}
				opts.Capacity = n
			}
			failed := 0
			for _, path := range c.Args().Slice() {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				snap, err := snapshot.Decode(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				reps, err := validate.Validate(snap, opts)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				for _, r := range reps {
					r.WriteReport(c.App.Writer, path)
					if !r.Agree() {
						failed++
					}
				}
			}
			if failed > 0 {
				fmt.Fprintf(c.App.ErrWriter, "membench validate: %d device(s) disagree\n", failed)
				return exitCode(1)
			}
			return nil
		},
	}
}
