package traces

import "fmt"

// Bounds on a trace's meta, the same for the text and the binary format
// and for their readers and writers, so that what one writes the other
// reads and a hostile header costs little: at most maxMetaEntries meta
// lines (text) or entries (binary), repeated keys included, holding at
// most maxMetaBytes of keys and values in all.
const (
	maxMetaEntries = 4096
	maxMetaBytes   = 1 << 20
)

// metaBuilder collects meta entries as a reader reads them: a later entry
// with the same key replaces the value in place (linear time, whatever the
// number of keys), and the bounds above are enforced.
type metaBuilder struct {
	meta    Meta
	index   map[string]int // key → its index in meta
	entries int            // entries read, repeated keys included
	bytes   int            // bytes of the keys and values read
}

// set records key = value, or says which bound it would exceed (the
// caller adds the position).
func (b *metaBuilder) set(key, value string) error {
	if b.entries >= maxMetaEntries {
		return fmt.Errorf("more than %d meta entries (the limit of a trace's meta)", maxMetaEntries)
	}
	if n := len(key) + len(value); n > maxMetaBytes-b.bytes {
		return fmt.Errorf("more than %d bytes of meta keys and values (the limit of a trace's meta)", maxMetaBytes)
	}
	b.entries++
	b.bytes += len(key) + len(value)
	if i, ok := b.index[key]; ok {
		b.meta[i].Value = value
		return nil
	}
	if b.index == nil {
		b.index = make(map[string]int)
	}
	b.index[key] = len(b.meta)
	b.meta = append(b.meta, KV{key, value})
	return nil
}

// checkMetaLimits refuses meta that a reader would refuse: more entries or
// more bytes than the bounds above, counting values as written.
func checkMetaLimits(meta Meta) error {
	if len(meta) > maxMetaEntries {
		return fmt.Errorf("traces: %d meta entries (at most %d)", len(meta), maxMetaEntries)
	}
	n := 0
	for _, kv := range meta {
		n += len(kv.Key) + len(metaValue(kv.Value))
	}
	if n > maxMetaBytes {
		return fmt.Errorf("traces: %d bytes of meta keys and values (at most %d)", n, maxMetaBytes)
	}
	return nil
}
