package bfc

import "membench/strategies"

// NewTPU builds the model of the TPU runtime's HBM allocator that jaxlike
// and tflike use on a TPU device. The runtime (libtpu) is closed source
// (allocator-spec §4); what is modelled is what can be observed: the whole
// HBM less a runtime reserve (the device's Capacity) is one heap, buffers
// are placed best fit, and an allocation that fails although enough memory
// is free triggers defragmentation. Assumption, labelled in results by the
// allocator's Notes (tpuNote); the policy is a knob (defrag,
// defrag_via_host).
func NewTPU(mem *strategies.Memory, defrag, viaHost bool, name string) *Allocator {
	return New(Options{
		Limit:         mem.Dev.Capacity,
		AllowGrowth:   false,
		Defrag:        defrag,
		DefragViaHost: viaHost,
		Name:          name,
		Notes:         []string{tpuNote},
	}, mem)
}

// tpuNote is the TPU runtime model's assumption as results state it: what
// NewTPU's allocator reports as its Notes, whatever its knobs.
const tpuNote = "the TPU runtime's allocator is closed source; modelled as one best-fit heap of the whole HBM less the runtime reserve, defragmenting by relocation when a request fails with enough free memory (assumption; knobs defrag, defrag_via_host)"

// Relocation holds the defragmentation knobs that jax and tf share:
// `defrag` (the TPU model's policy, on unless set false; on a GPU the
// what-if of jax-ml/jax#9064) and `defrag_via_host`.
type Relocation struct {
	Defrag, DefragSet, DefragViaHost bool
}

// RelocationKeys are the knob names Relocation parses.
var RelocationKeys = []string{"defrag", "defrag_via_host"}

// Parse sets one relocation knob; ok is false for any other key.
func (r *Relocation) Parse(key, value string) (ok bool, err error) {
	switch key {
	case "defrag":
		r.Defrag, err = strategies.ParseBool(value)
		r.DefragSet = true
	case "defrag_via_host":
		r.DefragViaHost, err = strategies.ParseBool(value)
	default:
		return false, nil
	}
	return true, err
}

// TPU builds the TPU runtime model with these knobs; notes (the
// framework's, on its configuration) follow the model's own.
func (r Relocation) TPU(mem *strategies.Memory, notes ...string) *Allocator {
	a := NewTPU(mem, r.Defrag || !r.DefragSet, r.DefragViaHost, "tpu_hbm")
	a.opts.Notes = append(a.opts.Notes, notes...)
	return a
}

// NoEffect says why the relocation knob knob, as set, does nothing on a
// device of kind k, or "" when it acts: jax and tf note it alike.
func (r Relocation) NoEffect(knob string, k strategies.Kind) string {
	switch {
	case knob == "defrag_via_host" && k != strategies.TPU:
		return "on a GPU: a GPU cannot move buffers in place, so relocation (defrag=true) always goes through host memory"
	case knob == "defrag_via_host" && r.DefragSet && !r.Defrag:
		return "with defrag=false: nothing is relocated"
	}
	return ""
}
