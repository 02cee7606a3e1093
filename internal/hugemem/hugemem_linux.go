package hugemem

import "syscall"

// adviseHuge asks the kernel for huge pages in b, which starts on one;
// without them (a kernel that has none, or refuses the advice) b works
// as well, in small pages. b must hold zeros only, as a new allocation
// does: the advice applies to pages faulted in after it, and the Go heap
// hands out memory it has used before zeroed, its small pages already
// faulted in by the zeroing, so adviseHuge then drops b's pages
// (MADV_DONTNEED), whose next touch faults in a huge page of zeros.
// Without the drop, an array grown over memory the collector had freed
// kept its small pages (TestGrowOnReusedMemory: 0 MiB of 32 in huge
// pages).
func adviseHuge(b []byte) {
	if syscall.Madvise(b, madvHugepage) != nil {
		return
	}
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}

// madvHugepage is MADV_HUGEPAGE, which package syscall does not name on
// every architecture.
const madvHugepage = 14

// adviceSupported says that adviseHuge asks.
const adviceSupported = true
