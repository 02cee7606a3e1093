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
)

func (o Op) String() string {
	switch o {
	case OpAlloc:
		return "alloc"
	case OpFree:
		return "free"
	case OpMark:
		return "mark"
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
type Event struct {
	Op     Op
	ID     uint64 // alloc and free
	Size   int64  // alloc: requested bytes, > 0
	Stream int64  // alloc: the stream (CUDA stream handle or 0); free blocks never cross streams
	Time   int64  // nanoseconds since the trace's own origin, or NoTime
	Label  string // mark
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
)

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
	i      int
}

func (s *SliceReader) Next() (Event, error) {
	if s.i >= len(s.Events) {
		return Event{}, io.EOF
	}
	s.i++
	return s.Events[s.i-1], nil
}
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
