package snapshot

import (
	"io"
	"strings"
	"testing"

	"membench/traces"
)

// TestPos: the snapshot reader, opened through traces, reports its name
// and the index of the last event it returned (a snapshot has no lines),
// directly and through Check.
func TestPos(t *testing.T) {
	snap := `{"segments": [], "device_traces": [[` +
		`{"action": "segment_alloc", "addr": 0, "size": 2097152, "stream": 0},` +
		`{"action": "alloc", "addr": 0, "size": 512, "stream": 0},` +
		`{"action": "free_completed", "addr": 0, "size": 512, "stream": 0},` +
		`{"action": "segment_free", "addr": 0, "size": 2097152, "stream": 0}]]}`
	for _, check := range []bool{false, true} {
		r, err := traces.OpenReader("snapshot", strings.NewReader(snap), traces.DefaultOpenOptions)
		if err != nil {
			t.Fatal(err)
		}
		if check {
			r = traces.Check(r)
		}
		if p := r.Pos(); p.Event != -1 || p.Line != 0 {
			t.Errorf("check %v: Pos before the first event = %+v", check, p)
		}
		for i := 0; ; i++ {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if p, want := r.Pos(), (traces.Pos{File: "snapshot", Event: i}); p != want {
				t.Errorf("check %v: Pos after event %d = %+v, want %+v", check, i, p, want)
			}
		}
		r.Close()
	}
}
