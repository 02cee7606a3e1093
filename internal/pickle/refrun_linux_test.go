//go:build linux

package pickle

import (
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
)

// refRunSafe is refRun as it was read with slices and bounds checks
// (until dc68d51): the reference the pointer reads of refRun must agree
// with, every result and every exit.
func refRunSafe(buf []byte, j int, depths []uint8) (int, int, uint8, uint8, bool) {
	cnt := 0
	var dmax, dor uint8
	for j+5 <= len(buf) {
		b := buf[j : j+5]
		var idx uint
		switch b[0] {
		case OpLongBinGet:
			idx = uint(binary.LittleEndian.Uint32(b[1:]))
			j += 5
		case OpBinGet:
			idx = uint(b[1])
			j += 2
		default:
			return j, cnt, dmax, dor, true
		}
		if idx >= uint(len(depths)) {
			return j, 0, 0, 0, false
		}
		dp := depths[idx]
		if dp == 0 {
			if b[0] == OpBinGet {
				return j - 2, cnt, dmax, dor, true
			}
			return j - 5, cnt, dmax, dor, true
		}
		dmax, dor = max(dmax, dp&63), dor|dp
		cnt++
	}
	return j, cnt, dmax, dor, true
}

// guarded maps n bytes and a PROT_NONE page after them, so that a read
// past a buffer placed flush against the page faults instead of reading
// what follows.
func guarded(t *testing.T, n int) ([]byte, []byte) {
	ps := syscall.Getpagesize()
	pages := (n+ps-1)/ps + 1
	m, err := syscall.Mmap(-1, 0, pages*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(m[(pages-1)*ps:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	end := (pages - 1) * ps
	return m, m[end-n : end : end]
}

// TestRefRunAgreesWithSafe runs refRun and refRunSafe on 200,000 random
// windows (references to every block boundary of memos of 0 to 4 blocks
// whose depth bytes are zero, nonzero or mixed, other opcodes, truncated
// arguments, starts up to past the end) placed flush against a guard
// page: the same five results, and no read past the window.
func TestRefRunAgreesWithSafe(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mm, _ := guarded(t, 4096)
	defer syscall.Munmap(mm)
	ps := syscall.Getpagesize()
	end := len(mm) - ps
	special := []uint32{0, 1, 255, 256, 1023, 1024, 1025, 2047, 2048, 3071, 3072, 4095, 4096, 1 << 31, 0xFFFFFFFF, 0xFFFFFC00, 0xFFFFFBFF}
	var memos [][]uint8
	for nb := range 5 {
		for shape := range 4 {
			memo := make([]uint8, nb*memoChunk)
			for b := range nb {
				for i := b * memoChunk; i < (b+1)*memoChunk; i++ {
					switch shape {
					case 0: // all zero
					case 1: // all nonzero
						memo[i] = uint8(1 + rng.IntN(255))
					case 2:
						if rng.IntN(8) != 0 {
							memo[i] = uint8(rng.IntN(256))
						}
					case 3:
						memo[i] = uint8(rng.IntN(256))
					}
				}
			}
			memos = append(memos, memo)
		}
	}
	memos = append(memos, nil)
	ops := []byte{OpBinGet, OpLongBinGet, OpAppends, OpEmptyDict, OpMark, 0}
	for it := range 200000 {
		memo := memos[rng.IntN(len(memos))]
		var buf []byte
		for range rng.IntN(60) {
			switch rng.IntN(10) {
			case 0:
				buf = append(buf, byte(rng.IntN(256)))
			case 1:
				buf = append(buf, ops[rng.IntN(len(ops))])
			case 2, 3, 4:
				buf = append(buf, OpBinGet, byte(rng.IntN(256)))
			default:
				var idx uint32
				if rng.IntN(3) == 0 {
					idx = special[rng.IntN(len(special))]
				} else {
					idx = uint32(rng.IntN(len(memo) + 2048))
				}
				buf = append(buf, OpLongBinGet)
				buf = binary.LittleEndian.AppendUint32(buf, idx)
			}
		}
		if rng.IntN(3) == 0 && len(buf) > 0 {
			buf = buf[:rng.IntN(len(buf)+1)]
		}
		// Put buf flush against the guard page.
		g := mm[end-len(buf) : end : end]
		copy(g, buf)
		j0 := 0
		if len(g) > 0 {
			j0 = rng.IntN(len(g) + 6)
		}
		if it%7 == 0 {
			j0 = max(0, len(g)-rng.IntN(6))
		}
		oj, on, odm, odo, ook := refRunSafe(g, j0, memo)
		nj, nn, ndm, ndo, nok := refRun(g, j0, memo)
		if oj != nj || on != nn || odm != ndm || odo != ndo || ook != nok {
			t.Fatalf("buf % x j0 %d memo %d blocks: new %d %d %d %d %v, old %d %d %d %d %v", g, j0, len(memo)/memoChunk, nj, nn, ndm, ndo, nok, oj, on, odm, odo, ook)
		}
	}
}

// TestRefRunTails: every window that ends in a BINGET or a cut
// LONG_BINGET, flush against the guard page, from every start.
func TestRefRunTails(t *testing.T) {
	mm, _ := guarded(t, 64)
	defer syscall.Munmap(mm)
	end := len(mm) - syscall.Getpagesize()
	memo := make([]uint8, memoChunk)
	for i := range memo {
		memo[i] = 1
	}
	tails := [][]byte{{OpBinGet}, {OpBinGet, 3}, {OpLongBinGet}, {OpLongBinGet, 1}, {OpLongBinGet, 1, 0}, {OpLongBinGet, 1, 0, 0}, {OpLongBinGet, 1, 0, 0, 0}, {OpBinGet, 1, OpBinGet}, {OpBinGet, 1, OpBinGet, 2}}
	for pre := range 5 {
		for _, tail := range tails {
			var buf []byte
			for range pre {
				buf = append(buf, OpBinGet, 5)
			}
			buf = append(buf, tail...)
			g := mm[end-len(buf) : end : end]
			copy(g, buf)
			for j0 := 0; j0 <= len(g)+1; j0++ {
				a1, a2, a3, a4, a5 := refRunSafe(g, j0, memo)
				b1, b2, b3, b4, b5 := refRun(g, j0, memo)
				if a1 != b1 || a2 != b2 || a3 != b3 || a4 != b4 || a5 != b5 {
					t.Fatalf("% x j0 %d: new %v %v %v %v %v old %v %v %v %v %v", g, j0, b1, b2, b3, b4, b5, a1, a2, a3, a4, a5)
				}
			}
		}
	}
}
