//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputNotARegularFile: an output that is a device, a named pipe or
// a symbolic link is written as a shell's > would write it. Renaming a
// temporary file over it replaced the device itself with a regular file
// (as root, `report --out /dev/full` turned /dev/full into a 1 MB file and
// said it had written it), and replaced a link with a copy. A directory,
// or a link to nowhere, is refused.
func TestOutputNotARegularFile(t *testing.T) {
	// Devices only when not root: should the fix break, root's rename
	// would replace the machine's /dev/null (a user's cannot). The named
	// pipe below takes the same path through createOutput.
	if os.Geteuid() != 0 {
		checkDeviceOutputs(t)
	}
	dir := t.TempDir()
	// A named pipe gets the output as a stream.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", fifo); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if !strings.Contains(s, "BenchmarkReplay/trace=gpt-train") {
			t.Errorf("the pipe read %q", s)
		}
	case <-time.After(10 * time.Second):
		// The command never opened the pipe: free the reader.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Errorf("nothing was written to the pipe")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", st.Mode(), err)
	}
	// A link to a file: the target gets the output, the link stays.
	target, link := filepath.Join(dir, "target.txt"), filepath.Join(dir, "link.txt")
	os.WriteFile(target, []byte("old\n"), 0o644)
	if err := os.Symlink("target.txt", link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", link); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), "BenchmarkReplay/trace=gpt-train") {
		t.Errorf("the link's target holds %q", b)
	}
	// A directory and a dangling link are refused.
	for _, c := range []struct{ out, want string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "dangling"), "cannot be resolved"},
	} {
		if c.want == "cannot be resolved" {
			os.Symlink("nowhere/x", c.out)
		}
		if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", c.out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--out %s: %v, want %q", c.out, err, c.want)
		}
	}
}

// checkDeviceOutputs: /dev/null stays the device and the command succeeds; a device
// that refuses the write (/dev/full) fails the command.
func checkDeviceOutputs(t *testing.T) {
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", os.DevNull); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", os.DevNull, st.Mode(), err)
	}
	// A device that refuses the write fails the command.
	if _, err := os.Stat("/dev/full"); err == nil {
		_, _, err := runCLI(t, "report", "--trace", "gpt-train", "--strategy", "torch", "--out", "/dev/full")
		if err == nil || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("--out /dev/full: %v", err)
		}
		if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("/dev/full is no longer a character device: %v %v", st.Mode(), err)
		}
	}
}
