package snapshot

import (
	"bytes"
	"math"
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
