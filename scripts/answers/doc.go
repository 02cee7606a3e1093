// Command answers writes the first section of RESULTS.md: the seed
// questions (how JAX's 75 % preallocation, TensorFlow's preallocation or
// growth, PyTorch's caching and the TPU's defragmentation differ in
// fragmentation and OOM risk) answered with figures it measures itself on
// the embedded corpus, so that the prose can never drift from the runs.
// scripts/make-results.sh runs it; every figure is a deterministic replay.
//
// It imports harness, strategies, traces/corpus, internal/units and
// internal/sharedtraces (to find ../shared/traces), like
// cmd/membench: a script of the project, never imported.
package main
