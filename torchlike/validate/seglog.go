package validate

// segLog is a replay's sequence of segment events (the simulated or the
// recorded ones), kept in chunks that the copies of the replay share.
//
// Why: a burst of releases is resolved by replaying its readings on
// copies of the replay (clone), and each copy took the whole history of
// events so far; a recording of many bursts was quadratic to validate
// (an export of 20 MB with a burst every five allocations: 70 s,
// 2026-11-25). Events once appended never change, so the copies share
// every chunk, and only the last, when it is not full, is copied, by the
// first copy to append to it (Append).
type segLog struct {
	chunks []*[logChunk]SegEvent
	n      int
	// own is the first of chunks this log may write: those before it
	// may be shared with a copy.
	own int
}

// logChunk is the events in a chunk: a copy of a replay copies one chunk
// pointer for each, and at most one chunk.
const logChunk = 256

// Len is the number of events.
func (l *segLog) Len() int { return l.n }

// At is event i, which must be below Len.
func (l *segLog) At(i int) SegEvent { return l.chunks[i/logChunk][i%logChunk] }

// Append adds e at the end.
func (l *segLog) Append(e SegEvent) {
	c := l.n / logChunk
	switch {
	case c == len(l.chunks):
		l.chunks = append(l.chunks, new([logChunk]SegEvent))
	case c < l.own:
		// The last chunk, shared with a copy that may append to it
		// too: this log's own from here on.
		mine := *l.chunks[c]
		l.chunks[c] = &mine
		l.own = c
	}
	l.chunks[c][l.n%logChunk] = e
	l.n++
}

// Share returns a copy of l that shares its chunks; from then on neither
// writes to a chunk they share.
func (l *segLog) Share() segLog {
	l.own = len(l.chunks)
	return segLog{chunks: append([]*[logChunk]SegEvent(nil), l.chunks...), n: l.n, own: len(l.chunks)}
}

// Slice returns the events as a new slice.
func (l *segLog) Slice() []SegEvent {
	out := make([]SegEvent, 0, l.n)
	for i, c := range l.chunks {
		out = append(out, c[:min(logChunk, l.n-i*logChunk)]...)
	}
	return out
}
