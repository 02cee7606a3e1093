package pickle

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
	"unsafe"
)

// The schema-shaped fast path.
//
// Most of a PyTorch snapshot is thousands of small dicts of one shape: a
// trace entry (or a segment's block) of a handful of str keys, int and
// str values and a list of stack frames, each frame a flat dict of
// strings and an int, or a memo reference to one seen before. Run one
// opcode at a time, such a dict is about twenty opcodes of 10 to 35 ns
// each: the dispatch, a push, the node of each new value (newNode), the
// memo, and the generic SETITEMS and APPENDS. fastDict reads such a dict in one
// pass over the window instead, straight from its bytes, and leaves the
// machine exactly as the general path would have: the same record handed
// to the Builder in one SetItems, the same memo entries (a later entry
// refers to this one's strings and frames by memo index), the same kept
// text, the same depths and tags.
//
// It is exact by construction rather than by testing alone: it accepts
// only the opcode shapes Python's pickler writes for these dicts, for
// which the general path's decisions are simple to state (every new
// value's node is the schema's Child, every frame and frame string is
// skipped unless a PUT keeps it), and it gives up, having changed
// nothing that matters, at anything else: an opcode it does not know
// here, a dict among the values (newNode then looks at it), the end of
// the window, a memo PUT that is not to a free slot already allocated, a
// limit about to be reached, a string the intern table has no room for.
// The general path then runs the same dict from its EMPTY_DICT and, for
// bad input, reports the error at its position. What the scan did before
// giving up is undone (memo slots, kept text) or is invisible (strings
// interned early, which the general path interns in the same order; the
// window read ahead, which only moves reads earlier).

// FlatBuilder is implemented by a Builder some of whose dict nodes are
// flat records, for the fast path: every key is a str, and no value is
// one of the Builder's own containers (Child gives NodeValue or NodeSkip,
// and NodeSkip for lists). Package snapshot's trace entries and blocks
// are.
type FlatBuilder interface {
	Flat(n Node) bool
}

// fastPairs is the most key, value pairs a fast record may hold (a
// trace entry has eight, a block five).
const fastPairs = 32

// fastWindow is how many bytes fastDict wants in the window before it
// starts: a trace entry with 63 new frames is about 4 KB.
const fastWindow = 16 << 10

// fastScan is fastDict's working state, kept with the Machine so that
// a record costs no allocation, and in fastPool between machines so that
// an import does not allocate (and the collector clear) its four
// kilobytes either.
var fastPool = sync.Pool{New: func() any {
	fs := new(fastScan)
	fs.puts = fs.put0[:0]
	return fs
}}

type fastScan struct {
	kv   [2 * fastPairs]Val // the record's pairs, handed to SetItems
	rec  Record             // the record path's fields, handed to SetRecord
	puts []uint32           // memo slots stored by the scan (undone if it gives up)
	put0 [512]uint32        // puts' first array: no allocation for a record of up to 512 PUTs
	text int64              // text kept by the scan (likewise)
	h    int                // the stack height (values and marks) the general path would have
	slot slotTable          // the record path's Machine.slots: one pooled object, not two, for a cold import
}

// fastDict runs the dict whose EMPTY_DICT opcode run has just read, when
// it is a flat record of the Builder (FlatBuilder) in the shape Python
// writes: Pickler.save_dict writes EMPTY_DICT, the memo PUT, and then
// _batch_setitems writes the items in batches of up to 1000 as MARK, key,
// value, ..., SETITEMS (Lib/pickle.py). It reports false, with the
// machine as it found it, when the dict is anything else or the scan
// gives up; true when it ran the dict, with the error the general path
// would have returned (the Builder's, with the same offset and opcode).
func (d *Machine) fastDict() (bool, error) {
	if d.n-d.i < fastWindow && d.rerr == nil {
		d.fill(fastWindow)
	}
	next := false
	for {
		ok, err := d.fastDictAt(next)
		if !ok || err != nil {
			return ok, err
		}
		// The next record of the batch, without the dispatch: run's
		// and fastDict's work for the EMPTY_DICT at d.i, when neither
		// would read (a full window) and run would call fastDict (the
		// stack below its limit). The dict's node is newNode's, read
		// from the batch parent alone (nextNode). If this one goes the
		// general way, run's step sees what it would have: the opcode
		// read and its offset set.
		if d.n-d.i <= fastWindow || d.buf[d.i] != OpEmptyDict || len(d.stack)+len(d.marks) >= d.lim.MaxStack {
			return true, nil
		}
		d.opPos, d.op = d.off0+int64(d.i), OpEmptyDict
		d.i++
		d.nnext++
		next = true
	}
}

// nextNode is newNode(ShapeDict) when the top of the stack is a
// Builder's dict (the record fastDict just built): such a top names no
// node for what follows it (newNode's inner), so the batch parent below
// the latest MARK (outer) decides, as newNode decides it.
func (d *Machine) nextNode() Node {
	k := len(d.marks)
	if k == 0 {
		return NodeValue
	}
	base := d.marks[k-1]
	if base < 1 || (k > 1 && d.marks[k-2] >= base) {
		return NodeValue
	}
	p := &d.stack[base-1]
	if !p.isContainer() {
		return NodeValue
	}
	if p.Shape != ShapeDict {
		return d.child(p, nil)
	}
	if n := len(d.stack); (n-base)%2 == 1 {
		return d.child(p, &d.stack[n-1])
	}
	return NodeValue
}

// fastDictAt is fastDict for one dict, whose EMPTY_DICT was read; next
// when it follows one that fastDict built (nextNode).
func (d *Machine) fastDictAt(next bool) (bool, error) {
	buf := d.buf[:d.n]
	j := d.i
	if k := j + putLen(buf, j); k >= len(buf) || buf[k] != OpMark {
		return false, nil
	}
	var node Node
	if next {
		node = d.nextNode()
	} else {
		node = d.newNode(ShapeDict)
	}
	if node == NodeSkip || node == NodeValue || !d.flat.Flat(node) {
		return false, nil
	}
	fs := d.fs
	fs.h = len(d.stack) + len(d.marks)
	if fs.h >= d.lim.MaxStack {
		return false, nil
	}
	h, err := d.b.Open(node, ShapeDict, d.opPos)
	if err != nil {
		return true, d.errf(err, "")
	}
	ci := len(d.stack)
	// The record's Val is written field by field (setVal), and not
	// copied whole (see setVal).
	d.stack = append(d.stack, Val{})
	d.stack[ci].setNode(node, h)
	fs.h++
	if fs.puts == nil {
		fs.puts = fs.put0[:0]
	}
	fs.puts, fs.text = fs.puts[:0], 0
	if node == d.rnode && d.rb != nil {
		// The record path (record.go), and fastRecord where it gives
		// up.
		if k, ok := d.fastFields(buf, j, &d.stack[ci]); ok {
			d.i = k + 1
			d.opPos, d.op = d.off0+int64(k), OpSetItems
			d.nrec++
			if err := d.rb.SetRecord(&d.stack[ci], &fs.rec); err != nil {
				return true, d.errf(err, "")
			}
			return true, nil
		}
		d.fastUndo()
		d.stack[ci] = Val{}
		d.stack[ci].setNode(node, h)
		fs.h = len(d.stack) + len(d.marks)
	}
	j, np, ok := d.fastRecord(buf, j, &d.stack[ci])
	if !ok {
		// Undone: the general path opens the record again, and gets the
		// same handle (the Builder reuses the one just released).
		d.b.Drop(&d.stack[ci])
		d.stack[ci] = Val{}
		d.stack = d.stack[:ci]
		d.fastUndo()
		return false, nil
	}
	// SETITEMS, as setItems runs it for a Builder's container.
	d.i = j + 1
	d.opPos, d.op = d.off0+int64(j), OpSetItems
	kv := fs.kv[:2*np]
	err = d.b.SetItems(&d.stack[ci], kv)
	clear(kv)
	if err != nil {
		return true, d.errf(err, "")
	}
	return true, nil
}

// fastSkipped runs, the same way, a list the schema skips from the
// EMPTY_LIST opcode run has just read: a segment's stack frames, or an
// entry's when the entry itself went the general way. It stops where
// fastList does, with the list on the stack; false when it did nothing.
// A new frame in it is skipped whatever is below the list: newNode sees
// the list as the container of an APPEND's item, or the batch's parent.
func (d *Machine) fastSkipped() bool {
	if d.n-d.i < fastWindow && d.rerr == nil {
		d.fill(fastWindow)
	}
	if d.newNode(ShapeList) != NodeSkip {
		return false
	}
	fs := d.fs
	fs.h = len(d.stack) + len(d.marks)
	if fs.puts == nil {
		fs.puts = fs.put0[:0]
	}
	fs.puts, fs.text = fs.puts[:0], 0
	var l Val
	j, ok := d.fastList(d.buf[:d.n], d.i, d.opPos, &l)
	if !ok || fs.over(d) {
		d.fastUndo()
		return false
	}
	d.stack = append(d.stack, l)
	d.i = j
	return true
}

// fastUndo takes back the memo entries and kept text of a scan that gave
// up.
func (d *Machine) fastUndo() {
	fs := d.fs
	for k := len(fs.puts) - 1; k >= 0; k-- {
		idx := fs.puts[k]
		d.memo[idx/memoChunk].v[idx%memoChunk] = Val{}
		d.depths[idx] = 0
		d.nmemo--
	}
	fs.puts = fs.puts[:0]
	d.text -= fs.text
	fs.text = 0
	clear(fs.kv[:])
}

// push counts a value or MARK the general path would push. Its stack
// limit is checked where the height peaks, before each pop and at the
// record's end (over): a push of the general path fails exactly when the
// height would exceed the limit, and the scan is undone anyway when it
// gives up. It reports true, to sit in the conditions that read a value.
func (fs *fastScan) push() bool {
	fs.h++
	return true
}

// over reports whether the height reached exceeds the stack limit.
func (fs *fastScan) over(d *Machine) bool { return fs.h > d.lim.MaxStack }

// fastRecord reads a record's PUT, MARK, pairs and stops at its SETITEMS
// (at the returned index), with c's depth and tags updated as deepen
// would; the pairs are in fs.kv.
func (d *Machine) fastRecord(buf []byte, j int, c *Val) (int, int, bool) {
	fs := d.fs
	j, ok := d.fastPut(buf, j, c)
	if !ok || j >= len(buf) || buf[j] != OpMark || !fs.push() {
		return j, 0, false
	}
	j++
	np := 0
	memo := d.memo
	// deepen(c, kv), as the pairs are read.
	depth, tag := c.Depth, c.Tag
	for {
		if j >= len(buf) {
			return j, 0, false
		}
		op := buf[j]
		if op == OpSetItems {
			break
		}
		if np >= fastPairs {
			return j, 0, false
		}
		// The key: a str, new (always kept: the key of a Builder's dict
		// is NodeValue) or from the memo. Keys and the ints below are
		// read here rather than by fastGet and fastScalar: they are most
		// of a record's opcodes. (np < fastPairs, stated as such, spares
		// the pair's two bounds checks.)
		k := &fs.kv[2*np]
		switch op {
		case OpLongBinGet, OpBinGet:
			idx, n := getArg(buf, j)
			// memo has memoN/memoChunk blocks: this is the idx < memoN
			// check.
			blk := idx / memoChunk
			if n == 0 || blk >= uint(len(memo)) {
				return j, 0, false
			}
			kv := memo[blk].v[idx%memoChunk]
			if kv.Kind != KindStr {
				return j, 0, false
			}
			*k = kv
			j = n
		case OpShortBinUnicode, OpBinUnicode:
			if j, ok = d.fastString(buf, j, k, false); !ok {
				return j, 0, false
			}
		default:
			return j, 0, false
		}
		fs.h++
		if j+9 >= len(buf) {
			return j, 0, false
		}
		// The value, whose node is the Builder's Child: with neither a
		// dict among the values nor a container as key, newNode has
		// nothing else to look at. (Ten bytes are in the window.)
		v := &fs.kv[2*np+1]
		switch buf[j] {
		case OpBinInt1:
			*v = Val{Kind: KindInt, N: int64(buf[j+1])}
			j += 2
		case OpBinInt:
			*v = Val{Kind: KindInt, N: int64(int32(binary.LittleEndian.Uint32(buf[j+1:])))}
			j += 5
		case OpLong1:
			// An address or a time, of up to eight bytes: the ten
			// bytes in the window let smallLong read it in one load.
			n := int(buf[j+1])
			if n > 8 {
				return j, 0, false
			}
			*v = Val{Kind: KindInt, N: smallLong(buf[j+2 : j+2+n])}
			j += 2 + n
		case OpEmptyList:
			if d.b.Child(c, k) != NodeSkip {
				return j, 0, false
			}
			j, ok = d.fastList(buf, j+1, d.off0+int64(j), v)
			fs.h-- // fastList counted the list
		case OpShortBinUnicode, OpBinUnicode:
			j, ok = d.fastString(buf, j, v, d.b.Child(c, k) == NodeSkip)
		case OpBinGet, OpLongBinGet:
			j, ok = d.fastGet(buf, j, v)
			// A dict (or a Builder's container, refused later) would
			// decide the node of the next value.
			ok = ok && !(v.isContainer() && v.Shape == ShapeDict)
		default:
			j, ok = d.fastScalar(buf, j, v)
		}
		if !ok {
			return j, 0, false
		}
		fs.h++
		if v.Depth >= depth {
			depth = v.Depth + 1
		}
		tag |= k.Tag | v.Tag
		np++
	}
	if fs.over(d) || int(depth) > d.lim.MaxDepth {
		return j, 0, false
	}
	c.Depth, c.Tag = depth, tag
	return j, np, true
}

// fastList reads a skipped list (a record's stack frames) from after
// its EMPTY_LIST (at offset off): the PUT, then batches of items as
// Pickler._batch_appends writes them (Lib/pickle.py): MARK, items,
// APPENDS for a batch of several, the item and APPEND for a batch of
// one. Items are memo references or new frames (fastBatch, fastFrame).
// It stops at the first opcode that is none of these (the record's next
// key, or its SETITEMS), with v the list as the general path leaves it.
func (d *Machine) fastList(buf []byte, j int, off int64, v *Val) (int, bool) {
	fs := d.fs
	if !fs.push() {
		return j, false
	}
	*v = Val{Kind: KindSkipped, Shape: ShapeList, Depth: 1, N: off}
	j, ok := d.fastPut(buf, j, v)
	if !ok {
		return j, false
	}
	for j < len(buf) {
		var depth int32
		var tag uint8
		switch buf[j] {
		case OpMark:
			if !fs.push() {
				return j, false
			}
			j++
			var cnt int
			if j, cnt, depth, tag, ok = d.fastBatch(buf, j); !ok {
				return j, false
			}
			if fs.over(d) {
				return j, false
			}
			j++
			fs.h -= 1 + cnt
		case OpBinGet, OpLongBinGet, OpEmptyDict:
			// A batch of one, unless this is the record's next key (a
			// GET not followed by APPEND).
			var it Val
			k, ok := d.fastFrame(buf, j, &it)
			if !ok || k >= len(buf) || buf[k] != OpAppend {
				if buf[j] == OpEmptyDict {
					return j, false
				}
				if ok {
					fs.h-- // the key is counted by the caller
				}
				return j, true
			}
			if fs.over(d) {
				return j, false
			}
			j = k + 1
			fs.h--
			depth, tag = it.Depth, it.Tag
		default:
			return j, true
		}
		// appendTo's deepen.
		if depth >= v.Depth {
			v.Depth = depth + 1
		}
		v.Tag |= tag
		if int(v.Depth) > d.lim.MaxDepth {
			return j, false
		}
		d.memoRefresh(v)
	}
	return j, false
}

// fastBatch reads the items of a batch into a skipped list, after its
// MARK, up to its APPENDS (at the returned index): their number, the
// greatest depth (-1 for none) and their tags. Memo references are read
// as skipBatch reads them, by the one byte beside their slot
// (memoBlock.depth), not the value: a frames list of 63 references
// touches 63 bytes of the memo instead of a kilobyte. A new frame may
// not follow a generic container closely (one of the two items before
// it), since newNode would then build it (skipDepth gives no byte for
// generic containers, so that they are seen).
func (d *Machine) fastBatch(buf []byte, j int) (int, int, int32, uint8, bool) {
	fs := d.fs
	h0 := fs.h
	cnt, depth, tag := 0, int32(-1), uint8(0)
	// The depth bytes of the references are folded as they come: the
	// greatest depth plus one (dmax) and the union of the bytes, whose
	// two high bits are the tags.
	var dmax, dor uint8
	gen := -3 // the item that was last a generic container
	memo, memoN, depths := d.memo, uint(d.memoN), d.depths
	for j < len(buf) {
		k, n, dm, do, ok := refRun(buf, j, depths)
		if !ok {
			return k, 0, 0, 0, false
		}
		j, cnt, dmax, dor = k, cnt+n, max(dmax, dm), dor|do
		if j >= len(buf) {
			break
		}
		var idx uint
		switch buf[j] {
		case OpLongBinGet:
			if j+5 > len(buf) {
				return j, 0, 0, 0, false
			}
			idx = uint(binary.LittleEndian.Uint32(buf[j+1:]))
			j += 5
		case OpBinGet:
			if j+2 > len(buf) {
				return j, 0, 0, 0, false
			}
			idx = uint(buf[j+1])
			j += 2
		case OpAppends:
			fs.h = h0 + cnt
			if dmax > 0 {
				depth = max(depth, int32(dmax)-1)
			}
			return j, cnt, depth, tag | dor>>6, true
		case OpFrame:
			// A protocol-4 frame boundary, which Python's pickler
			// writes before any value once 64 KB are pending (a
			// snapshot's frames lists hold most of its bytes, so most
			// boundaries fall in one): step reads its length and
			// ignores it, and so does this. (Before, each sent its
			// trace entry the general way: 19 of ctx128's 3,838.)
			if j+9 > len(buf) {
				return j, 0, 0, 0, false
			}
			j += 9
			continue
		case OpEmptyDict:
			if cnt-gen <= 2 {
				return j, 0, 0, 0, false
			}
			var it Val
			var ok bool
			fs.h = h0 + cnt
			if j, ok = d.fastFrame(buf, j, &it); !ok {
				return j, 0, 0, 0, false
			}
			depth, tag = max(depth, it.Depth), tag|it.Tag
			cnt++
			continue
		default:
			return j, 0, 0, 0, false
		}
		if idx >= memoN {
			return j, 0, 0, 0, false
		}
		if dp := depths[idx]; dp != 0 {
			dmax, dor = max(dmax, dp&63), dor|dp
		} else {
			// A hole or a Builder's container (which the general path
			// refuses), a generic container, or a value too deep for
			// the byte.
			v := &memo[idx/memoChunk].v[idx%memoChunk]
			if v.Kind == kindUnset || v.Kind == kindShared {
				return j, 0, 0, 0, false
			}
			vd, vt := v.Depth, v.Tag
			if v.Kind == KindValue {
				gen = cnt
				g := d.gnodeOf(v) // the memo's copy may be stale
				vd, vt = g.depth, g.tag
			}
			depth, tag = max(depth, vd), tag|vt
		}
		cnt++
	}
	return j, 0, 0, 0, false
}

// refRun reads the memo references at buf[j] of a batch into a skipped
// list as fastBatch does, as long as each has its depth byte (most of a
// snapshot's frames lists): the end of the run (the first other opcode,
// a reference for fastBatch's general case, or the window's last bytes),
// their number, the greatest depth byte (six bits) and the union of the
// bytes; false for a reference beyond the memo (depths holds a byte for
// every slot). It calls nothing, so that its loop keeps everything in
// registers. (A branch on the reference's width is cheaper than
// computing it: predicted, it lets the next reference load before this
// one's opcode is read; computed, it chains every reference's loads to
// the previous one's, which cost 20-30% more CPU time on the gpt2-medium
// snapshots for fewer instructions.)
func refRun(buf []byte, j int, depths []uint8) (int, int, uint8, uint8, bool) {
	cnt := 0
	var dor uint8
	// seen has bit d set for each depth byte's low six bits d: the
	// greatest, dmax, is its highest bit, found once at the end instead
	// of a compare for every reference.
	var seen uint64
	// The loops' conditions keep five bytes in buf at j, so that an
	// opcode and its argument are read without the bounds checks and
	// slice headers that indexing costs (in cachegrind, 38 instructions
	// a reference before, most of them those); depths is read the same
	// way once idx is checked against its length.
	p := unsafe.Pointer(unsafe.SliceData(buf))
	dps, ndp := unsafe.Pointer(unsafe.SliceData(depths)), uint(len(depths))
	for {
		// A run of LONG_BINGETs (a snapshot's frames lists, once the
		// memo has 256 entries), then one of BINGETs, each in a loop
		// of its own and counted at its end: 15 instructions a
		// reference, where one loop for both opcodes took 20 (the
		// switch tested BINGET first). A loop ends at another opcode,
		// a slot without its byte (fastBatch's general case reads it)
		// or the window's last bytes; the outer loop ends when the
		// BINGET loop read nothing.
		j0 := j
		for j+5 <= len(buf) && *(*byte)(unsafe.Add(p, j)) == OpLongBinGet {
			idx := uint(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(p, j+1))[:]))
			if idx >= ndp {
				return j + 5, 0, 0, 0, false
			}
			dp := *(*uint8)(unsafe.Add(dps, idx))
			if dp == 0 {
				break
			}
			seen |= 1 << (dp & 63)
			dor |= dp
			j += 5
		}
		cnt += int(uint(j-j0) / 5)
		j0 = j
		for j+5 <= len(buf) && *(*byte)(unsafe.Add(p, j)) == OpBinGet {
			idx := uint(*(*byte)(unsafe.Add(p, j+1)))
			if idx >= ndp {
				return j + 2, 0, 0, 0, false
			}
			dp := *(*uint8)(unsafe.Add(dps, idx))
			if dp == 0 {
				break
			}
			seen |= 1 << (dp & 63)
			dor |= dp
			j += 2
		}
		if j == j0 {
			break
		}
		cnt += (j - j0) >> 1
	}
	return j, cnt, dmaxOf(seen), dor, true
}

// dmaxOf is the highest bit set in seen (refRun's greatest depth), 0 for
// none.
func dmaxOf(seen uint64) uint8 {
	if seen == 0 {
		return 0
	}
	return uint8(63 - bits.LeadingZeros64(seen))
}

// fastFrame reads an item of a skipped list: a memo reference (to
// anything but a generic container, which would change the node of the
// next new value), or a new frame dict as Python writes one (EMPTY_DICT,
// PUT, MARK, key, value, ..., SETITEMS) whose keys and values are
// scalars. Every new string in it is skipped unless a PUT keeps it, as
// in the general path, where everything inside a skipped container is
// NodeSkip. The item counts as pushed.
func (d *Machine) fastFrame(buf []byte, j int, it *Val) (int, bool) {
	fs := d.fs
	switch buf[j] {
	case OpEmptyDict:
	case OpBinGet, OpLongBinGet:
		j, ok := d.fastGet(buf, j, it)
		if !ok || it.Kind == KindValue || !fs.push() {
			return j, false
		}
		return j, true
	default:
		return j, false
	}
	if !fs.push() {
		return j, false
	}
	*it = Val{Kind: KindSkipped, Shape: ShapeDict, Depth: 1, N: d.off0 + int64(j)}
	j, ok := d.fastPut(buf, j+1, it)
	if !ok || j >= len(buf) || buf[j] != OpMark || !fs.push() {
		return j, false
	}
	j++
	cnt := 0
	depth, tag := it.Depth, it.Tag
	for {
		if j >= len(buf) {
			return j, false
		}
		var s Val
		switch buf[j] {
		case OpSetItems:
			if cnt%2 != 0 || fs.over(d) {
				return j, false
			}
			fs.h -= 1 + cnt
			it.Depth, it.Tag = depth, tag
			if int(depth) > d.lim.MaxDepth {
				return j, false
			}
			d.memoRefresh(it)
			return j + 1, true
		case OpShortBinUnicode, OpBinUnicode:
			j, ok = d.fastString(buf, j, &s, true)
		case OpBinGet, OpLongBinGet:
			j, ok = d.fastGet(buf, j, &s)
			switch s.Kind {
			case KindNone, KindBool, KindInt, KindBigInt, KindFloat, KindStr, KindBytes:
			default:
				ok = false
			}
		default:
			j, ok = d.fastScalar(buf, j, &s)
		}
		if !ok || !fs.push() {
			return j, false
		}
		if s.Depth >= depth {
			depth = s.Depth + 1
		}
		tag |= s.Tag
		cnt++
	}
}

// putLen is the length of the memo PUT at buf[j] with its argument, or
// 0 when there is none (the caller checks the window's end).
func putLen(buf []byte, j int) int {
	if j >= len(buf) {
		return 0
	}
	switch buf[j] {
	case OpMemoize:
		return 1
	case OpBinPut:
		return 2
	case OpLongBinPut:
		return 5
	}
	return 0
}

// fastPut runs the memo PUT at buf[j], if there is one, for v, the value
// just read, as memoPut would; only into a free slot that is already
// allocated, with no sparse part and the memo limit not reached (else it
// reports false). The slot is logged for fastUndo.
func (d *Machine) fastPut(buf []byte, j int, v *Val) (int, bool) {
	if j >= len(buf) {
		return j, false
	}
	var idx uint64
	k := j
	switch buf[j] {
	case OpMemoize:
		idx, k = uint64(d.nmemo), j+1
	case OpBinPut:
		if j+2 > len(buf) {
			return j, false
		}
		idx, k = uint64(buf[j+1]), j+2
	case OpLongBinPut:
		if j+5 > len(buf) {
			return j, false
		}
		idx, k = uint64(binary.LittleEndian.Uint32(buf[j+1:])), j+5
	default:
		return j, true
	}
	if d.sparse != nil || idx >= uint64(d.memoN) || idx > math.MaxUint32 || d.nmemo >= d.lim.MaxMemo ||
		d.memoN > 2*d.lim.MaxMemo+memoSlack+memoChunk {
		return j, false
	}
	c := d.memo[idx/memoChunk]
	s := &c.v[idx%memoChunk]
	if s.Kind != kindUnset {
		return j, false
	}
	memoSkipped(v, idx)
	if v.Kind == KindNode {
		// (The slot is clean: Kind and Tag are all that is not set.)
		s.Kind, s.Shape, s.Node, s.Depth, s.N = kindShared, v.Shape, v.Node, v.Depth, d.off0+int64(j)
		d.depths[idx] = 0
	} else {
		setVal(s, v)
		d.depths[idx] = skipDepth(v)
	}
	d.nmemo++
	d.memoHi = max(d.memoHi, int(idx)+1)
	d.fs.puts = append(d.fs.puts, uint32(idx))
	return k, true
}

// setVal copies *src to *dst field by field. A Val just written field
// by field (a literal, a callee's result) and then copied whole is read
// back with one 16-byte load from several narrower stores, which the
// processor cannot forward from its store buffer: the load waits until
// those stores have reached the cache. Cachegrind does not see it; in
// CPU profiles of the ctx128 import the instruction after such a copy
// (the record's Val appended in fastDict, the PUT's copy into the memo)
// was hot. Here each field is loaded as it was stored.
func setVal(dst, src *Val) {
	dst.Kind, dst.Shape, dst.Node, dst.Tag, dst.Depth, dst.N = src.Kind, src.Shape, src.Node, src.Tag, src.Depth, src.N
}

// setNode makes the clean *v the stack's Val of a Builder's dict
// (node, handle h) as fastDict opens it, field by field (setVal).
func (v *Val) setNode(node Node, h int64) {
	v.Kind, v.Shape, v.Node, v.Depth, v.N = KindNode, ShapeDict, node, 1, h
}

// fastGet reads the BINGET or LONG_BINGET (which the caller has seen)
// at buf[j] into v: a value in the memo's slots, not a second reference
// to a Builder's container (an error the general path reports).
func (d *Machine) fastGet(buf []byte, j int, v *Val) (int, bool) {
	idx, k := getArg(buf, j)
	if k == 0 || idx >= uint(d.memoN) {
		return j, false
	}
	*v = d.memo[idx/memoChunk].v[idx%memoChunk]
	d.syncValue(v) // a generic container's depth is its record's
	return k, v.Kind != kindUnset && v.Kind != kindShared
}

// getArg is the memo index of the BINGET or LONG_BINGET at buf[j] and
// the index after it (0 when the window cuts it).
func getArg(buf []byte, j int) (uint, int) {
	if buf[j] == OpBinGet {
		if j+2 <= len(buf) {
			return uint(buf[j+1]), j + 2
		}
	} else if j+5 <= len(buf) {
		return uint(binary.LittleEndian.Uint32(buf[j+1:])), j + 5
	}
	return 0, 0
}

// fastString reads the SHORT_BINUNICODE or BINUNICODE (of at most 4096
// bytes, read in place as readText does) at buf[j], and a PUT after it.
// A string whose node is NodeSkip (skip) is kept only when a PUT follows,
// as pushStr decides; a kept one is interned (or kept whole when long,
// or, skipped, as strSkippedIndex keeps it) and counts as text.
func (d *Machine) fastString(buf []byte, j int, v *Val, skip bool) (int, bool) {
	var n uint64
	k := j + 2
	if buf[j] == OpShortBinUnicode {
		if k > len(buf) {
			return j, false
		}
		n = uint64(buf[j+1])
	} else {
		if k = j + 5; k > len(buf) {
			return j, false
		}
		if n = uint64(binary.LittleEndian.Uint32(buf[j+1:])); n > 4096 {
			return j, false
		}
	}
	if n > MaxLen || (d.size >= 0 && int64(n) > d.size-(d.off0+int64(k))) || k+int(n) >= len(buf) {
		return j, false
	}
	b := buf[k : k+int(n) : k+int(n)]
	k += int(n)
	if skip && putLen(buf, k) == 0 {
		*v = Val{Kind: KindSkipped, N: d.off0 + int64(j), Tag: d.tag(b)}
		return k, true
	}
	if d.text+int64(n) > d.lim.MaxText {
		return j, false
	}
	// The string's index: a Val assigned from a call is stored field by
	// field and then copied whole (setVal).
	i, ok := 0, false
	if skip && len(b) >= skipInternMin {
		i, ok = d.strSkippedIndex(b)
	}
	if !ok {
		if i, ok = d.strKeptIndex(b); !ok {
			return j, false
		}
	}
	v.Kind, v.Shape, v.Node, v.Tag, v.Depth, v.N = KindStr, ShapeNone, 0, d.stags[i], 0, int64(i)
	d.text += int64(n)
	d.fs.text += int64(n)
	return d.fastPut(buf, k, v)
}

// fastScalar reads an int (BININT, BININT1, BININT2, LONG1 of at most
// eight bytes), None or a bool at buf[j]. A PUT after it is not read
// (Python memoizes none of them), so the caller gives up there.
func (d *Machine) fastScalar(buf []byte, j int, v *Val) (int, bool) {
	switch buf[j] {
	case OpBinInt1:
		if j+2 > len(buf) {
			return j, false
		}
		*v = Val{Kind: KindInt, N: int64(buf[j+1])}
		return j + 2, true
	case OpBinInt2:
		if j+3 > len(buf) {
			return j, false
		}
		*v = Val{Kind: KindInt, N: int64(binary.LittleEndian.Uint16(buf[j+1:]))}
		return j + 3, true
	case OpBinInt:
		if j+5 > len(buf) {
			return j, false
		}
		*v = Val{Kind: KindInt, N: int64(int32(binary.LittleEndian.Uint32(buf[j+1:])))}
		return j + 5, true
	case OpLong1:
		if j+2 > len(buf) {
			return j, false
		}
		n := int(buf[j+1])
		if n > 8 || j+2+n > len(buf) {
			return j, false
		}
		*v = Val{Kind: KindInt, N: smallLong(buf[j+2 : j+2+n])}
		return j + 2 + n, true
	case OpNone:
		*v = Val{Kind: KindNone}
		return j + 1, true
	case OpNewTrue:
		*v = Val{Kind: KindBool, N: 1}
		return j + 1, true
	case OpNewFalse:
		*v = Val{Kind: KindBool}
		return j + 1, true
	}
	return j, false
}
