// Package jaxlike models JAX's accelerator memory allocation (allocator-spec
// §3): on GPU, XLA's BFC allocator (package bfc) preallocating 75 % of the
// device's total memory by default, growing on demand with
// preallocate=false, or the platform allocator; on TPU, the TPU runtime
// model that bfc.NewTPU describes.
//
// It imports strategies, bfc and platform; the harness's registry is its
// only importer.
package jaxlike
