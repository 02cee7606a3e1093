package snapshot

import (
	"bytes"
	"fmt"
	"math/big"

	"math"
	"math/rand/v2"
	"membench/internal/pickle"
	"strconv"
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
// general writer (refWriteValue) gives, long strings cut the same way, and
// a copy (the decoder's strings are recycled).
func TestFormatScalarSetting(t *testing.T) {
	long := strings.Repeat("x", maxSettingText+10)
	for _, v := range []any{
		nil, true, false, int64(0), int64(99), int64(100), int64(-1), int64(math.MinInt64),
		"", "max_split_size", "roundup_power2_divisions", "expandable_segments:True", long,
	} {
		var b strings.Builder
		refWriteValue(&b, v, 0)
		want := b.String()
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%#v) = %q, want %q", v, got, want)
		}
		if s, ok := v.(string); ok && len(s) > 0 && knownSetting(s) < 0 {
			if got := formatValue(v); unsafe.StringData(got) == unsafe.StringData(s) {
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

// TestFormatValueReference compares formatValue, which appends into an
// array on the stack, with the strings.Builder writer it replaced
// (refWriteValue, kept here as the reference) on random settings
// values: nested lists, tuples and dicts of every scalar kind, long
// strings and bytes, more than 64 items, deeper than four levels, more
// than maxSettingText bytes of text.
func TestFormatValueReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 900))
	// A container has up to three items, or near the top now and
	// then up to 80.
	items := func(depth int) int {
		if depth < 2 && r.IntN(3) == 0 {
			return r.IntN(80)
		}
		return r.IntN(4)
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		k := r.IntN(12)
		if depth > 6 {
			k = r.IntN(7)
		}
		switch k {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return []int64{0, 7, 99, 100, 255, 256, 32768, -1, math.MinInt64, math.MaxInt64}[r.IntN(10)]
		case 3:
			return []float64{0, 0.5, -1.25, 1e300, math.Inf(1), math.NaN()}[r.IntN(6)]
		case 4:
			return strings.Repeat("ab", r.IntN(3)*r.IntN(700))
		case 5:
			return bytes.Repeat([]byte{0, 'x', 0xff, '"'}, r.IntN(300))
		case 6:
			z, _ := new(big.Int).SetString(strings.Repeat("9", 1+r.IntN(60)), 10)
			return z
		case 7, 8:
			l := &pickle.List{}
			for range items(depth) {
				l.Items = append(l.Items, gen(depth+1))
			}
			return l
		case 9:
			var tu pickle.Tuple
			for range r.IntN(4) {
				tu = append(tu, gen(depth+1))
			}
			return tu
		}
		d := pickle.NewDict()
		for i := range items(depth) {
			if err := d.Set(fmt.Sprint("k", i), gen(depth+1)); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	long := 0
	for i := range 3000 {
		v := gen(0)
		var b strings.Builder
		refWriteValue(&b, v, 0)
		want := b.String()
		if len(want) > maxSettingText {
			want = want[:maxSettingText] + "..."
			long++
		}
		if got := formatValue(v); got != want {
			t.Fatalf("value %d: formatValue = %q, want %q", i, got, want)
		}
	}
	if long < 100 {
		t.Fatalf("only %d values past maxSettingText", long)
	}
}

func refWriteValue(b *strings.Builder, v any, depth int) {
	if b.Len() > maxSettingText {
		return
	}
	if depth > 4 {
		b.WriteString("...")
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case *big.Int:
		b.WriteString(shortInt(v))
	case float64:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case string:
		if len(v) > maxSettingText {
			v = v[:maxSettingText]
		}
		b.WriteString(v)
	case []byte:
		if len(v) > maxSettingText {
			v = v[:maxSettingText]
		}
		fmt.Fprintf(b, "%q", v)
	case *pickle.List:
		refWriteSeq(b, "[", v.Items, "]", depth)
	case pickle.Tuple:
		refWriteSeq(b, "(", v, ")", depth)
	case *pickle.Dict:
		b.WriteByte('{')
		i := 0
		for k, x := range v.All() {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 64 || b.Len() > maxSettingText {
				b.WriteString("...")
				break
			}
			refWriteValue(b, k, depth+1)
			b.WriteString(": ")
			refWriteValue(b, x, depth+1)
			i++
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}
func refWriteSeq(b *strings.Builder, open string, items []any, close string, depth int) {
	b.WriteString(open)
	for i, x := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 64 || b.Len() > maxSettingText {
			b.WriteString("...")
			break
		}
		refWriteValue(b, x, depth+1)
	}
	b.WriteString(close)
}

// TestSettingsOutOfRange: allocator_settings that PyTorch cannot have
// recorded (allocator-spec §1.1: garbage_collection_threshold 0, for off,
// or in (0, 1); max_split_size unlimited or at least 20 MiB) are refused
// at their key: validate took them as the configuration it replays under,
// where a threshold of NaN, of 1e300 or below 0 and a split limit of one
// byte mean nothing PyTorch does, and reported agreement.
func TestSettingsOutOfRange(t *testing.T) {
	snap := func(key string, v any) *pickle.Dict {
		st := pickle.NewDict()
		st.Set(key, v)
		d := pickle.NewDict()
		d.Set("segments", &pickle.List{})
		d.Set("device_traces", &pickle.List{Items: []any{&pickle.List{}}})
		d.Set("allocator_settings", st)
		return d
	}
	const gc, ms = "garbage_collection_threshold", "max_split_size"
	for _, c := range []struct {
		key string
		v   any
		ok  bool
	}{
		{gc, 0.0, true}, {gc, 0.5, true}, {gc, 0.999, true},
		{gc, math.NaN(), false}, {gc, 1.0, false}, {gc, -0.5, false}, {gc, 1e300, false}, {gc, math.Inf(1), false},
		{ms, int64(-1), true}, {ms, int64(20 << 20), true}, {ms, int64(1 << 40), true},
		{ms, int64(1), false}, {ms, int64(20<<20 - 1), false},
	} {
		_, err := FromValue(snap(c.key, c.v))
		if c.ok && err != nil {
			t.Errorf("%s=%v: %v", c.key, c.v, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "allocator_settings."+c.key)) {
			t.Errorf("%s=%v: error %v, want it refused at its key", c.key, c.v, err)
		}
	}
}
