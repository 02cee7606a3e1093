package hugepage

import (
	"syscall"
	"unsafe"
)

// advise marks [p, p+n), whole huge pages, as wanting huge pages
// (madvise MADV_HUGEPAGE, which transparent huge pages set to "madvise"
// require); the kernel then backs those pages with huge ones on their
// first touch, or later through khugepaged.
func advise(p unsafe.Pointer, n uintptr) {
	_ = syscall.Madvise(unsafe.Slice((*byte)(p), n), syscall.MADV_HUGEPAGE)
}
