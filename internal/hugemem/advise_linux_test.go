package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviseMarksTheRange checks, in the kernel's own account of the
// process's memory (/proc/self/smaps), that Advise marked the whole huge
// pages of an allocation as wanting huge pages (VmFlags "hg"): whether the
// kernel then finds huge pages free is the machine's business, the advice
// is ours.
func TestAdviseMarksTheRange(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skipf("no transparent huge pages here (%v)", err)
	}
	buf := make([]byte, 5*hugePage)
	Advise(unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	off, m := inner(uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	lo, hi := uintptr(unsafe.Pointer(&buf[0]))+off, uintptr(unsafe.Pointer(&buf[0]))+off+m
	covered := uintptr(0)
	smaps(t, lo, hi, func(start, end uintptr, field string) {
		if rest, ok := strings.CutPrefix(field, "VmFlags:"); ok {
			if !strings.Contains(" "+rest+" ", " hg ") {
				t.Errorf("%#x-%#x, inside the advised %#x-%#x, has VmFlags%s without hg", start, end, lo, hi, rest)
			}
			covered += min(end, hi) - max(start, lo)
		}
	})
	if covered != m {
		t.Errorf("smaps covers %#x of the %#x advised bytes", covered, m)
	}
	buf[0] = 1 // keep buf alive past the read
}

// smaps calls f with each field line of the kernel's account of the
// process's memory (/proc/self/smaps) that belongs to a mapping
// overlapping [lo, hi), with the mapping's bounds.
func smaps(t *testing.T, lo, hi uintptr, f func(start, end uintptr, field string)) {
	t.Helper()
	file, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer file.Close()
	var start, end uintptr
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's header starts "lo-hi perms"; its fields follow.
		var a, b uintptr
		var perms string
		if n, _ := fmt.Sscanf(line, "%x-%x %s", &a, &b, &perms); n == 3 && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			start, end = a, b
			continue
		}
		if start < hi && end > lo {
			f(start, end, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// anonHuge is the kernel's count of the bytes in huge pages of the
// mappings that overlap [lo, hi), and the bytes of those mappings inside
// the range.
func anonHuge(t *testing.T, lo, hi uintptr) (huge, in uintptr) {
	t.Helper()
	smaps(t, lo, hi, func(start, end uintptr, field string) {
		var kb uintptr
		if n, _ := fmt.Sscanf(field, "AnonHugePages: %d kB", &kb); n == 1 {
			huge += kb << 10
			in += min(end, hi) - max(start, lo)
		}
	})
	return huge, in
}

// TestGrowOnReusedMemory: an array grown where the Go heap has already
// had memory, which the runtime zeroes (touching every small page) before
// handing it out again, still gets huge pages. The advice alone applies to
// pages faulted in after it, so such an array kept its small pages: at 10^6
// live blocks of a torch replay, whose earlier arrays the collector had
// freed, the id tracker's advised blocks held 6 MB of huge pages out of
// about 70 (smaps, 2026-11-24). Grow now drops the advised range's pages,
// still all zero, so that the first touch of each faults in a huge page.
func TestGrowOnReusedMemory(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skipf("no transparent huge pages here (%v)", err)
	}
	const n = 32 << 20
	// Memory the heap has used and freed: a large allocation touched
	// through, then collected.
	old := make([]byte, n+hugePage)
	for i := 0; i < len(old); i += 4096 {
		old[i] = 1
	}
	oldLo := uintptr(unsafe.Pointer(&old[0]))
	oldHi := oldLo + uintptr(len(old))
	old = nil
	runtime.GC()
	runtime.GC()
	xs := Grow[uint64](nil, n/8)
	xs = xs[:cap(xs)]
	lo := uintptr(unsafe.Pointer(&xs[0]))
	hi := lo + uintptr(len(xs))*8
	if hi <= oldLo || lo >= oldHi {
		t.Skipf("the heap put the array at %#x, not in the freed %#x-%#x: nothing reused to test", lo, oldLo, oldHi)
	}
	for i := 0; i < len(xs); i += 512 {
		xs[i] = uint64(i)
	}
	huge, in := anonHuge(t, lo, hi)
	t.Logf("array %#x-%#x over freed %#x-%#x: %d MiB of %d MiB in huge pages", lo, hi, oldLo, oldHi, huge>>20, in>>20)
	if huge < (hi-lo)/2 {
		t.Errorf("%d MiB of the array's %d MiB in huge pages: the advice did not reach memory the heap had touched", huge>>20, (hi-lo)>>20)
	}
	for i := 0; i < len(xs); i += 512 {
		if xs[i] != uint64(i) {
			t.Fatalf("xs[%d] = %d", i, xs[i])
		}
	}
}
