package jit

import (
	"strings"
	"testing"

	"membench/traces"
)

// TestRoleOf: §6.1's rule for each kind.
func TestRoleOf(t *testing.T) {
	cases := []struct {
		kind    traces.Kind
		donated bool
		want    Role
	}{
		{traces.KindNone, false, Allocate},
		{traces.KindParameter, false, External},
		{traces.KindConstant, false, External},
		{traces.KindOutput, false, Allocate},
		{traces.KindOutput, true, Reuse},
		{traces.KindTemp, false, Allocate},
		{traces.KindDevicePut, false, Allocate},
		{traces.KindEager, false, Allocate},
	}
	for _, c := range cases {
		ev := traces.Event{Op: traces.OpAlloc, Kind: c.kind, Donated: c.donated}
		if got := RoleOf(&ev); got != c.want {
			t.Errorf("%v donated %v: %v, want %v", c.kind, c.donated, got, c.want)
		}
	}
}

// TestFinish: the note names the mode and why; On without launches and a
// compiled launch on a TPU model without program reservations are
// refused.
func TestFinish(t *testing.T) {
	cases := []struct {
		x        Execution
		launches int64
		want     string
		err      bool
	}{
		{Execution{Strategy: "jax", Knob: "jit"}, 3, "replayed compiled (default, as the trace has executable launches): 3 launches", false},
		{Execution{Strategy: "jax", Knob: "jit", Mode: On}, 3, "replayed compiled (jit=true)", false},
		{Execution{Strategy: "jax", Knob: "jit", Mode: Off}, 3, "replayed op by op (jit=false): the trace's 3 executable launches", false},
		{Execution{Strategy: "tf", Knob: "jit_compile", Mode: Off, Default: "the default"}, 1, "(jit_compile=false, the default)", false},
		{Execution{Strategy: "jax", Knob: "jit"}, 0, "the trace has no executable launches", false},
		{Execution{Strategy: "jax", Knob: "jit", Mode: On}, 0, "jax:jit=true: the trace has no executable launches", true},
	}
	for _, c := range cases {
		note, err := c.x.Finish(c.launches, 0)
		got := note
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != c.err || !strings.Contains(got, c.want) {
			t.Errorf("%+v, %d launches: %q, %v; want %q", c.x, c.launches, note, err, c.want)
		}
	}
	devs := []struct {
		mode        Mode
		tpu, loader bool
		refused     bool
	}{
		{Auto, false, false, false}, // a GPU: temps are buffers
		{Auto, true, true, false},   // the TPU runtime model: temps are programs
		{On, true, true, false},
		{Auto, true, false, true}, // a TPU model without program reservations
		{Off, true, false, false}, // op by op needs none
	}
	for _, d := range devs {
		x := Execution{Strategy: "jax", Knob: "jit", Mode: d.mode}
		err := x.CheckDevice(d.tpu, d.loader, "tpu-v4")
		if (err != nil) != d.refused || (err != nil && !strings.Contains(err.Error(), "program reservation")) {
			t.Errorf("%+v: %v", d, err)
		}
	}
	var none *Execution
	if none.Compiled() {
		t.Error("a strategy without a compiled mode replays compiled")
	}
}
