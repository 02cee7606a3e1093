package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCommandOverwritesItsInput: every command that writes a file
// refuses a destination that is one of its inputs (by identity, so a
// symbolic link to the input is refused too) and leaves the input intact;
// a failed command leaves no partial output (issue 11, defect 5).
func TestNoCommandOverwritesItsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if _, _, err := runCLI(t, "traces", "convert", "gpt-train", in); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(in)
	if len(orig) < 64<<10 {
		t.Fatalf("input only %d bytes; the defect showed above 64 KiB", len(orig))
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "r.txt")
	if _, _, err := runCLI(t, "run", "--trace", "gpt-generate", "--strategy", "torch", "--out", results); err != nil {
		t.Fatal(err)
	}
	origResults, _ := os.ReadFile(results)
	for _, args := range [][]string{
		{"traces", "convert", in, in},
		{"traces", "convert", "--format", "binary", in, link},
		{"run", "--trace", in, "--strategy", "torch", "--out", in},
		{"run", "--trace", in + "#device=0", "--strategy", "torch", "--out", link},
		{"sweep", "--trace", in, "--strategy", "torch", "--param", "expandable_segments=false,true", "--out", in},
		{"capacity", "--trace", in, "--strategy", "torch", "--out", in},
		{"report", "--trace", in, "--strategy", "torch", "--out", in},
		{"report", "--trace", "gpt-generate", "--strategy", "torch", "--results", results, "--out", results},
	} {
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "refusing to overwrite an input") {
			t.Errorf("%v: %v", args, err)
		}
		if now, _ := os.ReadFile(in); !bytes.Equal(now, orig) {
			t.Fatalf("%v changed its input", args)
		}
		if now, _ := os.ReadFile(results); !bytes.Equal(now, origResults) {
			t.Fatalf("%v changed its results input", args)
		}
	}
	// A failure after the output was opened leaves the old file whole and
	// no temporary behind.
	out := filepath.Join(dir, "out.txt")
	os.WriteFile(out, []byte("keep me\n"), 0o644)
	if _, _, err := runCLI(t, "run", "--trace", "gpt-generate", "--strategy", "torch", "--format", "xml", "--out", out); err == nil {
		t.Error("--format xml accepted")
	}
	if _, _, err := runCLI(t, "traces", "convert", "--format", "xml", in, out); err == nil {
		t.Error("convert --format xml accepted")
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me\n" {
		t.Errorf("failed commands changed %s: %q", out, b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestOutputModeAndStdin: an output gets the mode of the file it replaces,
// or 0644, not CreateTemp's 0600; and standard input redirected from the
// output file is refused like any other input.
func TestOutputModeAndStdin(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.txt")
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", out); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o644 {
		t.Errorf("new output mode %v", st.Mode().Perm())
	}
	os.Chmod(out, 0o640)
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", out); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o640 {
		t.Errorf("replaced output mode %v, want the old file's 0640", st.Mode().Perm())
	}
	in := filepath.Join(dir, "in.txt")
	if _, _, err := runCLI(t, "traces", "convert", "gpt-train", in); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	if _, _, err := runCLI(t, "run", "--trace", "-", "--strategy", "torch", "--out", in); err == nil || !strings.Contains(err.Error(), "refusing to overwrite an input") {
		t.Errorf("stdin redirected from the output: %v", err)
	}
}

// TestReadOnlyOutput: an output that is a read-only file, or in a
// read-only directory, is refused rather than replaced by the rename
// (which root, or anyone owning the directory, could do).
func TestReadOnlyOutput(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.html")
	if err := os.WriteFile(ro, []byte("keep"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "report", "--trace", "gpt-train", "--strategy", "torch", "--out", ro); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only output: %v", err)
	}
	if b, _ := os.ReadFile(ro); string(b) != "keep" {
		t.Errorf("the read-only file was replaced")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(sub, 0o755)
	if _, _, err := runCLI(t, "run", "--trace", "gpt-train", "--strategy", "torch", "--out", filepath.Join(sub, "r.txt")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("output in a read-only directory: %v", err)
	}
}

// TestOutputDash: "-" as an output is standard output, as "-" is standard
// input for --trace; `traces convert IN -` wrote a file named "-".
func TestOutputDash(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"traces", "convert", "gpt-train", "-"}, "membench-trace 1\n"},
		{[]string{"traces", "compile", "gpt-train", "-"}, "membench-trace 2\n"},
		{[]string{"run", "--trace", "gpt-train", "--strategy", "torch", "--out", "-"}, "BenchmarkReplay/trace=gpt-train"},
		{[]string{"report", "--trace", "gpt-train", "--strategy", "torch", "--out", "-"}, "<!DOCTYPE html>"},
	} {
		out, _, err := runCLI(t, c.args...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%v: %v, output %.80q", c.args, err, out)
		}
		if _, err := os.Stat("-"); err == nil {
			t.Fatalf("%v wrote a file named -", c.args)
		}
	}
}
