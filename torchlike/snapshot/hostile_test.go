package snapshot

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"membench/internal/fuzzbound"
	"membench/internal/pickle"
	"membench/traces"
)

// pk writes pickle opcodes by hand, for the hostile shapes no encoder
// writes (shared references, deep nesting).
type pk struct {
	bytes.Buffer
	memo uint32
}

func newPK() *pk {
	p := &pk{}
	p.WriteString("\x80\x04")
	return p
}

func (p *pk) op(s string) *pk { p.WriteString(s); return p }

func (p *pk) str(s string) *pk {
	if len(s) < 256 {
		p.WriteByte(0x8c)
		p.WriteByte(byte(len(s)))
	} else {
		p.WriteByte('X')
		binary.Write(&p.Buffer, binary.LittleEndian, uint32(len(s)))
	}
	p.WriteString(s)
	return p
}

func (p *pk) int(n int32) *pk {
	p.WriteByte('J')
	binary.Write(&p.Buffer, binary.LittleEndian, n)
	return p
}

// put memoizes the top and returns its index.
func (p *pk) put() uint32 { p.WriteByte(0x94); p.memo++; return p.memo - 1 }

func (p *pk) get(i uint32) *pk {
	p.WriteByte('j')
	binary.Write(&p.Buffer, binary.LittleEndian, i)
	return p
}

// segment writes a segment dict with n blocks and memoizes it.
func (p *pk) segment(n int) uint32 {
	p.op("}")
	idx := p.put()
	p.op("(").str("address").int(1 << 20).str("total_size").int(int32(n) * 512).str("blocks").op("](")
	for i := 0; i < n; i++ {
		p.op("}(").str("size").int(512).str("state").str("inactive").op("u")
	}
	p.op("eu")
	return idx
}

// openBounded opens data as a snapshot and reads every event, within 2 s
// of CPU and 256 MiB.
func openBounded(t *testing.T, name string, data []byte) (traces.Reader, error) {
	t.Helper()
	var r traces.Reader
	var err error
	used, alloc := fuzzbound.Within(2*time.Second, 256<<20).Check(t, func() {
		r, err = traces.OpenReader(name, bytes.NewReader(data), traces.DefaultOpenOptions)
		if err == nil {
			_, err = traces.ReadAll(r)
		}
	})
	t.Logf("%s (%d bytes): %v CPU, %d MiB: %v", name, len(data), used.Round(time.Millisecond), alloc>>20, err)
	return r, err
}

func wantErr(t *testing.T, name string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", name, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v, want %q", name, err, w)
		}
	}
	if len(err.Error()) > 400 {
		t.Errorf("%s: error of %d bytes", name, len(err.Error()))
	}
}

// TestHostileSnapshots feeds the reproducers of issue 11 through the
// trace reader (what `run`, `traces show` and `report` use): each ends
// within 2 s and 256 MiB, with a correct result or an error that names
// the file, the position and what went wrong.
func TestHostileSnapshots(t *testing.T) {
	// Defect 1: a dict key of nested tuples (2^40 steps to hash).
	_, err := openBounded(t, "tuplekey.pickle", []byte("\x80\x02})"+strings.Repeat("\x85", 40)+"Ns."))
	wantErr(t, "tuple key", err, "tuplekey.pickle", "not a memory snapshot")
	// Defect 1: 5 MB of nesting (a Go stack overflow).
	deep := "\x80\x04}(\x8c\x08segments" + strings.Repeat("]", 5<<20)
	_, err = openBounded(t, "deep.pickle", []byte(deep))
	wantErr(t, "deep", err, "deep.pickle", "exceeds the limit of 262144")
	deep = "\x80\x04}(\x8c\x08segments" + strings.Repeat("](", 1100) + strings.Repeat("e", 1100)
	_, err = openBounded(t, "deep2.pickle", []byte(deep))
	wantErr(t, "deep2", err, "deep2.pickle", "nesting depth 1001 exceeds the limit of 1000", "offset")

	// Defect 2: one segment of 1000 blocks referenced 10,000 times (the
	// old decoder built 10 million blocks from 60 KB).
	p := newPK()
	p.op("}(").str("segments").op("](")
	seg := p.segment(1000)
	for i := 0; i < 10000; i++ {
		p.get(seg)
	}
	p.op("e").str("device_traces").op("]u.")
	_, err = openBounded(t, "shared.pickle", p.Bytes())
	wantErr(t, "shared segment", err, "shared.pickle", "second reference to the segment")
	// The same through a tuple (built as a generic value, then converted).
	p = newPK()
	p.op("}(").str("segments").op("(")
	p.op("}")
	seg = p.put()
	p.op("(").str("address").int(1 << 20).str("total_size").int(512000).str("blocks").op("](")
	for i := 0; i < 1000; i++ {
		p.op("}(").str("size").int(512).str("state").str("inactive").op("u")
	}
	p.op("eu")
	for i := 0; i < 10000; i++ {
		p.get(seg)
	}
	p.op("t").str("device_traces").op("]u.")
	_, err = openBounded(t, "shared-tuple.pickle", p.Bytes())
	wantErr(t, "shared segment in a tuple", err, "shared-tuple.pickle", "segment is referenced twice")
	// A shared trace entry.
	p = newPK()
	p.op("}(").str("device_traces").op("](](}")
	ent := p.put()
	p.op("(").str("action").str("alloc").str("addr").int(1 << 20).str("size").int(512).op("u")
	for i := 0; i < 1000; i++ {
		p.get(ent)
	}
	p.op("eeu.")
	_, err = openBounded(t, "shared-entry.pickle", p.Bytes())
	wantErr(t, "shared entry", err, "second reference to the trace entry", "shared-entry.pickle")

	// Defect 3: allocator_settings made of shared dicts (a 743-byte
	// pickle expanded to gigabytes of text).
	p = newPK()
	p.op("}(").str("device_traces").op("](]e").str("allocator_settings")
	var idx [6]uint32
	var emit func(level int)
	emit = func(level int) {
		if level == 0 {
			p.str(strings.Repeat("x", 200))
			idx[0] = p.put()
			return
		}
		p.op("}")
		idx[level] = p.put()
		p.op("(")
		for i := 0; i < 64; i++ {
			p.str(string(rune('a'+i%26)) + strings.Repeat("k", i/26))
			if i == 0 {
				emit(level - 1)
			} else {
				p.get(idx[level-1])
			}
		}
		p.op("u")
	}
	emit(5)
	p.op("u.")
	var snap *Snapshot
	fuzzbound.Within(2*time.Second, 256<<20).Check(t, func() { snap, err = Decode(bytes.NewReader(p.Bytes())) })
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	if len(snap.Settings.Raw) != 64 {
		t.Errorf("settings: %d keys", len(snap.Settings.Raw))
	}
	for k, v := range snap.Settings.Raw {
		if len(v) > maxSettingText+3 {
			t.Errorf("settings %s: %d bytes", k, len(v))
		}
	}

	// Defect 4: a gzip file that expands to a memo (or stack) without end.
	for _, c := range []struct{ name, head, body string }{
		{"memo", "\x80\x04N", "\x94"},
		{"stack", "\x80\x04}(\x8c\x08segments]", "N"},
		{"frames", "\x80\x04}(\x8c\x08segments](}(\x8c\x06frames](", "}\x94"},
	} {
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		w.Write([]byte(c.head))
		chunk := []byte(strings.Repeat(c.body, 1<<16))
		for n := 0; n < 64<<20; n += len(chunk) {
			w.Write(chunk)
		}
		w.Close()
		_, err = openBounded(t, c.name+".pickle.gz", gz.Bytes())
		wantErr(t, c.name+" bomb", err, c.name+".pickle.gz", "exceeds the limit", "offset")
		if !errors.Is(err, pickle.ErrLimit) {
			t.Errorf("%s bomb: %v does not wrap ErrLimit", c.name, err)
		}
	}

	// Defect 7: a 10 MB integer in a JSON snapshot (120 s, and an error
	// that repeated it).
	js := `{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1048576, "size": ` + strings.Repeat("9", 10<<20) + `}]]}`
	_, err = openBounded(t, "long.json", []byte(js))
	wantErr(t, "long JSON int", err, "long.json", "99999999999999999999...(10485760 characters) longer than the limit of 40")
	js = `{"segments": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}"
	_, err = openBounded(t, "deep.json", []byte(js))
	wantErr(t, "deep JSON", err, "deep.json", "nesting deeper than 1000")
}

// TestUnknownActions: entries with actions membench does not know are
// counted in the Meta (ignored-entries) rather than dropped in silence,
// and a trace of which no entry is known is an error naming the file
// and the first entry.
func TestUnknownActions(t *testing.T) {
	js := `{"segments": [{"address": 1048576, "total_size": 2097152, "blocks": [{"size": 2097152, "state": "inactive"}]}],
		"device_traces": [[
		{"action": "alloc", "addr": 1048576, "size": 512},
		{"action": "teleport", "addr": 1048576, "size": 512},
		{"action": "oom", "device_free": 0, "size": 512},
		{"action": "teleport", "addr": 1, "size": 1},
		{"action": "free_completed", "addr": 1048576, "size": 512}]]}`
	r, err := traces.OpenReader("some.json", strings.NewReader(js), traces.DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := traces.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Op != traces.OpMark || evs[1].Label != "oom" {
		t.Errorf("events %+v", evs)
	}
	if got := r.Meta().Get(IgnoredEntriesKey); !strings.Contains(got, `2 entries with actions membench does not know ("teleport" 2), first at entry 1`) {
		t.Errorf("ignored-entries = %q", got)
	}
	if got := r.Meta().Get("entry-actions"); got != "(unknown) 2, alloc 1, free_completed 1, oom 1" {
		t.Errorf("entry-actions = %q", got)
	}
	js = `{"segments": [], "device_traces": [[{"action": "teleport", "addr": 1, "size": 1}, {"action": "warp", "addr": 1, "size": 1}]]}`
	_, err = traces.OpenReader("none.json", strings.NewReader(js), traces.DefaultOpenOptions)
	wantErr(t, "no known action", err, "none.json", "(event 0)", `none of the 2 trace entries of device 0 has an action membench knows ("teleport" 1, "warp" 1)`)
	// Known actions without events stay quiet (no ignored-entries).
	js = `{"segments": [], "device_traces": [[{"action": "user_defined"}, {"action": "snapshot"}]]}`
	r, err = traces.OpenReader("quiet.json", strings.NewReader(js), traces.DefaultOpenOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Meta().Get(IgnoredEntriesKey); got != "" {
		t.Errorf("ignored-entries = %q", got)
	}
	_ = io.EOF
}

// TestJSONUnknownKeysSkipped: values under keys the snapshot never reads
// are skipped token by token, not built: a million unknown objects cost
// no generic tree (the process stays near 20 MB; the bound below is on
// bytes allocated, which counts encoding/json's garbage per token). The
// time bound is looser than the hostile inputs' 2 s: this input is 9 MB of
// real work, which took 0.8-1 s on the idle 2-core machine and up to 2 s
// when four other sessions benchmarked beside it.
func TestJSONUnknownKeysSkipped(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"segments": [], "junk": [`)
	for range 1000000 {
		b.WriteString(`{"k": 0},`)
	}
	b.WriteString(`0], "device_traces": [[{"action": "alloc", "addr": 1048576, "size": 512, "stream": 0, "frames": [{"filename": "a.py", "line": 1, "name": "f"}], "extra": {"x": [1, 2]}}]]}`)
	var snap *Snapshot
	var err error
	fuzzbound.Within(4*time.Second, 384<<20).Check(t, func() { snap, err = DecodeJSON(bytes.NewReader(b.Bytes())) })
	if err != nil {
		t.Fatal(err)
	}
	if tr := snap.Trace(0); len(tr) != 1 || tr[0].Action != "alloc" || tr[0].Size != 512 {
		t.Errorf("trace %+v", snap.Trace(0))
	}
}

// sharedEntrySeeds are fuzz seeds of a segment and a trace entry shared
// through the memo (the reproducer of issue 11, defect 2), for the
// external fuzz test.
func sharedEntrySeeds() [][]byte {
	p := newPK()
	p.op("}(").str("segments").op("](")
	seg := p.segment(20)
	for i := 0; i < 50; i++ {
		p.get(seg)
	}
	p.op("e").str("device_traces").op("](](}")
	ent := p.put()
	p.op("(").str("action").str("alloc").str("addr").int(1 << 20).str("size").int(512).op("u")
	p.get(ent).op("eeu.")
	return [][]byte{p.Bytes()}
}

// A pickle that stops with a MARK pending returns what is above the MARK
// (as Python's unpickler does): inside a snapshot that is a segment,
// block or trace entry record, which is refused, not taken for the top
// level (the fuzzer found a block there dereferencing the top level's
// fields).
func TestStopInsideSnapshot(t *testing.T) {
	for _, tail := range []string{
		"\x8c\x08segments]\x94(}\x94.",                                        // a segment
		"\x8c\x08segments]\x94(}\x94(\x8c\x06blocks]\x94(}.",                  // a block
		"\x8c\x0ddevice_traces]\x94(]\x94(}\x94(\x8c\x06action\x8c\x05alloc.", // a trace entry (a key pending)
		"\x8c\x0ddevice_traces]\x94(]\x94(}.",                                 // a trace entry
	} {
		_, err := DecodePickle(strings.NewReader("\x80\x04}\x94(" + tail))
		if err == nil {
			t.Errorf("%q: decoded", tail)
		}
	}
}

// TestJSONSkippedTextCounted: strings under keys a JSON snapshot skips
// (frames, compile_context, user_metadata, unknown keys) count against
// the decoded-text limit as the pickle decoder counts them: a JSON file
// of 20 strings of 5 MiB each was read where its pickle was refused, and
// one of 70 MiB took 617 MB. The limit is lowered for the test.
func TestJSONSkippedTextCounted(t *testing.T) {
	defer func(l int64) { DefaultLimits.Pickle.MaxText = l }(DefaultLimits.Pickle.MaxText)
	DefaultLimits.Pickle.MaxText = 1000
	entry := func(key, s string) string {
		return `{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1048576, "size": 512, "stream": 0, "` + key + `": ` + s + `}]]}`
	}
	long := `"` + strings.Repeat("x", 1200) + `"`
	for _, in := range []string{
		entry("compile_context", long),
		entry("frames", `[{"filename": `+long+`, "line": 1, "name": "f"}]`),
		entry("extra", `{"k": [`+long+`]}`),
		entry(strings.Repeat("k", 1200), "1"),
	} {
		if _, err := DecodeJSON(strings.NewReader(in)); !errors.Is(err, ErrLimit) {
			t.Errorf("%.60s...: error %v, want the text limit", in, err)
		}
	}
	if _, err := DecodeJSON(strings.NewReader(entry("compile_context", `"short"`))); err != nil {
		t.Errorf("a short string: %v", err)
	}
}

// TestLongStringAllocation: a string far past the decoder's window is
// read into a buffer that doubles as the data arrives, allocating at most
// about twice its length. The buffer grew by append, a quarter at a time
// and through a chunk of zeros per megabyte: a 60 MB string allocated
// 336 MB and the process peaked at 423 MB.
func TestLongStringAllocation(t *testing.T) {
	const n = 24 << 20
	var b bytes.Buffer
	b.WriteString("\x80\x04}\x94(\x8c\x08segments]\x94\x8c\rdevice_traces]\x94]\x94a\x8c\x03padX")
	b.Write(binary.LittleEndian.AppendUint32(nil, n))
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString("u.")
	fuzzbound.Within(5*time.Second, 3*n).Check(t, func() {
		if _, err := DecodePickle(bytes.NewReader(b.Bytes())); err != nil {
			t.Fatal(err)
		}
	})
}
