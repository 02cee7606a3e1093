// Package jaxlike models JAX's accelerator memory allocation (allocator-spec
// §3): on GPU, XLA's BFC allocator (package bfc) preallocating 75 % of the
// device's total memory by default, growing on demand with
// preallocate=false, or the platform allocator; on TPU, the TPU runtime
// model (package tpurt), which also owns the knobs defrag, defrag_via_host
// and program_bytes.
//
// Its subpackage jit holds XLA's run-time rules for compiled executables
// (allocator-spec §6.1), which the harness applies to traces with
// executable launches; Config.JIT (jit=true|false) chooses them.
//
// It imports strategies, bfc, platform, tpurt and jit; the harness's
// registry is its only importer.
package jaxlike
