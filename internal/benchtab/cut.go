package benchtab

import (
	"bufio"
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
//
// It also finds the first line too long for benchfmt's reader, whose
// scanner stops there with bufio.ErrTooLong at the line before it and
// without the limit (TooLong).
type EndCheck struct {
	r     io.Reader
	lines int  // newlines seen
	any   bool // whether anything was read
	last  byte // the last byte read
	cur   int  // bytes of the current line so far
	long  int  // the first line longer than maxLine, 1-based; 0 if none
}

// maxLine is the longest line benchfmt's reader takes: its bufio.Scanner
// has the default buffer, which must hold a line and its newline.
const maxLine = bufio.MaxScanTokenSize - 1

// NewEndCheck wraps r.
func NewEndCheck(r io.Reader) *EndCheck { return &EndCheck{r: r} }

func (e *EndCheck) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 {
		for b := p[:n]; ; {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				e.cur += len(b)
				break
			}
			e.cur += i
			e.endLine()
			e.lines++
			e.cur = 0
			b = b[i+1:]
		}
		if e.cur > maxLine {
			e.endLine()
		}
		e.any, e.last = true, p[n-1]
	}
	return n, err
}

// endLine notes the current line if it is the first too long.
func (e *EndCheck) endLine() {
	if e.cur > maxLine && e.long == 0 {
		e.long = e.lines + 1
	}
}

// TooLong is benchfmt's error err for the file name with the right line
// and the limit, when its reader stopped at a line too long (it names the
// line before that one, and says only "token too long"); else nil.
func (e *EndCheck) TooLong(name string, err error) error {
	if !errors.Is(err, bufio.ErrTooLong) || e.long == 0 {
		return nil
	}
	return fmt.Errorf("%s:%d: a line longer than %d bytes, the most a benchfmt line may hold (is this a results file?): %w", name, e.long, maxLine, err)
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
