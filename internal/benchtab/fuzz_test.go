package benchtab

import (
	"bytes"
	"io"
	"os"
	"testing"

	"membench/internal/fuzzbound"
)

// FuzzRead feeds two inputs, as `membench compare old new` reads them,
// through Read and every writer, under fuzzbound's time and memory bound:
// any input gives tables or an error, never a panic, a hang or a blow-up.
// The seeds are the package's test inputs.
func FuzzRead(f *testing.F) {
	for _, p := range [][2]string{{"old.txt", "new.txt"}, {"synth-old.txt", "synth-new.txt"}, {"run-strategies.txt", "synth-normal.txt"}} {
		a, err := os.ReadFile("testdata/" + p[0])
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile("testdata/" + p[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a, b)
	}
	f.Add([]byte("BenchmarkX-2 10 100 ns/op 3 B/op\n"), []byte("unit ns/op assume=exact\nBenchmarkX-2 1 NaN ns/op\n"))
	f.Add([]byte("key: value\nBenchmarkX/a=1/b=2-8 1 1e308 x-unit\n"), []byte("BenchmarkX/a=1/b=2-8 1 -1e308 x-unit\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fuzzbound.Check(t, func() {
			ts, err := Read([]Input{{Label: "old", Name: "old.txt", R: bytes.NewReader(a)}, {Label: "new", Name: "new.txt", R: bytes.NewReader(b)}}, DefaultOptions)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				return
			}
			if err := ts.WriteText(io.Discard); err != nil {
				t.Fatalf("WriteText: %v", err)
			}
			if err := ts.WriteCSV(io.Discard, io.Discard); err != nil {
				t.Fatalf("WriteCSV: %v", err)
			}
			if err := ts.WriteJSON(io.Discard); err != nil {
				t.Fatalf("WriteJSON: %v", err)
			}
		})
	})
}
