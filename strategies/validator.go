package strategies

import (
	"errors"
	"io"
)

// A Validator checks a framework's model against a real allocator's
// recording: it replays the recorded requests through the model,
// configured from the recording's own settings, and compares the model's
// decisions with the recorded ones. Each framework's house declares its
// own (torchlike/validate for PyTorch memory snapshots); `membench
// validate` picks the one whose Match accepts a file's content, so the
// command itself knows no format and no framework.
type Validator struct {
	// Name says what the validator reads, for messages and help text.
	Name string
	// Match reports whether content, the start of a file (after gzip
	// decompression; at most 512 bytes), is a recording this validator
	// reads.
	Match func(content []byte) bool
	// Validate reads the recording from r (name is for messages), writes
	// a report for each device to w, and returns how many devices
	// disagree with the recording. An error means nothing could be
	// compared: unreadable, damaged or contradictory input.
	Validate func(name string, r io.Reader, opts ValidateOptions, w io.Writer) (disagree int, err error)
}

// ErrNothingToValidate is returned by a Validator whose Match accepted a
// file that holds nothing it validates (a profile with only TPU
// allocators, for the BFC's validator): `membench validate` runs every
// validator that matches a file and fails only when all of them say this.
var ErrNothingToValidate = errors.New("nothing this validator checks")

// ValidateOptions are what a user may tell a validator that a recording
// does not say itself.
type ValidateOptions struct {
	// Devices to validate; nil means every device in the recording. In
	// a profile, device N is the TPU chip N or the allocator GPU_N_bfc.
	Devices []int
	// Capacity is the device memory the allocator could obtain, used when
	// the recording holds no out-of-memory event to infer it from; 0 means
	// unlimited.
	Capacity int64
	// Total is a GPU's total memory, the base of PyTorch's
	// per_process_memory_fraction and expandable reservations (PyTorch
	// snapshots only); 0 means the larger of Capacity and what a recorded
	// OOM shows.
	Total int64
	// Allocators to validate, by name, in recordings that hold several
	// (profiles: GPU_0_bfc, TPU:0); nil means every allocator.
	Allocators []string
}

// ProfileOptions refuses Capacity and Total, which only a PyTorch
// snapshot reads, for a profile's validators (the BFC's and the TPU
// runtime's): a profile records its allocators' limits, and a flag given
// for nothing would be ignored in silence.
func (o ValidateOptions) ProfileOptions() error {
	if o.Total > 0 || o.Capacity > 0 {
		return errSnapshotOnly
	}
	return nil
}

var errSnapshotOnly = errors.New("--capacity and --total are a GPU's memory for a PyTorch snapshot; a profile records its allocators' limits")
