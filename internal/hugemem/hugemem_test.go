package hugemem

import (
	"bufio"
	"os"
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
// elements stay, the capacity is what was asked for at least, and large
// arrays start on a 2 MiB boundary.
func TestGrowKeepsElements(t *testing.T) {
	var xs []rec
	size := int(unsafe.Sizeof(rec{}))
	sawHuge := false
	for n := 1; n <= 3*Threshold/size; n = n*3/2 + 1 {
		xs = Grow(xs, n)
		if cap(xs) < n {
			t.Fatalf("Grow to %d: cap %d", n, cap(xs))
		}
		for len(xs) < n {
			i := int64(len(xs))
			xs = append(xs, rec{a: i, b: -i, c: [3]int32{int32(i), 1, 2}})
		}
		if big := cap(xs)*size >= Threshold; big && !Huge(xs) {
			t.Fatalf("cap %d (%d B): at %p, not on a huge page", cap(xs), cap(xs)*size, &xs[0])
		}
		if cap(xs)*size >= Threshold {
			sawHuge = true
		}
		for i := range xs {
			if w := int64(i); xs[i] != (rec{a: w, b: -w, c: [3]int32{int32(w), 1, 2}}) {
				t.Fatalf("after growing to %d: xs[%d] = %+v", n, i, xs[i])
			}
		}
	}
	if !sawHuge {
		t.Fatal("the array never reached the threshold")
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
	Grow([]withPtr(nil), Threshold)
}

// TestHugePages: where the kernel gives huge pages on request
// (transparent_hugepage "always" or "madvise"), a large array, once
// written, is in huge pages.
func TestHugePages(t *testing.T) {
	if !adviceSupported {
		t.Skip("no madvise on this system")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("no transparent huge pages")
	}
	xs := Grow([]int64(nil), 2*Threshold/8)
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

// TestMake: Make's elements, which may hold pointers, start on a 2 MiB
// boundary when the element size divides it (else on the first element
// past one), number n, and are zero; its capacity ends with them, so that
// an append cannot run into memory the block does not own.
func TestMake(t *testing.T) {
	type page struct {
		p    *int
		vals [511]int64
	}
	xs := Make[page](1000)
	if len(xs) != 1000 || cap(xs) != 1000 || !Huge(xs) {
		t.Fatalf("len %d, cap %d, huge %v", len(xs), cap(xs), Huge(xs))
	}
	for i := range xs {
		if xs[i].p != nil || xs[i].vals[0] != 0 {
			t.Fatalf("element %d not zero", i)
		}
	}
	odd := Make[[3]int64](100000) // 24 B: the first element past a boundary
	if a := uintptr(unsafe.Pointer(&odd[0])) & (hugePage - 1); a >= 24 {
		t.Errorf("24-byte elements start %d B past a 2 MiB boundary", a)
	}
	if len(Make[page](0)) != 0 {
		t.Error("Make(0) not empty")
	}
}
