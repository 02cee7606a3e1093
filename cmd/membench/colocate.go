package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"membench/harness"
	"membench/internal/units"
	"membench/strategies"
)

var (
	colocateFlag = &cli.StringSliceFlag{Name: "colocate", Usage: "replay `TRACE@STRATEGY` tenants together on one device whose memory they share (repeat for each process, at least two)"}
	rateFlag     = &cli.Float64Flag{Name: "rate", Value: harness.DefaultColocateRate, Usage: "with --colocate: events a second at which a trace without a clock advances (assumption)"}
)

// colocated reads what `run --colocate` and `report --colocate` share:
// the tenants, their trace arguments (inputs no output may overwrite) and
// the one device they share.
func colocated(c *cli.Context) (ts []harness.Tenant, inputs []string, dev strategies.Device, closeAll func(), err error) {
	ts, inputs, closeAll, err = tenants(c)
	if err != nil {
		return nil, nil, dev, nil, err
	}
	if dev, err = colocateDevice(c); err != nil {
		closeAll()
		return nil, nil, dev, nil, err
	}
	return ts, inputs, dev, closeAll, nil
}

// tenants reads --colocate's TRACE@STRATEGY values, and returns their
// trace arguments beside them.
func tenants(c *cli.Context) ([]harness.Tenant, []string, func(), error) {
	if r := c.Float64("rate"); !(r > 0) || math.IsInf(r, 1) {
		// The harness would take the default for it, while the output
		// stated the value given as the assumption made.
		return nil, nil, nil, fmt.Errorf("--rate %g: want the events a second of a trace without a clock, a finite number above 0", r)
	}
	var ts []harness.Tenant
	var inputs []string
	closeAll := func() {
		for _, t := range ts {
			t.Source.Close()
		}
	}
	for _, v := range c.StringSlice("colocate") {
		i := strings.LastIndex(v, "@")
		if i <= 0 || i == len(v)-1 {
			closeAll()
			return nil, nil, nil, fmt.Errorf("--colocate %q: want TRACE@STRATEGY, such as gpt-train@jax", v)
		}
		src, err := harness.ResolveTrace(v[:i])
		if err != nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("--colocate %q: %w", v, err)
		}
		src.Cache(harness.DefaultCacheEvents)
		ts = append(ts, harness.Tenant{Source: src, Spec: v[i+1:]})
		inputs = append(inputs, v[:i])
	}
	if len(ts) < 2 {
		closeAll()
		return nil, nil, nil, fmt.Errorf("--colocate: name at least two tenants (one --colocate TRACE@STRATEGY each)")
	}
	return ts, inputs, closeAll, nil
}

// runColocate is `run --colocate`: one device, several processes.
func runColocate(c *cli.Context) error {
	ts, _, dev, closeAll, err := colocated(c)
	if err != nil {
		return err
	}
	defer closeAll()
	rs, err := harness.Colocate(ts, dev, c.Float64("rate"))
	if err != nil {
		return err
	}
	writeColocate(c.App.Writer, dev, c.Float64("rate"), rs)
	writeNotes(c.App.ErrWriter, tenantJobs(ts, dev))
	return nil
}

// tenantJobs are the tenants as jobs on dev, with their allocators' notes
// (strategies.Noter), so that writeNotes says for a colocated replay what
// run says for each replay alone: a knob without effect, the device's
// assumptions, the settings a snapshot was recorded with. Without them a
// tenant's knob that changed nothing went unsaid. A spec the device
// refuses has already failed the replay.
func tenantJobs(ts []harness.Tenant, dev strategies.Device) []harness.Job {
	jobs := make([]harness.Job, 0, len(ts))
	for i, t := range ts {
		d := dev
		j := harness.Job{Index: i, Source: t.Source, Device: d, Spec: t.Spec}
		if a, _, err := harness.NewAllocator(t.Spec, strategies.NewMemory(&d)); err == nil {
			if n, ok := a.(strategies.Noter); ok {
				j.Notes = n.Notes()
			}
			if rel, ok := a.(strategies.Releaser); ok {
				rel.Release()
			}
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func writeColocate(w io.Writer, dev strategies.Device, rate float64, rs []harness.TenantResult) {
	fmt.Fprintf(w, "colocate: %d tenants share %s (capacity %s); events interleaved by trace time, a trace without a clock at %g events/s (assumption, --rate); a tenant stops at its first OOM\n\n",
		len(rs), dev.Label(), units.Bytes(float64(dev.Capacity), 2), rate)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "tenant\ttrace\tstrategy\tfit\tfirst OOM (its event)\tpeak reserved\tpeak live\t")
	for k, r := range rs {
		fit, oom := "fits", "–"
		if !r.Fit() {
			fit, oom = "OOM", fmt.Sprint(r.FirstOOM)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k+1, r.Trace, r.Strategy, fit, oom, units.Bytes(float64(r.PeakReserved), 2), units.Bytes(float64(r.PeakLive), 2))
	}
	tw.Flush()
	for k, r := range rs {
		if r.Fit() {
			continue
		}
		fmt.Fprintf(w, "\ntenant %d (%s@%s) failed at its event %d: %s\n  cause: %s\n", k+1, r.Trace, r.Strategy, r.FirstOOM, r.OOM.Message, r.Cause)
	}
}

// capacityColocate is `capacity --colocate`: the smallest card the group
// needs.
func capacityColocate(c *cli.Context) error {
	ts, _, closeAll, err := tenants(c)
	if err != nil {
		return err
	}
	defer closeAll()
	devs := c.StringSlice("device")
	if len(devs) == 0 {
		devs = []string{strategies.DefaultDevice}
	}
	var jobs []harness.Job
	for _, name := range devs {
		dev, err := strategies.ParseDevice(name)
		if err != nil {
			return err
		}
		capB, err := harness.ColocateCapacity(ts, dev, c.Float64("rate"))
		if err != nil {
			return err
		}
		var names []string
		for _, t := range ts {
			names = append(names, t.Source.Name+"@"+t.Spec)
		}
		overhead := dev.Overhead()
		fmt.Fprintf(c.App.Writer, "capacity: %s together on %s: every tenant fits from a capacity of %s, a %s card\n",
			strings.Join(names, " + "), dev.Label(), units.Bytes(float64(capB), 2), units.Bytes(float64(capB+overhead), 2))
		jobs = append(jobs, tenantJobs(ts, dev)...)
	}
	writeNotes(c.App.ErrWriter, jobs)
	return nil
}

// colocateDevice is the one device the tenants share (--device, or the
// default).
func colocateDevice(c *cli.Context) (strategies.Device, error) {
	devs := c.StringSlice("device")
	if len(devs) > 1 {
		return strategies.Device{}, fmt.Errorf("--colocate: one --device, the one the tenants share")
	}
	name := strategies.DefaultDevice
	if len(devs) == 1 {
		name = devs[0]
	}
	return strategies.ParseDevice(name)
}
