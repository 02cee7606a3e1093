package snapshot

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"membench/torchlike"
)

// spoolAll adds every entry of tr to a new spool in dir.
func spoolAll(t *testing.T, dir string, tr []TraceEntry) *Spool {
	t.Helper()
	s := NewSpool(dir)
	for i := range tr {
		if err := s.Add(&tr[i]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// readSpool is every entry of s, read back.
func readSpool(t *testing.T, s *Spool) []TraceEntry {
	t.Helper()
	var out []TraceEntry
	r := s.Reader()
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// longEntries are n entries of every action, with fields from zero to
// the extremes of int64, some 3 MB of records: past spoolMemory, so that
// most go to the file.
func longEntries(n int) []TraceEntry {
	acts := []string{torchlike.ActionSegmentAlloc, torchlike.ActionAlloc, torchlike.ActionFreeRequested, torchlike.ActionFreeCompleted,
		torchlike.ActionSegmentFree, torchlike.ActionSegmentMap, torchlike.ActionSegmentUnmap, torchlike.ActionOOM, "user_defined"}
	ext := []int64{0, 1, -1, 255, 256, 1 << 31, -1 << 31, math.MaxInt64, math.MinInt64}
	tr := make([]TraceEntry, n)
	for i := range tr {
		e := &tr[i]
		e.Action = acts[i%len(acts)]
		e.Addr = 0x7f0000000000 + int64(i)*512
		e.Size = int64(i%4096) * 1000
		e.Stream = int64(i % 3)
		e.TimeUS = 1_700_000_000_000_000 + int64(i)
		if e.Action == torchlike.ActionOOM {
			e.Addr, e.DeviceFree = 0, int64(i)<<20
		}
		if i%101 == 0 {
			e.Addr, e.Size, e.Stream, e.TimeUS, e.DeviceFree = ext[i%9], ext[(i+1)%9], ext[(i+2)%9], ext[(i+3)%9], ext[(i+4)%9]
		}
	}
	return tr
}

// TestSpoolRoundTrip: a spool gives back every entry added, in order and
// exactly (Frames aside, which it does not keep), from memory and from
// its file, as often as it is read; the file has no name once made (a
// killed process leaves none) and Close empties the spool.
func TestSpoolRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 1000, 250_000} {
		want := longEntries(n)
		s := spoolAll(t, dir, want)
		if n == 250_000 && s.f == nil {
			t.Fatalf("%d entries kept in %d bytes of memory: the file is not exercised", n, len(s.buf))
		}
		if s.Len() != n {
			t.Errorf("Len %d, want %d", s.Len(), n)
		}
		for range 2 {
			got := readSpool(t, s)
			if len(got) != n || (n > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%d entries: read back %d, or different ones", n, len(got))
			}
		}
		if runtime.GOOS == "linux" {
			if ls, _ := os.ReadDir(dir); len(ls) != 0 {
				t.Errorf("%d entries: the spool's file has a name: %v", n, ls)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s.Len() != 0 || len(readSpool(t, s)) != 0 {
			t.Errorf("a closed spool still has entries")
		}
	}
	if ls, _ := os.ReadDir(dir); len(ls) != 0 {
		t.Errorf("files left: %v", ls)
	}
	// Frames are not kept.
	s := spoolAll(t, dir, []TraceEntry{{Action: "alloc", Frames: FramesOther}})
	defer s.Close()
	if got := readSpool(t, s); got[0].Frames != FramesNone {
		t.Errorf("frames read back as %v", got[0].Frames)
	}
}

// TestEncodePickleSpooled: a snapshot written with its traces from
// spools is EncodePickle's bytes: a real one of the shared collection
// (segments, settings, entries of every kind it has), and a made one of
// two devices, one with a long trace in a file and one with none.
func TestEncodePickleSpooled(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(realSnapPath(t, "opt125m-zo-finetune.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	real, err := Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	made := &Snapshot{
		Segments:        []Segment{{Address: 4096, TotalSize: 8192, Blocks: []Block{{Address: 4096, Size: 8192, State: StateInactive}}}},
		DeviceTraces:    [][]TraceEntry{longEntries(250_000), nil},
		ForeignSettings: [][2]string{{"membench_strategy", "jax"}},
	}
	for name, snap := range map[string]*Snapshot{"opt125m-zo-finetune": real, "made": made} {
		var want, got bytes.Buffer
		if err := EncodePickle(&want, snap); err != nil {
			t.Fatal(err)
		}
		spooled := *snap
		spooled.DeviceTraces = nil
		var spools []*Spool
		for _, tr := range snap.DeviceTraces {
			s := spoolAll(t, dir, tr)
			defer s.Close()
			spools = append(spools, s)
		}
		if err := EncodePickleSpooled(&got, &spooled, spools); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: spooled, %d bytes; held, %d", name, got.Len(), want.Len())
		}
		if err := EncodePickleSpooled(io.Discard, snap, spools); err == nil {
			t.Errorf("%s: a snapshot with traces of its own and spools written", name)
		}
	}
}

// TestSpoolErrors: a spool that cannot make its file says so at the
// entry that needed it, naming the directory, and refuses every entry
// after; more distinct actions than a byte codes are refused.
func TestSpoolErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	s := NewSpool(dir)
	defer s.Close()
	var err error
	for i := 0; err == nil && i < 1_000_000; i++ {
		err = s.Add(&TraceEntry{Action: "alloc", Addr: 1 << 40, Size: 1 << 30, TimeUS: 1 << 50})
	}
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "entry") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spooling into a missing directory: %v", err)
	}
	if err2 := s.Add(&TraceEntry{Action: "alloc"}); err2 != err {
		t.Errorf("after a failure, Add returned %v", err2)
	}

	s2 := NewSpool(t.TempDir())
	defer s2.Close()
	for i := range maxSpoolActions {
		if err := s2.Add(&TraceEntry{Action: "a" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Add(&TraceEntry{Action: "one more"}); err == nil || !strings.Contains(err.Error(), "one more") {
		t.Errorf("action %d: %v", maxSpoolActions+1, err)
	}
	if err := s2.Add(&TraceEntry{Action: "a7"}); err != nil {
		t.Errorf("a known action after the refusal: %v", err)
	}
	if got := readSpool(t, s2); len(got) != maxSpoolActions+1 || got[maxSpoolActions].Action != "a7" {
		t.Errorf("read back %d entries", len(got))
	}
}
