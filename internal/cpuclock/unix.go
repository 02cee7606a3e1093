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
