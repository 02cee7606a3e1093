//go:build race

package harness

// raceEnabled: the race detector is on, under which sync.Pool drops a
// share of the items put into it at random, so that a replay's heap
// allocations depend on chance (replayers, strategies.Releaser).
const raceEnabled = true
