package charts

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"membench/internal/pagewait"
	"membench/traces"
	"membench/traces/corpus"
)

// TestBrowserFailedRun opens, in headless Chromium, the report of
// gpt-train with jax at its defaults, jax:mem_fraction=0.0001 (which does
// not fit: its first OOM is at event 22) and torch, and checks what a
// reader sees: the failed run is marked in the verdict and the comparison
// table and is not the least; the peaks charts draw its "did not fit"
// label and the timeline its first-OOM line; the legends hold every item
// without paging or truncating, and a click on an item hides its series;
// no console error. Issue 12: "jax:mem_fraction=0.0001 shows fit 0 and is
// marked failed in the table and the report (a browser test asserts the
// marker)". With MEMBENCH_SCREENSHOTS set to a directory (.ci/run sets
// it) it saves there a full-page screenshot and logs its path; without,
// it takes none (the screenshot was most of the test's time, and it was
// removed with the test's temporary directory unseen).
func TestBrowserFailedRun(t *testing.T) {
	exe := ""
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("no Chromium on this machine (Debian: apt-get install chromium): browser test skipped")
	}
	const bad = "jax:mem_fraction=0.0001"
	rep := &Report{Command: "membench report --trace gpt-train --strategy jax --strategy " + bad + " --strategy torch"}
	open := func() traces.Reader {
		r, err := corpus.Open("gpt-train")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, s := range []string{"jax", bad, "torch"} {
		rep.Runs = append(rep.Runs, replay(t, "gpt-train", open, s, "a100-80g"))
	}
	if r := rep.Runs[1].Result; r.Fit() || r.FirstOOMEvent() != 22 {
		t.Fatalf("%s: fit %v, first OOM %d", bad, r.Fit(), r.FirstOOMEvent())
	}
	var page bytes.Buffer
	if err := Write(&page, rep); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "failed.html"), page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	var mu sync.Mutex
	var problems []string
	listener := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console %s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
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
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 90*time.Second)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/failed.html")); err != nil {
		t.Fatal(err)
	}
	if err := pagewait.Drawn(tctx, 60*time.Second); err != nil {
		t.Fatalf("charts did not all draw: %v", err)
	}

	type marks struct {
		VerdictRow, VerdictLeast, VerdictFailedLeast bool
		VerdictText                                  string
		TableHead                                    bool
		RunsRow                                      string
		Drawn                                        map[string][]string // chart id: drawn texts that say "did not fit"
		LegendTags                                   map[string]int      // chart id: failed tags in its legend
		Clipped                                      []string            // legend items not wholly visible
		Hidden                                       bool                // a legend click hid the series
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[marks](`(function () {
		var bad = `+"`"+bad+"`"+`, r = {Drawn: {}, LegendTags: {}, Clipped: []};
		var row = document.querySelector('table.verdict tr.failed[data-strategy="' + bad + '"]');
		r.VerdictRow = !!row;
		r.VerdictText = row ? row.textContent : "";
		r.VerdictLeast = !!document.querySelector('table.verdict tr.least');
		r.VerdictFailedLeast = !!(row && row.querySelector('.leasttag'));
		r.TableHead = !!document.querySelector('table.comparison th.failed[data-strategy="' + bad + '"] .failtag');
		var runs = Array.prototype.filter.call(document.querySelectorAll("tr.failed"), function (tr) { return tr.textContent.indexOf(bad) >= 0 && tr.textContent.indexOf("gpt-train") >= 0; });
		r.RunsRow = runs.length ? runs[0].textContent : "";
		Array.prototype.forEach.call(document.querySelectorAll(".chart"), function (el) {
			var c = echarts.getInstanceByDom(el), texts = [];
			c.getZr().storage.getDisplayList(true).forEach(function (d) {
				var s = d.style && d.style.text;
				if (typeof s === "string" && s.indexOf("did not fit") >= 0) { texts.push(s); }
			});
			r.Drawn[el.id] = texts;
			var lg = document.getElementById(el.id + "-legend");
			r.LegendTags[el.id] = lg ? lg.querySelectorAll(".failtag").length : -1;
			if (lg) {
				var box = lg.getBoundingClientRect();
				Array.prototype.forEach.call(lg.querySelectorAll(".li"), function (it) {
					var b = it.getBoundingClientRect();
					if (b.width === 0 || b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5) {
						r.Clipped.push(el.id + ": " + it.textContent);
					}
				});
			}
		});
		var item = document.querySelector('#chart-timeline-0-legend .li[data-name="reserved · torch"]');
		if (item) {
			item.click();
			var c = echarts.getInstanceByDom(document.getElementById("chart-timeline-0"));
			r.Hidden = c.getOption().legend[0].selected["reserved · torch"] === false && item.classList.contains("off");
		}
		return r;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !got.VerdictRow || !strings.Contains(got.VerdictText, "did not fit") || !strings.Contains(got.VerdictText, "the first at event 22") {
		t.Errorf("verdict: no failed row for %s (%q)", bad, got.VerdictText)
	}
	if !got.VerdictLeast || got.VerdictFailedLeast {
		t.Errorf("verdict: least marked %v, on the failed run %v", got.VerdictLeast, got.VerdictFailedLeast)
	}
	if !got.TableHead {
		t.Error("comparison table: the failed run's column is not marked")
	}
	if !strings.Contains(got.RunsRow, "did not fit") {
		t.Errorf("runs table: %q", got.RunsRow)
	}
	for _, id := range []string{"chart-peaks", "chart-frag", "chart-frag-policy"} {
		if d := got.Drawn[id]; len(d) != 1 || !strings.Contains(d[0], "did not fit (first OOM at event 22)") {
			t.Errorf("%s: drawn marks %q, want one \"did not fit (first OOM at event 22)\"", id, d)
		}
	}
	if d := got.Drawn["chart-state-0"]; len(d) == 0 {
		t.Error("state map: the failed run's rows are not marked")
	}
	if d := got.Drawn["chart-timeline-0"]; len(d) != 1 || !strings.Contains(d[0], bad+" did not fit: first OOM, event 22") {
		t.Errorf("timeline: drawn marks %q", d)
	}
	for _, id := range []string{"chart-timeline-0", "chart-peaks", "chart-frag", "chart-frag-policy"} {
		if got.LegendTags[id] < 1 {
			t.Errorf("%s: legend does not mark the failed run", id)
		}
	}
	if len(got.Clipped) > 0 {
		t.Errorf("legend items not wholly shown: %q", got.Clipped)
	}
	if !got.Hidden {
		t.Error("a click on a legend item did not hide its series")
	}
	if shots := os.Getenv("MEMBENCH_SCREENSHOTS"); shots != "" {
		png, err := chromedp.Run(tctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(shots, "report-failed.png")
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
}
