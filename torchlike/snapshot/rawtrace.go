package snapshot

import "sync"

// rawTrace is one device's trace as the reconstruction and the trace
// reader walk it: entries without pointers (entryRaw, whose action is an
// index in acts) and, for each action, its index in knownActions. The
// trace reader decodes straight into it and never builds the
// []TraceEntry of a Snapshot: that copy, with a write barrier for every
// entry's action while the collector runs, and the collector scanning
// megabytes of entries for their one pointer each, cost about a sixth
// of an import. InitialState and Reconstruct, which take a Snapshot,
// convert its trace (rawOf).
type rawTrace struct {
	ents []entryRaw
	acts []string // the action of each index; acts[0] is ""
	kind []uint8  // knownActions index of each action, len(knownActions) when unknown
}

// The knownActions indices, the kinds of rawTrace.
const (
	kindAlloc uint8 = iota
	kindFreeRequested
	kindFreeCompleted
	kindFree
	kindSegmentAlloc
	kindSegmentFree
	kindSegmentMap
	kindSegmentUnmap
	kindSnapshot
	kindOOM
	kindUserDefined
	kindUnknown
)

// newRawTrace is a rawTrace of ents with the action table acts.
func newRawTrace(ents []entryRaw, acts []string) rawTrace {
	if len(acts) == 0 {
		acts = []string{""}
	}
	kind := make([]uint8, len(acts))
	for i, a := range acts {
		kind[i] = uint8(actionIndex(a))
	}
	return rawTrace{ents: ents, acts: acts, kind: kind}
}

// rawOf is tr as a rawTrace.
func rawOf(tr []TraceEntry) rawTrace {
	var b builder
	ents := make([]entryRaw, len(tr))
	for i := range tr {
		ents[i] = b.raw(&tr[i])
	}
	return newRawTrace(ents, b.actTab)
}

// action is entry i's action.
func (t *rawTrace) action(i int) string { return t.acts[t.ents[i].action] }

// kindOf is entry i's knownActions index.
func (t *rawTrace) kindOf(i int) uint8 { return t.kind[t.ents[i].action] }

// rawPool holds the entry buffers of traces that a trace reader has
// served to their end (snapshotReader.release): a trace is megabytes,
// and allocating it afresh for every import made the collector run two
// or three times as often (as the builder's chunks, the buffer is not
// cleared, since every entry is written before it is read).
var rawPool sync.Pool // of *[]entryRaw

// getRaw returns a buffer of n entries, their contents undefined.
func getRaw(n int) []entryRaw {
	if p, ok := rawPool.Get().(*[]entryRaw); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]entryRaw, n)
}

// putRaw gives back a buffer from getRaw that nothing uses any more.
func putRaw(ents []entryRaw) {
	if cap(ents) > 0 {
		rawPool.Put(&ents)
	}
}
