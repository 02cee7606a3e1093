package strategies

import "sort"

// DefaultDevice is the device `membench run` uses when none is named.
const DefaultDevice = "a100-80g"

// gpuCosts are the modelled latencies shared by the GPU presets. No
// authoritative figure exists for current hardware (allocator-spec §4.1:
// the only published measurements are old, ≈50 µs for cudaMalloc of
// 4 KiB–512 KiB); these are assumptions, exposed as device parameters.
func gpuCosts(d Device) Device {
	d.MallocSec = 50e-6
	d.FreeSec = 20e-6
	d.MapSec = 10e-6
	d.UnmapSec = 10e-6
	d.HitSec = 0.2e-6
	d.Granularity = 2 * MiB // allocator-spec §4.1: 2 MiB pages / cuMemGetAllocationGranularity
	d.Kind = GPU
	d.Notes = append(d.Notes,
		"granularity 2 MiB: allocator-spec §4.1 (cuMemGetAllocationGranularity on datacenter GPUs)",
		"latencies malloc 50us, free 20us, map/unmap 10us a page, cache hit 0.2us: assumption (allocator-spec §4.1: no modern published figures)",
		"context overhead 512 MiB (capacity = total - 512 MiB, free = capacity): assumption",
	)
	d.Capacity = d.Total - contextOverhead
	d.Free = d.Capacity
	d.Reserve = contextOverhead
	return d
}

// contextOverhead is the memory a CUDA context and libraries hold before the
// framework allocates anything. Assumption: it varies with driver, CUDA
// version and lazy loading, typically a few hundred MiB.
const contextOverhead = 512 * MiB

// tpuCosts: the TPU runtime is closed source (allocator-spec §4); every
// figure but HBM size and bandwidth is an assumption.
func tpuCosts(d Device) Device {
	d.Kind = TPU
	d.MallocSec = 5e-6
	d.FreeSec = 2e-6
	d.MapSec = 5e-6
	d.UnmapSec = 5e-6
	d.HitSec = 0.2e-6
	d.Granularity = 512 // assumption: the TPU runtime's allocation alignment is not public
	d.Relocatable = true
	d.HostBytesPerSec = 16e9 // assumption: PCIe Gen3 x16 class host link
	d.Capacity = d.Total - tpuRuntimeReserve
	d.Free = d.Capacity
	d.Reserve = tpuRuntimeReserve
	d.Notes = append(d.Notes,
		"TPU runtime closed source (allocator-spec §4): latencies, 512 B alignment, host link 16 GB/s and the 256 MiB runtime reserve are assumptions",
		"relocatable: the TPU runtime defragments by moving live buffers (allocator-spec §3, jax-ml/jax#9064)",
	)
	return d
}

// tpuRuntimeReserve is HBM the TPU runtime keeps for itself (program
// binaries, scratch). Assumption: not public.
const tpuRuntimeReserve = 256 * MiB

var presets = map[string]Device{
	"a100-40g": gpuCosts(Device{
		Total: 42405855232, ComputeMajor: 8, HBMBytesPerSec: 1555e9, HostBytesPerSec: 25e9,
		Notes: []string{
			"total 42405855232 B: deviceQuery on an A100 40GB (Paderborn PC2 wiki, 'Total amount of global memory: 40441 MBytes')",
			"HBM 1555 GB/s: NVIDIA A100 40GB datasheet (same page); compute capability 8.0",
			"host link 25 GB/s: assumption (PCIe Gen4 x16, 32 GB/s theoretical)",
		}}),
	"a100-80g": gpuCosts(Device{
		Total: 81920 * MiB, ComputeMajor: 8, HBMBytesPerSec: 2039e9, HostBytesPerSec: 25e9,
		Notes: []string{
			"total 81920 MiB: nvidia-smi on an A100 80GB (modal-labs/modal-client#2797); cudaMemGetInfo may be slightly lower",
			"HBM 2039 GB/s: NVIDIA A100 80GB SXM datasheet; compute capability 8.0",
			"host link 25 GB/s: assumption (PCIe Gen4 x16)",
		}}),
	"h100-80g": gpuCosts(Device{
		Total: 81559 * MiB, ComputeMajor: 9, HBMBytesPerSec: 3.35e12, HostBytesPerSec: 50e9,
		Notes: []string{
			"total 81559 MiB: nvidia-smi on an H100 80GB HBM3 (modal-labs/modal-client#2797, NVIDIA/nccl#1264)",
			"HBM 3.35 TB/s: allocator-spec §4.1 (H100 SXM); compute capability 9.0",
			"host link 50 GB/s: assumption (PCIe Gen5 x16, 64 GB/s theoretical)",
		}}),
	"h200-141g": gpuCosts(Device{
		Total: 143771 * MiB, ComputeMajor: 9, HBMBytesPerSec: 4.8e12, HostBytesPerSec: 50e9,
		Notes: []string{
			"total 143771 MiB: assumption (nvidia-smi figure as commonly reported for H200, not re-read; marketing 141 GB)",
			"HBM 4.8 TB/s: allocator-spec §4.1; compute capability 9.0",
			"host link 50 GB/s: assumption (PCIe Gen5 x16)",
		}}),
	"tpu-v4": tpuCosts(Device{
		Total: 32 * GiB, HBMBytesPerSec: 1200e9,
		Notes: []string{"HBM 32 GiB, 1200 GB/s: Cloud TPU system architecture (allocator-spec §4)"}}),
	"tpu-v5e": tpuCosts(Device{
		Total: 16e9, HBMBytesPerSec: 819e9,
		Notes: []string{"HBM 16 GB, 819 GB/s: Cloud TPU system architecture (allocator-spec §4)"}}),
	"tpu-v5p": tpuCosts(Device{
		Total: 95e9, HBMBytesPerSec: 2765e9,
		Notes: []string{"HBM 95 GB, 2765 GB/s: Cloud TPU system architecture (allocator-spec §4)"}}),
	"tpu-v6e": tpuCosts(Device{
		Total: 32e9, HBMBytesPerSec: 1638e9,
		Notes: []string{"HBM 32 GB, 1638 GB/s: Cloud TPU system architecture (allocator-spec §4)"}}),
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	ns := make([]string, 0, len(presets))
	for n := range presets {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
