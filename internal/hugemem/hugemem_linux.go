package hugemem

import "syscall"

// adviseHuge asks the kernel for huge pages in b, which starts on one;
// without them (a kernel that has none, or refuses the advice) b works
// as well, in small pages.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, madvHugepage) }

// madvHugepage is MADV_HUGEPAGE, which package syscall does not name on
// every architecture.
const madvHugepage = 14

// adviceSupported says that adviseHuge asks.
const adviceSupported = true
