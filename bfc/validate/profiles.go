package validate

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"membench/strategies"
	"membench/xprof"
)

// Profiles is the validator of BFC allocators in TensorBoard / XProf
// profiles that `membench validate` offers. A profile's TPU allocators
// are the TPU runtime model's to validate.
var Profiles = strategies.Validator{
	Name:  "TensorBoard / XProf profile (*.xplane.pb, or a memory_profile.json that holds every event), its BFC allocators (TensorFlow, JAX on GPU, host) through the BFC model",
	Match: xprof.Matches,
	Validate: func(name string, r io.Reader, opts strategies.ValidateOptions, w io.Writer) (int, error) {
		if err := opts.ProfileOptions(); err != nil {
			return 0, err
		}
		p, err := xprof.ReadAny(r, xprof.DefaultLimits)
		if err != nil {
			return 0, err
		}
		allocs, err := p.Chosen(opts.Allocators, opts.Devices, func(a *xprof.Allocator) bool { return !a.TPU() })
		if errors.Is(err, xprof.ErrNoneChosen) {
			return 0, strategies.ErrNothingToValidate
		}
		if err != nil {
			return 0, err
		}
		// Only TSL's BFC is modelled: its instances are named <device>_bfc
		// (GPU_0_bfc, gpu_host_bfc, cuda_host_bfc). TensorFlow's CPU
		// allocator ("cpu") and the stream-ordered one record the same
		// events but follow other rules: say so rather than judge them.
		var bfcs []*xprof.Allocator
		for _, a := range allocs {
			if IsBFC(a.Name) {
				bfcs = append(bfcs, a)
				continue
			}
			if len(opts.Allocators) > 0 {
				return 0, fmt.Errorf("allocator %s is not a BFC allocator (its name does not end in _bfc); membench validates the BFC and the TPU runtime", a.Name)
			}
			fmt.Fprintf(w, "%s %s: not a BFC allocator (its name does not end in _bfc): not validated\n", name, a.Name)
		}
		if len(bfcs) == 0 {
			return 0, strategies.ErrNothingToValidate
		}
		allocs = bfcs
		disagree := 0
		for _, a := range allocs {
			rep, err := Allocator(a, Options{})
			if err != nil {
				return disagree, err
			}
			rep.Write(w, name)
			if !rep.OK() {
				disagree++
			}
		}
		return disagree, nil
	},
}

// IsBFC reports whether an allocator's name is one TSL gives a BFC
// allocator: every BFCAllocator is constructed with a name ending in
// "_bfc" (GPU_<n>_bfc for a device, gpu_host_bfc / cuda_host_bfc for
// pinned host memory), while TensorFlow's CPU allocator is "cpu".
func IsBFC(name string) bool { return strings.HasSuffix(name, "_bfc") }
