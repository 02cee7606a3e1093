package hugemem

import (
	"syscall"
	"unsafe"
)

// mapHuge maps size bytes, rounded up to huge pages, starting on a huge
// page, and asks for huge pages there. The mapping is one huge page
// longer than that, for the alignment; the slack is never touched, so
// that it takes address space only.
func mapHuge(size int) (mapping, bool) {
	size = (size + hugePage - 1) &^ (hugePage - 1)
	all, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return mapping{}, false
	}
	off := int(-uintptr(unsafe.Pointer(&all[0])) & (hugePage - 1))
	aligned := all[off : off+size : off+size]
	// Without huge pages (a kernel that has none, or refuses the
	// advice) the mapping still works, in small pages.
	_ = syscall.Madvise(aligned, madvHugepage)
	return mapping{all: all, aligned: aligned}, true
}

// madvHugepage is MADV_HUGEPAGE, which package syscall does not name on
// every architecture.
const madvHugepage = 14

// mapSupported says that mapHuge maps.
const mapSupported = true

func unmap(mem []byte) { _ = syscall.Munmap(mem) }
