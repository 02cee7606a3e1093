package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// outFile is an output file written safely: into a temporary file in the
// destination's directory, renamed over the destination only when the
// command succeeds (Commit), and removed when it fails (Abort), so that a
// failed command leaves no partial output and never truncates an existing
// file first. createOutput also refuses a destination that is one of the
// command's inputs: no command may overwrite what it reads.
//
// A destination that is not a regular file (a device such as /dev/null, a
// named pipe, a terminal, /dev/stdout) is written in place: renaming over
// it would replace the device with a regular file (as root, --out
// /dev/full became one), and a stream has nothing to keep whole. A
// symbolic link is followed: its target gets the output and the link
// stays a link.
//
// "-" is standard output (the command's writer), as "-" is standard input
// for --trace: `traces convert IN -` wrote a file named "-".
//
// The file is a field, not embedded: an embedded *os.File would lend its
// WriteString and ReadFrom to io.WriteString and io.Copy, which would
// then write past Write (to a nil file, for "-").
type outFile struct {
	file   *os.File  // nil for "-"
	w      io.Writer // what Write writes to: file, or the command's writer
	path   string
	direct bool // written in place: a device, pipe or socket, or "-"
	done   bool
}

// Write writes to the output.
func (o *outFile) Write(p []byte) (int, error) { return o.w.Write(p) }

// createOutput opens a temporary file for path, after checking that path
// is none of inputs (the same file by identity, so a link or another
// spelling of an input is caught too).
func createOutput(c *cli.Context, path string, inputs []string) (*outFile, error) {
	if path == "-" {
		return &outFile{w: c.App.Writer, path: path, direct: true}, nil
	}
	if err := notAnInput(path, inputs); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, fmt.Errorf("output %s is a directory", path)
		}
		// Opened by its name, which follows links as a shell's > does:
		// /dev/stdout's target is a /proc link to a pipe that no path
		// names.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
		return &outFile{file: f, w: f, path: path, direct: true}, nil
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("output %s: a symbolic link whose target cannot be resolved: %w", path, err)
		}
		path = target
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// Renaming a temporary file into place would replace a file, or write
	// into a directory, that its permissions protect (even as root, who
	// may rename anything): refuse what a plain write would not be meant
	// to do.
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o222 == 0 {
		return nil, fmt.Errorf("output %s is read-only: refusing to replace it", path)
	}
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o222 == 0 {
		return nil, fmt.Errorf("output %s: its directory %s is read-only: refusing to write into it", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; the output gets the mode of the
	// file it replaces, or what os.Create would give a new one (0666
	// less the umask, which Chmod does not apply, so 0644 here).
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	o := &outFile{file: f, w: f, path: path}
	openOutputs.Lock()
	openOutputs.m[o] = true
	openOutputs.Unlock()
	return o, nil
}

// openOutputs are the temporary files not yet committed or aborted, which
// an interrupt removes (abortOutputs); an output written in place is not
// one of them.
var openOutputs = struct {
	sync.Mutex
	m map[*outFile]bool
}{m: map[*outFile]bool{}}

// abortOutputs discards every output still open: the process is stopping.
func abortOutputs() {
	openOutputs.Lock()
	defer openOutputs.Unlock()
	for o := range openOutputs.m {
		o.file.Close()
		os.Remove(o.file.Name())
	}
}

func (o *outFile) forget() {
	openOutputs.Lock()
	delete(openOutputs.m, o)
	openOutputs.Unlock()
}

// notAnInput fails when path names the same file as one of inputs.
func notAnInput(path string, inputs []string) error {
	out, err := os.Stat(path)
	if err != nil {
		return nil // a new file cannot be an input
	}
	for _, in := range inputs {
		in, _, _ = strings.Cut(in, "#device=")
		in, _, _ = strings.Cut(in, "#allocator=")
		if in == "-" {
			// Standard input redirected from the output file.
			if st, err := os.Stdin.Stat(); err == nil && os.SameFile(st, out) {
				return fmt.Errorf("output %s is the input - (standard input is that file): refusing to overwrite an input", path)
			}
			continue
		}
		if st, err := os.Stat(in); err == nil && os.SameFile(st, out) {
			return fmt.Errorf("output %s is the input %s: refusing to overwrite an input", path, in)
		}
	}
	return nil
}

// Commit closes the file and moves it into place.
func (o *outFile) Commit() error {
	if o.done {
		return nil
	}
	o.done = true
	defer o.forget()
	if o.file == nil {
		return nil // standard output: the command's writer stays open
	}
	err := o.file.Close()
	if o.direct {
		if err != nil {
			return fmt.Errorf("output %s: %w", o.path, err)
		}
		return nil
	}
	if err == nil {
		err = os.Rename(o.file.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.file.Name())
		return fmt.Errorf("output %s: %w", o.path, err)
	}
	return nil
}

// Abort discards the output; after Commit it does nothing.
func (o *outFile) Abort() {
	if o.done {
		return
	}
	o.done = true
	defer o.forget()
	if o.file == nil {
		return
	}
	o.file.Close()
	if !o.direct {
		os.Remove(o.file.Name())
	}
}
