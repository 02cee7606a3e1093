package pickle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"membench/internal/fuzzbound"
	"membench/internal/sharedtraces"
)

// FuzzDecode asserts that no input makes Decode panic or hang, whatever it
// returns. The seeds are every testdata pickle (all protocols), the real
// snapshots and a few hand-made opcode sequences.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pickle")
	// The real snapshots are read in place from ../shared/traces when it
	// is there (never copied into the project).
	snapshotDir := ""
	if d := sharedtraces.Dir(); d != "" {
		snapshotDir = filepath.Join(d, "pytorch-snapshots")
		files = append(files, filepath.Join(snapshotDir, "cs336-lm-peak-probe.pickle"))
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// The 2 MB snapshot would slow every mutation and minimization down to
	// a crawl; its first 64 KiB carry the same opcode mix (TestRealSnapshots
	// decodes it whole).
	if snapshotDir != "" {
		data, err := os.ReadFile(filepath.Join(snapshotDir, "opt125m-zo-finetune.pickle"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:64<<10])
	}
	for _, s := range []string{
		"", ".", "\x80\x02.", "(l.", "(d.", "S'a'\n.", "V\\u0041\n.", "I01\n.",
		"\x80\x04\x8e\x00\x00\x00\x30\x00\x00\x00\x00abc",
		"\x80\x02]q\x00h\x00a.", "\x80\x02K\x05r\xff\xff\xff\xff0j\xff\xff\xff\xff.",
		"\x80\x02}(K\x01K\x01\x85K\x02u.", "\x80\x02)\x85\x85\x85\x85.",
		// The reproducers of issue 11: a tuple key nested 40 deep (2^40
		// steps to hash), nesting past the depth limit, a memo reference
		// used many times, a long text integer.
		"\x80\x02})" + strings.Repeat("\x85", 40) + "Ns.",
		"\x80\x02N" + strings.Repeat("\x85", 1100) + ".",
		"\x80\x02" + strings.Repeat("]", 1100) + strings.Repeat("a", 1099) + ".",
		"\x80\x02)" + strings.Repeat("\x94h\x00h\x00\x86", 30) + "}\x94h\x00Ns.",
		"L" + strings.Repeat("9", 5000) + "\n.",
		// The depth through the memo (doc.go, Nesting depth): a list
		// in two slots, filled after nesting, a stale copy, a cycle.
		"\x80\x04]\x94\x94" + strings.Repeat("]", 8) + strings.Repeat("a", 8) + "0]]h\x01aa.",
		"\x80\x04]\x94]\x94a0h\x01" + strings.Repeat("]", 9) + strings.Repeat("a", 9) + "0h\x00.",
		"\x80\x04]\x94\x94]]aa0h\x01Na0]h\x00a.",
		"\x80\x04]\x94h\x00\x85\x94a.",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each input within 1 s of CPU and 256 MiB of allocation.
		fuzzbound.Check(t, func() {
			v, err := Decode(bytes.NewReader(data))
			if err == nil {
				steps := 1 << 20
				walk(v, map[any]bool{}, 0, &steps)
			} else if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			// The same input on a stream of unknown size.
			Decode(struct{ *bytes.Reader }{bytes.NewReader(data)})
		})
	})
}

// walk touches every decoded value once, so that a malformed value (a nil
// *List, say) would show up as a panic here.
func walk(v any, seen map[any]bool, depth int, budget *int) {
	*budget--
	if depth > 200 || *budget < 0 {
		return
	}
	switch v := v.(type) {
	case *List:
		if seen[v] {
			return
		}
		seen[v] = true
		for _, x := range v.Items {
			walk(x, seen, depth+1, budget)
		}
	case Tuple:
		for _, x := range v {
			walk(x, seen, depth+1, budget)
		}
	case *Dict:
		if seen[v] {
			return
		}
		seen[v] = true
		for k, x := range v.All() {
			v.Lookup(k)
			walk(x, seen, depth+1, budget)
		}
	case nil, bool, int64, float64, string, []byte:
	default:
		if TypeName(v) == "int" {
			return
		}
		panic("unexpected decoded type " + TypeName(v))
	}
}
