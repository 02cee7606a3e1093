// Package gen generates realistic allocation traces of deep-learning
// workloads from a few model dimensions: "GPT 7B, batch 8, seq 4096" becomes
// the stream of tensor allocations and frees that a PyTorch-style eager
// framework would ask of its allocator.
//
// Three kinds are offered (Kinds):
//
//   - transformer-train: a decoder-only transformer training loop
//     (forward, backward, Adam or SGD), sized from layers, d_model, heads,
//     ffn, vocab, batch and seq, with presets for GPT-2 and LLaMA models;
//   - llm-serve: LLM inference serving with a KV cache (grown by
//     concatenation, or paged in fixed-size blocks) and continuous batching
//     of requests that arrive as a Poisson process;
//   - cnn-train: a ResNet-18/34/50 training loop with SGD momentum.
//
// Every tensor the generators allocate is documented where it is emitted:
// what it is, and how its size in bytes follows from the dimensions and the
// dtype. The models are deliberately "one tensor per framework op": the
// small bookkeeping allocations of a real framework (shape metadata, CPU
// scalars, cuBLAS workspaces) are left out, and so are fused-kernel
// workspaces unless they are documented.
//
// # Determinism and streaming
//
// A trace depends only on its kind, its seed and its parameters: the same
// inputs give the same events, byte for byte once written. Randomness
// (llm-serve's arrivals and lengths) comes from math/rand/v2 PCG sources
// seeded explicitly, one per purpose; no decision depends on map
// iteration. transformer-train and cnn-train are deterministic in the model
// and do not use the seed (it is still recorded in the meta).
//
// New returns a traces.Reader that produces events on demand: the generator
// runs as a coroutine (iter.Pull) that fills a fixed buffer of events and
// hands it over when full. Memory is the model's bookkeeping (the ids of the
// tensors live at one time: O(layers), O(parameters), O(max_batch)) and
// never grows with the number of events, so a trace of 10^8 events streams
// in constant memory. Close the Reader when done with it (a Reader dropped
// without Close is stopped when it is garbage-collected).
//
// # Events
//
// Ids are sequential from 1 in allocation order and never reused. Every
// alloc is on stream 0 and no event carries a time (Time is traces.NoTime).
// Marks label phases as in the recorded traces: "step:N", "forward",
// "backward", "optimizer" for training, "request:N", "prefill",
// "decode:N" for serving.
//
// A generated trace ends with every buffer freed except the persistent
// ones, which a real process would still hold: the weights (and the fp32
// master copy under mixed precision), BatchNorm running statistics and the
// optimizer state. The meta records them as persistent-buffers and
// persistent-bytes.
//
// It imports only traces (and the standard library).
package gen
