// Package hugemem keeps large arrays of plain values (no pointers) in
// memory mapped outside the Go heap, aligned to 2 MiB and with huge pages
// asked for (Linux's madvise MADV_HUGEPAGE), so that a processor reaches
// every byte of a few megabytes through a handful of TLB entries.
//
// Why: at 10^6 live buffers the TPU model's free set (package spanset)
// keeps 9 MB of leaves that every placement and free reads at random. In
// 4 KiB pages those are 2,300 pages, beside the 4,000 of the model's
// buffer records and the replay's own, more than the processor's TLB
// holds, so that most leaf reads and the prefetches that ask for them
// ahead first walk the page tables, which in a virtual machine costs
// several memory reads more. The Go runtime does not ask for huge pages
// for its heap (Go 1.21.1 and later), and the machines this runs on
// leave transparent huge pages to madvise.
//
// Arrays below Threshold bytes stay ordinary Go slices: the small sets
// of most replays allocate as before.
//
// It imports nothing from the module; package spanset uses it.
package hugemem

import (
	"fmt"
	"reflect"
	"runtime"
	"unsafe"
)

// Threshold is the size in bytes from which Grow maps an array outside
// the Go heap: smaller arrays are cheaper as Go slices, and their pages
// fit the TLB anyway.
const Threshold = 4 << 20

// Region is the mapping that holds one array, if Grow made one. The zero
// Region holds none. A mapping is unmapped by Free, by the Grow that
// moves the array to a larger one, or once no Region refers to it (a
// finalizer): whoever keeps the array must keep its Region with it (a
// copy of the Region is as good), in the same struct, and pass both on
// together.
type Region struct {
	m *mapped
}

// mapped is one mapping, on the heap so that a finalizer can unmap it.
type mapped struct {
	mem []byte // the whole mapping; nil once unmapped
}

func (m *mapped) free() {
	if m.mem != nil {
		unmap(m.mem)
		m.mem = nil
	}
}

// Mapped reports whether the region holds a mapping.
func (r *Region) Mapped() bool { return r.m != nil && r.m.mem != nil }

// Free unmaps the region's mapping, if any: the array Grow returned for
// it must not be used afterwards.
func (r *Region) Free() {
	if r.m != nil {
		r.m.free()
		runtime.SetFinalizer(r.m, nil)
		r.m = nil
	}
}

// Grow returns xs with room for at least n elements, its len and
// elements kept: a Go slice (as append would grow it) while the array's
// bytes stay below Threshold, else an array in a new mapping of r with
// twice the room, whose old mapping, if any, it unmaps (so that nothing
// may keep a pointer into xs across the call). T must hold no pointers:
// the garbage collector does not look into the mapping. Where mapping
// fails or is not supported, it grows a Go slice.
func Grow[T any](r *Region, xs []T, n int) []T {
	if n <= cap(xs) {
		return xs
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	want := max(n, 2*cap(xs))
	if size == 0 || want*size < Threshold {
		ys := make([]T, len(xs), want)
		copy(ys, xs)
		return ys
	}
	if !plain(reflect.TypeFor[T]()) {
		panic(fmt.Sprintf("hugemem: %v holds pointers", reflect.TypeFor[T]()))
	}
	mem, ok := mapHuge(want * size)
	if !ok {
		ys := make([]T, len(xs), want)
		copy(ys, xs)
		return ys
	}
	ys := unsafe.Slice((*T)(unsafe.Pointer(&mem.aligned[0])), want)[:len(xs)]
	copy(ys, xs)
	r.Free()
	r.m = &mapped{mem: mem.all}
	runtime.SetFinalizer(r.m, (*mapped).free)
	return ys
}

// mapping is a fresh mapping: all of it, for unmap, and its part that
// starts on a 2 MiB boundary.
type mapping struct {
	all, aligned []byte
}

// hugePage is the size and alignment of a huge page (x86-64, arm64 with 4
// KiB base pages).
const hugePage = 2 << 20

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
