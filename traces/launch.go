package traces

import "fmt"

// Launches follows the executable launches of a trace (format version 2)
// and checks their order: a launch begins only when none is open (one
// host thread enqueues executables one after another on one stream,
// allocator-spec §6.1), ends with the name it began with, and every
// launch ends before the trace does; an allocation of kind parameter,
// output, temp or constant sits inside a launch, one of kind device_put
// or eager outside. Each violation is an error wrapping ErrLaunch. Check
// and the replay loop share it, as they share Tracker, so that both
// report the same errors. It allocates nothing.
type Launches struct {
	open  bool
	name  string // the open launch's executable
	began int64  // the event index of its begin
	// Count is the number of launches begun so far.
	Count int64
}

// Open reports whether a launch is open, and the name of its executable.
func (l *Launches) Open() (string, bool) { return l.name, l.open }

// Event checks ev, the trace's event i, against the launches so far and
// records it.
func (l *Launches) Event(ev *Event, i int64) error {
	switch ev.Op {
	case OpLaunch:
		if l.open {
			return fmt.Errorf("%w: launch of %q inside the launch of %q begun at event %d (launches do not nest)", ErrLaunch, ev.Label, l.name, l.began)
		}
		l.open, l.name, l.began = true, ev.Label, i
		l.Count++
	case OpLaunchEnd:
		if !l.open {
			return fmt.Errorf("%w: end of a launch of %q, but no launch is open", ErrLaunch, ev.Label)
		}
		if ev.Label != l.name {
			return fmt.Errorf("%w: end of a launch of %q, but the launch open (event %d) is of %q", ErrLaunch, ev.Label, l.began, l.name)
		}
		l.open, l.name = false, ""
	case OpAlloc:
		switch {
		case ev.Kind.InLaunch() && !l.open:
			return fmt.Errorf("%w: a %v allocation outside any launch (it belongs to an executable's launch)", ErrLaunch, ev.Kind)
		case (ev.Kind == KindDevicePut || ev.Kind == KindEager) && l.open:
			return fmt.Errorf("%w: a %v allocation inside the launch of %q begun at event %d", ErrLaunch, ev.Kind, l.name, l.began)
		}
	}
	return nil
}

// End reports a launch still open when the trace ends.
func (l *Launches) End() error {
	if l.open {
		return fmt.Errorf("%w: the launch of %q begun at event %d never ends", ErrLaunch, l.name, l.began)
	}
	return nil
}
