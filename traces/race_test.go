//go:build race

package traces

// raceEnabled: the race detector is on, under which the decoder's heap
// allocations are not those of a normal build (a profile with one deep
// stack allocates half as much again), so that allocation-count
// estimates cannot be checked against them.
const raceEnabled = true
