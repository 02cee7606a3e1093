package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"testing"

	"membench/internal/sharedtraces"
	"membench/traces"
)

// importEvents imports data as the trace reader does and reads every
// event.
func importEvents(t *testing.T, name string, data []byte) ([]traces.Event, traces.Meta) {
	t.Helper()
	r, err := openSnapshot(name, bytes.NewReader(data), traces.DefaultOpenOptions)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var evs []traces.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs = append(evs, ev)
	}
	return evs, r.Meta()
}

// TestImportBufsReused imports the shared snapshots (and the JSON dump
// of one) one after another, large and small alternating, so that each
// import takes the buffers the one before gave back (importBufs: the
// segments, their blocks, the layout, the warm-start events), and
// compares the events and metadata of each with those of an import of
// the same file with the pools emptied first.
func TestImportBufsReused(t *testing.T) {
	if sharedtraces.Dir() == "" {
		t.Skip("../shared/traces is absent")
	}
	names := []string{
		"cs336-gpt2medium-ctx128-infer-warm.pickle",
		"torch-compile-cross-entropy.pickle",
		"opt125m-zo-finetune.pickle",
		"cs336-lm-peak-probe.noframes.json",
		"cs336-gpt2medium-ctx256-train-warm.pickle",
		"liger-cross-entropy.pickle",
		"cs336-lm-peak-probe.pickle",
	}
	type result struct {
		evs  []traces.Event
		meta traces.Meta
	}
	data := map[string][]byte{}
	want := map[string]result{}
	for _, name := range names {
		b, err := os.ReadFile(realSnapPath(t, name))
		if err != nil {
			t.Fatal(err)
		}
		data[name] = b
		runtime.GC()
		runtime.GC() // a pool's items survive one collection
		evs, meta := importEvents(t, name, b)
		want[name] = result{evs, meta}
	}
	back := 0
	for round := range 2 {
		for _, name := range names {
			evs, meta := importEvents(t, name, data[name])
			if w := want[name]; !reflect.DeepEqual(evs, w.evs) || !reflect.DeepEqual(meta, w.meta) {
				t.Fatalf("round %d, %s after the imports before it: %s", round, name, eventsDiff(evs, w.evs, meta, w.meta))
			}
			// The buffers went back, holding what the import used.
			// (A pool is per processor, and parallel tests use it too:
			// most, not all, are found.)
			u := importPool.Get().(*importBufs)
			if cap(u.segs) > 0 && cap(u.init) > 0 {
				back++
			}
			importPool.Put(u)
		}
	}
	if back < len(names) {
		t.Fatalf("the import buffers came back after %d of %d imports", back, 2*len(names))
	}
}

func eventsDiff(a, b []traces.Event, ma, mb traces.Meta) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("event %d: %+v, want %+v", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d events, want %d", len(a), len(b))
	}
	return fmt.Sprintf("meta %v, want %v", ma, mb)
}
