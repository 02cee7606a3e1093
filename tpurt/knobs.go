package tpurt

import (
	"slices"

	"membench/strategies"
)

// Knobs are the TPU runtime model's settings that the jax and tf
// strategy specs share: `defrag` (on a TPU, on unless set false or the
// device is not relocatable; on a GPU the BFC's what-if of
// jax-ml/jax#9064, off unless set), `defrag_via_host` and `program_bytes`.
type Knobs struct {
	Defrag, DefragSet, DefragViaHost bool
	// ProgramBytes loads one program of that size before the first event
	// (0: none): the trace formats carry no program loads.
	ProgramBytes int64
}

// KnobKeys are the knob names Knobs parses.
var KnobKeys = []string{"defrag", "defrag_via_host", "program_bytes"}

// IsKnob reports whether key is one of KnobKeys.
func IsKnob(key string) bool { return slices.Contains(KnobKeys, key) }

// Parse sets one knob; ok is false for any other key.
func (k *Knobs) Parse(key, value string) (ok bool, err error) {
	switch key {
	case "defrag":
		k.Defrag, err = strategies.ParseBool(value)
		k.DefragSet = true
	case "defrag_via_host":
		k.DefragViaHost, err = strategies.ParseBool(value)
	case "program_bytes":
		k.ProgramBytes, err = strategies.ParseBytes(value)
	default:
		return false, nil
	}
	return true, err
}

// New builds the TPU runtime model on mem with these knobs; notes (the
// framework's, on its configuration) follow the model's own.
func (k Knobs) New(mem *strategies.Memory, notes ...string) *Allocator {
	return New(Options{
		Defrag:        k.Defrag || !k.DefragSet && mem.Dev.Relocatable,
		DefragViaHost: k.DefragViaHost,
		ProgramBytes:  k.ProgramBytes,
		Notes:         notes,
	}, mem)
}

// NoEffect says why knob, as set, does nothing on a device of kind kd,
// or "" when it acts: jax and tf note it alike.
func (k Knobs) NoEffect(knob string, kd strategies.Kind) string {
	switch {
	case knob == "defrag_via_host" && kd != strategies.TPU:
		return "on a GPU: a GPU cannot move buffers in place, so relocation (defrag=true) always goes through host memory"
	case knob == "defrag_via_host" && k.DefragSet && !k.Defrag:
		return "with defrag=false: nothing is relocated"
	case knob == "program_bytes" && kd != strategies.TPU:
		return "on a GPU: it sets the TPU runtime's program reservation"
	}
	return ""
}

// TuneKnobs is what `membench tune` tries for a framework (jax, tf) on a
// TPU: the GPU client's settings do nothing there, and the runtime model's
// one switch is its defragmentation (a what-if: defrag=false).
func TuneKnobs(framework string) []strategies.Knob {
	return []strategies.Knob{
		strategies.NewKnob(framework, "(defaults)"),
		strategies.NewKnob(framework, "defrag=false (no relocation on a fragmentation OOM: what-if)", strategies.KV{Key: "defrag", Value: "false"}),
	}
}
