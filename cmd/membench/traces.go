package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/traces"
	"membench/traces/corpus"
)

func tracesCommand() *cli.Command {
	return &cli.Command{
		Name:  "traces",
		Usage: "list, show, convert, compile and generate traces",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "one line per corpus trace: name, source, events, peak live, licence",
				Action: func(c *cli.Context) error {
					tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "name\tsource\tevents\tpeak live B\tlicence\tdescription")
					for _, e := range corpus.Entries {
						r, err := corpus.Open(e.Name)
						if err != nil {
							return err
						}
						s, err := traces.Summarize(e.Name, r)
						r.Close()
						if err != nil {
							return err
						}
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", e.Name, e.Source, s.Events, s.PeakLiveBytes, e.Licence, e.Description)
					}
					return tw.Flush()
				},
			},
			{
				Name:      "show",
				Usage:     "summarize a trace: events, allocations, peak live and when, size histogram, lifetime percentiles, phases",
				ArgsUsage: "NAME|PATH",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"}},
				Action: func(c *cli.Context) error {
					if c.Args().Len() != 1 {
						return fmt.Errorf("traces show: name one trace (a corpus name or a file)")
					}
					src, err := resolveTrace(c, c.Args().First())
					if err != nil {
						return err
					}
					r, err := src.Open()
					if err != nil {
						return err
					}
					defer r.Close()
					s, err := traces.Summarize(src.Name, r)
					if err != nil {
						return err
					}
					switch c.String("format") {
					case "json":
						enc := json.NewEncoder(c.App.Writer)
						enc.SetIndent("", "  ")
						return enc.Encode(s)
					case "text":
						return writeSummary(c.App.Writer, s)
					}
					return fmt.Errorf("traces show: --format %q: want text or json", c.String("format"))
				},
			},
			{
				Name:      "convert",
				Usage:     "convert any supported trace format to membench's native text or binary format",
				ArgsUsage: "IN OUT",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "format", Value: "text", Usage: "text or binary"},
					&cli.BoolFlag{Name: "gzip", Usage: "compress the output"},
				},
				Action: func(c *cli.Context) error {
					if c.Args().Len() != 2 {
						return fmt.Errorf("traces convert: want IN OUT")
					}
					in, out := c.Args().Get(0), c.Args().Get(1)
					src, err := resolveTrace(c, in)
					if err != nil {
						return err
					}
					r, err := src.Open()
					if err != nil {
						return err
					}
					defer r.Close()
					f, err := createOutput(c, out, []string{in})
					if err != nil {
						return err
					}
					defer f.Abort()
					opts := traces.WriterOptions{Gzip: c.Bool("gzip")}
					switch c.String("format") {
					case "text":
						_, err = traces.WriteNative(f, r, opts)
					case "binary":
						_, err = traces.WriteBinary(f, r, opts)
					default:
						err = fmt.Errorf("traces convert: --format %q: want text or binary", c.String("format"))
					}
					if err == nil {
						err = f.Commit()
					}
					return err
				},
			},
			compileCommand(),
			genCommand(),
		},
	}
}

func writeSummary(w io.Writer, s *traces.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "trace\t%s\n", s.Name)
	for _, kv := range s.Meta {
		fmt.Fprintf(tw, "meta %s\t%s\n", kv.Key, kv.Value)
	}
	// A compiled trace's launch records (b and e) are events too, named
	// so that the parts add up to the total.
	launchRecords := ""
	if n := s.Events - s.Allocs - s.Frees - s.Marks; n > 0 {
		launchRecords = fmt.Sprintf(", %d launch begins and ends", n)
	}
	fmt.Fprintf(tw, "events\t%d (%d allocs, %d frees, %d marks%s)\n", s.Events, s.Allocs, s.Frees, s.Marks, launchRecords)
	if s.Launches > 0 || len(s.Kinds) > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(s.Kinds)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, s.Kinds[k]))
		}
		fmt.Fprintf(tw, "launches\t%d (%d donated outputs; allocs by kind: %s)\n", s.Launches, s.Donations, strings.Join(kinds, ", "))
	}
	fmt.Fprintf(tw, "streams\t%d\n", s.Streams)
	fmt.Fprintf(tw, "bytes allocated in total\t%d\n", s.TotalBytes)
	peakAt := fmt.Sprintf("event %d", s.PeakEvent)
	if s.PeakTime >= 0 {
		peakAt += fmt.Sprintf(", time %d ns", s.PeakTime)
	}
	fmt.Fprintf(tw, "peak live bytes\t%d (%s)\n", s.PeakLiveBytes, peakAt)
	fmt.Fprintf(tw, "live at end\t%d allocations\n", s.LiveAtEnd)
	l := s.Lifetimes
	if l.Count > 0 {
		sampled := ""
		if l.Sampled {
			sampled = " (from a sample)"
		}
		fmt.Fprintf(tw, "lifetime in events\tp50 %g, p90 %g, p99 %g, max %g over %d frees%s\n", l.Percentiles["p50"], l.Percentiles["p90"], l.Percentiles["p99"], l.Max, l.Count, sampled)
	}
	fmt.Fprintln(tw, "size histogram\t")
	for _, b := range s.SizeHistogram {
		fmt.Fprintf(tw, "  [%d, %d)\t%d allocs, %d B\n", b.Lo, b.Hi, b.Count, b.Bytes)
	}
	if len(s.Phases) > 0 {
		labels := map[string]int{}
		for _, p := range s.Phases {
			base, _, _ := strings.Cut(p.Label, ":")
			labels[base]++
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, labels[k]))
		}
		fmt.Fprintf(tw, "phases\t%s\n", strings.Join(parts, ", "))
		for i, p := range s.Phases {
			if i == 20 {
				fmt.Fprintf(tw, "  …\t%d more\n", len(s.Phases)-20)
				break
			}
			fmt.Fprintf(tw, "  event %d\t%s (live %d B)\n", p.Event, p.Label, p.LiveBytes)
		}
	}
	return tw.Flush()
}

// compileCommand is `membench traces compile`: a per-op trace with step
// marks made into a compiled one (format version 2), an approximation of
// jit that says so in its meta and in every run that replays it
// (harness.CompileTrace).
func compileCommand() *cli.Command {
	return &cli.Command{
		Name:  "compile",
		Usage: "turn a per-op trace with step: marks into a compiled one (format 2): each step one launch, its internal buffers one temp packed by XLA's heap simulator (an approximation)",
		Description: "Allocations born and dying inside a step are packed by the heap simulator into the executable's temp;\n" +
			"those that survive are its outputs; buffers live before the step and freed in it are consumed inputs,\n" +
			"freed after the launch, and with --donate auto an output of the same size takes one over (donor=).\n" +
			"The result is labelled an approximation: it cannot see XLA's fusion, rematerialization or scheduling.",
		ArgsUsage: "IN OUT",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "donate", Value: "auto", Usage: "auto (an output takes over a consumed input of its size) or none"},
			&cli.Int64Flag{Name: "alignment", Value: harness.DefaultCompileAlignment, Usage: "the heap simulator's alignment in bytes (256 in the newest XLA, 16 in older trees)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or binary"},
			&cli.BoolFlag{Name: "gzip", Usage: "compress the output"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 2 {
				return fmt.Errorf("traces compile: want IN OUT")
			}
			in, out := c.Args().Get(0), c.Args().Get(1)
			donate, err := harness.ParseDonate(c.String("donate"))
			if err != nil {
				return fmt.Errorf("traces compile: --%w", err)
			}
			if a := c.Int64("alignment"); a <= 0 {
				return fmt.Errorf("traces compile: --alignment %d: want a positive number of bytes", a)
			}
			format := c.String("format")
			if format != "text" && format != "binary" {
				return fmt.Errorf("traces compile: --format %q: want text or binary", format)
			}
			src, err := resolveTrace(c, in)
			if err != nil {
				return err
			}
			// Refuse to overwrite the input before reading it.
			f, err := createOutput(c, out, []string{in})
			if err != nil {
				return err
			}
			defer f.Abort()
			r, err := harness.CompileTrace(src, harness.CompileOptions{Donate: donate, Alignment: c.Int64("alignment")})
			if err != nil {
				return err
			}
			opts := traces.WriterOptions{Gzip: c.Bool("gzip")}
			if format == "binary" {
				_, err = traces.WriteBinary(f, r, opts)
			} else {
				_, err = traces.WriteNative(f, r, opts)
			}
			if err == nil {
				err = f.Commit()
			}
			return err
		},
	}
}
