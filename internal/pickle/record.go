package pickle

import (
	"encoding/binary"
	"unsafe"
)

// The record path: fastDict for a record of fixed fields.
//
// fastRecord reads a flat record's pairs into an array that the
// Builder's SetItems then walks again, asking for each key what field it
// is and for each value whether it has the field's type: in cachegrind,
// about 100 instructions a pair in the scan and 45 more in the
// Builder's pass, for records (a snapshot's trace entries) that are
// nearly always the same handful of keys, each met once, with values of
// the field's type. fastFields reads such a record straight into its
// fields instead: a key is a memo reference to a str whose field (its
// Slot) the Builder gave once for that string, and each value lands in
// its field's place in a Record, which the Builder takes in one call.
//
// It is exact the way fastRecord is, and by leaning on it: it accepts
// fewer shapes still (keys from the memo, ints and strs of the field's
// type, each field at most once, no None), for which the Builder's
// SetItems and SetRecord give the same record by construction (no
// error, no order between fields), and at anything else it undoes what
// it stored and fastRecord reads the same record from its start, which
// in turn gives up to the general path.

// RecordBuilder is a FlatBuilder one of whose flat records, its
// RecordNode, has fixed fields: Slot gives the field of each key and
// SetRecord takes a record read by the record path. Package snapshot's
// trace entries are such records.
type RecordBuilder interface {
	FlatBuilder
	// RecordNode is the node read by the record path.
	RecordNode() Node
	// Slot is the field of the key string key in a RecordNode record:
	// what its value must be, where it goes in Record.V, and the node of
	// its value (NodeValue for SlotInt and SlotStr, NodeSkip for
	// SlotAny and SlotDrop), which must be what Child gives for the
	// key. It must depend on the string alone: the machine asks once
	// for each string.
	Slot(key string) Slot
	// SetRecord stores in c what SetItems would for the record's pairs:
	// the fields of r.Set hold the values of their keys (in r.Int for
	// SlotInt fields, in r.V for the others; SlotDrop values are not
	// kept), and every other key was absent.
	SetRecord(c *Val, r *Record) error
}

// Slot is the field of a record key (RecordBuilder.Slot): its kind in the
// high bits, its place in Record.V (below RecordSlots) in the low ones.
type Slot uint8

// The kinds of record fields.
const (
	SlotDrop Slot = iota << 4 // a value read as skipped and not kept
	SlotInt                   // an int that fits in 64 bits (KindInt)
	SlotStr                   // a str (KindStr)
	SlotAny                   // a value read as skipped and kept as read (a skipped list, a scalar)
)

// RecordSlots is the number of fields a Record holds.
const RecordSlots = 8

// Record is a record read by the record path.
type Record struct {
	Set uint32             // bit s: field s holds a value
	Int [RecordSlots]int64 // the value of an int field
	V   [RecordSlots]Val   // the value of another field
}

const (
	slotKind  Slot = 0x30
	slotIndex Slot = 0x0F
	// slotUnknown marks, in the machine's table, a string not asked
	// about yet (a Slot is stored plus one).
	slotUnknown = 0
	// slotTableMax bounds the machine's table of slots by string
	// index: keys are interned early, and a key beyond it goes the
	// way of fastRecord.
	slotTableMax = 1 << 14
)

// Records is the number of records the record path has read, for tests
// that must know it ran.
func (d *Machine) Records() int { return d.nrec }

// Chained is the number of dicts fastDict went on to from the one
// before without returning to the dispatch, for tests that must know
// it ran.
func (d *Machine) Chained() int { return d.nnext }

// slotTable is a machine's Slot plus one of each string index, by index.
type slotTable [slotTableMax]uint8

// slotOf is the Slot of the str key k (interned: k.N ≥ 0), asked of the
// Builder once per string; false beyond slotTableMax.
func (d *Machine) slotOf(k *Val) (Slot, bool) {
	n := uint64(k.N)
	if n >= slotTableMax {
		return 0, false
	}
	if d.slots == nil {
		d.slots = &d.fs.slot // clean: see release
	}
	if s := d.slots[n]; s != slotUnknown {
		return Slot(s - 1), true
	}
	s := d.rb.Slot(d.strs[n])
	if s&slotIndex >= RecordSlots || s&^(slotKind|slotIndex) != 0 {
		s = SlotDrop
	}
	d.slots[n] = uint8(s) + 1
	d.slotHi = max(d.slotHi, int(n)+1)
	return s, true
}

// fastFields reads, from its PUT, a record of the RecordBuilder's node
// into d.fs.rec, as fastRecord reads one into fs.kv, and stops at its
// SETITEMS (the returned index); false, with what it stored in the memo
// and the text still to undo, where it gives up.
func (d *Machine) fastFields(buf []byte, j int, c *Val) (int, bool) {
	fs := d.fs
	j, ok := d.fastPut(buf, j, c)
	if !ok || j >= len(buf) || buf[j] != OpMark || !fs.push() {
		return j, false
	}
	j++
	rec := &fs.rec
	rec.Set = 0
	np := 0
	memo := d.memo
	depth, tag := c.Depth, c.Tag
	for {
		// The pairs that need no call, in a loop of their own, which
		// hands over the key of the pair it stops at when it read it
		// (kend > 0).
		var kk *Val
		var ks Slot
		kend := 0
		// (At the SETITEMS, the usual end after the frames, there is
		// nothing for it to read.)
		if d.slots != nil && j < len(buf) && buf[j] != OpSetItems {
			jr, n, t, kv, kslot, ke := fieldRun(buf, j, memo, d.slots, rec)
			j, np, tag = jr, np+n, tag|t
			kk, ks, kend = kv, kslot, ke
			if n > 0 {
				depth = max(depth, 1) // scalars
			}
			fs.h += 2 * n
		}
		// Sixteen bytes in the window: a key's reference (five) and a
		// value's opcode with an argument of up to nine are read
		// without further checks. (A record that ends closer to the
		// window's end goes fastRecord's way.)
		if j+16 > len(buf) {
			return j, false
		}
		op := buf[j]
		if op == OpSetItems {
			break
		}
		if np >= fastPairs || op|2 != OpLongBinGet {
			return j, false
		}
		// The key: a memo reference to an interned str.
		k, s := kk, ks
		if kend > 0 {
			// What the lines below find for it: fieldRun read the
			// reference, checked the str, and found its slot known.
			j = kend
		} else {
			idx, n := getArg(buf, j)
			blk := idx / memoChunk
			if n == 0 || blk >= uint(len(memo)) {
				return j, false
			}
			k = &memo[blk].v[idx%memoChunk]
			if k.Kind != KindStr || k.N < 0 {
				return j, false
			}
			var ok bool
			if s, ok = d.slotOf(k); !ok {
				return j, false
			}
			j = n
		}
		fs.h++
		tag |= k.Tag
		var v Val
		switch s & slotKind {
		case SlotInt:
			switch buf[j] {
			case OpBinInt1:
				v = Val{Kind: KindInt, N: int64(buf[j+1])}
				j += 2
			case OpBinInt2:
				v = Val{Kind: KindInt, N: int64(uint16(buf[j+1]) | uint16(buf[j+2])<<8)}
				j += 3
			case OpBinInt:
				v = Val{Kind: KindInt, N: int64(int32(uint32(buf[j+1]) | uint32(buf[j+2])<<8 | uint32(buf[j+3])<<16 | uint32(buf[j+4])<<24))}
				j += 5
			case OpLong1:
				m := int(buf[j+1])
				if m > 8 {
					return j, false
				}
				v = Val{Kind: KindInt, N: smallLong(buf[j+2 : j+2+m])}
				j += 2 + m
			default:
				return j, false
			}
		case SlotStr:
			switch buf[j] {
			case OpShortBinUnicode, OpBinUnicode:
				j, ok = d.fastString(buf, j, &v, false)
			case OpBinGet, OpLongBinGet:
				j, ok = d.fastGet(buf, j, &v)
				ok = ok && v.Kind == KindStr
			default:
				ok = false
			}
		default:
			// SlotAny and SlotDrop: any value fastRecord reads under a
			// NodeSkip key.
			switch buf[j] {
			case OpEmptyList:
				j, ok = d.fastList(buf, j+1, d.off0+int64(j), &v)
				fs.h-- // fastList counted the list
			case OpShortBinUnicode, OpBinUnicode:
				j, ok = d.fastString(buf, j, &v, true)
			case OpBinGet, OpLongBinGet:
				j, ok = d.fastGet(buf, j, &v)
				ok = ok && !(v.isContainer() && v.Shape == ShapeDict)
			default:
				j, ok = d.fastScalar(buf, j, &v)
			}
		}
		if !ok {
			return j, false
		}
		fs.h++
		if v.Depth >= depth {
			depth = v.Depth + 1
		}
		tag |= v.Tag
		np++
		if kind := s & slotKind; kind != SlotDrop {
			bit := uint32(1) << (s & slotIndex)
			if rec.Set&bit != 0 {
				return j, false // a key twice: SetItems' order matters
			}
			rec.Set |= bit
			if kind == SlotInt {
				rec.Int[s&slotIndex] = v.N
			} else {
				setVal(&rec.V[s&slotIndex], &v)
			}
		}
	}
	if fs.over(d) || int(depth) > d.lim.MaxDepth {
		return j, false
	}
	c.Depth, c.Tag = depth, tag
	return j, true
}

// fieldRun reads, as fastFields does, the pairs at buf[j] that need no
// call: a memo reference to a str key whose slot is known, and for an
// int field an int (BININT1, BININT2, BININT, LONG1 of up to eight
// bytes), for a str field a memo reference to a str, for a dropped key
// an int or a memo reference to a scalar. It stops at the first other
// pair (SETITEMS, a new string, a list, a key met for the first time, a
// field already set), which fastFields reads, or where fewer than
// sixteen bytes are left. It returns where it stopped, the pairs read
// and the union of their tags (every value it reads is a scalar, of
// depth 0), and, when it stopped at a pair's value after reading its
// key, whose slot is known, that key's Val, its Slot and where the key
// ends (else nil, 0, 0): fastFields takes the key from there instead
// of reading it and asking slotOf again (the compile_context and
// frames keys of every trace entry).
//
// A trace entry is five or six such pairs and two or three others: in
// a loop that calls nothing, and reads the window through a pointer
// (sixteen bytes are behind it), the machine's state stays in registers,
// where fastFields' loop, which calls fastList and fastString, keeps it
// on the stack. The widths of the key and the value are branches, not
// arithmetic: predicted, they let the next pair's loads start before
// this pair's opcodes are read, where a length computed from an opcode
// would chain every pair's loads to the previous pair's (refRun, tried
// that way, took 20-30% more time for fewer instructions).
func fieldRun(buf []byte, j int, memo []*memoBlock, slots *slotTable, rec *Record) (int, int, uint8, *Val, Slot, int) {
	np := 0
	var tag uint8
	p := unsafe.Pointer(unsafe.SliceData(buf))
	// q walks the pairs; j is where the last pair read ends.
	for j+16 <= len(buf) {
		q := unsafe.Add(p, j)
		var k *Val
		switch *(*byte)(q) {
		case OpBinGet:
			idx := uint(*(*byte)(unsafe.Add(q, 1)))
			// memo has memoN/memoChunk blocks: this is the idx < memoN
			// check.
			if idx/memoChunk >= uint(len(memo)) {
				return j, np, tag, nil, 0, 0
			}
			k = &memo[idx/memoChunk].v[idx%memoChunk]
			q = unsafe.Add(q, 2)
		case OpLongBinGet:
			idx := uint(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(q, 1))[:]))
			if idx/memoChunk >= uint(len(memo)) {
				return j, np, tag, nil, 0, 0
			}
			k = &memo[idx/memoChunk].v[idx%memoChunk]
			q = unsafe.Add(q, 5)
		default:
			return j, np, tag, nil, 0, 0
		}
		if k.Kind != KindStr || uint64(k.N) >= slotTableMax {
			return j, np, tag, nil, 0, 0
		}
		// An unknown key (0) becomes 255, of kind SlotAny: fastFields
		// asks the Builder. Where the value is not one for this loop,
		// the key (k, its known slot s, and kend, where it ends) is
		// handed to fastFields, which would read it again.
		s := Slot(slots[k.N] - 1)
		// The field's place, below RecordSlots for the int and str
		// fields that use it (slotOf): masked so, it needs no bounds
		// check.
		at := s & (RecordSlots - 1)
		kend := int(uintptr(q) - uintptr(p))
		switch s & slotKind {
		case SlotInt:
			if rec.Set&(1<<at) != 0 {
				return j, np, tag, k, s, kend // a key twice: SetItems' order matters
			}
			switch *(*byte)(q) {
			case OpBinInt1:
				rec.Int[at] = int64(*(*byte)(unsafe.Add(q, 1)))
				q = unsafe.Add(q, 2)
			case OpBinInt2:
				rec.Int[at] = int64(binary.LittleEndian.Uint16((*[2]byte)(unsafe.Add(q, 1))[:]))
				q = unsafe.Add(q, 3)
			case OpBinInt:
				rec.Int[at] = int64(int32(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(q, 1))[:])))
				q = unsafe.Add(q, 5)
			case OpLong1:
				m := uint(*(*byte)(unsafe.Add(q, 1)))
				if m > 8 {
					return j, np, tag, k, s, kend
				}
				// The eight bytes after the length, the ones past the
				// value shifted out (smallLong).
				sh := 64 - 8*m
				rec.Int[at] = int64(binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(q, 2))[:])<<sh) >> sh
				q = unsafe.Add(q, 2+m)
			default:
				return j, np, tag, k, s, kend
			}
			rec.Set |= 1 << at
		case SlotStr, SlotDrop:
			if s&slotKind == SlotStr && rec.Set&(1<<at) != 0 {
				return j, np, tag, k, s, kend
			}
			var idx uint
			switch *(*byte)(q) {
			case OpBinGet:
				idx = uint(*(*byte)(unsafe.Add(q, 1)))
				q = unsafe.Add(q, 2)
			case OpLongBinGet:
				idx = uint(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(q, 1))[:]))
				q = unsafe.Add(q, 5)
			case OpBinInt1, OpBinInt2, OpBinInt, OpLong1:
				if s&slotKind == SlotStr {
					return j, np, tag, k, s, kend
				}
				// A dropped int: its length.
				switch *(*byte)(q) {
				case OpBinInt1:
					q = unsafe.Add(q, 2)
				case OpBinInt2:
					q = unsafe.Add(q, 3)
				case OpBinInt:
					q = unsafe.Add(q, 5)
				default:
					m := uint(*(*byte)(unsafe.Add(q, 1)))
					if m > 8 {
						return j, np, tag, k, s, kend
					}
					q = unsafe.Add(q, 2+m)
				}
				tag |= k.Tag
				np++
				j = int(uintptr(q) - uintptr(p))
				continue
			default:
				return j, np, tag, k, s, kend
			}
			if idx/memoChunk >= uint(len(memo)) {
				return j, np, tag, k, s, kend
			}
			v := &memo[idx/memoChunk].v[idx%memoChunk]
			// A scalar (a str for a str field): any other value goes
			// fastFields' way.
			if v.Kind-KindNone > KindBytes-KindNone || v.Depth != 0 || (s&slotKind == SlotStr && v.Kind != KindStr) {
				return j, np, tag, k, s, kend
			}
			if s&slotKind == SlotStr {
				rec.V[at] = *v
				rec.Set |= 1 << at
			}
			tag |= v.Tag
		default:
			if slots[k.N] == slotUnknown {
				return j, np, tag, nil, 0, 0
			}
			return j, np, tag, k, s, kend
		}
		tag |= k.Tag
		np++
		j = int(uintptr(q) - uintptr(p))
	}
	return j, np, tag, nil, 0, 0
}
