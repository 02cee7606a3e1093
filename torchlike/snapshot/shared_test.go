package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"membench/internal/pickle"
	"membench/internal/sharedtraces"
)

// realSnapPath returns the path of a real snapshot of the shared
// collection (../shared/traces/pytorch-snapshots, read in place and never
// copied into the project), skipping tb when it is absent.
//
// NAME.noframes.json stands for the JSON form of NAME.pickle as Python's
// json.dump writes it after every "frames" key is removed: it is derived
// from the pickle here, into a temporary file, because a copy derived from
// a public recording may not be kept in the project either.
func realSnapPath(tb testing.TB, name string) string {
	tb.Helper()
	base, ok := strings.CutSuffix(name, ".noframes.json")
	if !ok {
		return sharedtraces.Path(tb, "pytorch-snapshots/"+name)
	}
	src := sharedtraces.Path(tb, "pytorch-snapshots/"+base+".pickle")
	derivedMu.Lock()
	defer derivedMu.Unlock()
	if p, ok := derived[name]; ok {
		return p
	}
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := pickle.Decode(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	writeJSON(&buf, v, true)
	dir, err := os.MkdirTemp("", "membench-snapshot-test")
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	derived[name] = p
	return p
}

// derived caches the derived files for the test binary's life (the OS
// temporary directory takes them back).
var (
	derivedMu sync.Mutex
	derived   = map[string]string{}
)
