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
var rawPool bufPool[entryRaw]

// bufPool holds buffers of Ts for the next import: the trace reader's
// per-entry and per-address tables, which it gives back once it has
// served its trace. A buffer is reused for a request of at least a
// quarter of its capacity, so that a small import does not clear or
// hold a large one.
//
// The pool holds pointers to slice headers, and each pointer, once
// allocated, goes around with its buffers: get keeps it in boxes for the
// next put, so that a put costs no allocation (six an import, before).
// boxes is a plain list, not a second sync.Pool, whose per-processor
// arrays the collector drops and the next use allocates again (a cold
// import would pay for them).
type bufPool[T any] struct {
	p     sync.Pool
	mu    sync.Mutex
	boxes []*[]T
}

// get returns a buffer of n Ts, their contents undefined.
func (b *bufPool[T]) get(n int) []T {
	if p, ok := b.p.Get().(*[]T); ok {
		s := *p
		*p = nil
		b.mu.Lock()
		b.boxes = append(b.boxes, p)
		b.mu.Unlock()
		if cap(s) >= n && cap(s) <= 4*n+1024 {
			return s[:n]
		}
	}
	return make([]T, n)
}

// put gives back a buffer that nothing uses any more.
func (b *bufPool[T]) put(s []T) {
	if cap(s) == 0 {
		return
	}
	var p *[]T
	b.mu.Lock()
	if k := len(b.boxes); k > 0 {
		p = b.boxes[k-1]
		b.boxes = b.boxes[:k-1]
	}
	b.mu.Unlock()
	if p == nil {
		p = new([]T)
	}
	*p = s
	b.p.Put(p)
}
