package snapshot

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"sync"

	"membench/internal/pickle"
	"membench/torchlike"
	"membench/traces"
)

// Limits bound what decoding one snapshot may cost (see the package
// overview, "Resource limits").
type Limits struct {
	// Pickle bounds the pickle machine (nesting depth, stack, memo,
	// text, generic values).
	Pickle pickle.Limits
	// MaxRecords bounds the segments, blocks and trace entries kept
	// (each costs 40 to 130 bytes).
	MaxRecords int
}

// DefaultLimits are the limits of Decode and of the trace reader.
var DefaultLimits = Limits{Pickle: pickle.DefaultLimits, MaxRecords: 1 << 23}

// ErrLimit is wrapped by the error for a snapshot that exceeds a limit.
var ErrLimit = pickle.ErrLimit

// The nodes of the snapshot schema: the containers the streaming decoder
// builds into Segment, Block and TraceEntry values directly.
const (
	nTop      pickle.Node = 2 + iota // the top-level dict (or bare list of segments)
	nSegments                        // list of segments
	nSegment                         // segment dict
	nBlocks                          // list of blocks
	nBlock                           // block dict
	nTraces                          // list of device traces
	nTrace                           // list of trace entries
	nEntry                           // trace entry dict
)

var nodeNames = [...]string{
	nTop: "snapshot", nSegments: "segment list", nSegment: "segment", nBlocks: "block list",
	nBlock: "block", nTraces: "device trace list", nTrace: "device trace", nEntry: "trace entry",
}

// Fields seen in a record (the others keep their defaults).
const (
	fAction = 1 << iota
	fAddress
	fTotalSize
	fSegType
	fSize
	fRequested
	fState
)

// rec is a container of the schema being built. Trace entries and
// blocks, the many, are small; the other nodes (segments, lists, the top
// level) have their fields in a recExt.
type rec struct {
	node pickle.Node
	seen uint16
	bad  bool // opened with the wrong shape: its items are dropped
	top  bool
	off  int64
	err  *pathErr
	blk  Block
	*recExt
}

// entRec is a trace entry being built.
type entRec struct {
	entry entryRaw
	off   int64
	err   *pathErr
	seen  uint16
	bad   bool
}

type recExt struct {
	seg    Segment
	segs   []Segment
	blocks []Block
	// untiled lists, in order, the blocks that gave no address (old
	// releases): they tile their segment from its address once the
	// segment is complete. Every int64 is a valid address in the
	// pickle, so a marker value in Block.Address could not tell them
	// apart (it once read a block at math.MinInt64 as missing).
	untiled []int32
	traces  [][]TraceEntry
	// raws replaces traces when the builder keeps its traces raw
	// (builder.keepRaw).
	raws [][]entryRaw
	// entries is the trace being filled, in chunks of entryChunk
	// (growing one slice would copy the trace over and over): the full
	// ones are in chunks; takeEntries joins them.
	entries []entryRaw
	chunks  []*[entryChunk]entryRaw
	// top-level dict
	keyS, keyT  bool
	settings    any
	hasSettings bool
}

const entryChunk = 1024

// entryRaw is a trace entry as the builder keeps it until its trace is
// complete: a TraceEntry without pointers, its action an index in the
// builder's table of actions (builder.actTab). The entries are copied
// twice, into the chunks and then into the trace, and the collector runs
// often during a decode (the trace itself is megabytes): without
// pointers, neither copy needs write barriers and the chunks are not
// scanned (in a CPU profile of the opt125m import, the trace's copies
// went from 18% to 10%, the write barriers from 7% to 2%).
type entryRaw struct {
	Addr, Size, Stream, TimeUS, DeviceFree int64
	action                                 uint32
	Frames                                 FrameClass
}

// entryPool holds the chunks of traces being filled, reused by the next
// trace.
var entryPool = sync.Pool{New: func() any { return new([entryChunk]entryRaw) }}

func (r *rec) addEntry(e *entryRaw) {
	if len(r.entries) == cap(r.entries) {
		c := entryPool.Get().(*[entryChunk]entryRaw)
		r.chunks = append(r.chunks, c)
		r.entries = c[:0]
	}
	r.entries = append(r.entries, *e)
}

func (r *rec) nEntries() int {
	if len(r.chunks) == 0 {
		return len(r.entries)
	}
	return (len(r.chunks)-1)*entryChunk + len(r.entries)
}

// appendBlock appends bl to the blocks of r. A snapshot has a few
// blocks in each of hundreds of segments, and growing each segment's
// slice cost more allocations than the rest of an import: the lists are
// carved one after the other from shared arrays (blkArena), a list
// growing in place while it is the last one carved. Every carved slice
// has its capacity cut at its length, so that an append that does not go
// through here (or to a slice of the Snapshot) copies it elsewhere
// rather than writing over the next list.
func (b *builder) appendBlock(r *recExt, bl *Block) {
	n := len(r.blocks)
	a := b.blkArena
	atTail := n == 0 || (len(a) > 0 && cap(r.blocks) == n && &r.blocks[n-1] == &a[len(a)-1])
	if !atTail {
		r.blocks = append(r.blocks, *bl)
		return
	}
	if len(a) == cap(a) {
		c := max(2*(n+1), min(max(2*cap(a), 16), 1024))
		if b.bufs != nil {
			a = b.bufs.arena(c)
		} else {
			a = make([]Block, 0, c)
		}
		a = append(a, r.blocks...)
	}
	a = append(a, *bl)
	r.blocks = a[len(a)-n-1 : len(a) : len(a)]
	b.blkArena = a
}

// addTrace adds the complete trace of record cr to the traces of r.
func (b *builder) addTrace(r *recExt, cr *rec) {
	if b.keepRaw {
		r.raws = append(r.raws, b.takeRaw(cr))
	} else {
		r.traces = append(r.traces, b.takeEntries(cr))
	}
}

// addGenericTrace adds tr, a trace decoded from a generic value, to the
// traces of r.
func (b *builder) addGenericTrace(r *recExt, tr []TraceEntry) {
	if !b.keepRaw {
		r.traces = append(r.traces, tr)
		return
	}
	var raw []entryRaw
	if len(tr) > 0 {
		raw = make([]entryRaw, len(tr))
		for i := range tr {
			raw[i] = b.raw(&tr[i])
		}
	}
	r.raws = append(r.raws, raw)
}

// nTraces is the number of traces r holds.
func (r *recExt) nTraces() int { return len(r.traces) + len(r.raws) }

// takeRaw returns r's trace in one slice (nil when empty), as the
// builder keeps it, its chunks to the pool. The entries hold no
// pointers: the copy is a memmove, and the collector does not scan the
// result.
func (b *builder) takeRaw(r *rec) []entryRaw {
	if r.chunks == nil {
		return nil
	}
	out := rawPool.get(r.nEntries())
	k := 0
	for i, c := range r.chunks {
		part := c[:]
		if i == len(r.chunks)-1 {
			part = r.entries
		}
		k += copy(out[k:], part)
		entryPool.Put(c)
	}
	r.chunks, r.entries = nil, nil
	return out
}

// takeEntries returns r's trace in one slice (nil when empty), as a
// Snapshot holds it: takeRaw's entries with their actions.
func (b *builder) takeEntries(r *rec) []TraceEntry {
	raw := b.takeRaw(r)
	if raw == nil {
		return nil
	}
	if len(b.actTab) == 0 {
		b.actTab = append(b.actTab0[:0], "") // entries without an action
	}
	out := make([]TraceEntry, len(raw))
	for k := range raw {
		e := &raw[k]
		out[k] = TraceEntry{Action: b.actTab[e.action], Addr: e.Addr, Size: e.Size, Stream: e.Stream,
			TimeUS: e.TimeUS, DeviceFree: e.DeviceFree, Frames: e.Frames}
	}
	rawPool.put(raw)
	return out
}

// raw is e as the builder keeps it.
func (b *builder) raw(e *TraceEntry) entryRaw {
	return entryRaw{action: b.actionIndex(e.Action), Addr: e.Addr, Size: e.Size, Stream: e.Stream,
		TimeUS: e.TimeUS, DeviceFree: e.DeviceFree, Frames: e.Frames}
}

// actionIndex is the index of action a in actTab, added when new: the
// table is searched, and for the few actions of a real snapshot that is
// faster than a map; a snapshot with many distinct actions gets one.
func (b *builder) actionIndex(a string) uint32 {
	if a == "" {
		return 0
	}
	if b.actIdx != nil {
		if i, ok := b.actIdx[a]; ok {
			return i
		}
	} else {
		for i := 1; i < len(b.actTab); i++ {
			if b.actTab[i] == a {
				return uint32(i)
			}
		}
	}
	if len(b.actTab) == 0 {
		b.actTab = append(b.actTab0[:0], "")
	}
	i := uint32(len(b.actTab))
	b.actTab = append(b.actTab, a)
	if b.actIdx != nil || len(b.actTab) > 32 {
		if b.actIdx == nil {
			b.actIdx = make(map[string]uint32, 64)
			for k := 1; k < len(b.actTab); k++ {
				b.actIdx[b.actTab[k]] = uint32(k)
			}
		}
		b.actIdx[a] = i
	}
	return i
}

// pathErr is a schema error, reported once the value it concerns is part
// of the snapshot: its path grows as the value is stored in its parents.
type pathErr struct {
	path string // ".size", "[17].size", ... "device_traces[0][17].size"
	msg  string
	off  int64 // offset of the container where it was found
}

func (e *pathErr) Error() string {
	return fmt.Sprintf("%s: %s (pickle offset %d)", e.path, e.msg, e.off)
}

func (e *pathErr) under(prefix string) *pathErr {
	return &pathErr{path: prefix + e.path, msg: e.msg, off: e.off}
}

// asPathErr turns an error of the generic schema decoding (FromValue's
// ".blocks[2].size: want int, got str") into a pathErr.
func asPathErr(err error, off int64) *pathErr {
	s := err.Error()
	if k := strings.Index(s, ": "); k >= 0 {
		return &pathErr{path: s[:k], msg: s[k+2:], off: off}
	}
	return &pathErr{msg: s, off: off}
}

// builder is the pickle.Builder of the snapshot schema.
type builder struct {
	m *pickle.Machine
	// keepRaw: the traces are kept as entryRaw (recExt.raws) and not
	// built into TraceEntry values (the trace reader's decode).
	keepRaw bool
	recs    []rec
	free    []int64
	// Trace entries, the many, have a table of their own with a smaller
	// record: a batch of a thousand is opened, filled and appended, and
	// then the table starts over (entLive counts the open ones).
	ents     []entRec
	entFree  []int64
	entLive  int
	records  int
	lim      Limits
	claimed  map[any]bool
	extFree  []*recExt // recExts of released records, for the next ones
	fields   []field   // field of each interned string (by its index), 0 = not yet known
	actions  []uint32  // action index (actTab) of each interned string plus one, 0 = not yet known
	tb       *tables   // what the tables came in, to go back in (putTables)
	actTab   []string  // the actions of trace entries, canonical (canon); actTab[0] is ""
	actIdx   map[string]uint32
	actTab0  [16]string // actTab's first array: a snapshot has a dozen actions
	blkArena []Block    // see appendBlock
	// bufs: the trace reader's import buffers (keepRaw), from which
	// the segments and the block arrays come.
	bufs *importBufs
}

// importBufs holds what a trace reader's import allocates and drops
// once its reader has served the trace: the Snapshot's segments and the
// arrays their blocks are carved from, the Layout's segments and blocks
// the reconstruction's segments, and the reader's warm-start events
// (ctx128: about 95 KB of the 127 KB an import allocated). They go back to importPool in one piece with the reader's other
// buffers (snapshotReader.release), cleared of pointers, and serve the
// next import: a buffer is taken whatever its capacity, and only grown.
type importBufs struct {
	segs   []Segment
	arenas [][]Block // appendBlock's arrays, in the order carved
	narena int       // arenas used by this import
	lsegs  []LSeg
	lblks  []LBlock
	rsegs  []rseg  // the reconstruction's segments (recon.loadFinal)
	ptrs   []int32 // and their block lists' array
	init   []traces.Event
}

var importPool = sync.Pool{New: func() any { return new(importBufs) }}

// put gives u back to importPool, its buffers cleared (they hold the
// strings and slices of a snapshot nobody reads any more).
func (u *importBufs) put() {
	clear(u.segs[:cap(u.segs)])
	u.segs = u.segs[:0]
	for _, a := range u.arenas[:u.narena] {
		clear(a[:cap(a)])
	}
	u.narena = 0
	clear(u.lsegs[:cap(u.lsegs)])
	clear(u.rsegs[:cap(u.rsegs)])
	u.lsegs, u.lblks, u.rsegs, u.ptrs, u.init = u.lsegs[:0], u.lblks[:0], u.rsegs[:0], u.ptrs[:0], u.init[:0]
	importPool.Put(u)
}

// arena returns an empty array of Blocks with room for at least n: the
// next of the import buffers', or a new one, kept there.
func (u *importBufs) arena(n int) []Block {
	if u.narena < len(u.arenas) && cap(u.arenas[u.narena]) >= n {
		a := u.arenas[u.narena][:0]
		u.narena++
		return a
	}
	a := make([]Block, 0, n)
	if u.narena < len(u.arenas) {
		u.arenas[u.narena] = a
	} else {
		u.arenas = append(u.arenas, a)
	}
	u.narena++
	return a
}

// field is a dict key of the schema, decided once per interned string.
type field uint8

const (
	kUnknown field = iota + 1 // a key the schema does not read
	kSegments
	kDeviceTraces
	kAllocatorSettings
	kDevice
	kAddress
	kTotalSize
	kAllocatedSize
	kActiveSize
	kRequestedSize
	kStream
	kSegmentType
	kIsExpandable
	kSegmentPoolID
	kBlocks
	kSize
	kState
	kAction
	kAddr
	kTimeUS
	kDeviceFree
	kFrames
)

var fieldNames = [...]string{
	kSegments: "segments", kDeviceTraces: "device_traces", kAllocatorSettings: "allocator_settings",
	kDevice: "device", kAddress: "address", kTotalSize: "total_size", kAllocatedSize: "allocated_size",
	kActiveSize: "active_size", kRequestedSize: "requested_size", kStream: "stream",
	kSegmentType: "segment_type", kIsExpandable: "is_expandable", kSegmentPoolID: "segment_pool_id",
	kBlocks: "blocks", kSize: "size", kState: "state", kAction: "action", kAddr: "addr",
	kTimeUS: "time_us", kDeviceFree: "device_free", kFrames: "frames",
}

// fieldIndex is fieldNames inverted: a snapshot decode looks up each
// distinct key string once (a scan of the names cost about 5,000
// instructions an import, a tenth of a small snapshot's decoding).
var fieldIndex = func() map[string]field {
	m := make(map[string]field, len(fieldNames))
	for f, n := range fieldNames {
		if n != "" {
			m[n] = field(f)
		}
	}
	return m
}()

func fieldOf(s string) field {
	if f, ok := fieldIndex[s]; ok {
		return f
	}
	return kUnknown
}

// key is the field of a str dict key (kUnknown for other keys): a table
// lookup for an interned string after its first use.
func (b *builder) key(k *pickle.Val) field {
	if k.Kind != pickle.KindStr {
		return kUnknown
	}
	if k.N < 0 {
		return fieldOf(b.m.Str(k))
	}
	if k.N < int64(len(b.fields)) {
		if f := b.fields[k.N]; f != 0 {
			return f
		}
	} else {
		b.fields = append(b.fields, make([]field, int(k.N)+1-len(b.fields))...)
	}
	f := fieldOf(b.m.Str(k))
	b.fields[k.N] = f
	return f
}

// knownKey is the field of a str key (the caller has checked k.Kind)
// whose string key has met before, or 0: key without its call, inlined
// where a snapshot asks about every key of every trace entry
// (setEntryItems and Child, nine times an entry).
func (b *builder) knownKey(k *pickle.Val) field {
	if n := uint64(k.N); n < uint64(len(b.fields)) {
		return b.fields[n]
	}
	return 0
}

func (b *builder) Describe(n pickle.Node) string {
	if int(n) < len(nodeNames) && nodeNames[n] != "" {
		return nodeNames[n]
	}
	return "value"
}

func (b *builder) Open(n pickle.Node, shape pickle.Shape, off int64) (int64, error) {
	if n == nEntry {
		return b.openEntry(shape, off), nil
	}
	var h int64
	if k := len(b.free); k > 0 {
		h = b.free[k-1]
		b.free = b.free[:k-1]
	} else {
		h = int64(len(b.recs))
		b.recs = append(b.recs, rec{})
	}
	r := &b.recs[h]
	*r = rec{node: n, off: off}
	if n != nEntry && n != nBlock {
		if k := len(b.extFree); k > 0 {
			r.recExt = b.extFree[k-1]
			b.extFree = b.extFree[:k-1]
		} else {
			r.recExt = &recExt{}
		}
	}
	wantDict := n == nSegment || n == nBlock || n == nEntry
	switch {
	case n == nTop:
		if shape == pickle.ShapeList {
			r.node, r.top = nSegments, true
		} else if shape != pickle.ShapeDict {
			r.bad = true
			r.err = &pathErr{msg: "not a memory snapshot: top level is a set, want dict", off: off}
		}
	case wantDict && shape != pickle.ShapeDict:
		r.bad = true
		r.err = &pathErr{msg: "want dict, got list", off: off}
	case !wantDict && shape == pickle.ShapeDict:
		r.bad = true
		r.err = &pathErr{msg: "want list, got dict", off: off}
	}
	return h, nil
}

// openEntry opens a trace entry record: the next slot of the table, or
// a released one while others are still open (a pickle can keep one
// open while it opens and drops others, and the table must not grow
// with them).
func (b *builder) openEntry(shape pickle.Shape, off int64) int64 {
	if b.entLive == 0 {
		b.ents, b.entFree = b.ents[:0], b.entFree[:0]
	}
	b.entLive++
	var h int64
	if k := len(b.entFree); k > 0 {
		h = b.entFree[k-1]
		b.entFree = b.entFree[:k-1]
	} else {
		h = int64(len(b.ents))
		if h < int64(cap(b.ents)) {
			b.ents = b.ents[:h+1]
		} else {
			b.ents = append(b.ents, entRec{})
		}
	}
	// Assigned in place: appending the literal built it on the stack
	// and copied it with wide loads over its narrow stores, which the
	// store buffer cannot forward (a stall for every entry).
	b.ents[h] = entRec{off: off}
	if shape != pickle.ShapeDict {
		e := &b.ents[h]
		e.bad = true
		e.err = &pathErr{msg: "want dict, got list", off: off}
	}
	return h
}

// releaseVal releases the Builder container v (a record or an entry).
func (b *builder) releaseVal(v *pickle.Val) {
	if v.Node == nEntry {
		b.entFree = append(b.entFree, v.N)
		b.entLive--
		return
	}
	b.release(v.N)
}

func (b *builder) release(h int64) {
	r := &b.recs[h]
	// The slices went to the parent: forget them (the next record
	// allocates its own).
	*r = rec{}
	b.free = append(b.free, h)
}

func (b *builder) Drop(v *pickle.Val) { b.releaseVal(v) }

// putExt recycles the recExt of a released record once what it held has
// been taken.
func (b *builder) putExt(e *recExt) {
	if e == nil {
		return
	}
	*e = recExt{}
	b.extFree = append(b.extFree, e)
}

func (b *builder) Child(c *pickle.Val, key *pickle.Val) pickle.Node {
	if c.Node == nEntry {
		if b.ents[c.N].bad || key == nil || key.Kind != pickle.KindStr {
			return pickle.NodeSkip
		}
		f := b.knownKey(key)
		if f == 0 {
			f = b.key(key)
		}
		switch f {
		case kAction, kAddr, kSize, kStream, kTimeUS, kDeviceFree:
			return pickle.NodeValue
		}
		return pickle.NodeSkip
	}
	r := &b.recs[c.N]
	if r.bad {
		return pickle.NodeSkip
	}
	switch r.node {
	case nSegments:
		return nSegment
	case nBlocks:
		return nBlock
	case nTraces:
		return nTrace
	case nTrace:
		return nEntry
	}
	if key == nil || key.Kind != pickle.KindStr {
		return pickle.NodeSkip
	}
	f := b.key(key)
	switch r.node {
	case nTop:
		switch f {
		case kSegments:
			return nSegments
		case kDeviceTraces:
			return nTraces
		case kAllocatorSettings:
			return pickle.NodeValue
		}
	case nSegment:
		switch f {
		case kBlocks:
			return nBlocks
		case kDevice, kAddress, kTotalSize, kAllocatedSize, kActiveSize, kRequestedSize,
			kStream, kSegmentType, kIsExpandable, kSegmentPoolID:
			return pickle.NodeValue
		}
	case nBlock:
		switch f {
		case kAddress, kSize, kRequestedSize, kState:
			return pickle.NodeValue
		}
	}
	return pickle.NodeSkip
}

func (r *rec) fail(e *pathErr) {
	if r.err == nil {
		r.err = e
	}
}

func (r *rec) failKey(key field, msg string) {
	r.fail(&pathErr{path: "." + fieldNames[key], msg: msg, off: r.off})
}

func shortInt(z *big.Int) string {
	s := z.String()
	if len(s) > 40 {
		return s[:20] + fmt.Sprintf("...(%d digits)", len(s))
	}
	return s
}

// int reads an int field into dst; it reports whether the field is
// present (None counts as absent, as newer writers emit None).
func (b *builder) int(r *rec, key field, v *pickle.Val, dst *int64) bool {
	switch v.Kind {
	case pickle.KindInt:
		*dst = v.N
		return true
	case pickle.KindNone:
		return false
	case pickle.KindBigInt:
		r.failKey(key, "int "+shortInt(b.m.Obj(v).(*big.Int))+" does not fit in 64 bits")
	default:
		r.failKey(key, "want int, got "+v.TypeName())
	}
	return false
}

func (b *builder) str(r *rec, key field, v *pickle.Val, dst *string) bool {
	switch v.Kind {
	case pickle.KindStr:
		*dst = canon(b.m.Str(v))
		return true
	case pickle.KindNone:
		return false
	}
	r.failKey(key, "want str, got "+v.TypeName())
	return false
}

func (r *rec) bool(key field, v *pickle.Val, dst *bool) {
	switch v.Kind {
	case pickle.KindBool:
		*dst = v.N != 0
		return
	case pickle.KindInt:
		if v.N == 0 || v.N == 1 {
			*dst = v.N == 1
			return
		}
	case pickle.KindNone:
		*dst = false
		return
	}
	r.failKey(key, "want bool, got "+v.TypeName())
}

func (r *rec) mark(bit uint16, present bool) {
	if present {
		r.seen |= bit
	} else {
		r.seen &^= bit
	}
}

func (b *builder) SetItems(c *pickle.Val, kv []pickle.Val) error {
	if c.Node == nEntry {
		b.setEntryItems(&b.ents[c.N], kv)
		return nil
	}
	r := &b.recs[c.N]
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := &kv[i], &kv[i+1]
		if r.bad || k.Kind != pickle.KindStr {
			b.dropVal(v)
			continue
		}
		if err := b.setItem(r, b.key(k), v); err != nil {
			return err
		}
		r = &b.recs[c.N] // setItem may have grown b.recs
	}
	return nil
}

// dropVal releases a value the schema does not keep.
func (b *builder) dropVal(v *pickle.Val) {
	if v.Kind == pickle.KindNode {
		b.releaseVal(v)
	}
}

// setEntryItems stores key, value pairs in a trace entry: setItem's
// rules for an entry, in a loop of its own since a snapshot has tens of
// thousands of entries and a handful of segments.
func (b *builder) setEntryItems(r *entRec, kv []pickle.Val) {
	e := &r.entry
	bad := r.bad // set when the entry was opened, never after
	for ; len(kv) >= 2; kv = kv[2:] {
		k, v := &kv[0], &kv[1]
		if bad || k.Kind != pickle.KindStr {
			b.dropVal(v)
			continue
		}
		key := b.knownKey(k)
		if key == 0 {
			key = b.key(k)
		}
		var dst *int64
		switch key {
		case kAction:
			switch v.Kind {
			case pickle.KindStr:
				e.action = b.action(v)
				r.seen |= fAction
			case pickle.KindNone:
				r.seen &^= fAction
			default:
				r.failKey(key, "want str, got "+v.TypeName())
			}
			continue
		case kAddr:
			dst = &e.Addr
		case kSize:
			dst = &e.Size
		case kStream:
			dst = &e.Stream
		case kTimeUS:
			dst = &e.TimeUS
		case kDeviceFree:
			dst = &e.DeviceFree
		case kFrames:
			if v.Kind == pickle.KindValue {
				e.Frames = genericFrameClass(b.m.Obj(v))
			} else {
				e.Frames = frameClassOf(v)
			}
			b.dropVal(v)
			continue
		default:
			b.dropVal(v)
			continue
		}
		switch v.Kind {
		case pickle.KindInt:
			*dst = v.N
		case pickle.KindNone:
		case pickle.KindBigInt:
			r.failKey(key, "int "+shortInt(b.m.Obj(v).(*big.Int))+" does not fit in 64 bits")
		default:
			r.failKey(key, "want int, got "+v.TypeName())
		}
	}
}

// The record path's fields of a trace entry (pickle.RecordBuilder).
const (
	slotAction = iota
	slotAddr
	slotSize
	slotStream
	slotTimeUS
	slotDeviceFree
	slotFrames
)

// RecordNode makes trace entries the pickle machine's records of fixed
// fields: their pairs then land in a pickle.Record instead of a list of
// pairs that setEntryItems walks again (about a fifth of an entry's
// instructions).
func (b *builder) RecordNode() pickle.Node { return nEntry }

// Slot is the field of a trace entry's key: the fields setEntryItems
// keeps, with the node Child gives (NodeValue for action and the ints,
// NodeSkip for frames and the keys it drops).
func (b *builder) Slot(key string) pickle.Slot {
	switch fieldOf(key) {
	case kAction:
		return pickle.SlotStr | slotAction
	case kAddr:
		return pickle.SlotInt | slotAddr
	case kSize:
		return pickle.SlotInt | slotSize
	case kStream:
		return pickle.SlotInt | slotStream
	case kTimeUS:
		return pickle.SlotInt | slotTimeUS
	case kDeviceFree:
		return pickle.SlotInt | slotDeviceFree
	case kFrames:
		return pickle.SlotAny | slotFrames
	}
	return pickle.SlotDrop
}

// SetRecord stores a trace entry read by the record path: what
// setEntryItems stores for the same pairs, which the record path gives
// only with each field once, ints in the int fields and a str action (so
// that no field can fail and their order does not matter).
func (b *builder) SetRecord(c *pickle.Val, rc *pickle.Record) error {
	r := &b.ents[c.N]
	e := &r.entry
	set := rc.Set
	if set&(1<<slotAction) != 0 {
		e.action = b.action(&rc.V[slotAction])
		r.seen |= fAction
	}
	if set&(1<<slotAddr) != 0 {
		e.Addr = rc.Int[slotAddr]
	}
	if set&(1<<slotSize) != 0 {
		e.Size = rc.Int[slotSize]
	}
	if set&(1<<slotStream) != 0 {
		e.Stream = rc.Int[slotStream]
	}
	if set&(1<<slotTimeUS) != 0 {
		e.TimeUS = rc.Int[slotTimeUS]
	}
	if set&(1<<slotDeviceFree) != 0 {
		e.DeviceFree = rc.Int[slotDeviceFree]
	}
	if set&(1<<slotFrames) != 0 {
		v := &rc.V[slotFrames]
		if v.Kind == pickle.KindValue {
			e.Frames = genericFrameClass(b.m.Obj(v))
		} else {
			e.Frames = frameClassOf(v)
		}
		b.dropVal(v)
	}
	return nil
}

// action is the index in actTab of the canonical string (canon) of an
// action value, decided once per interned string.
func (b *builder) action(v *pickle.Val) uint32 {
	if v.N < 0 {
		return b.actionIndex(canon(b.m.Str(v)))
	}
	if v.N < int64(len(b.actions)) {
		if a := b.actions[v.N]; a != 0 {
			return a - 1
		}
	} else {
		b.actions = append(b.actions, make([]uint32, int(v.N)+1-len(b.actions))...)
	}
	a := b.actionIndex(canon(b.m.Str(v)))
	b.actions[v.N] = a + 1
	return a
}

func (r *entRec) failKey(key field, msg string) {
	if r.err == nil {
		r.err = &pathErr{path: "." + fieldNames[key], msg: msg, off: r.off}
	}
}

func (b *builder) setItem(r *rec, key field, v *pickle.Val) error {
	switch r.node {
	case nTop:
		switch key {
		case kSegments:
			r.keyS = true
			segs, err := b.takeList(r, v, nSegments, "segments")
			if err != nil {
				return err
			}
			if segs != nil {
				r.segs = segs.segs
				b.putExt(segs)
			}
		case kDeviceTraces:
			r.keyT = true
			tr, err := b.takeList(r, v, nTraces, "device_traces")
			if err != nil {
				return err
			}
			if tr != nil {
				r.traces, r.raws = tr.traces, tr.raws
				b.putExt(tr)
			}
		case kAllocatorSettings:
			x, err := b.m.Any(v)
			if err != nil {
				r.fail(&pathErr{path: "allocator_settings", msg: err.Error(), off: r.off})
			}
			r.settings, r.hasSettings = x, x != nil
		default:
			b.dropVal(v)
		}
	case nSegment:
		sg := &r.seg
		switch key {
		case kDevice:
			var dev int64
			if b.int(r, key, v, &dev) {
				if dev < 0 || dev > 1<<20 {
					r.failKey(key, fmt.Sprintf("device %d out of range", dev))
				}
			}
			sg.Device = int(dev)
		case kAddress:
			r.mark(fAddress, b.int(r, key, v, &sg.Address))
		case kTotalSize:
			r.mark(fTotalSize, b.int(r, key, v, &sg.TotalSize))
		case kAllocatedSize:
			b.int(r, key, v, &sg.AllocatedSize)
		case kActiveSize:
			b.int(r, key, v, &sg.ActiveSize)
		case kRequestedSize:
			b.int(r, key, v, &sg.RequestedSize)
		case kStream:
			b.int(r, key, v, &sg.Stream)
		case kIsExpandable:
			r.bool(key, v, &sg.IsExpandable)
		case kSegmentType:
			r.mark(fSegType, b.str(r, key, v, &sg.SegmentType))
		case kSegmentPoolID:
			x, _ := b.m.Any(v)
			sg.PrivatePool = privatePool(x)
		case kBlocks:
			l, err := b.takeList(r, v, nBlocks, ".blocks")
			if err != nil {
				return err
			}
			if l != nil {
				sg.Blocks, r.untiled = l.blocks, l.untiled
				b.putExt(l)
			} else {
				sg.Blocks, r.untiled = nil, nil
			}
		default:
			b.dropVal(v)
		}
	case nBlock:
		bl := &r.blk
		switch key {
		case kAddress:
			r.mark(fAddress, b.int(r, key, v, &bl.Address))
		case kSize:
			r.mark(fSize, b.int(r, key, v, &bl.Size))
		case kRequestedSize:
			r.mark(fRequested, b.int(r, key, v, &bl.RequestedSize))
		case kState:
			r.mark(fState, b.str(r, key, v, &bl.State))
		default:
			b.dropVal(v)
		}
	default:
		b.dropVal(v)
	}
	return nil
}

// privatePool reads segment_pool_id: (0, 0) for the default pools,
// anything else a private pool (CUDA graphs, torch.cuda.MemPool).
func privatePool(pv any) bool {
	var items []any
	switch t := pv.(type) {
	case pickle.Tuple:
		items = t
	case *pickle.List:
		items = t.Items
	}
	if len(items) != 2 {
		return false
	}
	a, _ := items[0].(int64)
	c, _ := items[1].(int64)
	return a != 0 || c != 0
}

// takeList takes the list value v stored in r under path: a record of
// node want (returned, already released), None (nil), or a generic value
// built without the schema (converted).
func (b *builder) takeList(r *rec, v *pickle.Val, want pickle.Node, path string) (*recExt, error) {
	switch v.Kind {
	case pickle.KindNone:
		return nil, nil
	case pickle.KindNode:
		if v.Node != want {
			b.releaseVal(v)
			r.fail(&pathErr{path: path, msg: "unsupported structure", off: r.off})
			return nil, nil
		}
		c := &b.recs[v.N]
		ext, cerr := c.recExt, c.err
		b.release(v.N)
		if cerr != nil {
			b.putExt(ext)
			r.fail(cerr.under(path))
			return nil, nil
		}
		return ext, nil
	case pickle.KindValue:
		x := b.m.Obj(v)
		if err := b.claim(x, want); err != nil {
			return nil, err
		}
		c := &rec{node: want, recExt: &recExt{}}
		items, err := seq(x)
		if err != nil {
			r.fail(&pathErr{path: path, msg: err.Error(), off: r.off})
			return nil, nil
		}
		for i, it := range items {
			if err := b.count(1); err != nil {
				return nil, err
			}
			var perr error
			switch want {
			case nSegments:
				c.segs = append(c.segs, Segment{})
				perr = decodeSegment(&c.segs[i], it)
			case nBlocks:
				c.blocks = append(c.blocks, Block{})
				perr = decodeBlock(&c.blocks[i], it, 0)
				if !hasAddress(it) {
					c.untiled = append(c.untiled, int32(i))
				}
			case nTraces:
				var tr []TraceEntry
				if tr, perr = b.genericTrace(it); perr == nil {
					b.addGenericTrace(c.recExt, tr)
				}
			}
			if perr != nil {
				if pe, ok := perr.(*pathErr); ok {
					r.fail(pe.under(fmt.Sprintf("%s[%d]", path, i)))
				} else {
					r.fail(asPathErr(perr, r.off).under(fmt.Sprintf("%s[%d]", path, i)))
				}
				return nil, nil
			}
		}
		return c.recExt, nil
	case pickle.KindSkipped:
		r.fail(&pathErr{path: path, msg: fmt.Sprintf("the value at offset %d was skipped (unsupported structure)", v.Offset()), off: r.off})
		return nil, nil
	}
	r.fail(&pathErr{path: path, msg: "want list, got " + v.TypeName(), off: r.off})
	return nil, nil
}

func (b *builder) genericTrace(x any) ([]TraceEntry, error) {
	items, err := seq(x)
	if err != nil {
		return nil, &pathErr{msg: err.Error()}
	}
	var entries []TraceEntry
	for i, it := range items {
		if err := b.count(1); err != nil {
			return nil, err
		}
		entries = append(entries, TraceEntry{})
		if err := decodeEntry(&entries[i], it); err != nil {
			return nil, asPathErr(err, 0).under(fmt.Sprintf("[%d]", i))
		}
	}
	return entries, nil
}

// claim registers the containers of a generic value that the schema will
// read, refusing one met twice: converting a shared segment or trace for
// every reference would multiply a small file into gigabytes.
func (b *builder) claim(x any, n pickle.Node) error {
	var p any
	var items []any
	switch t := x.(type) {
	case *pickle.Dict:
		p = t
	case *pickle.List:
		p, items = t, t.Items
	case pickle.Tuple:
		if len(t) > 0 {
			p, items = &t[0], t
		}
	}
	if p == nil {
		return nil
	}
	if b.claimed == nil {
		b.claimed = make(map[any]bool)
	}
	if b.claimed[p] {
		return fmt.Errorf("a %s is referenced twice (shared references are refused)", b.Describe(n))
	}
	b.claimed[p] = true
	var child pickle.Node
	switch n {
	case nSegments:
		child = nSegment
	case nBlocks:
		child = nBlock
	case nTraces:
		child = nTrace
	case nTrace:
		child = nEntry
	case nSegment:
		if d, ok := x.(*pickle.Dict); ok {
			if bl, ok := d.Get("blocks"); ok {
				return b.claim(bl, nBlocks)
			}
		}
		return nil
	case nTop:
		if d, ok := x.(*pickle.Dict); ok {
			if s, ok := d.Get("segments"); ok {
				if err := b.claim(s, nSegments); err != nil {
					return err
				}
			}
			if t, ok := d.Get("device_traces"); ok {
				return b.claim(t, nTraces)
			}
			return nil
		}
		child = nSegment
	default:
		return nil
	}
	for _, it := range items {
		if err := b.claim(it, child); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) count(n int) error {
	b.records += n
	if b.records > b.lim.MaxRecords {
		return fmt.Errorf("more than %d segments, blocks and trace entries: %w (MaxRecords)", b.lim.MaxRecords, ErrLimit)
	}
	return nil
}

func (b *builder) Append(c *pickle.Val, items []pickle.Val) error {
	if err := b.count(len(items)); err != nil {
		return err
	}
	if c.Node == nEntry { // a trace entry opened as a list: bad already
		for i := range items {
			b.dropVal(&items[i])
		}
		return nil
	}
	for i := range items {
		r := &b.recs[c.N]
		v := &items[i]
		if r.bad {
			b.dropVal(v)
			continue
		}
		if r.node == nTrace && v.Kind == pickle.KindNode && v.Node == nEntry {
			er := &b.ents[v.N]
			if err := finishEntry(er); err != nil {
				r.fail(err.under("[" + strconv.Itoa(r.nEntries()) + "]"))
			}
			r.addEntry(&er.entry)
			b.releaseVal(v)
			continue
		}
		var idx int
		var want pickle.Node
		switch r.node {
		case nSegments:
			idx, want = len(r.segs), nSegment
		case nBlocks:
			idx, want = len(r.blocks), nBlock
		case nTraces:
			idx, want = r.nTraces(), nTrace
		case nTrace:
			idx, want = r.nEntries(), nEntry
		default:
			b.dropVal(v)
			continue
		}
		at := func() string { return "[" + strconv.Itoa(idx) + "]" }
		switch v.Kind {
		case pickle.KindNode:
			if v.Node != want {
				b.releaseVal(v)
				r.fail(&pathErr{path: at(), msg: "unsupported structure", off: r.off})
				continue
			}
			cr := &b.recs[v.N]
			if err := finish(cr); err != nil {
				r.fail(err.under(at()))
			}
			switch want {
			case nSegment:
				if r.segs == nil {
					// Room for a small snapshot's segments at once
					// (growing from one took four allocations for
					// five), or the trace reader's array from the
					// import before.
					if b.bufs != nil && cap(b.bufs.segs) > 0 {
						r.segs, b.bufs.segs = b.bufs.segs[:0], nil
					} else {
						r.segs = make([]Segment, 0, 8)
					}
				}
				r.segs = append(r.segs, cr.seg)
				b.putExt(cr.recExt)
			case nBlock:
				if cr.seen&fAddress == 0 {
					r.untiled = append(r.untiled, int32(idx))
				}
				b.appendBlock(r.recExt, &cr.blk)
			case nTrace:
				b.addTrace(r.recExt, cr)
				b.putExt(cr.recExt)
			}
			b.release(v.N)
		case pickle.KindValue:
			if err := b.claim(b.m.Obj(v), want); err != nil {
				return err
			}
			var perr error
			switch want {
			case nSegment:
				r.segs = append(r.segs, Segment{})
				perr = decodeSegment(&r.segs[idx], b.m.Obj(v))
			case nBlock:
				r.blocks = append(r.blocks, Block{})
				perr = decodeBlock(&r.blocks[idx], b.m.Obj(v), 0)
				if !hasAddress(b.m.Obj(v)) {
					r.untiled = append(r.untiled, int32(idx))
				}
			case nTrace:
				var tr []TraceEntry
				if tr, perr = b.genericTrace(b.m.Obj(v)); perr == nil {
					b.addGenericTrace(r.recExt, tr)
				}
			case nEntry:
				var e TraceEntry
				perr = decodeEntry(&e, b.m.Obj(v))
				re := b.raw(&e)
				r.addEntry(&re)
			}
			if perr != nil {
				if pe, ok := perr.(*pathErr); ok {
					r.fail(pe.under(at()))
				} else {
					r.fail(asPathErr(perr, r.off).under(at()))
				}
			}
		case pickle.KindSkipped:
			r.fail(&pathErr{path: at(), msg: fmt.Sprintf("the value at offset %d was skipped (unsupported structure)", v.Offset()), off: r.off})
		default:
			want := "dict"
			if r.node == nTraces {
				want = "list"
			}
			r.fail(&pathErr{path: at(), msg: "want " + want + ", got " + v.TypeName(), off: r.off})
		}
	}
	return nil
}

// finishEntry checks a complete trace entry.
func finishEntry(r *entRec) *pathErr {
	if r.err != nil {
		return r.err
	}
	if r.seen&fAction == 0 {
		return &pathErr{path: ".action", msg: "missing", off: r.off}
	}
	return nil
}

// finish checks a complete record and applies its defaults.
func finish(r *rec) *pathErr {
	if r.err != nil {
		return r.err
	}
	missing := func(key string) *pathErr { return &pathErr{path: "." + key, msg: "missing", off: r.off} }
	switch r.node {
	case nBlock:
		if r.seen&fSize == 0 {
			return missing("size")
		}
		if r.seen&fRequested == 0 {
			r.blk.RequestedSize = r.blk.Size
		}
		if r.seen&fState == 0 {
			return missing("state")
		}
	case nSegment:
		sg := &r.seg
		if r.seen&fAddress == 0 {
			return missing("address")
		}
		if r.seen&fTotalSize == 0 {
			return missing("total_size")
		}
		if r.seen&fSegType == 0 {
			sg.SegmentType = "large"
			if sg.TotalSize == torchlike.SmallBuffer && !sg.IsExpandable {
				sg.SegmentType = "small"
			}
		}
		if len(r.untiled) > 0 {
			// Old snapshots give no block addresses: blocks tile the
			// segment (decodeSegment's rule).
			next, u := sg.Address, r.untiled
			for i := range sg.Blocks {
				bl := &sg.Blocks[i]
				if len(u) > 0 && int(u[0]) == i {
					bl.Address, u = next, u[1:]
				}
				next = bl.Address + bl.Size
			}
		}
	}
	return nil
}

// decodedHook, when set (by tests), sees each decode's machine once it
// has run: the tests of the record path count the records it read.
var decodedHook func(m *pickle.Machine)

// DecodePickle reads a snapshot pickle. Opcodes that would build objects
// or call code are refused (see package pickle).
func DecodePickle(r io.Reader) (*Snapshot, error) {
	return DecodePickleLimits(r, DefaultLimits)
}

// DecodePickleLimits is DecodePickle with explicit limits.
//
// The pickle is streamed: segments, blocks and trace entries are decoded
// straight into their structs as their opcodes are read, and what the
// snapshot does not need (stack frames, annotations, unknown keys) is
// read past without being built.
func DecodePickleLimits(r io.Reader, lim Limits) (*Snapshot, error) {
	s, _, err := decodePickle(r, lim, false)
	return s, err
}

// decodePickle is DecodePickleLimits. With keepRaw, the traces it
// decodes with the schema are returned as rawTraces, one per device, and
// not in the Snapshot (whose DeviceTraces is then nil); a snapshot built
// from a generic value (an unusual pickle) has its traces in the
// Snapshot and none returned.
func decodePickle(r io.Reader, lim Limits, keepRaw bool) (*Snapshot, []rawTrace, error) {
	return decodePickleBufs(r, lim, keepRaw, nil)
}

// decodePickleBufs is decodePickle, with the segments and their blocks
// in bufs' buffers when it is not nil (the trace reader's import).
func decodePickleBufs(r io.Reader, lim Limits, keepRaw bool, bufs *importBufs) (*Snapshot, []rawTrace, error) {
	b := &builder{lim: lim, keepRaw: keepRaw, bufs: bufs}
	if t, ok := tablesPool.Get().(*tables); ok {
		b.recs, b.ents, b.extFree, b.free, b.entFree = t.recs[:0], t.ents[:0], t.exts, t.free[:0], t.entFree[:0]
		// By string index, zeroed as they grow (key, action).
		b.fields, b.actions = t.fields[:0], t.actions[:0]
		*t = tables{}
		b.tb = t
	}
	defer b.putTables()
	m := pickle.NewMachine(r, b, nTop, lim.Pickle)
	b.m = m
	// Every string the snapshot keeps is a copy or a constant (canon),
	// so the machine's text is reused by the next decode.
	defer m.Recycle()
	root, err := m.Run()
	if decodedHook != nil {
		decodedHook(m)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	switch root.Kind {
	case pickle.KindNode:
		if root.Node != nTop {
			// STOP with a MARK pending returns what is above it (as
			// Python's unpickler does): a segment, block or entry.
			return nil, nil, fmt.Errorf("snapshot: not a memory snapshot: the pickle ends inside the snapshot, on a %s", b.Describe(root.Node))
		}
		top := b.recs[root.N]
		if top.err != nil {
			if top.top {
				return nil, nil, fmt.Errorf("snapshot: %w", top.err.under("segments"))
			}
			if top.err.path == "" {
				return nil, nil, fmt.Errorf("snapshot: %s (pickle offset %d)", top.err.msg, top.err.off)
			}
			return nil, nil, fmt.Errorf("snapshot: %w", top.err)
		}
		s := &Snapshot{}
		if top.top {
			s.Segments = top.segs
			return s, nil, nil
		}
		if !top.keyS && !top.keyT {
			return nil, nil, errors.New("snapshot: not a memory snapshot: the dict has neither segments nor device_traces")
		}
		s.Segments, s.DeviceTraces = top.segs, top.traces
		var raws []rawTrace
		if len(top.raws) > 0 {
			raws = make([]rawTrace, len(top.raws))
			acts := newRawTrace(nil, b.actTab)
			for d, ents := range top.raws {
				raws[d] = acts
				raws[d].ents = ents
			}
		}
		if top.hasSettings {
			st, err := decodeSettings(top.settings)
			if err != nil {
				return nil, nil, fmt.Errorf("snapshot: allocator_settings%w", err)
			}
			s.Settings = st
		}
		return s, raws, nil
	case pickle.KindValue:
		x := m.Obj(&root)
		if err := b.claim(x, nTop); err != nil {
			return nil, nil, fmt.Errorf("snapshot: %w", err)
		}
		s, err := FromValue(x)
		return s, nil, err
	}
	x, _ := m.Any(&root)
	s, err := FromValue(x)
	return s, nil, err
}

// tablesPool holds the builders' record tables: a trace's batch of a
// thousand entries, each a record until its APPENDS, would otherwise
// grow a new table for every snapshot.
var tablesPool sync.Pool

type tables struct {
	recs    []rec
	ents    []entRec
	exts    []*recExt // cleared
	free    []int64
	entFree []int64
	fields  []field  // builder.fields' array
	actions []uint32 // builder.actions' array
}

// putTables returns the record tables to the pool, cleared (records hold
// the slices of the snapshot being returned, entries its strings).
func (b *builder) putTables() {
	if cap(b.recs) > 1<<16 || cap(b.ents) > 1<<16 {
		return
	}
	recs := b.recs[:cap(b.recs)]
	clear(recs)
	ents := b.ents[:cap(b.ents)]
	clear(ents)
	if len(b.extFree) > 1<<10 {
		b.extFree = nil
	}
	if cap(b.fields) > 1<<16 || cap(b.actions) > 1<<16 {
		b.fields, b.actions = nil, nil // a hostile pickle's: not kept
	}
	t := b.tb
	if t == nil {
		t = new(tables)
	}
	*t = tables{recs: recs[:0], ents: ents[:0], exts: b.extFree, free: b.free, entFree: b.entFree, fields: b.fields, actions: b.actions}
	tablesPool.Put(t)
	b.recs, b.free, b.ents, b.entFree, b.extFree, b.fields, b.actions, b.tb = nil, nil, nil, nil, nil, nil, nil, nil
}

// Flat makes the builder a pickle.FlatBuilder: trace entries and blocks,
// the many, are flat records (str keys; int and str values, and the
// frames, which are skipped), which the machine's fast path reads in one
// pass.
func (b *builder) Flat(n pickle.Node) bool { return n == nEntry || n == nBlock }

func (b *builder) Shape(n pickle.Node) pickle.Shape {
	switch n {
	case nSegment, nBlock, nEntry:
		return pickle.ShapeDict
	case nTop:
		return pickle.ShapeNone
	}
	return pickle.ShapeList
}
