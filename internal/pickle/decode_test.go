package pickle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"membench/internal/sharedtraces"
)

// equal compares decoded values structurally. Containers are compared by
// content; seen breaks cycles.
func equal(a, b any, seen map[[2]any]bool) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool, int64, string:
		return a == b
	case float64:
		bf, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(bf)
	case *big.Int:
		bb, ok := b.(*big.Int)
		return ok && a.Cmp(bb) == 0
	case []byte:
		bb, ok := b.([]byte)
		return ok && bytes.Equal(a, bb)
	case Tuple:
		bt, ok := b.(Tuple)
		if !ok || len(a) != len(bt) {
			return false
		}
		for i := range a {
			if !equal(a[i], bt[i], seen) {
				return false
			}
		}
		return true
	case *List:
		bl, ok := b.(*List)
		if !ok || len(a.Items) != len(bl.Items) {
			return false
		}
		k := [2]any{a, bl}
		if seen[k] {
			return true
		}
		seen[k] = true
		for i := range a.Items {
			if !equal(a.Items[i], bl.Items[i], seen) {
				return false
			}
		}
		return true
	case *Dict:
		bd, ok := b.(*Dict)
		if !ok || a.Len() != bd.Len() {
			return false
		}
		k := [2]any{a, bd}
		if seen[k] {
			return true
		}
		seen[k] = true
		for i := range a.keys {
			if !equal(a.keys[i], bd.keys[i], seen) || !equal(a.vals[i], bd.vals[i], seen) {
				return false
			}
		}
		return true
	}
	return false
}

func eq(a, b any) bool { return equal(a, b, map[[2]any]bool{}) }

func bigint(s string) *big.Int {
	z, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return z
}

func list(items ...any) *List { return &List{Items: items} }

func dict(kv ...any) *Dict {
	d := NewDict()
	for i := 0; i < len(kv); i += 2 {
		if err := d.Set(kv[i], kv[i+1]); err != nil {
			panic(err)
		}
	}
	return d
}

func ints(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

var expected = map[string]any{
	"scalars": list(nil, true, false, int64(0), int64(1), int64(-1), int64(255), int64(256),
		int64(65535), int64(65536), int64(-1<<31), int64(1<<31-1), int64(1<<31),
		int64(math.MaxInt64), int64(math.MinInt64), bigint("9223372036854775808"),
		bigint("-9223372036854775809"), bigint("1267650600228229401496703205376"),
		bigint("-1267650600228229401496703205376"), 1.5, math.Copysign(0, -1), 1e300,
		"", "abc", "h\u00e9llo \u2603", "a\nb\\c\x00\r\x1a", strings.Repeat("x", 300)),
	"containers": func() *Dict {
		d := dict(
			"a", list(int64(1), int64(2), Tuple{int64(3), "x"}),
			int64(5), "int key",
			Tuple{int64(1), "t"}, nil,
			"nested", dict("k", list()),
			"tuples", list(Tuple{}, Tuple{int64(1)}, Tuple{int64(1), int64(2)},
				Tuple{int64(1), int64(2), int64(3)}, Tuple{int64(1), int64(2), int64(3), int64(4)}),
			"long", &List{Items: ints(2500)},
		)
		inner := NewDict()
		for i := range 1200 {
			inner.Set(fmt.Sprint(i), int64(i))
		}
		d.Set("dict", inner)
		return d
	}(),
	"sets":      dict("set", list(int64(7)), "fs", list(int64(8)), "e", list()),
	"bytes":     list([]byte{0, 0xff}, bytes.Repeat([]byte("y"), 300)),
	"bytearray": []byte("xyz"),
	"shared":    dict("x", list(int64(1)), "y", list(int64(1))),
}

func decodeFile(t testing.TB, path string) (any, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Decode(f)
}

func TestDecodePythonPickles(t *testing.T) {
	for name, want := range expected {
		files, _ := filepath.Glob(filepath.Join("testdata", name+".p*.pickle"))
		if len(files) == 0 {
			t.Fatalf("no testdata for %s", name)
		}
		for _, f := range files {
			got, err := decodeFile(t, f)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if !eq(got, want) {
				t.Errorf("%s: decoded value differs:\n got %#v\nwant %#v", f, got, want)
			}
			// The same bytes through a reader whose size is unknown.
			data, _ := os.ReadFile(f)
			got2, err := Decode(io.MultiReader(bytes.NewReader(data)))
			if err != nil || !eq(got2, want) {
				t.Errorf("%s via plain io.Reader: %v", f, err)
			}
		}
	}
}

func TestSharedAndRecursive(t *testing.T) {
	for p := range 6 {
		v, err := decodeFile(t, fmt.Sprintf("testdata/shared.p%d.pickle", p))
		if err != nil {
			t.Fatal(err)
		}
		d := v.(*Dict)
		x, _ := d.Get("x")
		y, _ := d.Get("y")
		if x.(*List) != y.(*List) {
			t.Errorf("protocol %d: shared list decoded as two lists", p)
		}

		// A list that contains itself, directly or through a tuple
		// (what Python writes for l = [l] and t = ([t],)), has no
		// depth: it is refused, as deeper than MaxDepth (Limits), at
		// the APPEND that closes the cycle.
		for _, name := range []string{"recursive", "rectuple"} {
			_, err = decodeFile(t, fmt.Sprintf("testdata/%s.p%d.pickle", name, p))
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrLimit) || pe.Op != "APPEND" || !strings.Contains(err.Error(), "the list contains itself") {
				t.Errorf("protocol %d: %s: %v, want the list refused at its APPEND", p, name, err)
			}
		}
	}
}

func TestRefused(t *testing.T) {
	for _, c := range []struct {
		file string
		op   string
		off  int64
	}{
		{"ordereddict.p0.pickle", "GLOBAL", 0},
		{"ordereddict.p2.pickle", "GLOBAL", 2},
		{"ordereddict.p4.pickle", "STACK_GLOBAL", 39},
		{"complex.p2.pickle", "GLOBAL", 2},
	} {
		_, err := decodeFile(t, "testdata/"+c.file)
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) || pe.Op != c.op || pe.Offset != c.off {
			t.Errorf("%s: got %v, want %s refused at offset %d", c.file, err, c.op, c.off)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("offset %d: %s", c.off, c.op)) {
			t.Errorf("%s: message %q does not name offset and opcode", c.file, err)
		}
	}
	// Every code-running opcode, alone after PROTO 2 and a few pushes.
	for _, op := range []byte{OpGlobal, OpStackGlobal, OpReduce, OpBuild, OpInst, OpObj,
		OpNewObj, OpNewObjEx, OpExt1, OpExt2, OpExt4, OpPersID, OpBinPersID,
		OpNextBuffer, OpReadonlyBuffer} {
		in := []byte{0x80, 2, 'N', 'N', 'N', op, 0, 0, 0, 0, '.'}
		_, err := Decode(bytes.NewReader(in))
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, ErrRefused) || pe.Offset != 5 || pe.Op != opName(op) {
			t.Errorf("opcode %s: got %v", opName(op), err)
		}
	}
}

func TestHandcrafted(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want any
	}{
		{"STRING", "S'a\\nb\\'c\\x41\\101\\q'\np0\n.", "a\nb'cAA\\q"},
		{"STRING dq", "S\"x'y\"\n.", "x'y"},
		{"BINSTRING", "T\x03\x00\x00\x00abc.", "abc"},
		{"SHORT_BINSTRING", "U\x02hi.", "hi"},
		{"UNICODE escapes", "V\\u00e9\\\\u0041\\U0001F600\\x\n.", "\u00e9\\\\u0041\U0001F600\\x"},
		{"UNICODE latin1", "Vcaf\xe9\n.", "caf\u00e9"},
		{"BINUNICODE8", "\x80\x04\x8d\x02\x00\x00\x00\x00\x00\x00\x00ok.", "ok"},
		{"BINBYTES8", "\x80\x04\x8e\x01\x00\x00\x00\x00\x00\x00\x00z.", []byte("z")},
		{"LONG4", "\x80\x02\x8b\x02\x00\x00\x00\xff\x7f.", int64(0x7fff)},
		{"LONG4 neg", "\x80\x02\x8b\x01\x00\x00\x00\xff.", int64(-1)},
		{"LONG1 empty", "\x80\x02\x8a\x00.", int64(0)},
		{"LONG1 9 bytes", "\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.", bigint("9223372036854775808")},
		{"LONG text", "L-12345678901234567890L\n.", bigint("-12345678901234567890")},
		{"INT text", "I-42\n.", int64(-42)},
		{"INT bool", "(I01\nI00\nl.", list(true, false)},
		{"FLOAT inf", "Finf\n.", math.Inf(1)},
		{"DUP", "\x80\x02]\x32\x86.", nil}, // checked below: two refs to one list
		{"POP", "\x80\x02K\x01K\x020.", int64(1)},
		{"POP_MARK", "\x80\x02K\x07(K\x01K\x021.", int64(7)},
		{"LONG_BINPUT/GET", "\x80\x02K\x05r\x00\x01\x00\x000j\x00\x01\x00\x00.", int64(5)},
		{"sparse PUT", "\x80\x02K\x05r\xff\xff\xff\xff0j\xff\xff\xff\xff.", int64(5)},
		// Index 200 goes to the sparse map (memo empty); later the slice
		// grows past 200 with a hole there (PUT 202); GET 200 must still
		// find 9.
		{"sparse then dense", "K\x09q\xc8K\x07" + strings.Repeat("\x94", 150) + "q\xca00h\xc8.", int64(9)},
		{"MEMOIZE after sparse", "K\x05q\x00\x94K\x06\x94h\x00h\x01h\x02\x87.", Tuple{int64(5), int64(5), int64(6)}},
		{"DICT", "(K\x01K\x02K\x01K\x03d.", dict(int64(1), int64(3))},
		{"bool key is int key", "}(K\x01U\x01a\x88U\x01bu.", dict(int64(1), "b")},
		{"EMPTY_SET ADDITEMS", "\x80\x04\x8f(K\x01K\x02\x90.", list(int64(1), int64(2))},
		{"FROZENSET", "\x80\x04(K\x01\x91.", list(int64(1))},
		{"FRAME", "\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x01.", int64(1)},
		{"protocol 5 big", "\x80\x05N.", nil},
	} {
		got, err := Decode(strings.NewReader(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.name == "DUP" {
			tu := got.(Tuple)
			if tu[0].(*List) != tu[1].(*List) {
				t.Errorf("DUP: not the same list")
			}
			continue
		}
		if !eq(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		trunc          bool
	}{
		{"empty", "", "empty input", true},
		{"no STOP", "\x80\x02N", "no STOP", true},
		{"truncated BININT", "\x80\x02J\x01\x00", "truncated", true},
		{"truncated string", "\x80\x02X\x05\x00\x00\x00ab", "bytes left", true},
		{"truncated line", "I12", "truncated", true},
		{"underflow", "\x80\x02.", "stack underflow", false},
		{"underflow TUPLE2", "\x80\x02K\x01\x86.", "stack underflow", false},
		{"underflow past mark", "\x80\x02](a.", "stack underflow", false},
		{"no mark", "\x80\x02l.", "no MARK", false},
		{"bad memo", "\x80\x02h\x03.", "memo index 3 not defined", false},
		{"bad memo text", "g-1\n.", "bad memo index", false},
		{"huge length", "\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", "exceeds", false},
		{"huge LONG4", "\x80\x02\x8b\xff\xff\xff\x7f", "exceeds", false},
		{"negative BINSTRING", "T\xff\xff\xff\xff", "negative length", false},
		{"unknown opcode", "\x80\x02\xff", "unknown opcode 0xff", false},
		{"protocol 6", "\x80\x06N.", "unsupported protocol", false},
		{"append to dict", "\x80\x02}K\x01a.", "append to dict", false},
		{"setitem on list", "\x80\x02]K\x01K\x02s.", "set item on list", false},
		{"odd SETITEMS", "\x80\x02}(K\x01u.", "odd number", false},
		{"unhashable key", "\x80\x02}]K\x01s.", "unhashable", false},
		{"bad STRING quote", "Sabc\n.", "must be quoted", false},
		{"bad INT", "Ixyz\n.", "bad integer", false},
		{"bad FLOAT", "Fxyz\n.", "bad float", false},
	} {
		_, err := Decode(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.name, err, c.want)
			continue
		}
		if c.trunc != errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: errors.Is(ErrUnexpectedEOF) = %v, want %v (%v)", c.name, !c.trunc, c.trunc, err)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %T is not *Error", c.name, err)
		}
	}
	// A huge length on a stream of unknown size: no giant allocation, just
	// a truncation error once the data runs out.
	in := "\x80\x04\x8e\x00\x00\x00\x30\x00\x00\x00\x00abc"
	_, err := Decode(io.MultiReader(strings.NewReader(in)))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("huge BINBYTES8 on a stream: %v", err)
	}
}

func TestEveryPrefixFails(t *testing.T) {
	for _, name := range []string{"scalars.p0.pickle", "scalars.p2.pickle", "sets.p4.pickle", "rectuple.p0.pickle", "bytes.p5.pickle", "shared.p1.pickle"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			_, err := Decode(bytes.NewReader(data[:n]))
			if err == nil {
				t.Fatalf("%s: prefix of %d bytes decoded without error", name, n)
			}
		}
	}
}

func TestRealSnapshots(t *testing.T) {
	for _, name := range []string{"cs336-lm-peak-probe.pickle", "opt125m-zo-finetune.pickle"} {
		path := sharedtraces.Path(t, "pytorch-snapshots/"+name)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s not present: %v", path, err)
		}
		start := time.Now()
		v, err := decodeFile(t, path)
		el := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s decoded in %v", name, el)
		d := v.(*Dict)
		segs, ok := d.Get("segments")
		if !ok || len(segs.(*List).Items) == 0 {
			t.Errorf("%s: no segments", name)
		}
		tr, _ := d.Get("device_traces")
		if n := len(tr.(*List).Items); n != 1 {
			t.Errorf("%s: %d device traces", name, n)
		}
	}
}

func BenchmarkDecodeOpt125m(b *testing.B) {
	data, err := os.ReadFile(sharedtraces.Path(b, "pytorch-snapshots/opt125m-zo-finetune.pickle"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSmallLongOneLoad: smallLong reads eight bytes at once when they are
// behind its slice, and byte by byte when they are not; both give what
// Python's int.from_bytes(b, 'little', signed=True) gives, whatever lies
// past the slice.
func TestSmallLongOneLoad(t *testing.T) {
	for n := 0; n <= 8; n++ {
		for _, fill := range []byte{0x00, 0x7f, 0x80, 0xff} {
			b := bytes.Repeat([]byte{fill}, 16)
			want := new(big.Int)
			if n > 0 {
				// Two's complement of n bytes, little-endian.
				be := make([]byte, n)
				for i := range n {
					be[n-1-i] = b[i]
				}
				want.SetBytes(be)
				if fill&0x80 != 0 {
					want.Sub(want, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
				}
			}
			for i := range 16 - n {
				b[n+i] = ^fill // bytes past the slice must not count
			}
			wide, narrow := smallLong(b[:n]), smallLong(b[:n:n])
			if wide != want.Int64() || narrow != want.Int64() {
				t.Errorf("%d bytes of %#x: %d (one load), %d (byte by byte), want %s", n, fill, wide, narrow, want)
			}
		}
	}
}
