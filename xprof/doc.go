// Package xprof reads the allocator events of TensorBoard / XProf
// profiles (*.xplane.pb, a serialized XSpace protobuf, schema
// tsl/profiler/protobuf/xplane.proto), which record every decision of
// TSL's BFC allocator (TensorFlow and XLA on GPU) and of the TPU runtime.
//
// The events are XEvents named MemoryAllocation and MemoryDeallocation on
// the host planes, one per allocation and deallocation, each with stats:
// the allocator's name (or, on TPU, the chip's index_on_host), the
// requested bytes, the chunk handed out (allocation_bytes), its address,
// the bytes in use, reserved and available after the event, the op and
// the step. They are spread over the lines of many host threads; each
// allocator emits them under its own lock, so ordering one allocator's
// events by time gives its order (the public profiles have no ties, and
// bytes in use moves by exactly each chunk from one event to the next).
//
// Decoding uses protowire from google.golang.org/protobuf rather than
// generated types: only five messages and a dozen fields matter, and
// skipping the rest unparsed keeps the cost of a profile near that of
// reading it. A plane is read into memory whole, because its event and
// stat names (maps 4 and 5) follow its lines; the decoder keeps only the
// allocator records, so memory is bounded by the largest plane plus the
// records (see Limits).
//
// Read gives every allocator's records, which validation compares with a
// model (bfc/validate; the TPU runtime model's validator). The package also
// registers the format with traces, so `membench run` replays a profile's
// requests like any trace: Events turns one allocator's records into
// events, opening with the state live before the window (recordings start
// warm).
//
// The package imports traces and protowire only.
package xprof
