package prefetch

//go:noescape
func line(addr uintptr)

//go:noescape
func lines(addr, n uintptr)

//go:noescape
func lines9(addr uintptr)
