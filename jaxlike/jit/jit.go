// Package jit holds XLA's run-time rules for compiled executables
// (allocator-spec §6.1): what a launch of a jitted executable asks of the
// allocator, as opposed to eager, op-by-op execution. A replay applies them
// to a trace of format version 2 (traces: launches, kinds, donation); the
// harness replays, this package decides, so that the rules exist once for
// JAX under jit and for TensorFlow with jit_compile=True, which runs an
// XLA executable the same way (§6.1, last point).
//
// The rules, each from §6.1 (xla/service/gpu/gpu_executable.cc,
// GenerateBufferAllocations and BufferForAllocation, read for the spec):
//
//   - a parameter is the caller's buffer: the launch makes no allocator
//     call for it;
//   - a constant is a module global on GPU: no allocator call;
//   - an output is one Allocate, except an output aliased to a donated
//     parameter (donate_argnums), which reuses the parameter's memory;
//     aliasing without donation allocates (and copies);
//   - the temps are one Allocate of the executable's heap size, last,
//     freed right after the launch is enqueued: a trace that packs them
//     (membench traces compile, or a recording of a compiled program)
//     records exactly that, so temps and outputs replay as recorded;
//   - on a TPU the temps are the executable's program reservation
//     instead (§6.4): loaded at its first launch, kept across launches,
//     reloaded after an eviction (TempIsProgram).
//
// Compile makes a compiled trace from a per-op one with step marks, an
// approximation that says so (ApproximationNote).
//
// It imports traces and heapsim (for Compile).
package jit

import (
	"fmt"

	"membench/traces"
)

// Role is what a compiled launch does with one allocation of a trace.
type Role uint8

const (
	// Allocate: an output or a temp of a launch, or a buffer made outside
	// any launch (device_put, eager, or of unknown kind): one allocator
	// call, as recorded.
	Allocate Role = iota
	// External: a parameter or a constant. The launch reads memory it does
	// not allocate, so the replay allocates nothing and ignores the
	// allocation's free.
	External
	// Reuse: an output aliased to a donated input. It takes over the
	// donor's memory; the donor's own free is then not a free.
	Reuse
)

// RoleOf is the role of the alloc ev in a compiled replay.
func RoleOf(ev *traces.Event) Role {
	switch {
	case ev.Kind == traces.KindParameter || ev.Kind == traces.KindConstant:
		return External
	case ev.Kind == traces.KindOutput && ev.Donated:
		return Reuse
	}
	return Allocate
}

// Mode is how a replay runs a trace's executable launches.
type Mode uint8

const (
	// Auto: compiled when the trace has executable launches, op by op
	// otherwise (JAX's default: jit is how JAX programs run, and a trace
	// without launches can only be replayed as recorded).
	Auto Mode = iota
	// On: compiled; a trace without launches is refused.
	On
	// Off: every allocation as recorded, launches or not (eager JAX,
	// JAX_DISABLE_JIT; TensorFlow without XLA).
	Off
)

// Execution is one strategy's choice of mode, with what it needs to
// explain itself: the knob as the user would set it.
type Execution struct {
	Strategy string // "jax", "tf"
	Knob     string // "jit", "jit_compile": the knob that selects the mode
	Mode     Mode
	// Default says why the default is what it is, for the note of a
	// replay whose mode nobody chose.
	Default string
}

// Compiled reports whether launches are replayed compiled. Before a
// trace's first launch a compiled replay and a per-op one do the same
// thing (every allocation outside a launch allocates), so a replay can
// decide this up front and learn only at the end whether it mattered.
func (x *Execution) Compiled() bool { return x != nil && x.Mode != Off }

// CheckDevice refuses a compiled replay on a TPU whose model has no
// program reservation (loader false): there an executable's temps are
// its program, loaded once and kept across launches (allocator-spec
// §6.4), and allocating them as buffers would be a model of no real
// runtime. The TPU runtime model (tpurt) has one, so jax and tf replay
// compiled launches on a TPU; the replay then places temps with
// TempRole. It is called at a trace's first launch, so that a trace
// without launches replays on any device as before.
func (x *Execution) CheckDevice(tpu, loader bool, device string) error {
	if x.Compiled() && tpu && !loader {
		return fmt.Errorf("%s on %s: a compiled launch on a TPU needs a model of the runtime's program reservation (an executable's temps are its program, loaded once and kept across launches, allocator-spec §6.4), and this allocator has none; replay it op by op with %s:%s=false", x.Strategy, device, x.Strategy, x.Knob)
	}
	return nil
}

// TempIsProgram says whether a launch's temp is a program reservation rather
// than a buffer: on a TPU with a program reservation (CheckDevice), a
// compiled launch's temp is its executable's program, loaded at the
// executable's first launch and reused at later ones while it stays
// loaded; one evicted meanwhile is reloaded (§6.4). A program is known
// by its executable's name and its size: an executable retraced for
// other shapes is another compilation, with a program of its own.
func TempIsProgram(ev *traces.Event, compiledOnTPU bool) bool {
	return compiledOnTPU && ev.Kind == traces.KindTemp
}

// ProgramNote is the sentence a compiled replay on a TPU adds to its
// execution note: how many programs it loaded, reloaded after an
// eviction, and reused.
func ProgramNote(loads, reloads, reuses int64) string {
	return fmt.Sprintf("on the TPU each launch's temp is its executable's program reservation, kept across launches (allocator-spec §6.4): program loads %d, reloads after an eviction %d, launches that reused a loaded program %d", loads, reloads, reuses)
}

// Finish says, once the trace is read, which mode ran: a note for the
// replay's result, or an error for a mode that could not run (On, on a
// trace without launches). launches is the number of launches the trace
// began, elided the allocations and frees the compiled replay did not
// pass to the allocator.
func (x *Execution) Finish(launches, elided int64) (string, error) {
	switch {
	case launches == 0 && x.Mode == On:
		return "", fmt.Errorf("%s:%s=true: the trace has no executable launches (b/e records of trace format 2) to replay compiled; replay it op by op (%s=false, or the default), or convert a per-op trace with membench traces compile", x.Strategy, x.Knob, x.Knob)
	case launches == 0:
		return fmt.Sprintf("replayed op by op, one allocation per buffer as recorded (eager execution): the trace has no executable launches (allocator-spec §6.1)"), nil
	case x.Mode == Off:
		return fmt.Sprintf("replayed op by op (%s=false%s): the trace's %d executable launches allocate every buffer as recorded, parameters and constants included, and donated outputs anew", x.Knob, x.defaultNote(), launches), nil
	}
	how := x.Knob + "=true"
	if x.Mode == Auto {
		how = "default, as the trace has executable launches"
	}
	return fmt.Sprintf("replayed compiled (%s): %d launches; parameters and constants not allocated, donated outputs in their donors' memory, outputs and temps as recorded (%d allocations and frees not passed to the allocator; allocator-spec §6.1)", how, launches, elided), nil
}

// defaultNote is ", the default: why" when the mode is Off by default.
func (x *Execution) defaultNote() string {
	if x.Default == "" {
		return ""
	}
	return ", " + x.Default
}
