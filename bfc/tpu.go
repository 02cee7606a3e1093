package bfc

import "membench/strategies"

// NewTPU builds the model of the TPU runtime's HBM allocator that jaxlike
// and tflike use on a TPU device. The runtime (libtpu) is closed source
// (allocator-spec §4); what is modelled is what can be observed: the whole
// HBM less a runtime reserve (the device's Capacity) is one heap, buffers
// are placed best fit, and an allocation that fails although enough memory
// is free triggers defragmentation. Assumption, labelled in results; the
// policy is a knob (defrag, defrag_via_host).
func NewTPU(mem *strategies.Memory, defrag, viaHost bool, name string) *Allocator {
	return New(Options{
		Limit:         mem.Dev.Capacity,
		AllowGrowth:   false,
		Defrag:        defrag,
		DefragViaHost: viaHost,
		Name:          name,
	}, mem)
}
