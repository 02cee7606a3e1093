//go:build !amd64

package prefetch

func line(addr uintptr) {}

func lines(addr, n uintptr) {}

func lines9(addr uintptr) {}
