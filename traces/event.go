package traces

import (
	"errors"
	"fmt"
	"io"
)

// Op is what an Event asks of an allocator.
type Op uint8

const (
	// OpAlloc asks for Size bytes on Stream and names the result ID.
	OpAlloc Op = iota + 1
	// OpFree releases the allocation named ID.
	OpFree
	// OpMark labels a point in the trace (a phase such as "step:3" or
	// "forward"); allocators never see it.
	OpMark
	// OpLaunch begins a launch of the compiled executable named Label
	// (format version 2). The allocations of Kind parameter, output,
	// temp and constant that follow, up to the matching OpLaunchEnd, are
	// that launch's buffers. Allocators never see it: a replay decides
	// from it how XLA's run time would allocate (allocator-spec §6.1).
	// It is an Op of its own, not a mark with a conventional label, so
	// that no existing mark ("step:3") can be mistaken for one and a
	// consumer that does not know launches refuses them (unknown op)
	// instead of reading them as phases.
	OpLaunch
	// OpLaunchEnd ends the launch of the executable named Label, which
	// must be the launch open (launches do not nest: one host thread
	// enqueues them in order on one stream, §6.1).
	OpLaunchEnd
)

func (o Op) String() string {
	switch o {
	case OpAlloc:
		return "alloc"
	case OpFree:
		return "free"
	case OpMark:
		return "mark"
	case OpLaunch:
		return "launch"
	case OpLaunchEnd:
		return "launch end"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// NoTime is the Time of an event whose trace recorded no clock.
const NoTime int64 = -1

// Event is one step of a trace. Events carry ids, not addresses: importers
// map recorded addresses to ids because addresses are reused, and a replay
// must know which allocation a free releases whatever the simulated
// allocator's addresses are.
//
// Event is a plain value so that a replay loop can reuse one variable for
// every event without allocating.
//
// Kind, Donated and Donor (format version 2) say what an allocation is to
// XLA; a trace of version 1 leaves them zero, and so does every importer
// that cannot know them. They sit in the padding after Op and one word, so
// the Event grows by the Donor only.
type Event struct {
	Op Op
	// Kind is an alloc's role (KindNone when the trace does not say).
	Kind Kind
	// Donated says that this alloc, an output, is aliased to the donated
	// input Donor: under jit it reuses Donor's memory (§6.1).
	Donated bool
	ID      uint64 // alloc and free
	Size    int64  // alloc: requested bytes, > 0
	Stream  int64  // alloc: the stream (CUDA stream handle or 0); free blocks never cross streams
	Time    int64  // nanoseconds since the trace's own origin, or NoTime
	Label   string // mark; launch and launch end: the executable's name
	Donor   uint64 // alloc with Donated: the id of the live allocation donated
}

// Kind is what an allocation is to a compiled program (allocator-spec
// §6.1). A replay of a compiled trace allocates by it: parameters and
// constants are not allocated by a launch, a donated output reuses its
// input, outputs and temps allocate.
type Kind uint8

const (
	// KindNone is an allocation of unknown role: every trace of format
	// version 1, and every importer's.
	KindNone Kind = iota
	// KindParameter is an entry parameter of the launch it sits in: the
	// caller's buffer, which XLA reads but does not allocate.
	KindParameter
	// KindOutput is a result of the launch: one Allocate each, unless
	// aliased to a donated input (Event.Donated).
	KindOutput
	// KindTemp is the launch's scratch memory: under jit, one combined
	// buffer of the executable's heap size, allocated last and freed
	// right after the launch.
	KindTemp
	// KindConstant is a constant of the executable: a module global on
	// GPU, never an allocator call.
	KindConstant
	// KindDevicePut is a host-to-device transfer outside any launch
	// (jax.device_put, a batch).
	KindDevicePut
	// KindEager is the output of an op run eagerly, outside any launch.
	KindEager
	// numKinds bounds the valid kinds.
	numKinds
)

// kindNames are the kinds as the text format spells them.
var kindNames = [numKinds]string{"", "parameter", "output", "temp", "constant", "device_put", "eager"}

func (k Kind) String() string {
	if k == KindNone {
		return "none"
	}
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// InLaunch reports whether an allocation of kind k belongs inside a
// launch (parameter, output, temp, constant) rather than outside one
// (device_put, eager); KindNone may be either.
func (k Kind) InLaunch() bool {
	return k == KindParameter || k == KindOutput || k == KindTemp || k == KindConstant
}

// version2 reports whether ev uses the vocabulary of format version 2: a
// launch, a kind or a donation.
func (ev *Event) version2() bool {
	return ev.Op == OpLaunch || ev.Op == OpLaunchEnd || (ev.Op == OpAlloc && (ev.Kind != KindNone || ev.Donated))
}

// checkV2 refuses what no version-2 trace may hold, for the writers: an
// unknown kind, a donation on an alloc that is not an output or that
// names itself. (Readers refuse the same in their own words.)
func checkV2(ev *Event) error {
	if ev.Op != OpAlloc {
		return nil
	}
	if ev.Kind >= numKinds {
		return fmt.Errorf("unknown kind %v", ev.Kind)
	}
	if ev.Donated && ev.Kind != KindOutput {
		return fmt.Errorf("%w: a %v alloc cannot have a donor (only an output aliases a donated input)", ErrBadDonor, ev.Kind)
	}
	if ev.Donated && ev.Donor == ev.ID {
		return fmt.Errorf("%w: alloc %d names itself as its donor", ErrBadDonor, ev.ID)
	}
	return nil
}

// MaxSize is the largest request a trace may carry: 1 PiB. Nothing real is
// near it; a larger figure means a corrupt file or a unit mistake, and
// rejecting it keeps every byte sum well inside int64.
const MaxSize int64 = 1 << 50

// Reader streams the events of one trace. Next returns io.EOF after the last
// event; any other error is a *PosError naming the file and position. After
// an error, Next keeps returning it.
type Reader interface {
	Next() (Event, error)
	// Meta describes the trace: where it came from, its licence, what an
	// importer inferred. It is complete once the header is read, which
	// happens when the Reader is created.
	Meta() Meta
	// Pos is where the last event Next returned came from, so that a
	// consumer that finds something wrong with an event (the replay, Check)
	// can name its file and line.
	Pos() Pos
	Close() error
}

// BatchReader is a Reader that also returns its events many at a time, so
// that a replay pays one call per batch instead of an interface call and a
// copy per event (issue 15). NextBatch returns the next events, at most
// len(buf) of them: buf[:n] filled, or a view of the reader's own memory,
// valid until its next call, that the caller must not modify. It returns
// at least one event or an error; events returned with an error precede
// it. After NextBatch, Pos is the position of the last event returned, so
// only readers whose positions carry no line implement it (File is the
// same for every event, Line is 0): a consumer then names any event of a
// batch by its own count.
type BatchReader interface {
	Reader
	NextBatch(buf []Event) ([]Event, error)
}

// Pos is a position in a trace: the reader's name (the file name for Open;
// "" if it has none), the line of the last event returned (0 for formats
// without lines, and before the first event) and that event's index
// (0-based, counting every event the reader has returned; -1 before the
// first).
type Pos struct {
	File  string
	Line  int
	Event int
}

// Meta is a trace's description as ordered key/value pairs (ordered so that
// every output that prints it is deterministic).
type Meta []KV

// KV is one metadata entry.
type KV struct{ Key, Value string }

// Get returns the value of key, or "".
func (m Meta) Get(key string) string {
	for _, kv := range m {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// Set replaces key's value or appends it.
func (m *Meta) Set(key, value string) {
	for i := range *m {
		if (*m)[i].Key == key {
			(*m)[i].Value = value
			return
		}
	}
	*m = append(*m, KV{key, value})
}

// PosError is an input error with its position: the file, and the line
// (text formats) or the event index (0-based, counting every event the
// reader has produced) where it was found.
type PosError struct {
	File  string
	Line  int // 0 if unknown
	Event int // -1 if unknown
	Err   error
}

func (e *PosError) Error() string {
	s := e.File
	if s == "" {
		s = "<input>"
	}
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Event >= 0 {
		s += fmt.Sprintf(" (event %d)", e.Event)
	}
	return s + ": " + e.Err.Error()
}

func (e *PosError) Unwrap() error { return e.Err }

// Errors a semantic check reports; test with errors.Is.
var (
	ErrUnknownID  = errors.New("free of unknown id")
	ErrDoubleFree = errors.New("double free")
	ErrLiveID     = errors.New("alloc of an id that is still live")
	ErrBadSize    = errors.New("bad size")
	// ErrBadDonor is a donation that cannot be: a donor that is not live
	// or was donated already, or a donor on an alloc that is no output.
	ErrBadDonor = errors.New("bad donor")
	// ErrLaunch is a launch out of order: one that begins inside another,
	// ends one not open or never ends, or an allocation of a kind that
	// belongs inside a launch outside one (or the reverse).
	ErrLaunch = errors.New("bad launch")
)

// FormatVersion is the native format version of the trace r reads: the
// version of a native text or binary trace's header, SliceReader.Version,
// or 1 for every other reader (no other format carries the vocabulary of
// version 2). WriteNative and WriteBinary write this version unless told
// otherwise, so that a conversion keeps it.
func FormatVersion(r Reader) int {
	if v, ok := r.(interface{ FormatVersion() int }); ok {
		return v.FormatVersion()
	}
	return 1
}

// ReadAll drains r. It is for tests and small traces; replays stream.
func ReadAll(r Reader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// SliceReader serves events from memory: generated traces and tests.
type SliceReader struct {
	Events []Event
	M      Meta
	// Version is the native format version the events need (0 means
	// 1): 2 when they use launches, kinds or donations (FormatVersion).
	Version int
	i       int
}

// FormatVersion is Version, 1 when unset.
func (s *SliceReader) FormatVersion() int { return max(s.Version, 1) }

func (s *SliceReader) Next() (Event, error) {
	if s.i >= len(s.Events) {
		return Event{}, io.EOF
	}
	s.i++
	return s.Events[s.i-1], nil
}

// NextBatch implements BatchReader with a view of Events.
func (s *SliceReader) NextBatch(buf []Event) ([]Event, error) {
	if s.i >= len(s.Events) {
		return nil, io.EOF
	}
	j := min(s.i+len(buf), len(s.Events))
	evs := s.Events[s.i:j:j]
	s.i = j
	return evs, nil
}

// Remaining is the number of events Next and NextBatch have yet to
// return: a replay that knows its length in advance can size what it keeps
// per event range (harness's timeline) for the whole trace at once.
func (s *SliceReader) Remaining() int { return len(s.Events) - s.i }

func (s *SliceReader) Meta() Meta   { return s.M }
func (s *SliceReader) Close() error { return nil }

// Pos has the index of the last event returned; a slice has no name or lines.
func (s *SliceReader) Pos() Pos { return Pos{Event: s.i - 1} }

// OpenOptions selects what an importer reads from a file that holds more
// than one trace.
type OpenOptions struct {
	// Device picks one device of a multi-device trace (a PyTorch snapshot,
	// a JAX device memory profile); -1 means the lowest-numbered device
	// that has events. Asking for a device of a single-device format is an
	// error, not ignored.
	Device int
	// Allocator picks one allocator of a profile that records several
	// (an XProf profile: GPU_0_bfc, gpu_host_bfc, TPU:0); "" leaves the
	// choice to Device, or to the profile when it holds only one.
	Allocator string
}

// DefaultOpenOptions is what Open uses when the caller has no preference.
var DefaultOpenOptions = OpenOptions{Device: -1}
