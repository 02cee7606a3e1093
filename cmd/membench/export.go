package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/strategies"
)

// exportCommand writes one replay's decisions in a format another tool
// reads: today PyTorch's memory snapshot, so that a JAX, TensorFlow or
// TPU simulation opens in pytorch.org/memory_viz, the viewer PyTorch
// users already know (harness.ExportMemoryViz says what the file holds).
func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "replay one trace through one strategy and write the allocator's decisions for another tool (memory-viz: PyTorch's snapshot pickle)",
		Description: "membench export --format memory-viz --trace T --strategy S [--device D] --out snap.pickle\n" +
			"writes what torch.cuda.memory._dump_snapshot writes: segments (the model's device allocations, blocks its\n" +
			"chunks) and device_traces (segment_alloc/free or map/unmap, alloc, free_requested/free_completed, oom).\n" +
			"Open it at pytorch.org/memory_viz. A torch export is validated by `membench validate snap.pickle`.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "memory-viz", Usage: "output format: memory-viz"},
			&cli.StringSliceFlag{Name: "trace", Usage: "trace `PATH|NAME` to replay (- for standard input)"},
			&cli.StringSliceFlag{Name: "strategy", Usage: "strategy `SPEC`, NAME or NAME:key=value,..."},
			&cli.StringSliceFlag{Name: "device", Usage: "device `NAME` or NAME:key=value,... (default " + strategies.DefaultDevice + ")"},
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` (required: the output is binary)"},
		},
		Action: func(c *cli.Context) error {
			if f := c.String("format"); f != "memory-viz" {
				return fmt.Errorf("export: --format %q: want memory-viz", f)
			}
			// One trace, one strategy, one device: a repeated flag is an
			// error rather than its last value winning.
			one := map[string]string{"device": strategies.DefaultDevice}
			for _, name := range []string{"trace", "strategy", "device"} {
				vs := c.StringSlice(name)
				if len(vs) > 1 {
					return fmt.Errorf("export: --%s given %d times: an export is one trace through one strategy on one device", name, len(vs))
				}
				if len(vs) == 1 {
					one[name] = vs[0]
				}
			}
			for _, name := range []string{"trace", "strategy"} {
				if one[name] == "" {
					return fmt.Errorf("export: --%s is required", name)
				}
			}
			if c.String("out") == "" {
				return fmt.Errorf("export: --out is required")
			}
			dev, err := strategies.ParseDevice(one["device"])
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			src, err := resolveTrace(c, one["trace"])
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer src.Close()
			// Refused before the replay: the output may not be the input.
			out, err := createOutput(c, c.String("out"), []string{one["trace"]})
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer out.Abort()
			r, err := src.Open()
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer r.Close()
			// The trace's entries outgrow memory beside the output,
			// which has room for them (the output is bigger).
			var opts harness.ExportOptions
			if !out.direct {
				opts.SpoolDir = filepath.Dir(out.file.Name())
			}
			ex, err := harness.ExportMemoryViz(src.Name, r, one["strategy"], dev, opts)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer ex.Close()
			if err := ex.WriteMemoryViz(out); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			if err := out.Commit(); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			res := ex.Result
			for _, n := range res.Notes {
				fmt.Fprintf(c.App.ErrWriter, "note: %s on %s: %s\n", res.Strategy, res.Device, n)
			}
			writeExecutions(c.App.ErrWriter, []*harness.Result{res})
			if ex.Moves > 0 {
				fmt.Fprintf(c.App.ErrWriter, "note: %d block relocations are written as a free at the old address and an alloc at the new one (the snapshot format has no move)\n", ex.Moves)
			}
			fmt.Fprintf(c.App.ErrWriter, "export: %s: %d trace entries, %d segments at the end, %d OOMs\n",
				c.String("out"), ex.Trace.Len(), len(ex.Snapshot.Segments), res.OOMCount)
			return nil
		},
	}
}
