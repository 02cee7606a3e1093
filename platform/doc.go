// Package platform models the allocators that do no caching at all: one
// device allocation and one device free per buffer. That is JAX's
// XLA_PYTHON_CLIENT_ALLOCATOR=platform (the only JAX mode that returns
// memory to the driver, allocator-spec §3) and TensorFlow's
// TF_GPU_ALLOCATOR=cuda_malloc (§2.8).
//
// Beyond the Allocator contract it declares strategies.Layouter, Noter,
// Placer and Tracer (every buffer is a segment of its own). It imports
// only strategies and internal/slab; jaxlike and tflike use it.
package platform
