package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestActionCounts checks the entry-actions figure against the obvious
// way to count (a map by action name, sorted).
func TestActionCounts(t *testing.T) {
	acts := append(slices.Clone(knownActions[:]), "", "zz_unknown", "Alloc")
	for mask := 0; mask < 1<<len(acts); mask += 37 {
		var tr []TraceEntry
		for k, a := range acts {
			if mask&(1<<k) != 0 {
				for range k + 1 {
					tr = append(tr, TraceEntry{Action: a})
				}
			}
		}
		counts := map[string]int{}
		for _, e := range tr {
			if actionIndex(e.Action) < len(knownActions) {
				counts[e.Action]++
			} else {
				counts["(unknown)"]++
			}
		}
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%s %d", a, counts[a]))
		}
		raw := rawOf(tr)
		if got, want := actionCounts(&raw), strings.Join(parts, ", "); got != want {
			t.Fatalf("mask %#x: %q, want %q", mask, got, want)
		}
	}
}
