package prefetch

//go:noescape
func line(addr uintptr)

//go:noescape
func lines(addr, n uintptr)
