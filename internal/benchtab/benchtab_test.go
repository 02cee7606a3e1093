package benchtab

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"membench/internal/gotool"
)

// The golden files under testdata/golden are rewritten by
//
//	go test ./internal/benchtab -run Compare -update
//
// The flag is registered only if no other test file of the package has
// registered one of that name.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func compareUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const compareDir = "testdata"

// compareCases are benchstat command lines run in testdata; each
// is also a golden test of the three formats. The inputs are described in
// testdata/README.md.
var compareCases = []struct {
	name string
	args []string
	// notBenchstat marks a case whose statistics deliberately differ
	// from benchstat's (assume=normal).
	notBenchstat bool
	// json adds a JSON golden (kept to a few cases: it is verbose).
	json bool
}{
	// (a) one `membench run` file, strategies side by side: exact units,
	// n=1, every delta shown; zero-valued metrics (no geomean).
	{name: "strategies", args: []string{"-col", "/strategy", "run-strategies.txt"}, json: true},
	// (b) old and new runs of the same traces. Their differing commit:
	// lines split the tables unless ignored.
	{name: "oldnew", args: []string{"-ignore", "commit", "-col", ".file", "old.txt", "new.txt"}, json: true},
	{name: "oldnew-split", args: []string{"old.txt", "new.txt"}},
	{name: "oldnew-labels", args: []string{"-ignore", "commit", "before=old.txt", "after=new.txt"}},
	// Pooling old and new under -col /strategy: benchstat merges the two
	// files' samples silently; exact units then warn about the spread.
	{name: "oldnew-pooled", args: []string{"-ignore", "commit", "-col", "/strategy", "-row", "/trace", "old.txt", "new.txt"}},
	// (c) repeated runs under assume=nothing: medians, confidence
	// intervals, U-test p-values, too-few-samples and all-equal notes,
	// differing benchmark sets, B/s (from MB/s) and an exact unit whose
	// values differ.
	{name: "synth", args: []string{"synth-old.txt", "synth-new.txt"}, json: true},
	{name: "synth-alpha", args: []string{"-alpha", "0.001", "-confidence", "0.8", "synth-old.txt", "synth-new.txt"}},
	{name: "synth-size-cols", args: []string{"-row", ".name", "-col", "/size", "synth-new.txt"}, json: true},
	// (d) filters and other projections.
	{name: "filter", args: []string{"-filter", "/device:a100-40g /strategy:(jax OR torch) .unit:(peak-reserved-B OR frag-%)", "-row", "/trace", "-col", "/strategy", "run-strategies.txt"}, json: true},
	{name: "filter-pooled-rows", args: []string{"-filter", ".unit:(peak-reserved-B OR device-mallocs)", "-row", "/trace", "-col", "/strategy", "run-strategies.txt"}},
	{name: "device-strategy-cols", args: []string{"-filter", ".unit:(peak-reserved-B OR modeled-alloc-sec)", "-row", "/trace", "-col", "/device,/strategy", "run-strategies.txt"}},
	{name: "fixed-order", args: []string{"-filter", ".unit:peak-reserved-B", "-row", "/trace@alpha,/device", "-col", "/strategy@(torch jax)", "run-strategies.txt"}},
	{name: "synth-no-table", args: []string{"-table", "", "-filter", ".name:Alloc", "-row", "/size", "-col", ".file", "synth-old.txt", "synth-new.txt"}},
	// assume=normal: mean, t interval and Welch t-test. benchstat treats
	// the unit as assume=nothing, so only the golden files check it.
	{name: "normal", args: []string{"-col", "note", "synth-normal.txt"}, notBenchstat: true, json: true},
}

// compareArgs turns benchstat flags and files into options and paths.
func compareArgs(t *testing.T, args []string) (Options, []string) {
	t.Helper()
	o := DefaultOptions
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if len(args) < 2 {
			t.Fatalf("flag %s lacks a value", args[0])
		}
		v := args[1]
		switch args[0] {
		case "-table":
			o.Table = v
		case "-row":
			o.Row = v
		case "-col":
			o.Col = v
		case "-ignore":
			o.Ignore = v
		case "-filter":
			o.Filter = v
		case "-alpha":
			o.Alpha = compareParseFloat(t, v)
		case "-confidence":
			o.Confidence = compareParseFloat(t, v)
		default:
			t.Fatalf("unknown flag %s", args[0])
		}
		args = args[2:]
	}
	return o, args
}

func compareParseFloat(t *testing.T, s string) float64 {
	t.Helper()
	var x float64
	if _, err := fmt.Sscan(s, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

// compareIn runs ReadFiles on files of testdata, as benchstat
// would with args there, and returns the three formats.
func compareIn(t *testing.T, args []string) (text, csv, csvWarn, js string, c *Tables) {
	t.Helper()
	opts, files := compareArgs(t, args)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(compareDir); err != nil {
		t.Fatal(err)
	}
	c, err = ReadFiles(files, nil, opts)
	os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	var tb, cb, wb, jb bytes.Buffer
	if err := c.WriteText(&tb); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteCSV(&cb, &wb); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	return tb.String(), cb.String(), wb.String(), jb.String(), c
}

// TestCompareGolden checks the text and CSV (with its warnings) outputs
// of every case, and the JSON of some, against testdata/golden.
func TestCompareGolden(t *testing.T) {
	for _, tc := range compareCases {
		t.Run(tc.name, func(t *testing.T) {
			text, csv, warn, js, _ := compareIn(t, tc.args)
			compareGolden(t, tc.name+".txt", text)
			compareGolden(t, tc.name+".csv", csv)
			compareGolden(t, tc.name+".csv-warnings", warn)
			if tc.json {
				compareGolden(t, tc.name+".json", js)
			}
		})
	}
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(compareDir, "golden", name)
	if compareUpdate() {
		if got == "" {
			os.Remove(path)
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !(os.IsNotExist(err) && got == "") {
		t.Fatalf("%v (run go test ./internal/benchtab -run Compare -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./internal/benchtab -run Compare -update rewrites it):\n%s", name, compareFirstDiff(string(want), got))
	}
}

// firstDiff shows the first line where two outputs differ.
func compareFirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\nwant: " + w + "\n got: " + g
		}
	}
	return "(no line differs)"
}

// TestCompareMatchesBenchstat runs the real benchstat pinned in go.mod
// (go tool benchstat) on every case and requires the same tables:
//
//   - text: the same tokens on every line once the layout (runs of
//     spaces and the │ rules) is ignored, so every number agrees: the
//     scaled centres, the ± ranges, the deltas or "~", the p-values and
//     sample sizes, the geomean row, the table key lines, the headers and
//     the footnotes;
//   - csv: byte for byte, unrounded centres included, and the same cell
//     warnings on stderr.
func TestCompareMatchesBenchstat(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	for _, tc := range compareCases {
		if tc.notBenchstat {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			text, csv, warn, _, _ := compareIn(t, tc.args)

			bsText, bsErr := runBenchstat(t, tc.args...)
			if bsErr != "" {
				t.Fatalf("benchstat wrote to stderr:\n%s", bsErr)
			}
			want, got := compareTextTokens(bsText), compareTextTokens(text)
			numbers := 0
			for i := 0; i < max(len(want), len(got)); i++ {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					t.Fatalf("text line %d differs (tokens compared, spacing ignored):\nbenchstat: %s\n  compare: %s\n\nbenchstat output:\n%s\ncompare output:\n%s", i+1, w, g, bsText, text)
				}
				for _, f := range strings.Fields(w) {
					if strings.ContainsAny(f, "0123456789") {
						numbers++
					}
				}
			}

			bsCSV, bsCSVErr := runBenchstat(t, append([]string{"-format", "csv"}, tc.args...)...)
			if csv != bsCSV {
				t.Errorf("csv differs from benchstat's:\n%s", compareFirstDiff(bsCSV, csv))
			}
			if warn != bsCSVErr {
				t.Errorf("csv warnings differ from benchstat's:\nbenchstat:\n%s\ncompare:\n%s", bsCSVErr, warn)
			}
			t.Logf("%d lines, %d numeric tokens agree", len(want), numbers)
		})
	}
}

// benchstatPath is the binary `go tool benchstat` runs (the version go.mod
// pins), found once by gotool.Path. Starting the go command for each of
// the two dozen runs took most of TestCompareMatchesBenchstat's time.
func benchstatPath(t *testing.T) string {
	t.Helper()
	p, err := gotool.Path("benchstat")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runBenchstat(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(benchstatPath(t), args...)
	cmd.Dir = compareDir
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchstat %s: %v\n%s", strings.Join(args, " "), err, se.String())
	}
	return so.String(), se.String()
}

// textTokens reduces a text table to its tokens, line by line: the rules
// (│) and runs of spaces are layout, not content.
func compareTextTokens(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Join(strings.Fields(strings.ReplaceAll(l, "│", " ")), " "))
	}
	return out
}

// TestCompareNormal checks assume=normal against benchmath directly:
// the mean, its t interval, and the Welch t-test with alpha applied
// (benchmath leaves the t-test's alpha zero).
func TestCompareNormal(t *testing.T) {
	_, _, _, _, c := compareIn(t, []string{"-col", "note", "synth-normal.txt"})
	if len(c.Tables) != 1 {
		t.Fatalf("%d tables", len(c.Tables))
	}
	tb := c.Tables[0]
	if tb.Assumption != "normal" || tb.Unit != "wall-sec" || tb.Better != -1 {
		t.Fatalf("table %q %q %d", tb.Unit, tb.Assumption, tb.Better)
	}
	for _, r := range tb.Rows {
		before, after := r.Cells[0], r.Cells[1]
		if len(before.Values) != 8 || len(after.Values) != 8 {
			t.Fatalf("%s: n=%d,%d", r.Label, len(before.Values), len(after.Values))
		}
		mean := 0.0
		for _, v := range after.Values {
			mean += v
		}
		mean /= float64(len(after.Values))
		if math.Abs(after.Center-mean) > 1e-12 {
			t.Errorf("%s: center %v, mean %v", r.Label, after.Center, mean)
		}
		th := benchmath.DefaultThresholds
		sum := benchmath.AssumeNormal.Summary(benchmath.NewSample(append([]float64(nil), after.Values...), &th), 0.95)
		if sum.Lo != after.Lo || sum.Hi != after.Hi {
			t.Errorf("%s: interval [%v, %v], benchmath [%v, %v]", r.Label, after.Lo, after.Hi, sum.Lo, sum.Hi)
		}
		cmp := benchmath.AssumeNormal.Compare(benchmath.NewSample(append([]float64(nil), before.Values...), &th), benchmath.NewSample(append([]float64(nil), after.Values...), &th))
		d := after.Delta
		if d.P != cmp.P || d.Alpha != 0.05 || !strings.HasPrefix(d.Test, "p=") {
			t.Errorf("%s: p %v alpha %v %q, benchmath p %v", r.Label, d.P, d.Alpha, d.Test, cmp.P)
		}
		if d.P < 0.05 && d.Text == "~" {
			t.Errorf("%s: p=%v but the delta is ~", r.Label, d.P)
		}
	}
}

// TestCompareExact checks the exact assumption on a run file: n=1
// samples, the value itself as centre, a delta for every change.
func TestCompareExact(t *testing.T) {
	_, _, _, _, c := compareIn(t, []string{"-filter", ".unit:peak-reserved-B /device:a100-40g /trace:gpt-train", "-col", "/strategy", "run-strategies.txt"})
	if len(c.Tables) != 1 || len(c.Tables[0].Rows) != 1 {
		t.Fatalf("want one table of one row, got %+v", c.Tables)
	}
	tb := c.Tables[0]
	if tb.Assumption != "exact" || tb.Better != -1 {
		t.Errorf("assumption %q better %d", tb.Assumption, tb.Better)
	}
	var labels []string
	for _, col := range tb.Cols {
		labels = append(labels, col.Label)
	}
	if got := strings.Join(labels, " "); got != "jax tf torch torch:expandable_segments=true" {
		t.Errorf("columns %q", got)
	}
	cells := tb.Rows[0].Cells
	if cells[0].Center != 31804391424 || cells[0].Range != "0%" || cells[0].Delta != nil {
		t.Errorf("jax cell %+v", cells[0])
	}
	d := cells[2].Delta
	if cells[2].Center != 702545920 || d == nil || d.Test != "n=1" || !d.Significant() || d.Text != "-97.79%" {
		t.Errorf("torch cell %+v delta %+v", cells[2], d)
	}
	if p, ok := d.Pct(cells[2].Center); !ok || math.Abs(p-(702545920.0/31804391424-1)*100) > 1e-9 {
		t.Errorf("pct %v %v", p, ok)
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "BenchmarkX 1 10 ns/op\n")
	bad := write("bad.txt", "Unit x-B assume=exact\nBenchmarkX 1 10 ns/op\nBenchmarkY 1 ten ns/op\nBenchmarkZ 1 5\n")
	assume := write("assume.txt", "Unit x-B assume=gaussian\nBenchmarkX 1 10 x-B\n")
	empty := write("empty.txt", "goos: linux\n")
	// NaN hung the comparison (the U test of a NaN sample never
	// returns); infinities printed as +InfT.
	nan := write("nan.txt", "BenchmarkX 1 10 ns/op\nBenchmarkX 1 NaN ns/op\nBenchmarkX 1 3 ns/op 1 B/op\n")
	inf := write("inf.txt", "BenchmarkX 1 10 ns/op -Inf x-B\n")
	// Every result carries the configuration in effect, and benchproc
	// keeps a key per distinct one: keys added one by one between
	// results cost time and memory quadratic in the file (5,000 of them,
	// a 90 KB file, took 1.3 GB and more than 5 s).
	var cfg strings.Builder
	for i := range maxConfigKeys + 1 {
		fmt.Fprintf(&cfg, "k%d: v\nBenchmarkX 1 %d ns/op\n", i, i)
	}
	manyKeys := write("keys.txt", cfg.String())
	if _, err := ReadFiles([]string{manyKeys}, nil, DefaultOptions); err == nil || strings.Contains(err.Error(), "cut short") {
		t.Errorf("many keys: error %v, want the limit alone", err)
	}
	// benchfmt's scanner stops at a line longer than 64 KiB and named
	// the line before it, without the limit.
	long := write("long.txt", "BenchmarkX 1 10 ns/op\n# "+strings.Repeat("x", 70000)+"\nBenchmarkX 1 11 ns/op\n")
	// At the limit a line reads; one byte more, also the last line
	// without its newline, does not.
	atLimit := "# " + strings.Repeat("x", 65533) + "\n"
	if _, err := ReadFiles([]string{good, write("limit.txt", "BenchmarkX 1 10 ns/op\n"+atLimit+"BenchmarkX 1 11 ns/op\n")}, nil, DefaultOptions); err != nil {
		t.Errorf("a line of 65535 bytes: %v", err)
	}
	edge := write("edge.txt", "BenchmarkX 1 10 ns/op\n"+atLimit+"#"+atLimit[:len(atLimit)-1])

	// Syntax errors name the file and line, every one of them.
	_, err := ReadFiles([]string{good, bad}, nil, DefaultOptions)
	var se *benchfmt.SyntaxError
	if !errors.As(err, &se) || se.FileName != bad || se.Line != 3 {
		t.Errorf("syntax error: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), bad+":3: parsing measurement") || !strings.Contains(err.Error(), bad+":4: missing units") {
		t.Errorf("syntax error text: %v", err)
	}

	for _, c := range []struct {
		files []string
		opts  func(*Options)
		want  string
	}{
		{[]string{good, filepath.Join(dir, "missing.txt")}, nil, "missing.txt: no such file"},
		{[]string{assume}, nil, assume + ":1: unit x-B: assume=gaussian"},
		{[]string{empty}, nil, "no benchmark results"},
		{[]string{good, nan}, nil, nan + ":2: ns/op: NaN is not a finite number"},
		{[]string{inf, good}, nil, inf + ":1: x-B: -Inf is not a finite number"},
		{[]string{good}, func(o *Options) { o.Filter = ".name:Nope" }, `no result matches -filter ".name:Nope"`},
		{[]string{good}, func(o *Options) { o.Filter = "(" }, "parsing -filter"},
		{[]string{good}, func(o *Options) { o.Col = "/x@bogus" }, "parsing -col"},
		{[]string{good}, func(o *Options) { o.Row = ".unit" }, "parsing -row"},
		{[]string{good}, func(o *Options) { o.Alpha = 2 }, "-alpha"},
		{[]string{good}, func(o *Options) { o.Confidence = -1 }, "-confidence"},
		// NaN passed the range checks, and no p-value is below it.
		{[]string{good}, func(o *Options) { o.Alpha = math.NaN() }, "-alpha NaN"},
		{[]string{good}, func(o *Options) { o.Confidence = math.NaN() }, "-confidence NaN"},
		{[]string{good, long}, nil, long + ":2: a line longer than 65535 bytes"},
		{[]string{good, manyKeys}, nil, fmt.Sprintf("%s:%d: %d configuration keys in effect, more than the limit of %d", manyKeys, 2*maxConfigKeys+2, maxConfigKeys+1, maxConfigKeys)},
		{[]string{good, edge}, nil, edge + ":3: a line longer than 65535 bytes"},
		{nil, nil, "no input files"},
		{[]string{"-"}, nil, "no standard input"},
	} {
		o := DefaultOptions
		if c.opts != nil {
			c.opts(&o)
		}
		_, err := ReadFiles(c.files, nil, o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.files, err, c.want)
		}
	}
}

// TestCompareInputs checks labels, stdin and the disambiguation of a file
// given twice, which are benchstat's rules for .file.
func TestCompareInputs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.txt")
	if err := os.WriteFile(p, []byte("BenchmarkX 1 10 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin := strings.NewReader("BenchmarkX 1 20 ns/op\n")
	c, err := ReadFiles([]string{p, p, "base=" + p, "-"}, stdin, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, col := range c.Tables[0].Cols {
		labels = append(labels, col.Label)
	}
	want := p + "#0 " + p + "#1 base -"
	if got := strings.Join(labels, " "); got != want {
		t.Errorf("labels %q, want %q", got, want)
	}
	if d := c.Tables[0].Rows[0].Cells[3].Delta; d == nil || d.Test != "p=1.000 n=1" || d.Text != "~" {
		t.Errorf("stdin cell delta %+v", d)
	}
}

// TestComparePooledWarning: benchstat pools two files' samples silently
// when no projection keeps .file; the Tables say so.
func TestComparePooledWarning(t *testing.T) {
	_, _, _, _, c := compareIn(t, []string{"-ignore", "commit", "-col", "/strategy", "old.txt", "new.txt"})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "new.txt, old.txt") {
		t.Errorf("warnings %q", c.Warnings)
	}
	_, _, _, _, c = compareIn(t, []string{"-ignore", "commit .file", "-col", "/strategy", "old.txt", "new.txt"})
	if len(c.Warnings) != 0 {
		t.Errorf("-ignore .file: warnings %q", c.Warnings)
	}
}

func TestCompareHelpers(t *testing.T) {
	for i, want := range map[int]string{0: "A", 1: "B", 25: "Z", 26: "AA", 27: "AB", 51: "AZ", 52: "BA", 701: "ZZ", 702: "AAA"} {
		if got := spreadsheetCol(i); got != want {
			t.Errorf("spreadsheetCol(%d) = %q, want %q", i, got, want)
		}
	}
	if got := superscript(10) + superscript(7); got != "¹⁰⁷" {
		t.Errorf("superscripts %q", got)
	}
	if g := geomean([]float64{2, 8}); math.Abs(g-4) > 1e-12 {
		t.Errorf("geomean(2, 8) = %v", g)
	}
	if g := geomean([]float64{2, 0}); !math.IsNaN(g) {
		t.Errorf("geomean(2, 0) = %v, want NaN", g)
	}
}

// TestCompareCutShort: a results file whose last line has no newline is
// refused, naming its file and that line, wherever the cut fell: inside a
// unit's name (which benchfmt read as another unit) or between two
// metrics (which dropped the rest of the row), both of which read without
// an error before; inside a value, where benchfmt's own "missing units"
// comes with it. With its newline a line that parses reads, and so does an
// empty file's nothing.
func TestCompareCutShort(t *testing.T) {
	const row = "BenchmarkReplay/trace=t/strategy=a 1 10 ns/op 120 peak-live-B 130 modeled-alloc-sec\n"
	for _, c := range []struct {
		name, text string
		parses     bool // whether the line with its newline reads
	}{
		{"in a unit", row + row[:len(row)-9], true},
		{"between metrics", row + row[:len(row)-23], true},
		{"alone", row[:len(row)-1], true},
		{"in a value", row + row[:len(row)-20], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := strings.Count(c.text, "\n") + 1
			_, err := Read([]Input{{Name: "r.txt", R: strings.NewReader(c.text)}}, DefaultOptions)
			want := fmt.Sprintf("r.txt:%d: %v", lines, ErrCutShort)
			if err == nil || !errors.Is(err, ErrCutShort) || !strings.Contains(err.Error(), want) || c.parses && err.Error() != want {
				t.Errorf("error %v, want %s", err, want)
			}
			if _, err := Read([]Input{{Name: "r.txt", R: strings.NewReader(c.text + "\n")}}, DefaultOptions); c.parses && err != nil {
				t.Errorf("with its newline: %v", err)
			}
		})
	}
	if err := NewEndCheck(strings.NewReader("")).Err("e"); err != nil {
		t.Errorf("empty input: %v", err)
	}
}

// TestCompareUnfitWarning: a result whose fit is 0 is named in a warning
// whenever a table compares it, whatever the filter keeps (here not the
// fit unit itself), and a file of runs that all fit gives none: a run cut
// short by failed allocations reserves less and would read as better.
func TestCompareUnfitWarning(t *testing.T) {
	const in = "Unit fit assume=exact better=higher\n" +
		"Unit peak-reserved-B assume=exact better=lower\n" +
		"BenchmarkReplay/trace=t/strategy=jax 1 1 fit 900 peak-reserved-B\n" +
		"BenchmarkReplay/trace=t/strategy=torch 1 0 fit 600 peak-reserved-B\n" +
		"BenchmarkReplay/trace=u/strategy=torch 1 1 fit 700 peak-reserved-B\n"
	read := func(text, filter string) *Tables {
		t.Helper()
		opts := DefaultOptions
		opts.Col, opts.Filter = "/strategy", filter
		c, err := Read([]Input{{Label: "r.txt", Name: "r.txt", R: strings.NewReader(text)}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, filter := range []string{"*", ".unit:peak-reserved-B", "/trace:t"} {
		c := read(in, filter)
		if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "1 of the results compared did not fit") ||
			!strings.Contains(c.Warnings[0], "BenchmarkReplay/trace=t/strategy=torch (r.txt)") {
			t.Errorf("filter %s: warnings %q", filter, c.Warnings)
		}
	}
	if c := read(in, "/trace:u"); len(c.Warnings) != 0 {
		t.Errorf("only runs that fit compared: warnings %q", c.Warnings)
	}
}

// TestCompareUnfitWarningWithoutFit: results written before the fit
// metric existed say that allocations failed only by oom-events; such a
// result did not fit either (as the report reads it, charts' outcome) and
// is named in the warning, while oom-events 0 or a fit of 1 is not.
func TestCompareUnfitWarningWithoutFit(t *testing.T) {
	const in = "BenchmarkReplay/trace=t/strategy=torch 1 100000000 peak-reserved-B 0 oom-events\n" +
		"BenchmarkReplay/trace=t/strategy=tf 1 2000000 peak-reserved-B 1 oom-events\n" +
		"BenchmarkReplay/trace=t/strategy=jax 1 1 fit 3000000 peak-reserved-B 0 oom-events\n"
	opts := DefaultOptions
	opts.Col = "/strategy"
	c, err := Read([]Input{{Label: "old.txt", Name: "old.txt", R: strings.NewReader(in)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "1 of the results compared did not fit") ||
		!strings.Contains(c.Warnings[0], "BenchmarkReplay/trace=t/strategy=tf (old.txt)") || strings.Contains(c.Warnings[0], "torch") {
		t.Errorf("warnings %q", c.Warnings)
	}
}
