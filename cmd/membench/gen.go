package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"membench/traces"
	"membench/traces/gen"
)

func genCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen",
		Usage:     "generate a workload trace (transformer-train, llm-serve, cnn-train) in the native text format",
		ArgsUsage: "KIND",
		Description: "Deterministic for a seed. Parameters size the model: e.g.\n" +
			"  membench traces gen transformer-train --param model=llama-7b --param batch=8 --param seq=4096\n" +
			"With no KIND, or with --help-params, lists the kinds and their parameters.",
		Flags: []cli.Flag{
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.StringSliceFlag{Name: "param", Usage: "`key=value`, repeatable"},
			&cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of stdout"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or binary"},
			&cli.BoolFlag{Name: "gzip", Usage: "compress the output"},
			&cli.BoolFlag{Name: "help-params", Usage: "list every kind's parameters"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 || c.Bool("help-params") {
				return listKinds(c.App.Writer)
			}
			if c.Args().Len() > 1 {
				return fmt.Errorf("traces gen: one KIND, got %q", c.Args().Slice())
			}
			params := map[string]string{}
			for _, p := range c.StringSlice("param") {
				k, v, ok := strings.Cut(p, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return fmt.Errorf("traces gen: --param %q: want key=value", p)
				}
				params[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			r, err := gen.New(c.Args().First(), c.Uint64("seed"), params)
			if err != nil {
				return err
			}
			defer r.Close()
			var w io.Writer = c.App.Writer
			var f *outFile
			if p := c.String("out"); p != "" {
				if f, err = createOutput(c, p, nil); err != nil {
					return err
				}
				defer f.Abort()
				w = f
			}
			opts := traces.WriterOptions{Gzip: c.Bool("gzip")}
			switch format := c.String("format"); format {
			case "text":
				_, err = traces.WriteNative(w, r, opts)
			case "binary":
				_, err = traces.WriteBinary(w, r, opts)
			default:
				err = fmt.Errorf("traces gen: --format %q: want text or binary", format)
			}
			if f != nil && err == nil {
				err = f.Commit()
			}
			return err
		},
	}
}

func listKinds(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range gen.Kinds() {
		fmt.Fprintf(tw, "%s\t\t\n", k)
		for _, p := range gen.Params(k) {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, p.Default, p.Doc)
		}
	}
	return tw.Flush()
}
