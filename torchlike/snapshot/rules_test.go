package snapshot

import "membench/torchlike"

// The tests' names for torchlike's rules, as the reconstruction applies
// them (current rounding).
const (
	smallSize    = torchlike.SmallSize
	smallBuffer  = torchlike.SmallBuffer
	minBlockSize = torchlike.MinBlockSize
	largeBuffer  = torchlike.LargeBuffer
	mib          = 1 << 20
)

func roundSize(n int64, div *[16]int64) int64 { return torchlike.RoundSize(n, div, false) }

func ceilTo(n, m int64) int64 { return (n + m - 1) / m * m }
