package hugemem

import (
	"bufio"
	"fmt"
	"os"
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
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	covered := uintptr(0)
	var start, end uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's header starts "lo-hi perms"; its fields follow.
		var a, b uintptr
		var perms string
		if n, _ := fmt.Sscanf(line, "%x-%x %s", &a, &b, &perms); n == 3 && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			start, end = a, b
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && start < hi && end > lo {
			if !strings.Contains(" "+rest+" ", " hg ") {
				t.Errorf("%#x-%#x, inside the advised %#x-%#x, has VmFlags%s without hg", start, end, lo, hi, rest)
			}
			covered += min(end, hi) - max(start, lo)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if covered != m {
		t.Errorf("smaps covers %#x of the %#x advised bytes", covered, m)
	}
	buf[0] = 1 // keep buf alive past the read
}
