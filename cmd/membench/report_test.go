package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"membench/internal/pagewait"
)

// optionRE finds each chart's option in a page (see charts/page.go).
var optionRE = regexp.MustCompile(`<script type="application/json" class="chart-option" data-chart="([^"]+)">([^<]*)</script>`)

// writeReport runs `membench report` with args into a temporary file
// and returns the page.
func writeReport(t *testing.T, args ...string) (string, []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	if _, _, err := runCLI(t, append(append([]string{"report"}, args...), "--out", out)...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

// defaultReport is the page `membench report` writes with no arguments,
// made once per test binary: TestReportDefault checks it and TestReportBrowser
// opens it (each report of the whole corpus runs its capacity searches,
// seconds of replays).
var defaultReport = struct {
	once sync.Once
	page []byte
	err  error
}{}

func defaultPage(t *testing.T) []byte {
	t.Helper()
	defaultReport.once.Do(func() {
		dir, err := os.MkdirTemp("", "membench-report")
		if err != nil {
			defaultReport.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "report.html")
		var so, se bytes.Buffer
		if err := run(&so, &se, []string{"membench", "report", "--out", out}); err != nil {
			defaultReport.err = fmt.Errorf("membench report: %v\n%s", err, se.String())
			return
		}
		defaultReport.page, defaultReport.err = os.ReadFile(out)
	})
	if defaultReport.err != nil {
		t.Fatal(defaultReport.err)
	}
	return defaultReport.page
}

// checkStatic checks what can be checked without a browser: size, no
// remote reference, parseable options.
func checkStatic(t *testing.T, page []byte) map[string]bool {
	t.Helper()
	if n := len(page); n > 5<<20 {
		t.Errorf("page is %d bytes, over 5 MB", n)
	}
	// A page that fetched anything would name it in src=, href=, url()
	// or @import. ECharts' own text holds XML namespace names and its
	// licence's address, which nothing fetches.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)url\(\s*["']?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)<link[^>]+rel=["']?stylesheet`),
	} {
		if m := re.Find(page); m != nil {
			t.Errorf("page references a remote resource: %q", m)
		}
	}
	ids := map[string]bool{}
	for _, m := range optionRE.FindAllSubmatch(page, -1) {
		var v map[string]any
		if err := json.Unmarshal(m[2], &v); err != nil {
			t.Errorf("chart %s: option is not JSON: %v", m[1], err)
		}
		ids[string(m[1])] = true
	}
	if len(ids) == 0 {
		t.Error("page has no charts")
	}
	return ids
}

// TestReportDefault is the command on a fresh clone: the
// embedded corpus, the default strategies and device. The page is under
// 5 MB, fetches nothing, has every part, and a second run writes the
// same bytes.
func TestReportDefault(t *testing.T) {
	page := defaultPage(t)
	ids := checkStatic(t, page)
	for _, want := range []string{"chart-timeline-0", "chart-state-0", "chart-peaks", "chart-frag"} {
		if !ids[want] {
			t.Errorf("page lacks chart %s (has %v)", want, ids)
		}
	}
	// The verdict's cards come from the report's own capacity searches
	// (issue 12) when no capacity results are given.
	for _, want := range []string{"capacity searches of this report", "smallest card", "vs jax", "assumption", "gpt-train", "gpt-generate"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	t.Logf("default report: %d bytes, %d charts", len(page), len(ids))
	// The second report, seconds of capacity searches, runs beside
	// TestReportBrowser's browser, the package's only other parallel
	// part, which runs no command (run is called by one test at a time:
	// its flags are package variables).
	t.Parallel()
	_, again := writeReport(t)
	if !bytes.Equal(page, again) {
		t.Error("two reports of the same inputs differ")
	}
}

// capacityResults is what `membench capacity` will print (the format is
// benchfmt; only the min-capacity-B metric matters here).
const capacityResults = `Unit min-capacity-B assume=exact better=lower
BenchmarkCapacity/trace=gpt-train/device=a100-80g/strategy=jax 1 1073741824 min-capacity-B
BenchmarkCapacity/trace=gpt-train/device=a100-80g/strategy=torch 1 738197504 min-capacity-B
`

func TestReportCapacity(t *testing.T) {
	res := filepath.Join(t.TempDir(), "capacity.txt")
	if err := os.WriteFile(res, []byte(capacityResults), 0o644); err != nil {
		t.Fatal(err)
	}
	_, page := writeReport(t, "--trace", "gpt-train", "--strategy", "jax", "--strategy", "torch", "--results", res)
	ids := checkStatic(t, page)
	if !ids["chart-capacity"] {
		t.Errorf("no capacity chart (charts %v)", ids)
	}
	for _, want := range []string{"min-capacity-B", "704 MiB", "a100-40g"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte("No capacity results")) {
		t.Error("page says it has no capacity results")
	}
}

func TestReportErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("Unit x-B assume=exact\nUnit x-B assume=nothing\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--strategy", "mxnet"}, "unknown strategy"},
		{[]string{"report", "--device", "v100"}, "unknown device"},
		{[]string{"report", "--trace", "no-such-trace"}, "no such file"},
		{[]string{"report", "--results", "/no/such/file"}, "no such file"},
		{[]string{"report", "--results", bad}, "bad.txt:2"},
		{[]string{"report", "gpt-train"}, "unexpected argument"},
	} {
		_, _, err := runCLI(t, append(c.args, "--out", filepath.Join(t.TempDir(), "r.html"))...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// chromium finds Debian's chromium (or another Chrome) on this machine.
func chromium() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// TestReportBrowser opens reports in headless Chromium, served from a
// loopback server, and requires every chart to draw with data, no console
// error, and no request off the server. With MEMBENCH_SCREENSHOTS set to
// a directory (.ci/run sets it) it saves there a full-page screenshot of
// each page and logs its path; without, it takes none (a full-page
// screenshot of the default report took five seconds, and the file was
// removed with the test's temporary directory unseen).
func TestReportBrowser(t *testing.T) {
	exe := chromium()
	if exe == "" {
		t.Skip("no Chromium on this machine (Debian: apt-get install chromium): browser test skipped")
	}
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	var mu sync.Mutex
	var problems []string
	listener := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "browser log error: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			u := e.Request.URL
			if !strings.HasPrefix(u, srv.URL+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") && u != "about:blank" {
				problems = append(problems, "request off the loopback server: "+u)
			}
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(listener))
	defer cancel()
	// The first Run starts the browser; it must not have a timeout. The
	// browser starts while the pages are written.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	os.WriteFile(filepath.Join(dir, "default.html"), defaultPage(t), 0o644)
	res := filepath.Join(t.TempDir(), "capacity.txt")
	os.WriteFile(res, []byte(capacityResults), 0o644)
	_, page := writeReport(t, "--trace", "gpt-train", "--strategy", "jax", "--strategy", "torch", "--strategy", "torch:expandable_segments=true", "--device", "a100-40g", "--device", "tpu-v5e", "--results", res)
	os.WriteFile(filepath.Join(dir, "capacity.html"), page, 0o644)
	if err := <-started; err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	// The pages are written: the rest runs no command, and runs beside
	// TestReportDefault's second report.
	t.Parallel()
	shots := os.Getenv("MEMBENCH_SCREENSHOTS")
	for _, name := range []string{"default", "capacity"} {
		t.Run(name, func(t *testing.T) {
			tctx, tcancel := context.WithTimeout(ctx, 90*time.Second)
			defer tcancel()
			if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/"+name+".html")); err != nil {
				t.Fatal(err)
			}
			// Every chart instance draws ("finished" sets MB.drawn).
			if err := pagewait.Drawn(tctx, 60*time.Second); err != nil {
				n, _ := chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify({drawn: typeof MB === "object" ? Object.keys(MB.drawn) : null, charts: document.querySelectorAll(".chart").length})`))
				t.Fatalf("charts did not all draw: %v (%s)", err, n)
			}
			type chartData struct {
				ID       string
				Instance bool
				Series   int
				Points   int
				Width    int
				Height   int
			}
			got, err := chromedp.Run(tctx, chromedp.Evaluate[[]chartData](`Array.prototype.map.call(document.querySelectorAll(".chart"), function (el) {
				var c = echarts.getInstanceByDom(el), r = {ID: el.id, Instance: !!c, Series: 0, Points: 0, Width: 0, Height: 0};
				if (!c) { return r; }
				r.Width = c.getWidth(); r.Height = c.getHeight();
				(c.getOption().series || []).forEach(function (s) {
					var n = (s.data || []).length;
					if (n > 0) { r.Series++; r.Points += n; }
				});
				return r;
			})`))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatal("no charts on the page")
			}
			for _, c := range got {
				if !c.Instance || c.Series == 0 || c.Points == 0 || c.Width < 100 || c.Height < 100 {
					t.Errorf("chart %s: %+v: not drawn with data", c.ID, c)
				}
			}
			t.Logf("%d charts drawn: %+v", len(got), got)
			if shots != "" {
				png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(shots, "report-"+name+".png")
				if err := os.WriteFile(p, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", p)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range problems {
				t.Error(p)
			}
			problems = nil
		})
	}
}

// TestReportCompiledTrace: the report of a compiled trace (traces compile)
// draws its state maps. Their layouts replay the trace up to the peak, an
// event inside a launch (a step's temp), and that cut replay was held to
// the rule that every launch ends before the trace does: every report of
// a compiled trace failed with "the launch of "step" begun at event N
// never ends", while run, sweep and capacity replayed it.
func TestReportCompiledTrace(t *testing.T) {
	dir := t.TempDir()
	perOp, compiled, out := filepath.Join(dir, "t.txt"), filepath.Join(dir, "c.txt"), filepath.Join(dir, "r.html")
	if _, stderr, err := runCLI(t, "traces", "gen", "transformer-train", "--param", "steps=2", "--param", "layers=2", "--param", "batch=1", "--param", "seq=64", "--out", perOp); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI(t, "traces", "compile", perOp, compiled); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, dev := range []string{"a100-80g", "tpu-v5e"} {
		if _, stderr, err := runCLI(t, "report", "--trace", compiled, "--strategy", "jax", "--strategy", "jax:jit=false", "--device", dev, "--out", out); err != nil {
			t.Errorf("report of a compiled trace on %s: %v\n%s", dev, err, stderr)
		}
	}
}
