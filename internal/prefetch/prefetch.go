// Package prefetch asks the processor to bring a cache line in without
// waiting for it.
package prefetch

import "unsafe"

// Line asks the processor to start loading the cache line that holds p,
// and returns at once: unlike a load, the prefetch does not hold up the
// instructions after it while the line is on its way.
func Line(p unsafe.Pointer) { line(uintptr(p)) }
