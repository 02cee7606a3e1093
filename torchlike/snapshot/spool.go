package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"membench/internal/pickle"
)

// Spool holds one device's trace entries as they are made, for a writer
// whose entries outnumber what memory should hold: `membench export`
// records every decision of a replay, and its snapshot's segments, which
// the pickle holds before device_traces, are known only at the end. An
// entry costs a few bytes in a compact record (an action code and five
// varints), kept in memory up to spoolMemory bytes and then in a
// temporary file, so that a spool's memory is bounded whatever its
// length; EncodePickleSpooled reads the records back as it writes them.
//
// Only what the pickle writer writes is kept: an entry's Frames are not
// (frames come from a FramesFunc, never from the entry), and an entry
// comes back with FramesNone.
//
// The zero Spool is not usable: make one with NewSpool, and Close it to
// remove its file.
type Spool struct {
	dir     string
	buf     []byte   // records not yet in the file
	f       *os.File // nil until buf first outgrew spoolMemory
	remove  bool     // f still has a name to remove at Close
	written int64    // bytes of records in f
	n       int
	actions []string // actions[c] is the action of code c
	err     error    // the first write error: Add refuses after it
}

// spoolMemory is how many bytes of records a Spool keeps in memory: the
// entries of a short replay (gpt-train's few thousand) never touch the
// disk, and a long one writes its records in pieces of this size.
const spoolMemory = 1 << 20

// maxSpoolActions bounds the distinct actions a Spool codes in one byte;
// PyTorch's format has about a dozen.
const maxSpoolActions = 256

// NewSpool returns an empty spool whose temporary file, if it needs one,
// is made in dir (os.TempDir() when dir is ""). A writer of an output
// file passes the output's directory, which has room for the output
// (bigger than its records), where the system's temporary directory may
// be a small RAM disk.
func NewSpool(dir string) *Spool {
	return &Spool{dir: dir}
}

// Len is the number of entries added.
func (s *Spool) Len() int { return s.n }

// Add appends e. After a failed write to its file, the spool refuses every
// entry with that error.
func (s *Spool) Add(e *TraceEntry) error {
	if s.err != nil {
		return s.err
	}
	code := -1
	for c, a := range s.actions {
		if a == e.Action {
			code = c
			break
		}
	}
	if code < 0 {
		if len(s.actions) == maxSpoolActions {
			return fmt.Errorf("snapshot: spool: more than %d distinct actions (%q)", maxSpoolActions, e.Action)
		}
		code = len(s.actions)
		s.actions = append(s.actions, e.Action)
	}
	s.buf = append(s.buf, byte(code))
	s.buf = binary.AppendVarint(s.buf, e.Addr)
	s.buf = binary.AppendVarint(s.buf, e.Size)
	s.buf = binary.AppendVarint(s.buf, e.Stream)
	s.buf = binary.AppendVarint(s.buf, e.TimeUS)
	s.buf = binary.AppendVarint(s.buf, e.DeviceFree)
	s.n++
	if len(s.buf) >= spoolMemory {
		if err := s.spill(); err != nil {
			s.err = fmt.Errorf("snapshot: spooling trace entry %d: %w", s.n, err)
			return s.err
		}
	}
	return nil
}

// spill moves the records in memory to the file, made on first use. On a
// system that lets an open file lose its name (Unix) it loses it at once,
// so that no file is left behind by a process that is killed.
func (s *Spool) spill() error {
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, ".membench-spool-*")
		if err != nil {
			return err
		}
		s.f = f
		s.remove = os.Remove(f.Name()) != nil
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return err
	}
	s.written += int64(len(s.buf))
	s.buf = s.buf[:0]
	return nil
}

// Close removes the spool's file and empties the spool.
func (s *Spool) Close() error {
	var err error
	if s.f != nil {
		err = s.f.Close()
		if s.remove {
			if e := os.Remove(s.f.Name()); err == nil {
				err = e
			}
		}
	}
	*s = Spool{dir: s.dir, err: s.err}
	if err != nil {
		return fmt.Errorf("snapshot: spool: %w", err)
	}
	return nil
}

// SpoolReader reads a Spool's entries back, in the order added.
type SpoolReader struct {
	s   *Spool
	r   *bufio.Reader
	i   int
	err error
}

// Reader returns a reader of the entries added so far. The spool may be
// read any number of times; adding entries while a reader is open is not
// supported.
func (s *Spool) Reader() *SpoolReader {
	var src io.Reader = bytes.NewReader(s.buf)
	if s.f != nil {
		src = io.MultiReader(io.NewSectionReader(s.f, 0, s.written), src)
	}
	return &SpoolReader{s: s, r: bufio.NewReaderSize(src, 64<<10)}
}

// Next returns the next entry, or io.EOF after the last.
func (r *SpoolReader) Next() (TraceEntry, error) {
	if r.err != nil {
		return TraceEntry{}, r.err
	}
	if r.i == r.s.n {
		r.err = io.EOF
		return TraceEntry{}, io.EOF
	}
	e, err := r.read()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.err = fmt.Errorf("snapshot: spool: reading trace entry %d of %d: %w", r.i, r.s.n, err)
		return TraceEntry{}, r.err
	}
	r.i++
	return e, nil
}

var errSpoolCode = errors.New("unknown action code")

func (r *SpoolReader) read() (TraceEntry, error) {
	var e TraceEntry
	c, err := r.r.ReadByte()
	if err != nil {
		return e, err
	}
	if int(c) >= len(r.s.actions) {
		return e, errSpoolCode
	}
	e.Action = r.s.actions[c]
	if e.Addr, err = binary.ReadVarint(r.r); err != nil {
		return e, err
	}
	if e.Size, err = binary.ReadVarint(r.r); err != nil {
		return e, err
	}
	if e.Stream, err = binary.ReadVarint(r.r); err != nil {
		return e, err
	}
	if e.TimeUS, err = binary.ReadVarint(r.r); err != nil {
		return e, err
	}
	e.DeviceFree, err = binary.ReadVarint(r.r)
	return e, err
}

// EncodePickleSpooled writes s as EncodePickle does, the same bytes, with
// device d's trace read from traces[d] as it is written instead of from
// s.DeviceTraces (which must be empty): the memory it needs is the
// segments' and one entry's, whatever the traces' length.
func EncodePickleSpooled(w io.Writer, s *Snapshot, traces []*Spool) error {
	if len(s.DeviceTraces) != 0 {
		return errors.New("snapshot: EncodePickleSpooled: the snapshot holds traces of its own")
	}
	return pickle.Encode(w, value(s, func(dv int) any {
		r := traces[dv].Reader()
		return &pickle.Stream{Next: func() (any, error) {
			e, err := r.Next()
			if err != nil {
				return nil, err
			}
			return entryValue(&e, nil), nil
		}}
	}, len(traces)))
}
