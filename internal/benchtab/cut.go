package benchtab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrCutShort is the error of a results file whose last line has no
// newline. benchfmt reads such a line as it stands, and a results file cut
// short (a run stopped while writing --out, a copy that stopped) most
// often ends inside a result line that still parses: its last metrics are
// gone, or a unit cut in its name becomes another unit with the value of
// the real one, and the comparison or the report would show them without
// a word. membench and go test end every line they write.
var ErrCutShort = errors.New("the last line has no newline: the file looks cut short (delete that line to read the rest; if the file is complete, end it with a newline)")

// EndCheck passes a results file through and remembers how it ended, so
// that its reader can refuse a file cut short (ErrCutShort) once benchfmt
// has read it all.
type EndCheck struct {
	r     io.Reader
	lines int  // newlines seen
	any   bool // whether anything was read
	last  byte // the last byte read
}

// NewEndCheck wraps r.
func NewEndCheck(r io.Reader) *EndCheck { return &EndCheck{r: r} }

func (e *EndCheck) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 {
		e.lines += bytes.Count(p[:n], []byte{'\n'})
		e.any, e.last = true, p[n-1]
	}
	return n, err
}

// Err is nil if what was read is empty or ends with a newline, and else
// ErrCutShort at the last line of the file name: call it once the reader
// has read to the end.
func (e *EndCheck) Err(name string) error {
	if !e.any || e.last == '\n' {
		return nil
	}
	return fmt.Errorf("%s:%d: %w", name, e.lines+1, ErrCutShort)
}
