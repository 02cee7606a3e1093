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
