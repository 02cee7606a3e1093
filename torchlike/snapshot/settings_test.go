package snapshot

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestMaxSplitSizeUnsigned: a writer that stores max_split_size as the
// unsigned SIZE_MAX (2^64-1, a LONG1 in the pickle) means "unlimited".
func TestMaxSplitSizeUnsigned(t *testing.T) {
	// pickle.dumps({'segments': [], 'device_traces': [[]],
	//   'allocator_settings': {'max_split_size': 2**64-1}}, protocol=4)
	b := []byte("\x80\x04\x95[\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94\x8c\rdevice_traces\x94]\x94]\x94a\x8c\x12allocator_settings\x94}\x94\x8c\x0emax_split_size\x94\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00su.")
	s, err := Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s.Settings == nil || s.Settings.MaxSplitSize != -1 {
		t.Fatalf("settings %+v", s.Settings)
	}
}

// TestFormatScalarSetting: formatValue renders scalars without a
// builder, and known keys as shared constants; the text must be what the
// general writer (writeValue) gives, long strings cut the same way, and
// a copy (the decoder's strings are recycled).
func TestFormatScalarSetting(t *testing.T) {
	long := strings.Repeat("x", maxSettingText+10)
	for _, v := range []any{
		nil, true, false, int64(0), int64(99), int64(100), int64(-1), int64(math.MinInt64),
		"", "max_split_size", "roundup_power2_divisions", "expandable_segments:True", long,
	} {
		var b strings.Builder
		writeValue(&b, v, 0)
		want := b.String()
		if got := formatValue(v, 0); got != want {
			t.Errorf("formatValue(%#v) = %q, want %q", v, got, want)
		}
		if s, ok := v.(string); ok && len(s) > 0 && knownSetting(s) < 0 {
			if got := formatValue(v, 0); unsafe.StringData(got) == unsafe.StringData(s) {
				t.Errorf("formatValue(%q) shares the decoder's string", s)
			}
		}
	}
	for i, k := range settingKeys {
		if knownSetting(k) != i || metaKeys[i] != "torch."+snapMetaKey(k) {
			t.Errorf("key %q: index %d, meta key %q", k, knownSetting(k), metaKeys[i])
		}
	}
}

// TestSnapMetaText compares snapMetaKey and snapMetaValue, which return
// printable ASCII as it is, with the rune mapping alone on random text:
// control bytes, DEL, spaces, non-ASCII and invalid UTF-8 included.
func TestSnapMetaText(t *testing.T) {
	key := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r <= ' ' || r == 0x7f {
				return '_'
			}
			return r
		}, s)
	}
	value := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, s)
	}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, '\t', '\n', ' ', '!', 'a', 'Z', '~', 0x7f, 0x80, 0xc3, 0xa9, 0xff}
	cases := []string{"", "roundup_power2_divisions", "a b", "é", "\xff", "x\x7f"}
	for range 5000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := snapMetaKey(s), key(s); got != want {
			t.Fatalf("snapMetaKey(%q) = %q, want %q", s, got, want)
		}
		if got, want := snapMetaValue(s), value(s); got != want {
			t.Fatalf("snapMetaValue(%q) = %q, want %q", s, got, want)
		}
	}
}
