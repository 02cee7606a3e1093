package validate

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"membench/strategies"
	"membench/traces"
	"membench/xprof"
)

// Profiles is the validator of BFC allocators in TensorBoard / XProf
// profiles that `membench validate` offers. A profile's TPU allocators
// are the TPU runtime model's to validate.
var Profiles = strategies.Validator{
	Name: "TensorBoard / XProf profile (*.xplane.pb, or a memory_profile.json that holds every event), its BFC allocators (TensorFlow, JAX on GPU, host) through the BFC model",
	Match: func(content []byte) bool {
		f, _, err := traces.Detect(bytes.NewReader(content))
		return err == nil && (f == traces.FormatXSpace || f == traces.FormatMemoryProfileJSON)
	},
	Validate: func(name string, r io.Reader, opts strategies.ValidateOptions, w io.Writer) (int, error) {
		p, err := xprof.ReadAny(r, xprof.DefaultLimits)
		if err != nil {
			return 0, err
		}
		allocs, err := Chosen(p, opts, func(a *xprof.Allocator) bool { return !a.TPU() })
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

// Chosen picks the allocators of p that mine accepts and opts names (all
// of them when opts names none). Names or devices that p does not hold are
// an error listing what it holds; none of mine at all is
// strategies.ErrNothingToValidate.
func Chosen(p *xprof.Profile, opts strategies.ValidateOptions, mine func(*xprof.Allocator) bool) ([]*xprof.Allocator, error) {
	for _, n := range opts.Allocators {
		if p.Find(n) == nil {
			return nil, fmt.Errorf("no allocator %q in the profile (it holds %s)", n, strings.Join(p.Names(), ", "))
		}
	}
	for _, d := range opts.Devices {
		if p.Device(d) == nil {
			return nil, fmt.Errorf("no allocator of device %d in the profile (it holds %s)", d, strings.Join(p.Names(), ", "))
		}
	}
	var out []*xprof.Allocator
	for _, a := range p.Allocators {
		named := len(opts.Allocators) == 0 && len(opts.Devices) == 0 ||
			slices.Contains(opts.Allocators, a.Name) || a.Device >= 0 && slices.Contains(opts.Devices, a.Device)
		if named && mine(a) && len(a.Records) > 0 {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, strategies.ErrNothingToValidate
	}
	return out, nil
}

// IsBFC reports whether an allocator's name is one TSL gives a BFC
// allocator: every BFCAllocator is constructed with a name ending in
// "_bfc" (GPU_<n>_bfc for a device, gpu_host_bfc / cuda_host_bfc for
// pinned host memory), while TensorFlow's CPU allocator is "cpu".
func IsBFC(name string) bool { return strings.HasSuffix(name, "_bfc") }
