package validate_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	bfcvalidate "membench/bfc/validate"
	"membench/internal/sharedtraces"
	"membench/strategies"
	"membench/tpurt/validate"
	"membench/xprof"
)

func v6e(t *testing.T) (*xprof.Profile, string) {
	t.Helper()
	path := sharedtraces.Path(t, "profiler/xprof-tpu-v6e-inference.xplane.pb")
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := xprof.Read(fh, xprof.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return p, path
}

// TestV6e: every chip of the v6e recording agrees, allocation by
// allocation, on the tpu-v6e preset (whose capacity is the recorded
// limit).
func TestV6e(t *testing.T) {
	p, path := v6e(t)
	var out bytes.Buffer
	n, err := validate.Profiles.Validate(path, mustOpen(t, path), strategies.ValidateOptions{}, &out)
	if err != nil || n != 0 {
		t.Fatalf("%d chips disagree, %v\n%s", n, err, out.String())
	}
	if got := strings.Count(out.String(), "agree: every allocation matches"); got != 4 {
		t.Errorf("%d chips agree, want 4:\n%s", got, out.String())
	}
	dev, name, err := validate.DeviceFor(p.Device(0).Limit())
	if err != nil || name != "tpu-v6e" || dev.Kind != strategies.TPU {
		t.Errorf("device for the recorded limit: %s, %v", name, err)
	}
	// The BFC validator leaves the chips to this one.
	if _, err := bfcvalidate.Profiles.Validate(path, mustOpen(t, path), strategies.ValidateOptions{}, &out); !errors.Is(err, strategies.ErrNothingToValidate) {
		t.Errorf("BFC validator on a TPU profile: %v", err)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestDivergence: a placement the model would not make, or a count it
// would not keep, is a disagreement with the event named; a window that
// starts warm is undetermined, never agreement.
func TestDivergence(t *testing.T) {
	p, _ := v6e(t)
	chip := p.Device(1)
	dev, _, _ := validate.DeviceFor(chip.Limit())
	mutate := func(f func(recs []xprof.Record)) *xprof.Allocator {
		c := *chip
		c.Records = append([]xprof.Record(nil), chip.Records...)
		f(c.Records)
		return &c
	}
	firstAlloc := func(recs []xprof.Record, k int) *xprof.Record {
		for i := range recs {
			if recs[i].Alloc {
				if k == 0 {
					return &recs[i]
				}
				k--
			}
		}
		return nil
	}
	cases := []struct {
		name  string
		chip  *xprof.Allocator
		ok    bool
		first string
	}{
		{"as recorded", chip, true, ""},
		{"second buffer placed one granule lower", mutate(func(recs []xprof.Record) {
			r := firstAlloc(recs, 1)
			r.Addr -= 128
		}), false, "the model places"},
		{"bytes in use counted from the request", mutate(func(recs []xprof.Record) {
			recs[2].InUse += 100
		}), false, "in use"},
	}
	for _, tc := range cases {
		rep, err := validate.Chip(tc.chip, dev)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rep.OK() != tc.ok || !strings.Contains(rep.First, tc.first) {
			t.Errorf("%s: OK %v, first divergence %q", tc.name, rep.OK(), rep.First)
		}
	}
	warm := mutate(func(recs []xprof.Record) {
		for i := range recs {
			recs[i].InUse += 4096
		}
	})
	rep, err := validate.Chip(warm, dev)
	if err != nil || rep.Warm == "" || rep.Undetermined() != rep.Allocs || rep.Agree != 0 || !rep.OK() {
		t.Errorf("warm window: %+v, %v", rep, err)
	}
	var out bytes.Buffer
	rep.Write(&out, "f")
	if !strings.Contains(out.String(), "nothing is determined") {
		t.Errorf("warm report:\n%s", out.String())
	}
}
