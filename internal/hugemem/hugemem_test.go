package hugemem

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

type rec struct {
	a, b int64
	c    [3]int32
}

// TestGrowKeepsElements: through growths below and above Threshold the
// elements stay, the capacity is what was asked for at least, small
// arrays stay Go slices and large ones are mapped on a 2 MiB boundary.
func TestGrowKeepsElements(t *testing.T) {
	var r Region
	defer r.Free()
	var xs []rec
	size := int(unsafe.Sizeof(rec{}))
	for n := 1; n <= 3*Threshold/size; n = n*3/2 + 1 {
		xs = Grow(&r, xs, n)
		if cap(xs) < n {
			t.Fatalf("Grow to %d: cap %d", n, cap(xs))
		}
		for len(xs) < n {
			i := int64(len(xs))
			xs = append(xs, rec{a: i, b: -i, c: [3]int32{int32(i), 1, 2}})
		}
		big := cap(xs)*size >= Threshold
		if mapped := r.Mapped(); mapped != (big && mapSupported) {
			t.Fatalf("cap %d (%d B): mapped %v", cap(xs), cap(xs)*size, mapped)
		}
		if r.Mapped() && uintptr(unsafe.Pointer(&xs[0]))%hugePage != 0 {
			t.Fatalf("mapped array at %p, not on a huge page", &xs[0])
		}
		for i := range xs {
			if w := int64(i); xs[i] != (rec{a: w, b: -w, c: [3]int32{int32(w), 1, 2}}) {
				t.Fatalf("after growing to %d: xs[%d] = %+v", n, i, xs[i])
			}
		}
	}
	if !r.Mapped() && mapSupported {
		t.Fatal("an array of three thresholds was never mapped")
	}
	r.Free()
	if r.Mapped() {
		t.Error("Free left a mapping")
	}
}

// TestGrowRefusesPointers: a type with pointers is never put where the
// garbage collector does not look.
func TestGrowRefusesPointers(t *testing.T) {
	type withPtr struct {
		n int64
		p *int
	}
	defer func() {
		if recover() == nil {
			t.Error("Grow mapped a type that holds pointers")
		}
	}()
	var r Region
	defer r.Free()
	Grow(&r, []withPtr(nil), Threshold)
	if !mapSupported {
		panic("not mapped here")
	}
}

// TestHugePages: where the kernel gives huge pages on request
// (transparent_hugepage "always" or "madvise"), a mapped array, once
// written, is in huge pages.
func TestHugePages(t *testing.T) {
	if !mapSupported {
		t.Skip("no mapping on this system")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("no transparent huge pages")
	}
	var r Region
	defer r.Free()
	xs := Grow(&r, []int64(nil), 2*Threshold/8)
	xs = xs[:cap(xs)]
	for i := range xs {
		xs[i] = int64(i)
	}
	start := uintptr(unsafe.Pointer(&xs[0]))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's header: "lo-hi perms offset dev inode [path]".
		if f := strings.Fields(line); len(f) >= 5 && len(f[1]) == 4 && strings.Contains(f[0], "-") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, errA := strconv.ParseUint(lo, 16, 64)
			b, errB := strconv.ParseUint(hi, 16, 64)
			in = errA == nil && errB == nil && uint64(start) >= a && uint64(start) < b
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			if kb == 0 {
				t.Errorf("the mapping of %d B at %#x has no huge pages", len(xs)*8, start)
			}
			return
		}
	}
	t.Errorf("no mapping at %#x in /proc/self/smaps", start)
}

// TestDroppedRegionUnmapped: a mapping that no Region refers to any more
// is unmapped once the collector finds it, and Free unmaps at once.
func TestDroppedRegionUnmapped(t *testing.T) {
	if !mapSupported {
		t.Skip("no mapping on this system")
	}
	at := func() uintptr {
		r := new(Region)
		xs := Grow(r, []int64(nil), Threshold/8)
		return uintptr(unsafe.Pointer(&xs[:1][0]))
	}()
	for range 10 {
		runtime.GC()
		if !inMaps(t, at) {
			break
		}
	}
	if inMaps(t, at) {
		t.Errorf("the mapping at %#x outlived its Region", at)
	}
	var r Region
	xs := Grow(&r, []int64(nil), Threshold/8)
	at = uintptr(unsafe.Pointer(&xs[:1][0]))
	if !inMaps(t, at) {
		t.Fatalf("no mapping at %#x", at)
	}
	r.Free()
	if inMaps(t, at) {
		t.Errorf("Free left the mapping at %#x", at)
	}
}

// inMaps reports whether an address is mapped, by /proc/self/maps.
func inMaps(t *testing.T, x uintptr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		lo, rest, ok := strings.Cut(line, "-")
		if !ok {
			continue
		}
		hi, _, _ := strings.Cut(rest, " ")
		a, errA := strconv.ParseUint(lo, 16, 64)
		c, errC := strconv.ParseUint(hi, 16, 64)
		if errA == nil && errC == nil && uint64(x) >= a && uint64(x) < c {
			return true
		}
	}
	return false
}
