// Package radix sorts by an unsigned key in linear time: a
// least-significant-digit radix sort, 11 bits a pass, from the lowest bit
// any key sets to the highest. The heap simulator sorts the chunks live
// beside a buffer by offset at every placement (package heapsim), and the
// TPU model its live buffers by address at every defragmentation (package
// tpurt); both sorts were most of those operations' time as comparison
// sorts.
package radix

import "math/bits"

// digit is the bits a pass sorts by: 2,048 counters, 16 KB, stay in the
// first-level cache.
const digit = 11

// Keyed is an item to sort, named by an index into the caller's own
// slice, and its key. Sort moves these, not the caller's items, and
// reads the key without a call: a key given by a function cost the TPU
// model's defragmentations 44 % more time (an indirect call per item and
// pass).
type Keyed struct {
	Key uint64
	I   int32
}

// Sort sorts ks by key, stably (equal keys keep their order), using
// spare as the second buffer it moves them into, and returns the sorted
// slice and the other buffer: the two may have swapped, and spare is
// grown when it is shorter than ks. It allocates nothing once spare is
// long enough.
func Sort(ks, spare []Keyed) (sorted, rest []Keyed) {
	var set uint64 // every bit some key sets
	for _, k := range ks {
		set |= k.Key
	}
	if set == 0 {
		return ks, spare
	}
	if cap(spare) < len(ks) {
		spare = make([]Keyed, len(ks), 2*len(ks))
	}
	spare = spare[:len(ks)]
	var count [1 << digit]int
	for shift := uint(bits.TrailingZeros64(set)); shift < 64 && set>>shift != 0; shift += digit {
		clear(count[:])
		for _, k := range ks {
			count[k.Key>>shift&(1<<digit-1)]++
		}
		sum := 0
		for d, n := range count {
			count[d], sum = sum, sum+n
		}
		for _, k := range ks {
			d := k.Key >> shift & (1<<digit - 1)
			spare[count[d]] = k
			count[d]++
		}
		ks, spare = spare, ks
	}
	return ks, spare
}
