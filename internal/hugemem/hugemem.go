// Package hugemem grows large arrays of plain values (no pointers) on a
// 2 MiB boundary of the Go heap with huge pages asked for there (Linux's
// madvise MADV_HUGEPAGE), so that a processor reaches every byte of a few
// megabytes through a handful of TLB entries; Advise asks the same for
// the whole huge pages inside any large allocation, whatever it holds.
//
// Why: at 10^6 live buffers the TPU model's free set (package spanset)
// keeps 9 MB of leaves, and the model (package tpurt) 16 MB of buffer
// records, that every placement and free reads at random. In 4 KiB pages
// those are 6,000 pages beside the replay's own, more than the
// processor's TLB holds, so that most of those reads, and the prefetches
// that ask for them ahead, first walk the page tables, which in a
// virtual machine costs several memory reads more. The Go runtime asks
// for huge pages for its own metadata only, not for the heap's arenas,
// and the machines this runs on leave transparent huge pages to madvise.
//
// The arrays stay in the Go heap (a byte slice the array is cut from), so
// that the collector frees them as before and paces itself by the same
// heap: an earlier version mapped them outside the heap, and a BFC
// replay at 10^6 live chunks with its records there became half again
// slower, most likely because the smaller heap made the collector run
// more often. Arrays below Threshold bytes are ordinary slices (doubled
// as they grow).
//
// The replay's id tracker (package traces) is the largest such structure:
// with 10^6 live ids its pages hold tens of megabytes, which every free
// reads at random. Its pages hold the replay's values, which may be
// pointers, so its blocks of pages come from Make, on a 2 MB boundary of
// a larger allocation. With the
// machine's transparent huge pages set to always, the harness's own cost
// at 10^6 live blocks fell from 98 to 73 ns an event (issue 15's live-set
// benchmark, 2026-11-24).
//
// It imports nothing from the module; spanset, tpurt and traces use it.
package hugemem

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Off, when set, makes Grow grow every array as an ordinary slice, and
// Advise ask nothing: for a benchmark that times a model built with huge
// pages against one built without, in one process (internal/livepair).
var Off bool

// Threshold is the size in bytes from which Grow aligns an array and asks
// for huge pages: smaller arrays' pages fit the TLB anyway.
const Threshold = 4 << 20

// hugePage is the size and alignment of a huge page (x86-64, and arm64
// with 4 KiB base pages).
const hugePage = 2 << 20

// Grow returns xs with room for at least n elements, its len and elements
// kept, with twice the room it had at least. Below Threshold bytes it is
// an ordinary slice; from there the array starts on a 2 MiB boundary and
// has huge pages asked for. T must hold no pointers (Grow panics
// otherwise): the array is cut from a byte slice, which the collector
// does not scan.
func Grow[T any](xs []T, n int) []T {
	if n <= cap(xs) {
		return xs
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	want := max(n, 2*cap(xs))
	if size == 0 || want*size < Threshold || Off {
		ys := make([]T, len(xs), want)
		copy(ys, xs)
		return ys
	}
	if !plain(reflect.TypeFor[T]()) {
		panic(fmt.Sprintf("hugemem: %v holds pointers", reflect.TypeFor[T]()))
	}
	bytes := (want*size + hugePage - 1) &^ (hugePage - 1)
	buf := make([]byte, bytes+hugePage)
	off := int(-uintptr(unsafe.Pointer(&buf[0])) & (hugePage - 1))
	adviseHuge(buf[off : off+bytes])
	ys := unsafe.Slice((*T)(unsafe.Pointer(&buf[off])), want)[:len(xs)]
	copy(ys, xs)
	return ys
}

// Make returns n zeroed elements of T that start on the first element at
// or after a 2 MiB boundary of a larger allocation, with the whole huge
// pages among them asked for (Advise): for an array whose elements may
// hold pointers, which Grow cannot cut from bytes, such as the replay's
// id tracker's blocks of pages (package traces). The elements before the
// boundary stay unused.
func Make[T any](n int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if size == 0 || n == 0 {
		return make([]T, n)
	}
	b := make([]T, n+int((hugePage+size-1)/size))
	off := (-uintptr(unsafe.Pointer(&b[0]))&(hugePage-1) + size - 1) / size
	xs := b[off : off+uintptr(n) : off+uintptr(n)]
	Advise(unsafe.Pointer(&xs[0]), uintptr(n)*size)
	return xs
}

// Huge reports whether xs starts on a huge page, as Grow's large arrays
// do.
func Huge[T any](xs []T) bool {
	return cap(xs) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(xs)))&(hugePage-1) == 0
}

// Advise asks for the whole, aligned huge pages inside the n bytes at p to
// be backed by huge pages when first touched, and reports nothing: a
// refusal changes only speed. The memory must be a fresh allocation that
// the program has not written yet (all zeros): pages the runtime has
// already faulted in, zeroing memory it used before, are dropped so that
// they fault in again as huge pages (adviseHuge), which would lose
// anything written there.
func Advise(p unsafe.Pointer, n uintptr) {
	if off, m := inner(uintptr(p), n); m > 0 && !Off {
		adviseHuge(unsafe.Slice((*byte)(unsafe.Add(p, off)), m))
	}
}

// inner is the part of the n bytes at address a that whole, aligned huge
// pages cover: m bytes from off bytes on (m is 0 when there is none).
func inner(a, n uintptr) (off, m uintptr) {
	start := (a + hugePage - 1) &^ (hugePage - 1)
	end := (a + n) &^ (hugePage - 1)
	if end <= start {
		return 0, 0
	}
	return start - a, end - start
}

// plain reports whether values of t hold no pointers.
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return plain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !plain(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
