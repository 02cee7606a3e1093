package pickle_test

import (
	"bytes"
	"io"
	"testing"

	"membench/internal/pickle"
	"membench/internal/pickle/pickletest"
)

// TestEncodeRoundTrip: the test writer's pickles decode to what was
// written (the writer lives in pickletest, test support; this package
// only reads).
func TestEncodeRoundTrip(t *testing.T) {
	for name, want := range pickle.Expected {
		var buf bytes.Buffer
		if err := pickletest.Encode(&buf, want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := pickle.Decode(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !pickle.Eq(got, want) {
			t.Errorf("%s: round trip differs", name)
		}
	}
	var buf bytes.Buffer
	if err := pickletest.Encode(&buf, map[string]any{"b": int64(-1 << 40), "a": []any{1, 2.5}}); err != nil {
		t.Fatal(err)
	}
	got, _ := pickle.Decode(&buf)
	if !pickle.Eq(got, pickle.DictOf("a", pickle.ListOf(int64(1), 2.5), "b", int64(-1<<40))) {
		t.Errorf("map round trip: %#v", got)
	}
	l := pickle.ListOf()
	l.Items = append(l.Items, l)
	if err := pickletest.Encode(io.Discard, l); err == nil {
		t.Errorf("cyclic value encoded without error")
	}
}
