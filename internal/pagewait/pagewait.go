// Package pagewait waits, in a headless browser driven by chromedp, until
// a membench report's charts have all drawn: the browser tests of the
// charts package and of `membench report` read the page only after it.
//
// A navigation can leave the page's first JavaScript context behind while
// chromedp still holds its id (a context made for the document before the
// one that stays), and a poll sent to it fails with "Cannot find context
// with specified id" although nothing is wrong with the page (a run of
// `go test ./...` failed so on 2026-11-25, and the three runs of the same
// test after it passed). The poll is sent again, to the context that is
// current then, a few times.
package pagewait

import (
	"context"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// drawn is true once every chart element has drawn (the report's script
// sets MB.drawn[id] at each chart's "finished" event).
const drawn = `typeof MB === "object" && Object.keys(MB.drawn).length === document.querySelectorAll(".chart").length`

// staleTries bounds the polls sent again after a stale context.
const staleTries = 5

// Drawn returns nil once every chart of the page open in ctx has drawn,
// or the error of the last poll (chromedp.ErrPollingTimeout after
// timeout).
func Drawn(ctx context.Context, timeout time.Duration) error {
	for try := 1; ; try++ {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](drawn, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
		if err == nil || try == staleTries || !Stale(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stale reports whether err says that the JavaScript context it was sent
// to is gone (the DevTools protocol's error -32000 for it).
func Stale(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Cannot find context with specified id")
}
