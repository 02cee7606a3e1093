// Package tflike models TensorFlow's GPU memory allocation: the
// GPUBFCAllocator that GPUProcessState builds for each GPU (allocator-spec
// §2.8) on TSL's BFC (package bfc), its default memory limit, and the
// alternatives its environment variables select. On a TPU device it uses
// the TPU runtime model shared with jaxlike (package tpurt).
//
// It imports strategies, bfc, platform and tpurt; the harness's registry is its
// only importer.
package tflike
