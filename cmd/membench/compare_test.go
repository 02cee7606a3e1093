package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// compareData holds the inputs and golden outputs of benchtab
// tests (see internal/benchtab/testdata/README.md).
const compareData = "../../internal/benchtab/testdata"

func compareGoldenFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(compareData, "golden", name))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompareCLI drives `membench compare` through the real CLI on the
// harness cases and requires their golden outputs in every format. Files
// are passed as label=path so .file is the bare name, as in the goldens.
func TestCompareCLI(t *testing.T) {
	in := func(name string) string { return name + "=" + filepath.Join(compareData, name) }
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"strategies", []string{"-col", "/strategy", in("run-strategies.txt")}},
		{"oldnew", []string{"--ignore", "commit", "--col", ".file", in("old.txt"), in("new.txt")}},
		{"synth", []string{in("synth-old.txt"), in("synth-new.txt")}},
		{"filter", []string{"-filter", "/device:a100-40g /strategy:(jax OR torch) .unit:(peak-reserved-B OR frag-%)", "-row", "/trace", "-col", "/strategy", in("run-strategies.txt")}},
		{"synth-alpha", []string{"-alpha", "0.001", "-confidence", "0.8", in("synth-old.txt"), in("synth-new.txt")}},
	} {
		for _, format := range []string{"text", "csv", "json"} {
			if format == "json" && compareGoldenFile(t, c.golden+".json") == "" {
				continue // JSON goldens exist for a few cases only
			}
			args := append([]string{"compare", "--format", format}, c.args...)
			out, errOut, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			ext := map[string]string{"text": ".txt", "csv": ".csv", "json": ".json"}[format]
			if want := compareGoldenFile(t, c.golden+ext); out != want {
				t.Errorf("%v: output differs from golden/%s%s:\n%s", args, c.golden, ext, out)
			}
			wantErr := ""
			if format == "csv" {
				wantErr = compareGoldenFile(t, c.golden+".csv-warnings")
			}
			if errOut != wantErr {
				t.Errorf("%v: stderr %q, want %q", args, errOut, wantErr)
			}
		}
	}
}

// TestCompareRunOutput is the workflow end to end: `membench run` output
// compared by `membench compare` and by the real benchstat pinned in
// go.mod must give the same tables (tokens compared, spacing ignored).
func TestCompareRunOutput(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, _, err := runCLI(t, "run", "--trace", "gpt-train", "--trace", "resnet50-train", "--strategy", "jax", "--strategy", "torch", "--strategy", "torch:expandable_segments=true")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "run.txt")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-col", "/strategy", f},
		{"-row", "/trace", "-col", "/strategy", "-filter", ".unit:(peak-reserved-B OR frag-% OR modeled-alloc-sec)", f},
	} {
		got, errOut, err := runCLI(t, append([]string{"compare"}, args...)...)
		if err != nil || errOut != "" {
			t.Fatalf("compare %v: %v\n%s", args, err, errOut)
		}
		cmd := benchstatCommand(t, args...)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil || se.Len() > 0 {
			t.Fatalf("benchstat %v: %v\n%s", args, err, se.String())
		}
		if w, g := tokenLines(so.String()), tokenLines(got); w != g {
			t.Errorf("compare %v differs from benchstat:\nbenchstat:\n%s\ncompare:\n%s", args, so.String(), got)
		}
		if !strings.Contains(got, "peak-reserved-B") || !strings.Contains(got, "vs base") {
			t.Errorf("compare %v: output lacks the peak-reserved-B table:\n%s", args, got)
		}
	}
}

// tokenLines drops the layout of a text table: rules and runs of spaces.
func tokenLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(strings.Join(strings.Fields(strings.ReplaceAll(l, "│", " ")), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCompareCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("goos: linux\nBenchmarkX 1 10 ns/op\nBenchmarkX 1 x ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(compareData, "synth-old.txt")
	missing := filepath.Join(dir, "missing.txt")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare"}, "no input files"},
		{[]string{"compare", good, missing}, missing + ": no such file"},
		{[]string{"compare", bad}, bad + ":3: parsing measurement"},
		{[]string{"compare", "--format", "xml", good}, `--format "xml"`},
		{[]string{"compare", "-col", "/size@nope", good}, "parsing -col"},
		{[]string{"compare", "-filter", ".name:NoSuch", good}, "no result matches"},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	// Flags after the files are parsed as flags, as benchstat users write
	// them.
	after, _, err := runCLI(t, "compare", good, "-col", "/size")
	before, _, err2 := runCLI(t, "compare", "-col", "/size", good)
	if err != nil || err2 != nil || after != before {
		t.Errorf("compare FILE -col /size: %v %v", err, err2)
	}
}

// TestCompareCLIPooled: -col /strategy over two files pools their
// samples, which benchstat does silently; compare warns on stderr.
func TestCompareCLIPooled(t *testing.T) {
	old, new := filepath.Join(compareData, "old.txt"), filepath.Join(compareData, "new.txt")
	out, errOut, err := runCLI(t, "compare", "-ignore", "commit", "-col", "/strategy", old, new)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "warning: some cells pool results from several input files") {
		t.Errorf("stderr %q", errOut)
	}
	if !strings.Contains(out, "exact distribution expected") {
		t.Errorf("pooled exact values should be flagged:\n%s", out)
	}
}
