//go:build unix

package cpuclock

import (
	"syscall"
	"time"
)

// Now is the CPU time the process has used so far, user and system; zero
// if the system does not say.
func Now() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// System is the part of Now spent in the kernel on the process's behalf:
// page faults (zeroing memory first touched), system calls, signals.
// The live-set benchmarks report it beside the CPU time, since on the
// project's virtual machine it varies between runs of one binary far more
// than the time in the process's own code does (zeroing fresh huge pages
// cost 3 % of one run's samples and 30 % of another's, 2026-11-25).
func System() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}
