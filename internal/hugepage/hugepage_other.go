//go:build !linux

package hugepage

import "unsafe"

// advise does nothing: only Linux's transparent huge pages take advice.
func advise(p unsafe.Pointer, n uintptr) {}
