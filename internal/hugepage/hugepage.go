// Package hugepage asks the operating system to back a large, randomly
// read allocation with huge pages. With 10^6 live blocks a replay's
// records (the id tracker's pages, 160 MB for 10^6 live ids scattered over
// 13,000 pages) are read at random, and with 4 KiB pages nearly every
// read misses the processor's address translation cache as well as its
// data cache: a page-table walk, which on the project's virtual machine is
// a two-dimensional one, before the miss itself. With the machine's
// transparent huge pages set to always, the harness's own cost at 10^6
// live blocks fell from 98 to 73 ns an event (issue 15's live-set
// benchmark, 2026-11-24). The machine's setting is "madvise", as many
// distributions ship it, and the Go runtime no longer asks for huge pages
// for the heap, so the packages that hold such records ask for them here.
//
// The advice is best effort: where the system has no transparent huge
// pages, or refuses, nothing changes but the speed.
package hugepage

import "unsafe"

// Size is the huge page size the advice aims at: 2 MiB, the transparent
// huge page of x86-64 and of arm64 with 4 KiB pages. Only whole, aligned
// huge pages inside a range can be backed by one, so an allocation that
// should profit spans a few of them.
const Size = 2 << 20

// Advise asks for the whole Size-aligned huge pages inside the n bytes at
// p to be backed by huge pages when they are first touched. It does not
// touch the memory, and it reports nothing: a refusal changes only speed.
func Advise(p unsafe.Pointer, n uintptr) {
	if off, m := inner(uintptr(p), n); m > 0 {
		advise(unsafe.Add(p, off), m)
	}
}

// inner is the part of the n bytes at address a that whole, aligned huge
// pages cover: m bytes from off bytes on (m is 0 when there is none).
func inner(a, n uintptr) (off, m uintptr) {
	start := (a + Size - 1) &^ (Size - 1)
	end := (a + n) &^ (Size - 1)
	if end <= start {
		return 0, 0
	}
	return start - a, end - start
}
