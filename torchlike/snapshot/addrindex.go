package snapshot

import "math/bits"

// addrIndex numbers the addresses a reconstruction and a replay meet
// (those of the trace entries and of the final blocks) with dense slots,
// 0, 1, 2, ... in order of first appearance, so that what they keep per
// address is a slice indexed by slot. Each address is hashed once, when
// the trace is numbered, instead of once per map operation in each of
// the three passes over the trace (roles, the backward walk, the
// replay), which were the largest cost of a warm start after decoding.
//
// It is an open-addressing table with linear probing, at most half
// full; the multiplicative hash spreads addresses that are multiples of
// 512, as every device address is.
type addrIndex struct {
	keys  []int64
	slots []int32 // slot+1; 0: empty
	shift uint
	n     int32
}

func newAddrIndex(capacity int) *addrIndex {
	size := indexSize(capacity)
	return &addrIndex{keys: make([]int64, size), slots: make([]int32, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

func indexSize(capacity int) int {
	if capacity > 4 {
		return 1 << bits.Len(uint(2*capacity-1))
	}
	return 16
}

// The tables of the trace reader's indexes, which it gives back
// (release) once it has numbered the warm-start blocks: they were a
// third of the bytes an import allocated.
var (
	indexKeys  bufPool[int64]
	indexSlots bufPool[int32]
)

// newPooledAddrIndex is newAddrIndex with tables from the pools, for an
// index that is released. Only the slots are cleared: a key is read only
// where its slot is set.
func newPooledAddrIndex(capacity int) *addrIndex {
	size := indexSize(capacity)
	x := &addrIndex{keys: indexKeys.get(size), slots: indexSlots.get(size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	clear(x.slots)
	return x
}

// release gives x's tables back to the pools; x is not used again.
func (x *addrIndex) release() {
	indexKeys.put(x.keys)
	indexSlots.put(x.slots)
	x.keys, x.slots = nil, nil
}

func (x *addrIndex) home(a int64) int {
	return int(uint64(a) * 0x9E3779B97F4A7C15 >> x.shift)
}

// slot returns a's slot, numbering a if it is new.
func (x *addrIndex) slot(a int64) int32 {
	mask := len(x.keys) - 1
	for i := x.home(a); ; i = (i + 1) & mask {
		switch s := x.slots[i]; {
		case s == 0:
			if int(x.n+1)*2 > len(x.keys) {
				x.grow()
				return x.slot(a)
			}
			x.keys[i], x.slots[i] = a, x.n+1
			x.n++
			return x.n - 1
		case x.keys[i] == a:
			return s - 1
		}
	}
}

// lookup returns a's slot, or -1 when a has none.
func (x *addrIndex) lookup(a int64) int32 {
	mask := len(x.keys) - 1
	for i := x.home(a); ; i = (i + 1) & mask {
		switch s := x.slots[i]; {
		case s == 0:
			return -1
		case x.keys[i] == a:
			return s - 1
		}
	}
}

func (x *addrIndex) grow() {
	old := *x
	size := 2 * len(old.keys)
	*x = addrIndex{keys: make([]int64, size), slots: make([]int32, size), shift: old.shift - 1}
	for i, s := range old.slots {
		if s != 0 {
			mask := size - 1
			j := x.home(old.keys[i])
			for x.slots[j] != 0 {
				j = (j + 1) & mask
			}
			x.keys[j], x.slots[j] = old.keys[i], s
		}
	}
	x.n = old.n
}
