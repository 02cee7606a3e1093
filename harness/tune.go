package harness

import (
	"cmp"
	"fmt"
	"slices"

	"membench/strategies"
)

// TuneRow is one setting `membench tune` tried: the framework's knob as a
// user writes it, the smallest card it fits on (a capacity search), and
// its replay on the device the user named.
type TuneRow struct {
	Framework string
	Knob      strategies.Knob
	Order     int // the house's order: its defaults first
	fw        int // the framework's place in the request
	Capacity  *CapacityResult
	// Fits and Reserved are the replay on the named device: whether it
	// ran without OOM, and the peak bytes it reserved there.
	Fits     bool
	Reserved int64
	// ModeledSec is the replay's modelled time in device allocation
	// calls: what a setting that saves memory by calling the device for
	// every buffer (jax's platform allocator, tf's cuda_malloc) costs.
	ModeledSec float64
	// Best marks the framework's answer (see RankTune).
	Best bool
}

// TuneJobs lists the settings each framework's house offers on dev, as
// jobs (one capacity search and one replay each) and the rows they fill.
// Frameworks without a model on dev (torch on a TPU) are left out and
// named in skipped.
func TuneJobs(src *Source, dev strategies.Device, frameworks []string) (jobs []Job, rows []TuneRow, skipped []string, err error) {
	for fi, fw := range frameworks {
		a, ok := advisers[fw]
		if !ok || a.Tune == nil {
			return nil, nil, nil, fmt.Errorf("tune: no knobs known for %q (frameworks: torch, jax, tf)", fw)
		}
		knobs := a.Tune(dev)
		if len(knobs) == 0 {
			skipped = append(skipped, fw)
			continue
		}
		for i, k := range knobs {
			jobs = append(jobs, Job{Source: src, Device: dev, Spec: k.Spec.String(), Index: len(jobs)})
			rows = append(rows, TuneRow{Framework: fw, Knob: k, Order: i, fw: fi})
		}
	}
	return jobs, rows, skipped, nil
}

// TuneOne runs one setting's searches: the smallest card, and the replay
// on the job's device.
func TuneOne(j Job) (*TuneRow, error) {
	c, err := MinCapacity(j.Source, j.Spec, j.Device)
	if err != nil {
		return nil, err
	}
	res, err := ReplayJob(j, Options{})
	if err != nil {
		return nil, err
	}
	return &TuneRow{Capacity: c, Fits: res.OOMCount == 0, Reserved: res.PeakReserved, ModeledSec: res.ModeledSec}, nil
}

// RankTune marks each framework's best row and orders every framework's
// rows best first: the smallest card, then fitting on the device, then the
// least reserved (to the card's granularity), then the least modelled
// allocation time; a setting that fits on no card searched comes last.
func RankTune(rows []TuneRow) {
	better := func(x, y TuneRow) int {
		return cmp.Or(
			cmp.Compare(b2i(x.Capacity.Unreachable), b2i(y.Capacity.Unreachable)),
			cmp.Compare(x.Capacity.MinCard(), y.Capacity.MinCard()),
			cmp.Compare(b2i(!x.Fits), b2i(!y.Fits)),
			// Reserved bytes within one granule of the card count as
			// the same, and then the faster setting wins: 1.5 MiB less
			// held does not pay for a device call per buffer.
			cmp.Compare((x.Reserved+granule(x)-1)/granule(x), (y.Reserved+granule(y)-1)/granule(y)),
			cmp.Compare(x.ModeledSec, y.ModeledSec),
			cmp.Compare(x.Reserved, y.Reserved),
			cmp.Compare(x.Order, y.Order))
	}
	slices.SortFunc(rows, func(x, y TuneRow) int {
		return cmp.Or(cmp.Compare(x.fw, y.fw), better(x, y))
	})
	for i := range rows {
		rows[i].Best = !rows[i].Capacity.Unreachable && (i == 0 || rows[i-1].Framework != rows[i].Framework)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// granule is the step of a row's capacity search (the device's
// granularity), 2 MiB when it has none.
func granule(r TuneRow) int64 {
	if r.Capacity != nil && r.Capacity.Granularity > 0 {
		return r.Capacity.Granularity
	}
	return 2 << 20
}
