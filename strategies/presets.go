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
		contextNote+"512 MiB (capacity = total - 512 MiB, free = capacity): assumption",
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

// tpuCosts sets what the TPU presets share. The TPU runtime is closed
// source; its allocation granule was recorded (allocator-spec §6.4: 32 →
// 128, 1,472 → 1,536 B on a v6e) and is the device granularity the TPU
// runtime model (package tpurt) rounds to; latencies and the host link
// are assumptions. Each preset gives its Total and Reserve, both in the
// GiB the runtime reports (§6.4), each citing its source.
func tpuCosts(d Device) Device {
	d.Kind = TPU
	d.MallocSec = 5e-6
	d.FreeSec = 2e-6
	d.MapSec = 5e-6
	d.UnmapSec = 5e-6
	d.HitSec = 0.2e-6
	d.Granularity = 128
	d.Relocatable = true
	d.HostBytesPerSec = 16e9 // assumption: PCIe Gen3 x16 class host link
	d.Capacity = d.Total - d.Reserve
	d.Free = d.Capacity
	d.Notes = append(d.Notes,
		"granularity 128 B: recorded on TPU v6e for small buffers (allocator-spec §6.4); larger recorded sizes were multiples of 512 B and kept exact, so a coarser granule for large buffers and on other generations is an assumption (override: granularity=)",
		"TPU runtime closed source: latencies and the 16 GB/s host link are assumptions",
		"relocatable: the TPU runtime defragments by moving live buffers on a fragmentation OOM (allocator-spec §6.4, XLA error E0100)",
	)
	return d
}

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
		Total: 32 * GiB, Reserve: 1280 * MiB, HBMBytesPerSec: 1200e9,
		Notes: []string{
			"HBM 32 GiB, 1200 GB/s: Cloud TPU system architecture (allocator-spec §4, §6.4)",
			"runtime reserve 1.25 GiB: one multi-host v4 reading (allocator-spec §6.4); assumption for other v4 hosts",
		}}),
	"tpu-v5e": tpuCosts(Device{
		Total: 16 * GiB, Reserve: 258 * MiB, HBMBytesPerSec: 819e9,
		Notes: []string{
			"HBM 16 GiB, of which the runtime reports 15.75G usable (≈258 MiB reserved): allocator-spec §6.4; 819 GB/s: Cloud TPU system architecture (§4)",
		}}),
	"tpu-v5p": tpuCosts(Device{
		Total: 96 * GiB, Reserve: 266 * MiB, HBMBytesPerSec: 2765e9,
		Notes: []string{
			"HBM 96 GiB, 95.74G available in a published sample (allocator-spec §6.4): reserve 266 MiB, to the sample's two decimals; 2765 GB/s: Cloud TPU system architecture (§4)",
		}}),
	"tpu-v6e": tpuCosts(Device{
		Total: 32 * GiB, Reserve: 32*GiB - 33550237696, HBMBytesPerSec: 1638e9,
		Notes: []string{
			"HBM 32 GiB with a limit of 33,550,237,696 B per chip (runtime reserve 772 MiB): recorded (../shared/traces/profiler/xprof-tpu-v6e-inference.xplane.pb, allocator-spec §6.4); 1638 GB/s: Cloud TPU system architecture (§4)",
		}}),
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
