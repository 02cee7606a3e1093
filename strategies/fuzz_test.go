package strategies

import (
	"testing"

	"membench/internal/fuzzbound"
)

// FuzzParseSpec: any input parses or errors without panicking, and a spec
// that parses prints a canonical form that parses back to itself.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"torch", "torch:expandable_segments=true,max_split_size_mb=128",
		"torch:expandable_segments:True,roundup_power2_divisions:[256:1,>:4]", "jax:mem_fraction=0.9", ":", "a:b", "x:[,]=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Check(t, func() {
			sp, err := ParseSpec(s)
			if err != nil {
				return
			}
			again, err := ParseSpec(sp.String())
			if err != nil || again.String() != sp.String() {
				t.Errorf("%q → %q → %q (%v)", s, sp.String(), again.String(), err)
			}
		})
	})
}

// FuzzParseDevice: any device spec parses or errors; one that parses has
// consistent figures.
func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"a100-40g", "gpu:capacity=24GiB", "tpu:capacity=3300MiB,relocatable=false", "h100-80g:cc=9.0,malloc-sec=1e-5", "a100-80g:free=1B", "gpu:capacity=1.5GB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Check(t, func() {
			d, err := ParseDevice(s)
			if err != nil {
				return
			}
			if d.Capacity <= 0 || d.Capacity > d.Total || d.Free <= 0 || d.Free > d.Total || d.Granularity <= 0 {
				t.Errorf("%q: inconsistent device %+v", s, d)
			}
		})
	})
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"24GiB", "1.5GB", "4096", "-1", "9e99TB", "0.0001KiB", "NaN", "nanGiB", "Inf", "-Inf", "+InfKB", "1e309", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzbound.Check(t, func() {
			if n, err := ParseBytes(s); err == nil && n < 0 {
				t.Errorf("%q → %d", s, n)
			}
		})
	})
}
