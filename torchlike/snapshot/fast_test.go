package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"membench/internal/fuzzbound"
	"membench/internal/pickle"
	"membench/internal/sharedtraces"
)

// The machine's fast path for trace entries and blocks (pickle's
// fast.go) must be invisible: these tests decode every input twice, with
// and without it (pickle.Limits.NoFastPath), and want the same Snapshot
// or the same error, offset and message included.

// sharedSnapshots are the real snapshots of the shared collection.
var sharedSnapshots = []string{
	"opt125m-zo-finetune.pickle",
	"cs336-gpt2medium-ctx256-train-warm.pickle",
	"cs336-gpt2medium-ctx128-infer-warm.pickle",
	"cs336-lm-peak-probe.pickle",
	"liger-cross-entropy.pickle",
	"torch-compile-cross-entropy.pickle",
}

// slowLimits are lim without the fast path.
func slowLimits(lim Limits) Limits {
	lim.Pickle.NoFastPath = true
	return lim
}

// recordLimits are lim without the record path (pickle's record.go):
// trace entries go through the fast path's generic records.
func recordLimits(lim Limits) Limits {
	lim.Pickle.NoRecordPath = true
	return lim
}

// sameDecode decodes data with and without the fast path, and with the
// fast path but not its record path, and fails t when the results
// differ. It reports the error (nil for a snapshot).
func sameDecode(t testing.TB, what string, data []byte, lim Limits) error {
	t.Helper()
	sameDecodePaths(t, what+" (no record path)", data, lim, recordLimits(lim))
	return sameDecodePaths(t, what, data, lim, slowLimits(lim))
}

// sameDecodePaths decodes data under lim and under slim, which turns a
// path off, and fails t when the results differ.
func sameDecodePaths(t testing.TB, what string, data []byte, lim, slim Limits) error {
	t.Helper()
	fast, ferr := DecodePickleLimits(bytes.NewReader(data), lim)
	slow, serr := DecodePickleLimits(bytes.NewReader(data), slim)
	switch {
	case (ferr == nil) != (serr == nil):
		t.Fatalf("%s: fast path: %v; general path: %v", what, ferr, serr)
	case ferr != nil:
		if ferr.Error() != serr.Error() {
			t.Fatalf("%s: fast path: %v\ngeneral path: %v", what, ferr, serr)
		}
		if errors.Is(ferr, ErrLimit) != errors.Is(serr, ErrLimit) {
			t.Fatalf("%s: ErrLimit differs: %v", what, ferr)
		}
		var fe, se *pickle.Error
		if errors.As(ferr, &fe) != errors.As(serr, &se) || (fe != nil && (fe.Offset != se.Offset || fe.Op != se.Op)) {
			t.Fatalf("%s: error positions differ: %v; %v", what, ferr, serr)
		}
	case !reflect.DeepEqual(fast, slow):
		t.Fatalf("%s: the snapshots differ:\n%s", what, firstDiff(fast, slow))
	}
	sameRaw(t, what, data, lim, fast, ferr)
	return ferr
}

// sameRaw decodes data as the trace reader does (its traces kept raw)
// and fails t unless that gives want (or wantErr), the traces put back
// into TraceEntry values.
func sameRaw(t testing.TB, what string, data []byte, lim Limits, want *Snapshot, wantErr error) {
	t.Helper()
	got, raws, err := decodePickle(bytes.NewReader(data), lim, true)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%s: raw decode: %v; want %v", what, err, wantErr)
	}
	if err != nil {
		return
	}
	if raws != nil {
		if got.DeviceTraces != nil {
			t.Fatalf("%s: raw decode: traces both raw and built", what)
		}
		got.DeviceTraces = make([][]TraceEntry, len(raws))
		for d := range raws {
			got.DeviceTraces[d] = raws[d].entries()
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: raw decode: the snapshots differ:\n%s", what, firstDiff(got, want))
	}
}

// entries is t as TraceEntry values (nil when empty).
func (t *rawTrace) entries() []TraceEntry {
	var out []TraceEntry
	for i, e := range t.ents {
		out = append(out, TraceEntry{Action: t.action(i), Addr: e.Addr, Size: e.Size, Stream: e.Stream,
			TimeUS: e.TimeUS, DeviceFree: e.DeviceFree, Frames: e.Frames})
	}
	return out
}

// sameAsGeneric compares the streaming decoder, both of whose paths
// share the machine's handling of strings (interning, the strings of
// skipped frames kept outside the intern table for the memo), with the
// generic reference: pickle.Decode, which keeps every string as a Go
// string and builds every container, and FromValue.
func sameAsGeneric(t testing.TB, what string, data []byte) {
	t.Helper()
	got, err := DecodePickle(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	v, err := pickle.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: generic decode: %v", what, err)
	}
	want, err := FromValue(v)
	if err != nil {
		t.Fatalf("%s: FromValue: %v", what, err)
	}
	for _, s := range []*Snapshot{got, want} {
		if len(s.Segments) == 0 {
			s.Segments = nil
		}
		for i := range s.Segments {
			if len(s.Segments[i].Blocks) == 0 {
				s.Segments[i].Blocks = nil // the decoders differ in nil and empty
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: streaming and generic decodes differ: %s", what, firstDiff(got, want))
	}
}

// firstDiff describes where two snapshots differ first.
func firstDiff(a, b *Snapshot) string {
	if len(a.Segments) != len(b.Segments) {
		return fmt.Sprintf("%d segments, want %d", len(a.Segments), len(b.Segments))
	}
	for i := range a.Segments {
		if !reflect.DeepEqual(a.Segments[i], b.Segments[i]) {
			return fmt.Sprintf("segment %d: %+v\nwant %+v", i, a.Segments[i], b.Segments[i])
		}
	}
	if len(a.DeviceTraces) != len(b.DeviceTraces) {
		return fmt.Sprintf("%d traces, want %d", len(a.DeviceTraces), len(b.DeviceTraces))
	}
	for d := range a.DeviceTraces {
		ta, tb := a.DeviceTraces[d], b.DeviceTraces[d]
		if len(ta) != len(tb) {
			return fmt.Sprintf("trace %d: %d entries, want %d", d, len(ta), len(tb))
		}
		for i := range ta {
			if ta[i] != tb[i] {
				return fmt.Sprintf("trace %d entry %d: %+v\nwant %+v", d, i, ta[i], tb[i])
			}
		}
	}
	return fmt.Sprintf("settings: %+v\nwant %+v", a.Settings, b.Settings)
}

func TestFastPathSharedSnapshots(t *testing.T) {
	if sharedtraces.Dir() == "" {
		t.Skip("../shared/traces is absent: the real snapshots are not compared (generated ones are, in TestFastPathGenerated)")
	}
	for _, name := range sharedSnapshots {
		t.Run(strings.TrimSuffix(name, ".pickle"), func(t *testing.T) {
			data, err := os.ReadFile(realSnapPath(t, name))
			if err != nil {
				t.Fatal(err)
			}
			records, chained := 0, 0
			decodedHook = func(m *pickle.Machine) { records, chained = m.Records(), m.Chained() }
			defer func() { decodedHook = nil }()
			if _, err := DecodePickle(bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d records, %d of the dicts chained", records, chained)
			// The record path must have read nearly every entry, or
			// the comparisons below compare the fast path with itself.
			entries := 0
			decodedHook = nil
			s, _ := DecodePickle(bytes.NewReader(data))
			for _, tr := range s.DeviceTraces {
				entries += len(tr)
			}
			if records < entries*9/10 {
				t.Fatalf("the record path read %d records of %d trace entries", records, entries)
			}
			// Nearly every entry follows another in its batch: fastDict
			// must go on to it without the dispatch (its nextNode is
			// compared with newNode in package pickle's tests).
			if chained < records*9/10 && entries > 1000 {
				t.Fatalf("fastDict went on to %d dicts of %d records", chained, records)
			}
			if err := sameDecode(t, name, data, DefaultLimits); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// genPickle writes a snapshot pickle in the shapes Python's pickler
// writes (protocol 2's BINPUT and LONG_BINPUT or protocol 4's MEMOIZE;
// batches of items after MARK, or one item and APPEND or SETITEM), with
// the variations a real snapshot may hold (keys and frames by memo
// reference, frames lists shared, None values, keys the schema does not
// read) and, with odd set, values of the wrong type here and there.
func genPickle(r *rand.Rand, entries int, odd bool) []byte {
	return (&pgen{r: r, proto4: r.IntN(2) == 0, strs: map[string]int{}}).snapshot(entries, odd)
}

// genPickleUnique is genPickle with a unique name in every new frame.
func genPickleUnique(r *rand.Rand, entries int) []byte {
	return (&pgen{r: r, proto4: true, strs: map[string]int{}, unique: 1}).snapshot(entries, false)
}

func (g *pgen) snapshot(entries int, odd bool) []byte {
	r := g.r
	if g.proto4 {
		g.b.WriteString("\x80\x04")
	} else {
		g.b.WriteString("\x80\x02")
	}
	g.b.WriteByte('}')
	g.put()
	g.b.WriteByte('(')
	if r.IntN(3) == 0 || g.deepGeneric {
		// allocator_settings first, built as generic values: its list
		// and dict, referenced from frames lists below, are generic
		// containers among skipped ones (which change the node of the
		// value after them).
		g.str("allocator_settings")
		g.b.WriteByte('}')
		g.generic = append(g.generic, g.put())
		g.b.WriteByte('(')
		g.str("roundup_power2_divisions")
		g.b.WriteByte(']')
		g.generic = append(g.generic, g.put())
		g.batch(2, func() { g.int(4) })
		if g.deepGeneric {
			// A key the schema formats whatever its value: a
			// list, in two memo slots, which growGeneric fills
			// through either.
			g.str("nested_lists")
			g.b.WriteByte(']')
			g.glists = append(g.glists, g.put(), g.put())
		}
		g.str("expandable_segments")
		g.b.WriteByte(0x89)
		g.b.WriteByte('u')
	}
	g.str("segments")
	g.b.WriteByte(']')
	g.put()
	nseg := r.IntN(3)
	g.batch(nseg, func() {
		g.dict(func() {
			g.str("address")
			g.int(int64(1<<30 + r.IntN(1<<20)*512))
			g.str("total_size")
			g.int(20 << 20)
			g.str("stream")
			g.int(0)
			g.str("blocks")
			g.b.WriteByte(']')
			g.put()
			g.batch(r.IntN(4), func() { g.record(odd, true) })
		})
	})
	g.str("device_traces")
	g.b.WriteByte(']')
	g.put()
	g.batch(1, func() {
		g.b.WriteByte(']')
		g.put()
		g.batch(entries, func() { g.record(odd, false) })
	})
	g.b.WriteString("u.")
	return g.b.Bytes()
}

type pgen struct {
	b       bytes.Buffer
	r       *rand.Rand
	proto4  bool
	memo    int
	strs    map[string]int // memo index of each string written
	frames  []int          // memo indices of frame dicts
	lists   []int          // memo indices of frames lists
	generic []int          // memo indices of generic containers
	runs    [][]int        // the runs of frame references written (refRun)
	unique  int            // > 0: frame names are unique strings, this many so far
	// deepGeneric puts allocator_settings first and has frames lists
	// fill its generic list, and lists put in it, after they were
	// nested (growGeneric); glists are their memo indices.
	deepGeneric bool
	glists      []int
	// frameOps > 0 (protocol 4 only) writes a FRAME opcode before every
	// third item of a batch of several and of a run of references (the
	// count so far, plus one), without drawing from r: the same seed
	// writes the same pickle but for them.
	frameOps int
}

// frameOp writes a FRAME opcode (its eight-byte length is ignored by
// the machine) where frameOps says, as Python's pickler writes one
// before a value once 64 KB are pending.
func (g *pgen) frameOp() {
	if g.frameOps == 0 || !g.proto4 {
		return
	}
	if g.frameOps++; g.frameOps%3 == 0 {
		g.b.Write([]byte{0x95, 0, 0, 1, 0, 0, 0, 0, 0})
	}
}

// put memoizes the value just written and returns its index.
func (g *pgen) put() int {
	i := g.memo
	g.memo++
	switch {
	case g.proto4:
		g.b.WriteByte(0x94)
	case i < 256:
		g.b.WriteByte('q')
		g.b.WriteByte(byte(i))
	default:
		g.b.WriteByte('r')
		g.b.Write([]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24)})
	}
	return i
}

func (g *pgen) get(i int) {
	if i < 256 {
		g.b.WriteByte('h')
		g.b.WriteByte(byte(i))
		return
	}
	g.b.WriteByte('j')
	g.b.Write([]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24)})
}

// str writes s as Python does: a memo reference when the same string was
// written before (keys are interned by Python), else the string and its
// PUT; now and then a fresh copy, as for equal strings that are not the
// same object.
func (g *pgen) str(s string) {
	if i, ok := g.strs[s]; ok && g.r.IntN(8) != 0 {
		g.get(i)
		return
	}
	if len(s) < 256 && g.r.IntN(4) != 0 {
		g.b.WriteByte(0x8c)
		g.b.WriteByte(byte(len(s)))
	} else {
		g.b.WriteByte('X')
		g.b.Write([]byte{byte(len(s)), byte(len(s) >> 8), 0, 0})
	}
	g.b.WriteString(s)
	g.strs[s] = g.put()
}

func (g *pgen) int(n int64) {
	switch {
	case n >= 0 && n < 256:
		g.b.WriteByte('K')
		g.b.WriteByte(byte(n))
	case n >= 0 && n < 65536:
		g.b.WriteByte('M')
		g.b.Write([]byte{byte(n), byte(n >> 8)})
	case n >= -1<<31 && n < 1<<31:
		g.b.WriteByte('J')
		g.b.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)})
	default:
		var le []byte
		for x := n; ; x >>= 8 {
			le = append(le, byte(x))
			if (x < 128 && x >= -128) && (x >= 0) == (le[len(le)-1] < 128) {
				break
			}
		}
		g.b.WriteByte(0x8a)
		g.b.WriteByte(byte(len(le)))
		g.b.Write(le)
	}
}

// batch writes n items the way _batch_appends and _batch_setitems do:
// nothing for none, the item and APPEND for one, else MARK, the items,
// APPENDS.
func (g *pgen) batch(n int, item func()) {
	switch n {
	case 0:
	case 1:
		item()
		g.b.WriteByte('a')
	default:
		g.b.WriteByte('(')
		for range n {
			g.frameOp()
			item()
		}
		g.b.WriteByte('e')
	}
}

// dict writes a dict whose items (key, value, ...) body writes: several
// after a MARK and SETITEMS.
func (g *pgen) dict(body func()) {
	g.b.WriteByte('}')
	g.put()
	g.b.WriteByte('(')
	body()
	g.b.WriteByte('u')
}

var (
	genActions = []string{"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom", "snapshot"}
	genNames   = []string{"forward", "empty_cache", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)", "??", "_call_impl", strings.Repeat("long_function_name_", 5)}
	// Two file names are block states: a frame may be where a string
	// of 16 bytes or more is first written (skipped, but kept for the
	// memo outside the intern table), and a block's state (a value the
	// schema reads) a reference to it.
	genFiles = []string{"??", "/home/x/model.py", "CUDACachingAllocator.cpp", "torch/cuda/memory.py", "active_allocated", "active_pending_free"}
)

// record writes a trace entry (block false) or a block.
func (g *pgen) record(odd, block bool) {
	r := g.r
	if !block && r.IntN(40) == 0 {
		// One item: key, value, SETITEM.
		g.b.WriteByte('}')
		g.put()
		g.str("action")
		g.str("snapshot")
		g.b.WriteByte('s')
		return
	}
	g.dict(func() {
		var keys []string
		if block {
			keys = []string{"address", "size", "requested_size", "state", "frames"}
		} else {
			keys = []string{"action", "addr", "size", "stream", "time_us", "compile_context", "frames"}
			if r.IntN(10) == 0 {
				keys = append(keys, "device_free", "user_metadata")
			}
			if r.IntN(50) == 0 {
				// More keys than the fast path takes (fastPairs).
				for k := range 30 {
					keys = append(keys, fmt.Sprintf("extra_%d", k))
				}
			}
		}
		if r.IntN(6) == 0 {
			r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		if r.IntN(25) == 0 {
			// A key twice: the last value counts, a None keeps an
			// int's earlier value and clears an action (the record
			// path gives such a record up).
			keys = append(keys, keys[r.IntN(len(keys))])
		}
		for _, k := range keys {
			g.str(k)
			switch {
			case odd && r.IntN(12) == 0:
				g.oddValue()
			case k == "frames":
				g.framesList()
			case k == "action":
				g.str(genActions[r.IntN(len(genActions))])
			case k == "state":
				g.str([]string{"active_allocated", "inactive", "active_pending_free"}[r.IntN(3)])
			case k == "compile_context" || k == "user_metadata":
				if r.IntN(2) == 0 {
					g.str("N/A")
				} else {
					// A fresh copy, as Python writes an equal string
					// that is another object.
					g.b.WriteString("\x8c\x03N/A")
					g.put()
				}
			case k == "time_us":
				g.int(1763324225770003 + int64(r.IntN(1<<20)))
			case k == "stream" || k == "device_free":
				g.int(int64(r.IntN(3)))
			case r.IntN(16) == 0:
				// Negative and short LONG1s (sign bits, no bytes).
				if r.IntN(4) == 0 {
					g.b.WriteString("\x8a\x00") // 0
				} else {
					g.int([]int64{-1, -128, -129, -(1 << 40), math.MinInt64 + 1, math.MinInt64, 1 << 62}[r.IntN(7)])
				}
			default:
				g.int(int64(r.IntN(1<<40)) * 512)
			}
		}
	})
}

// oddValue writes a value of a type or shape the schema does not expect.
func (g *pgen) oddValue() {
	switch g.r.IntN(9) {
	case 0:
		g.b.WriteByte('N')
	case 1:
		g.b.WriteByte(0x88)
	case 2:
		g.b.WriteString("G\x3f\xf0\x00\x00\x00\x00\x00\x00")
	case 3:
		g.b.WriteString("}")
		g.put()
	case 4:
		g.b.WriteString("K\x01K\x02\x86")
	case 5:
		g.b.WriteString("\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09")
	case 6:
		g.b.WriteString("C\x03abc")
	case 7:
		g.b.WriteString("]")
		g.put()
		g.b.WriteString("K\x01a")
	default:
		g.str("segment_alloc")
	}
}

// framesList writes a frames list: empty, a memo reference to an earlier
// list, or frames (new frame dicts and memo references to earlier ones).
func (g *pgen) framesList() {
	r := g.r
	if g.deepGeneric && r.IntN(6) == 0 {
		// A generic list as the frames: its depth (whether it
		// holds anything) is what the entry's frame class reads.
		g.get(g.glists[r.IntN(len(g.glists))])
		return
	}
	if len(g.lists) > 0 && r.IntN(3) == 0 {
		g.get(g.lists[r.IntN(len(g.lists))])
		return
	}
	g.b.WriteByte(']')
	g.lists = append(g.lists, g.put())
	if len(g.frames) > 0 && r.IntN(4) == 0 {
		g.refRun()
		return
	}
	n := r.IntN(12)
	if r.IntN(5) == 0 {
		n = 0
	}
	g.batch(n, func() {
		if g.deepGeneric && r.IntN(3) == 0 {
			g.growGeneric()
			return
		}
		if len(g.generic) > 0 && r.IntN(6) == 0 {
			g.get(g.generic[r.IntN(len(g.generic))])
			return
		}
		if g.unique == 0 && len(g.frames) > 0 && r.IntN(3) != 0 {
			g.get(g.frames[r.IntN(len(g.frames))])
			return
		}
		g.b.WriteByte('}')
		fi := g.put()
		g.b.WriteByte('(')
		g.str("name")
		if g.unique > 0 {
			g.unique++
			g.str(fmt.Sprintf("fn%d", g.unique))
		} else {
			g.str(genNames[r.IntN(len(genNames))])
		}
		g.str("filename")
		g.str(genFiles[r.IntN(len(genFiles))])
		g.str("line")
		g.int(int64(r.IntN(3000)))
		g.b.WriteByte('u')
		g.frames = append(g.frames, fi)
	})
}

// growGeneric writes, as an item of a frames list, a generic list read
// through the memo after it was nested (in allocator_settings, in
// another such list, in frames lists) with an item appended to it: a
// new list (stored in the memo, to be filled in turn) or, now and then,
// another of those lists or itself, which may close a cycle. Python
// never writes this; the machine must find the depth the general path
// finds, or refuse the pickle at the same opcode.
func (g *pgen) growGeneric() {
	r := g.r
	g.get(g.glists[r.IntN(len(g.glists))])
	if r.IntN(10) == 0 {
		g.get(g.glists[r.IntN(len(g.glists))])
	} else {
		g.b.WriteByte(']')
		g.glists = append(g.glists, g.put())
	}
	g.b.WriteByte('a')
}

// refRun writes the items of a frames list as a long run of memo
// references to earlier frames (the machine's refRun reads them), the
// same run as an earlier list's now and then, sometimes with a new frame
// in the middle stored over the memo slot of a frame those runs name
// (Python never writes that: the depth bytes refRun reads must follow
// the slot's change).
func (g *pgen) refRun() {
	r := g.r
	var run []int
	if len(g.runs) > 0 && r.IntN(2) == 0 {
		run = g.runs[r.IntN(len(g.runs))]
	} else {
		for range 8 + r.IntN(90) {
			run = append(run, g.frames[r.IntN(len(g.frames))])
		}
		g.runs = append(g.runs, run)
	}
	over := -1
	if r.IntN(4) == 0 {
		over = r.IntN(len(run))
	}
	g.b.WriteByte('(')
	for i, f := range run {
		if i == over {
			// A frame dict stored over frame f's slot: its name (and
			// so its tag) may differ.
			g.b.WriteByte('}')
			if f < 256 {
				g.b.Write([]byte{'q', byte(f)})
			} else {
				g.b.Write([]byte{'r', byte(f), byte(f >> 8), byte(f >> 16), byte(f >> 24)})
			}
			g.b.WriteByte('(')
			g.str("name")
			g.str(genNames[r.IntN(len(genNames))])
			g.b.WriteByte('u')
			continue
		}
		g.frameOp()
		g.get(f)
	}
	g.b.WriteByte('e')
}

// mutate changes data in one of the ways a fuzzer would: a byte set to
// a random value or an opcode, a byte removed or inserted, a range
// duplicated, the tail cut.
func mutate(r *rand.Rand, data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) < 4 {
		return out
	}
	at := 2 + r.IntN(len(out)-2)
	ops := []byte("}](ueahjq\x94\x8cXKMJ\x8aN.rs0")
	switch r.IntN(6) {
	case 0:
		out[at] = byte(r.IntN(256))
	case 1:
		out[at] = ops[r.IntN(len(ops))]
	case 2:
		out = append(out[:at], out[at+1:]...)
	case 3:
		out = append(out[:at], append([]byte{ops[r.IntN(len(ops))]}, out[at:]...)...)
	case 4:
		n := min(1+r.IntN(64), len(out)-at)
		out = append(out[:at+n], append(bytes.Clone(out[at:at+n]), out[at+n:]...)...)
	default:
		out = out[:at]
	}
	return out
}

// TestFastPathGenerated compares the two paths on generated snapshots,
// mutated ones and, under limits just large enough or just too small,
// every limit the fast path checks before the general path would fail.
// TestFastPathFrameOpcodes: protocol 4's FRAME opcodes, which Python
// writes before any value once 64 KB are pending, and so mostly inside
// a frames list. A generated snapshot with them decodes as the same one
// without them, the record path reads as many of its entries (a FRAME
// in a frames list used to send its entry the general way), and every
// path decodes it the same.
func TestFastPathFrameOpcodes(t *testing.T) {
	recordsOf := func(data []byte) (*Snapshot, int, error) {
		records := 0
		decodedHook = func(m *pickle.Machine) { records = m.Records() }
		defer func() { decodedHook = nil }()
		s, err := DecodePickle(bytes.NewReader(data))
		return s, records, err
	}
	framed := 0
	for i := range 40 {
		gen := func(frameOps int) []byte {
			g := &pgen{r: rand.New(rand.NewPCG(uint64(i), 303)), proto4: true, strs: map[string]int{}, frameOps: frameOps}
			return g.snapshot(1+3*i, false)
		}
		plain, with := gen(0), gen(1)
		sp, rp, err := recordsOf(plain)
		if err != nil || bytes.Equal(plain, with) {
			continue // (a generated snapshot may be refused: its trace need not make sense)
		}
		framed++
		sw, rw, err := recordsOf(with)
		if err != nil {
			t.Fatalf("snapshot %d with FRAME opcodes: %v", i, err)
		}
		if !reflect.DeepEqual(sw, sp) {
			t.Fatalf("snapshot %d with FRAME opcodes: %s", i, firstDiff(sw, sp))
		}
		if rw != rp {
			t.Fatalf("snapshot %d: the record path read %d records with FRAME opcodes, %d without", i, rw, rp)
		}
		if err := sameDecode(t, fmt.Sprintf("snapshot %d with FRAME opcodes", i), with, DefaultLimits); err != nil {
			t.Fatal(err)
		}
	}
	if framed < 30 {
		t.Fatalf("only %d of 40 snapshots have FRAME opcodes", framed)
	}
}

func TestFastPathGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 300))
	// A campaign: 100 pickles by default, 400 with MEMBENCH_LONG=1
	// (README, Tests).
	n := 100
	if os.Getenv("MEMBENCH_LONG") != "" {
		n = 400
	}
	if testing.Short() {
		n = 60
	}
	decoded, compared := 0, 0
	// The record path must have run, or the comparisons compare the
	// fast path with itself.
	records := 0
	decodedHook = func(m *pickle.Machine) { records += m.Records() }
	defer func() { decodedHook = nil }()
	for i := range n {
		data := genPickle(r, 1+r.IntN(60), i%2 == 1)
		if sameDecode(t, fmt.Sprintf("generated %d", i), data, DefaultLimits) == nil {
			decoded++
			// Frames lists that hold generic containers (the
			// allocator_settings written first) included: a frame
			// after one is built as a generic dict, whose tags later
			// references must still carry (its depth record, gnode).
			if i%2 == 0 {
				sameAsGeneric(t, fmt.Sprintf("generated %d", i), data)
				compared++
			}
		}
		for k := range 20 {
			m := mutate(r, data)
			if k%2 == 1 {
				m = mutate(r, m)
			}
			sameDecode(t, fmt.Sprintf("generated %d, mutation %d", i, k), m, DefaultLimits)
		}
		for range 4 {
			sameDecode(t, fmt.Sprintf("generated %d, limits", i), data, tightLimits(r))
		}
	}
	if decoded < n/3 || compared < n/5 {
		t.Fatalf("only %d of %d generated snapshots decode, %d compared with the generic decode", decoded, n, compared)
	}
	if records < n {
		t.Fatalf("the record path read %d records: too few to compare", records)
	}
}

// TestFastPathGenericDepth compares the three paths on generated
// snapshots whose frames lists fill generic lists after those were
// nested (growGeneric), under the default limits and nesting limits
// small enough to be reached: the depth a generic container reaches
// lives with it (package pickle's gnode), and the fast paths, which
// leave such containers to the general path, must refuse the same
// pickles at the same opcode with the same error.
func TestFastPathGenericDepth(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 305))
	n := 60
	if testing.Short() {
		n = 30
	}
	deep, cycles, decoded := 0, 0, 0
	for i := range n {
		g := &pgen{r: r, proto4: r.IntN(2) == 0, strs: map[string]int{}, deepGeneric: true}
		data := g.snapshot(1+r.IntN(30), false)
		for k := range 4 {
			lim := DefaultLimits
			if k > 0 {
				lim.Pickle.MaxDepth = 2 + r.IntN(12)
			}
			err := sameDecode(t, fmt.Sprintf("generated %d, limit %d", i, lim.Pickle.MaxDepth), data, lim)
			switch {
			case err == nil:
				decoded++
			case strings.Contains(err.Error(), "contains itself"):
				cycles++
			case strings.Contains(err.Error(), "nesting depth"):
				deep++
			}
		}
		for k := range 5 {
			sameDecode(t, fmt.Sprintf("generated %d, mutation %d", i, k), mutate(r, data), DefaultLimits)
		}
	}
	t.Logf("%d too deep, %d cycles, %d decoded", deep, cycles, decoded)
	if deep < n/4 || cycles < n/10 || decoded < n/4 {
		t.Fatalf("%d too deep, %d cycles, %d decoded: too few of one to compare", deep, cycles, decoded)
	}
}

// TestFastPathReaders compares the two paths on readers that hand the
// machine its input a few bytes at a time (records then straddle the
// window's end, where the fast path gives up) and that fail part way
// (the machine's read-ahead must not move the error).
func TestFastPathReaders(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 304))
	errRead := errors.New("device unplugged")
	for i := range 40 {
		data := genPickle(r, 1+r.IntN(40), i%2 == 1)
		cut := r.IntN(len(data))
		readers := []func() io.Reader{
			func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
			func() io.Reader {
				return io.MultiReader(iotest.HalfReader(bytes.NewReader(data[:cut])), iotest.ErrReader(errRead))
			},
		}
		for k, open := range readers {
			fast, ferr := DecodePickleLimits(open(), DefaultLimits)
			slow, serr := DecodePickleLimits(open(), slowLimits(DefaultLimits))
			what := fmt.Sprintf("generated %d, reader %d", i, k)
			switch {
			case (ferr == nil) != (serr == nil):
				t.Fatalf("%s: fast path: %v; general path: %v", what, ferr, serr)
			case ferr != nil && ferr.Error() != serr.Error():
				t.Fatalf("%s: fast path: %v\ngeneral path: %v", what, ferr, serr)
			case ferr == nil && !reflect.DeepEqual(fast, slow):
				t.Fatalf("%s: the snapshots differ:\n%s", what, firstDiff(fast, slow))
			}
			if k == 2 && !errors.Is(ferr, errRead) {
				t.Fatalf("%s: %v, want the reader's error", what, ferr)
			}
		}
	}
}

// TestFastPathInternFull compares the two paths once the machine's
// intern table is full: thousands of distinct frame names, after which
// the fast path leaves new short strings to the general path.
func TestFastPathInternFull(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 303))
	data := genPickleUnique(r, 3000)
	if err := sameDecode(t, "distinct names", data, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		sameDecode(t, fmt.Sprintf("distinct names, mutation %d", k), mutate(r, data), DefaultLimits)
	}
}

// tightLimits are limits small enough for the generated snapshots to
// reach one now and then.
func tightLimits(r *rand.Rand) Limits {
	lim := DefaultLimits
	switch r.IntN(5) {
	case 0:
		lim.Pickle.MaxStack = 4 + r.IntN(40)
	case 1:
		lim.Pickle.MaxMemo = 10 + r.IntN(400)
	case 2:
		lim.Pickle.MaxText = int64(r.IntN(3000))
	case 3:
		lim.Pickle.MaxDepth = 1 + r.IntN(6)
	default:
		lim.MaxRecords = r.IntN(80)
	}
	return lim
}

// TestFastPathSharedMutated compares the two paths on mutations of the
// real snapshots (their first 256 KiB around the trace, and the small
// peak probe whole) and under tight limits.
func TestFastPathSharedMutated(t *testing.T) {
	if sharedtraces.Dir() == "" {
		t.Skip("../shared/traces is absent: the real snapshots are not compared (generated ones are, in TestFastPathGenerated)")
	}
	r := rand.New(rand.NewPCG(11, 301))
	// A campaign: 15 mutants of each snapshot by default, 60 with
	// MEMBENCH_LONG=1 (README, Tests).
	per := 15
	if os.Getenv("MEMBENCH_LONG") != "" {
		per = 60
	}
	if testing.Short() {
		per = 10
	}
	for _, name := range sharedSnapshots {
		data, err := os.ReadFile(realSnapPath(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 256<<10 {
			data = data[:256<<10] // a truncated snapshot: an error at its end
		}
		for k := range per {
			sameDecode(t, fmt.Sprintf("%s, mutation %d", name, k), mutate(r, data), DefaultLimits)
			sameDecode(t, fmt.Sprintf("%s, limits %d", name, k), data, sharedTightLimits(r, len(data)))
		}
	}
}

// sharedTightLimits are limits a real snapshot's prefix of size bytes
// reaches somewhere in its trace.
func sharedTightLimits(r *rand.Rand, size int) Limits {
	lim := DefaultLimits
	switch r.IntN(4) {
	case 0:
		lim.Pickle.MaxStack = 8 + r.IntN(1100)
	case 1:
		lim.Pickle.MaxMemo = 10 + r.IntN(size/8)
	case 2:
		lim.Pickle.MaxText = int64(r.IntN(size / 2))
	default:
		lim.Pickle.MaxDepth = 1 + r.IntN(6)
	}
	return lim
}

// FuzzFastPath compares the two paths on arbitrary input, each input
// within fuzzbound's time and memory bounds.
func FuzzFastPath(f *testing.F) {
	r := rand.New(rand.NewPCG(11, 302))
	for i := range 8 {
		f.Add(genPickle(r, 1+r.IntN(20), i%2 == 1))
	}
	if sharedtraces.Dir() != "" {
		data, err := os.ReadFile(realSnapPath(f, "cs336-lm-peak-probe.pickle"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		data, err = os.ReadFile(realSnapPath(f, "opt125m-zo-finetune.pickle"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:32<<10])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Check(t, func() { sameDecode(t, "fuzz input", data, DefaultLimits) })
	})
}
