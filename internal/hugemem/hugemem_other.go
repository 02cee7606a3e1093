//go:build !linux

package hugemem

// mapHuge maps nothing where huge pages are not asked for: Grow keeps a
// Go slice.
func mapHuge(size int) (mapping, bool) { return mapping{}, false }

func unmap(mem []byte) {}

const mapSupported = false
