package harness

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"membench/internal/fuzzbound"
	"membench/torchlike/snapshot"
	"membench/traces"
)

// FuzzOpenReader sends any bytes through the format detection every
// command uses (traces.OpenReader: gzip, then the sniffing of native
// text and binary, CSV recordings, PyTorch snapshots in pickle and JSON,
// XProf and pprof profiles, each registered reader) and reads every
// event, under fuzzbound's bound: a reader or an error, never a panic, a
// hang or a blow-up. Each format's own fuzz target goes deeper; this one
// covers the sniffing and the handing over between them.
func FuzzOpenReader(f *testing.F) {
	for _, p := range []string{"../traces/testdata/v2.txt", "../traces/testdata/v2.bin"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// The head of a team recording (memtrace CSV), plain and gzipped.
	gz, err := os.ReadFile("../testdata/recorded/gpt-train.csv.gz")
	if err != nil {
		f.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		f.Fatal(err)
	}
	head := make([]byte, 2048)
	n, _ := io.ReadFull(zr, head)
	f.Add(head[:n])
	f.Add(gz[:4096])
	// A small snapshot, as a pickle and as JSON.
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Address: 1 << 30, TotalSize: 2 << 20, SegmentType: "small",
			Blocks: []snapshot.Block{{Address: 1 << 30, Size: 512, RequestedSize: 100, State: snapshot.StateActiveAllocated}, {Address: 1<<30 + 512, Size: 2<<20 - 512, State: snapshot.StateInactive}}}},
		DeviceTraces: [][]snapshot.TraceEntry{{{Action: "free_requested", Addr: 1 << 30, Size: 512}, {Action: "free_completed", Addr: 1 << 30, Size: 512}, {Action: "alloc", Addr: 1 << 30, Size: 1024}}},
	}
	var pk bytes.Buffer
	if err := snapshot.EncodePickle(&pk, s); err != nil {
		f.Fatal(err)
	}
	f.Add(pk.Bytes())
	f.Add([]byte(`{"segments": [], "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512, "stream": 0}]]}`))
	f.Add([]byte("membench-trace 1\na 1 100\nf 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() {
			r, err := traces.OpenReader("fuzz", bytes.NewReader(data), traces.DefaultOpenOptions)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				return
			}
			defer r.Close()
			for {
				if _, err := r.Next(); err != nil {
					return
				}
			}
		})
	})
}
