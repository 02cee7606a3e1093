package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"membench/internal/benchtab"
)

// compareCommand is benchstat in process: the same tables, statistics,
// unit scaling and deltas (see internal/benchtab), printed as text, CSV
// or JSON. Unlike benchstat it fails on a missing file or a malformed
// line, naming the file and line.
func compareCommand() *cli.Command {
	d := benchtab.DefaultOptions
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare benchfmt results as benchstat does (medians, confidence intervals, deltas, p-values)",
		ArgsUsage: "[label=]FILE...",
		Description: `Reads benchfmt results (membench run output, go test -bench output) and
prints benchstat's comparison tables. Each unit is summarised under its
Unit line's assume= metadata: exact (one run suffices; every delta shown),
nothing (the default: median, 95% confidence interval, Mann-Whitney U test;
"~" marks a difference that is not significant) or normal (mean, t
interval, Welch t-test; benchstat itself treats it as nothing).

Results are split into tables by -table (and always by unit), into rows by
-row and into columns by -col; the first column is the baseline. A label=
prefix on a file sets its .file label. Examples:

   membench compare -col /strategy results.txt
   membench compare old.txt new.txt
   membench compare -ignore commit -format csv before=old.txt after=new.txt
   membench compare -filter '/trace:gpt-train .unit:peak-reserved-B' -row /device -col /strategy r.txt

Flags must come before the files.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "table", Value: d.Table, Usage: "split results into tables by distinct values of `projection`"},
			&cli.StringFlag{Name: "row", Value: d.Row, Usage: "split results into rows by distinct values of `projection`"},
			&cli.StringFlag{Name: "col", Value: d.Col, Usage: "split results into columns by distinct values of `projection`; the first is the baseline"},
			&cli.StringFlag{Name: "ignore", Usage: "ignore variations in `keys`"},
			&cli.StringFlag{Name: "filter", Value: d.Filter, Usage: "use only results matching the benchproc filter `query`"},
			&cli.Float64Flag{Name: "alpha", Value: d.Alpha, Usage: "consider a change significant if p < `α`"},
			&cli.Float64Flag{Name: "confidence", Value: d.Confidence, Usage: "confidence `level` of the ranges"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "print results in `format`: text, csv or json (CSV cell warnings go to stderr)"},
		},
		Action: func(c *cli.Context) error {
			format := c.String("format")
			switch format {
			case "text", "csv", "json":
			default:
				return fmt.Errorf("compare: --format %q: want text, csv or json", format)
			}
			if c.Args().Len() == 0 {
				return fmt.Errorf("compare: no input files (usage: membench compare [flags] [label=]FILE...)")
			}
			opts := benchtab.Options{
				Table:      c.String("table"),
				Row:        c.String("row"),
				Col:        c.String("col"),
				Ignore:     c.String("ignore"),
				Filter:     c.String("filter"),
				Alpha:      c.Float64("alpha"),
				Confidence: c.Float64("confidence"),
			}
			cmp, err := benchtab.ReadFiles(c.Args().Slice(), c.App.Reader, opts)
			if err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			for _, w := range cmp.Warnings {
				fmt.Fprintln(c.App.ErrWriter, "warning:", w)
			}
			switch format {
			case "csv":
				return cmp.WriteCSV(c.App.Writer, c.App.ErrWriter)
			case "json":
				return cmp.WriteJSON(c.App.Writer)
			}
			return cmp.WriteText(c.App.Writer)
		},
	}
}
