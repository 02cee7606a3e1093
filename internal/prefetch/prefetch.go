// Package prefetch asks the processor to bring a cache line in without
// waiting for it.
package prefetch

import "unsafe"

// Line asks the processor to start loading the cache line that holds p,
// and returns at once: unlike a load, the prefetch does not hold up the
// instructions after it while the line is on its way.
func Line(p unsafe.Pointer) { line(uintptr(p)) }

// Lines asks for every cache line that the n bytes from p touch, as Line
// does for one, in one call: the TPU model asks for a whole leaf of its
// free set (nine or ten lines) before the free that reads it, and a call
// per line was a tenth of that model's instructions at 10^6 live buffers.
// n must be positive.
func Lines(p unsafe.Pointer, n uintptr) { lines(uintptr(p), n) }

// Lines9 asks for the nine cache lines from p, which must start a line:
// Lines for 576 bytes on a line, without its loop (a loop step and its
// test for each line, 33 of the 41 instructions a call took). The TPU
// model's free set asks for a leaf of nine lines before every free at
// 10^6 live buffers and for none at 10^3, so that its cost fell on the
// large set alone (docs/spanset-notes.md has the figures).
func Lines9(p unsafe.Pointer) { lines9(uintptr(p)) }
