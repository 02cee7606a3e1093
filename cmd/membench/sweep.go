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
			"`membench compare -col /strategy` or `go tool benchstat -col /strategy`. A knob given twice (in\n" +
			"--strategy or two --param), a value repeated in a list, and a grid of more than 65536 settings are refused.",
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
//
// A grid whose runs would not be what their labels say is refused: a key
// given twice (in two --param, or fixed in the strategy and swept), where
// the later value won under a label naming both; a value repeated in one
// list, two identical runs that compare as two samples; an empty value.
// So is a grid of more than maxGrid settings, built in full before the
// first replay (3000 × 3000 values took 1.2 GB).
func grid(base string, params []string) ([]string, error) {
	sp, err := strategies.ParseSpec(base)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, kv := range sp.Params {
		keys[kv.Key] = true
	}
	type param struct {
		key    string
		values []string
	}
	var ps []param
	n := 1
	for _, p := range params {
		k, vs, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.TrimSpace(vs) == "" {
			return nil, fmt.Errorf("--param %q: want key=v1,v2,...", p)
		}
		if keys[k] {
			return nil, fmt.Errorf("--param %q: knob %q given twice (in --strategy or another --param): a run would be labelled with a value it did not run under", p, k)
		}
		keys[k] = true
		pr := param{key: k}
		seen := map[string]bool{}
		for _, v := range strategies.SplitList(vs) {
			v = strings.TrimSpace(v)
			if v == "" {
				return nil, fmt.Errorf("--param %q: an empty value", p)
			}
			if seen[v] {
				return nil, fmt.Errorf("--param %q: value %q given twice", p, v)
			}
			seen[v] = true
			pr.values = append(pr.values, v)
		}
		if n > maxGrid/len(pr.values) {
			return nil, fmt.Errorf("--param %q: the grid has more than the limit of %d settings", p, maxGrid)
		}
		n *= len(pr.values)
		ps = append(ps, pr)
	}
	specs := []string{sp.String()}
	for _, p := range ps {
		next := make([]string, 0, len(specs)*len(p.values))
		for _, s := range specs {
			for _, v := range p.values {
				sep := ","
				if !strings.Contains(s, ":") {
					sep = ":"
				}
				next = append(next, s+sep+p.key+"="+v)
			}
		}
		specs = next
	}
	return specs, nil
}

// maxGrid bounds a sweep's settings (the product of its value lists).
const maxGrid = 1 << 16
