package harness

import "membench/strategies"

// CapacityResult is the outcome of a capacity search for one trace,
// device family and strategy.
type CapacityResult struct {
	Trace, Device, Strategy string
	PeakLive                int64
	// MinCapacity is the smallest capacity found at which the replay has
	// no OOM, a multiple of Granularity; the replay one granule below it
	// runs out of memory (both were replayed).
	MinCapacity int64
	// Overhead is what the card holds beyond the allocator's reach: the
	// CUDA context or the TPU runtime's reserve (the device family's
	// Total − Capacity). MinCard = MinCapacity + Overhead is a card a
	// user can buy.
	Overhead    int64
	Granularity int64
	Replays     int
	// NonMonotone is set when some capacity above a fitting one was
	// found to OOM; the search then moved MinCapacity above it.
	NonMonotone bool
	// Unreachable is set when nothing up to MaxSearchCapacity fits.
	Unreachable bool
	// Placement marks the search of the allocator limit placement alone
	// needs (Advice.Placement): no overhead, the framework's fraction at 1.
	Placement bool
}

// MinCard is the smallest card: MinCapacity plus the memory the CUDA
// context or the TPU runtime keeps.
func (c *CapacityResult) MinCard() int64 { return c.MinCapacity + c.Overhead }

// Ratio is min-capacity / peak-live: how much more than its live data a
// strategy needs the device to have.
func (c *CapacityResult) Ratio() float64 {
	if c.PeakLive == 0 {
		return 0
	}
	return float64(c.MinCapacity) / float64(c.PeakLive)
}

// MaxSearchCapacity bounds the search: 1 PiB.
const MaxSearchCapacity int64 = 1 << 50

// monotoneChecks is how many granules above the answer are replayed to
// catch a capacity that fits with a larger one that does not.
const monotoneChecks = 4

// MinCapacity searches the smallest device capacity, in steps of the
// device's granularity, at which src replays under spec with no OOM. A
// capacity c means a card of total c + overhead, where overhead is the
// device family's Total − Capacity (the CUDA context on a GPU, the
// runtime's reserve on a TPU), whose allocator can obtain c and finds c
// free: fractions of the card such as JAX's 75 % apply to the whole card,
// as they do on real hardware, and MinCard names the card to buy.
//
// Fitting need not be monotone in capacity: a caching allocator's choices
// depend on when device allocations fail (PyTorch frees its cache and
// retries, BFC backs off by 0.9 or grows regions of other sizes), so a
// trace can fit at c and OOM at c + g. The search therefore (1) grows an
// upper bound by doubling from the peak live bytes until a replay fits,
// (2) bisects between a failing and a fitting capacity, which ends with a
// fitting c whose neighbour c − g was replayed and fails, and (3) replays
// the next few granules above c; if one of them fails, the answer moves
// above it and the search resumes there. What it cannot rule out is an
// island of fitting capacities below the answer; the answer is the lower
// edge of the fitting range it found, reported with NonMonotone when (3)
// had to act.
func MinCapacity(src *Source, spec string, dev strategies.Device) (*CapacityResult, error) {
	g := dev.Granularity
	if g <= 0 {
		g = 2 << 20
	}
	// The family's reserve (the CUDA context, the TPU runtime's), kept by
	// device overrides: an overridden `gpu:capacity=24GiB` still holds a
	// context beside the allocator's memory.
	overhead := dev.Overhead()
	res := &CapacityResult{Trace: src.Name, Device: dev.Label(), Strategy: spec, Granularity: g, Overhead: overhead}
	fits := func(c int64) (bool, error) {
		d := dev
		d.Total, d.Capacity, d.Free = c+overhead, c, c
		r, err := src.Open()
		if err != nil {
			return false, err
		}
		defer r.Close()
		out, err := Replay(src.Name, r, spec, d, Options{Samples: 1})
		if err != nil {
			return false, src.Locate(err)
		}
		res.Replays++
		res.PeakLive = max(res.PeakLive, out.PeakLive)
		return out.OOMCount == 0, nil
	}
	up := func(n int64) int64 { return (n + g - 1) / g * g }
	// The peak live bytes of an unconstrained replay bound the answer
	// from below.
	if _, err := fits(MaxSearchCapacity); err != nil {
		return nil, err
	}
	// Below the peak live bytes nothing fits (every live byte is held at
	// once), so the granule under them fails without a replay.
	hi, nonMonotone, unreachable, err := searchCapacity(max(up(res.PeakLive)-g, 0), up(res.PeakLive), g, fits)
	if err != nil {
		return nil, err
	}
	res.NonMonotone, res.Unreachable = nonMonotone, unreachable
	if unreachable {
		return res, nil
	}
	res.MinCapacity = hi
	return res, nil
}

// Advice answers the two questions a user asks of a card: the smallest one
// the strategy fits on at its framework's settings (Default, the card
// including the CUDA context or runtime reserve), and the smallest
// allocator limit its placement alone needs, with the framework's
// reservation policy switched off (Placement: the fraction at 1, searched
// on a device without overhead, so its MinCapacity is that limit). Knob is
// the setting the framework's house suggests that brings Default's card
// down the most, measured by its own capacity search; nil when none helps.
type Advice struct {
	Default   *CapacityResult
	Placement *CapacityResult
	Knob      *CapacityResult
	KnobLine  string
}

// Advise runs the searches behind an Advice: MinCapacity for spec, for its
// placement-alone spec when its framework has a reservation policy on dev,
// and for each knob the framework suggests.
func Advise(src *Source, spec string, dev strategies.Device) (*Advice, error) {
	def, err := MinCapacity(src, spec, dev)
	if err != nil || def.Unreachable {
		return &Advice{Default: def}, err
	}
	adv := &Advice{Default: def}
	sp, err := strategies.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	a, ok := advisers[sp.Name]
	if !ok {
		return adv, nil
	}
	limit := def.MinCapacity
	if p, ok := a.Placement(sp, dev); ok {
		bare := dev
		bare.Total, bare.Reserve = bare.Capacity, 0 // the limit itself: no context, no reserve
		pr, err := MinCapacity(src, p.String(), bare)
		if err != nil {
			return nil, err
		}
		if !pr.Unreachable {
			pr.Placement = true
			adv.Placement, limit = pr, pr.MinCapacity
		}
	}
	for _, k := range a.Knobs(sp, dev, limit) {
		if k.Spec.String() == sp.String() {
			continue
		}
		kr, err := MinCapacity(src, k.Spec.String(), dev)
		if err != nil {
			return nil, err
		}
		if kr.Unreachable || kr.MinCard() >= def.MinCard() {
			continue
		}
		if adv.Knob == nil || kr.MinCard() < adv.Knob.MinCard() {
			adv.Knob, adv.KnobLine = kr, k.Line
		}
	}
	return adv, nil
}

// searchCapacity finds the smallest capacity, a multiple of g, at which
// fits holds, given lo, a capacity known to fail (or below every
// fitting one), and floor, the least capacity worth trying. It grows an
// upper bound by doubling from max(floor, lo+g) until fits holds, bisects
// between the last failure and it, then replays the next monotoneChecks
// granules above the answer; if one of them fails the search resumes above
// it (nonMonotone). unreachable says nothing up to MaxSearchCapacity fits.
// MinCapacity and ColocateCapacity share it.
func searchCapacity(lo, floor, g int64, fits func(int64) (bool, error)) (hi int64, nonMonotone, unreachable bool, err error) {
	up := func(n int64) int64 { return (n + g - 1) / g * g }
	// above finds a fitting capacity above lo by doubling; lo becomes the
	// last capacity that failed.
	above := func() (hi int64, found bool, err error) {
		hi = max(floor, lo+g)
		for {
			ok, err := fits(hi)
			if err != nil || ok {
				return hi, ok, err
			}
			lo = hi
			if hi >= MaxSearchCapacity {
				return hi, false, nil
			}
			hi = min(up(hi*2), MaxSearchCapacity)
		}
	}
	hi, found, err := above()
	if err != nil || !found {
		return hi, false, !found, err
	}
	for {
		// Invariant: hi fits and lo fails.
		for hi-lo > g {
			mid := lo + (hi-lo)/g/2*g
			ok, err := fits(mid)
			if err != nil {
				return hi, nonMonotone, false, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		failed := int64(-1)
		for k := int64(1); k <= monotoneChecks && failed < 0; k++ {
			ok, err := fits(hi + k*g)
			if err != nil {
				return hi, nonMonotone, false, err
			}
			if !ok {
				failed = hi + k*g
			}
		}
		if failed < 0 {
			return hi, nonMonotone, false, nil
		}
		// A capacity above the answer fails: resume above it.
		nonMonotone = true
		lo = failed
		if hi, found, err = above(); err != nil || !found {
			return hi, true, !found, err
		}
	}
}
