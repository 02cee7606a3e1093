package bfc

import (
	"membench/internal/livetouch"
	"os"
	"strconv"
	"strings"
	"testing"

	"membench/internal/livebench"
	"membench/strategies"
)

// BenchmarkLive is harness.BenchmarkReplayLive on the allocator alone
// (internal/livebench), in one region of 75% of an 80 GB card as JAX
// takes it. ns/op is per event; cpu-ns/event is the CPU time per event,
// which on a shared machine is steadier.
func BenchmarkLive(b *testing.B) {
	livebench.Sizes(b, func() livebench.Model {
		d, _ := strategies.ParseDevice("a100-80g")
		a := New(Options{Limit: d.Capacity / 4 * 3}, strategies.NewMemory(&d))
		return livebench.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch}
	})
}

// BenchmarkLiveTouchMalloc times the allocator with each allocation
// touched ahead (TouchMalloc) 1 or 2 event pairs before it against the
// allocator untouched (d0), in one process in alternate stretches
// (internal/livetouch); TOUCH_DISTS (a comma-separated list) overrides
// the distances.
func BenchmarkLiveTouchMalloc(b *testing.B) {
	dists := []int{0, 1, 2}
	if e := os.Getenv("TOUCH_DISTS"); e != "" {
		dists = nil
		for _, f := range strings.Split(e, ",") {
			d, _ := strconv.Atoi(f)
			dists = append(dists, d)
		}
	}
	livetouch.Sizes(b, dists, func() livetouch.Model {
		d, _ := strategies.ParseDevice("a100-80g")
		a := New(Options{Limit: d.Capacity / 4 * 3}, strategies.NewMemory(&d))
		return livetouch.Model{Malloc: a.Malloc, Free: a.Free, Touch: a.Touch, TouchMalloc: a.TouchMalloc}
	})
}
