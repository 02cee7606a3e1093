package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"membench/strategies"
)

func corpusSource(t *testing.T, name string) *Source {
	t.Helper()
	s, err := ResolveTrace(name)
	if err != nil {
		t.Fatal(err)
	}
	s.Cache(DefaultCacheEvents)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestColocate: on a 3 GiB card (2.5 GiB the processes can use), JAX's
// default preallocation leaves PyTorch too little, whichever starts first,
// and the failure names JAX's policy; with growth on demand both fit.
func TestColocate(t *testing.T) {
	dev, err := strategies.ParseDevice("a100-80g:total=3GiB,capacity=2.5GiB,free=2.5GiB")
	if err != nil {
		t.Fatal(err)
	}
	src := corpusSource(t, "gpt-train")
	for _, tc := range []struct {
		tenants []string
		fits    []bool
	}{
		{[]string{"jax", "torch"}, []bool{true, false}},
		{[]string{"torch", "jax"}, []bool{false, true}},
		{[]string{"jax:preallocate=false", "torch"}, []bool{true, true}},
	} {
		var ts []Tenant
		for _, s := range tc.tenants {
			ts = append(ts, Tenant{Source: src, Spec: s})
		}
		rs, err := Colocate(ts, dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range rs {
			if r.Fit() != tc.fits[k] {
				t.Errorf("%v: tenant %d fit %v, want %v", tc.tenants, k+1, r.Fit(), tc.fits[k])
			}
			if !r.Fit() && (!strings.Contains(r.Cause, "gpt-train@jax held") || !strings.Contains(r.Cause, "policy") || r.FirstOOM < 0 || r.OOM.Message == "") {
				t.Errorf("%v: tenant %d failed with cause %q at %d (%q)", tc.tenants, k+1, r.Cause, r.FirstOOM, r.OOM.Message)
			}
			if r.Fit() && r.FirstOOM != -1 {
				t.Errorf("%v: tenant %d fits but has first OOM %d", tc.tenants, k+1, r.FirstOOM)
			}
		}
	}
	// Alone, each tenant fits on that card.
	for _, s := range []string{"jax", "torch"} {
		res, err := ReplayJob(Job{Source: src, Device: dev, Spec: s}, Options{})
		if err != nil || res.OOMCount != 0 {
			t.Errorf("%s alone: %d OOMs, %v", s, res.OOMCount, err)
		}
	}
	if _, err := Colocate([]Tenant{{Source: src, Spec: "jax"}}, dev, 0); err == nil {
		t.Errorf("one tenant accepted")
	}
	if _, err := Colocate([]Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "planner"}}, dev, 0); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("planner as a tenant: %v", err)
	}
	// A TPU chip takes one process: a second is refused, not modelled.
	tpu, _ := strategies.ParseDevice("tpu-v5e")
	if _, err := Colocate([]Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "jax:preallocate=false"}}, tpu, 0); err == nil || !strings.Contains(err.Error(), "one process") {
		t.Errorf("two processes on one TPU chip: %v", err)
	}
	if _, err := ColocateCapacity([]Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "jax"}}, tpu, 0); err == nil {
		t.Errorf("colocated capacity on a TPU accepted")
	}
}

// TestColocateCapacity: the group's smallest capacity holds both, one
// granule less does not, and it is at least what either needs alone.
func TestColocateCapacity(t *testing.T) {
	dev, _ := strategies.ParseDevice("a100-80g")
	src := corpusSource(t, "gpt-train")
	ts := []Tenant{{Source: src, Spec: "jax:preallocate=false"}, {Source: src, Spec: "torch"}}
	c, err := ColocateCapacity(ts, dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(capB int64) bool {
		d := dev
		d.Capacity, d.Free, d.Total = capB, capB, capB+(dev.Total-dev.Capacity)
		rs, err := Colocate(ts, d, 0)
		if err != nil {
			t.Fatal(err)
		}
		return rs[0].Fit() && rs[1].Fit()
	}
	if !at(c) || at(c-dev.Granularity) {
		t.Errorf("capacity %d: fits %v, one granule less fits %v", c, at(c), at(c-dev.Granularity))
	}
	for _, s := range ts {
		alone, err := MinCapacity(src, s.Spec, dev)
		if err != nil || c < alone.MinCapacity {
			t.Errorf("%s alone needs %d, the group %d (%v)", s.Spec, alone.MinCapacity, c, err)
		}
	}
}

// TestColocateCapacityKeepsTheReserve: an overridden device keeps its
// family's reserve (the CUDA context), as MinCapacity's search does, so
// the group's answer does not depend on the capacity the device spec
// happened to name: JAX's 75 % is of a card that holds the context
// beside the searched capacity, on a100-80g as on a100-80g:capacity=2GiB.
func TestColocateCapacityKeepsTheReserve(t *testing.T) {
	src := corpusSource(t, "gpt-train")
	ts := []Tenant{{Source: src, Spec: "jax"}, {Source: src, Spec: "torch"}}
	var got []int64
	for _, spec := range []string{"a100-80g", "a100-80g:capacity=2GiB"} {
		dev, err := strategies.ParseDevice(spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ColocateCapacity(ts, dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if got[0] != got[1] {
		t.Errorf("group capacity %d on a100-80g, %d on a100-80g:capacity=2GiB", got[0], got[1])
	}
}

// TestColocateRateSaturates: a clockless tenant's event k is at k/rate
// seconds; at a rate so slow that this is beyond int64 nanoseconds, the
// time saturates at the end of time instead of wrapping to the most
// negative one, which put the clockless tenant's second allocation before
// the clocked tenant's first and turned which tenant failed around.
func TestColocateRateSaturates(t *testing.T) {
	dir := t.TempDir()
	src := func(name, text string) *Source {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ResolveTrace(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	clocked := src("clocked.txt", "membench-trace 1\na 1 1073741824 @5000\n")
	clockless := src("clockless.txt", "membench-trace 1\na 1 1\na 2 1073741824\n")
	dev, err := strategies.ParseDevice("a100-80g:total=2GiB,capacity=1.5GiB,free=1.5GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{1e-300, 1e-10} {
		rs, err := Colocate([]Tenant{{Source: clocked, Spec: "torch"}, {Source: clockless, Spec: "torch"}}, dev, rate)
		if err != nil {
			t.Fatal(err)
		}
		if !rs[0].Fit() || rs[1].Fit() {
			t.Errorf("rate %g: clocked fits %v, clockless fits %v; want the clocked tenant's allocation (at 5 µs) first", rate, rs[0].Fit(), rs[1].Fit())
		}
	}
}
