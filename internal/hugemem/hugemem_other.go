//go:build !linux

package hugemem

// adviseHuge asks nothing where there is no madvise: the array is only
// aligned.
func adviseHuge(b []byte) {}

const adviceSupported = false
