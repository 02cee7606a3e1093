package snapshot

import (
	"bytes"
	"testing"

	"membench/traces"
)

// TestBinaryRoundTripReal: every real snapshot of the shared collection, as
// membench's canonical text, survives text -> binary (plain and gzip) ->
// text byte for byte (the snapshot part of traces' TestBinaryRealTraces).
func TestBinaryRoundTripReal(t *testing.T) {
	for _, name := range []string{"cs336-lm-peak-probe.pickle", "opt125m-zo-finetune.pickle", "cs336-lm-peak-probe.noframes.json"} {
		t.Run(name, func(t *testing.T) {
			r, err := traces.Open(realSnapPath(t, name), traces.DefaultOpenOptions)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if _, err := traces.WriteNative(&text, r, traces.WriterOptions{}); err != nil {
				t.Fatal(err)
			}
			r.Close()
			for _, gz := range []bool{false, true} {
				tr, err := traces.NewNativeReader("text", bytes.NewReader(text.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				var bin bytes.Buffer
				if _, err := traces.WriteBinary(&bin, tr, traces.WriterOptions{Gzip: gz}); err != nil {
					t.Fatal(err)
				}
				br, err := traces.OpenReader("bin", bytes.NewReader(bin.Bytes()), traces.DefaultOpenOptions)
				if err != nil {
					t.Fatal(err)
				}
				var back bytes.Buffer
				if _, err := traces.WriteNative(&back, br, traces.WriterOptions{}); err != nil {
					t.Fatal(err)
				}
				br.Close()
				if !bytes.Equal(back.Bytes(), text.Bytes()) {
					t.Errorf("gzip=%t: text -> binary -> text differs (%d bytes, was %d)", gz, back.Len(), text.Len())
				}
			}
		})
	}
}
