package snapshot

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"membench/strategies"
	"membench/torchlike"
	"membench/traces"
)

// TestRecordedMetaOdd: settings a snapshot can carry that no strategy spec
// replays exactly (a division count no power of two, a
// garbage_collection_threshold outside (0, 1) or NaN, a recorded
// PYTORCH_CUDA_ALLOC_CONF that is not read whole, so that a knob only it
// carries is lost) are named as recorded settings, never as a
// recorded-strategy spec that does not parse or that replays other
// settings; and a default torch replay of such a snapshot says so (a note
// that never came was silent loss). Settings a spec does give keep their
// spec, and that spec parses back to them.
func TestRecordedMetaOdd(t *testing.T) {
	odd := func(f func(*Settings)) *Settings {
		s := &Settings{MaxSplitSize: -1}
		f(s)
		return s
	}
	for _, c := range []struct {
		name string
		s    *Settings
		spec string // "" when no spec replays it exactly
	}{
		{"divisions of 3", odd(func(s *Settings) { s.RoundupPower2Divisions[0] = 3 }), ""},
		{"threshold 1.5", odd(func(s *Settings) { s.GarbageCollectionThreshold = 1.5 }), ""},
		{"threshold -0.5", odd(func(s *Settings) { s.GarbageCollectionThreshold = -0.5 }), ""},
		{"threshold NaN", odd(func(s *Settings) { s.GarbageCollectionThreshold = math.NaN() }), ""},
		{"conf with an unknown key", odd(func(s *Settings) {
			s.MaxSplitSize = 64 << 20
			s.PYTORCH_CUDA_ALLOC_CONF = "max_split_size_mb:64,max_non_split_rounding_mb:128,some_new_knob:1"
		}), ""},
		{"conf that does not split", odd(func(s *Settings) {
			s.MaxSplitSize = 64 << 20
			s.PYTORCH_CUDA_ALLOC_CONF = "max_split_size_mb:64,max_non_split_rounding_mb"
		}), ""},
		{"divisions of 4 and 0", odd(func(s *Settings) { s.RoundupPower2Divisions[0], s.RoundupPower2Divisions[15] = 4, 0 }),
			"torch:roundup_power2_divisions:[1:4,2:0,4:0,8:0,16:0,32:0,64:0,128:0,256:0,512:0,1024:0,2048:0,4096:0,8192:0,16384:0,32768:0]"},
		{"threshold 0.6 in a conf with spaces", odd(func(s *Settings) {
			s.GarbageCollectionThreshold = 0.6
			s.PYTORCH_CUDA_ALLOC_CONF = "garbage_collection_threshold: 0.6, max_non_split_rounding_mb: 64"
		}), "torch:max_non_split_rounding_mb:64,garbage_collection_threshold:0.6"},
	} {
		kv, ok := recordedMeta(c.s)
		if !ok {
			t.Errorf("%s: no recorded meta", c.name)
			continue
		}
		m := traces.Meta{kv}
		if c.spec == "" {
			if kv.Key != RecordedSettingsKey {
				t.Errorf("%s: meta %s=%q, want %s", c.name, kv.Key, kv.Value, RecordedSettingsKey)
			}
		} else {
			if kv.Key != RecordedStrategyKey || kv.Value != c.spec {
				t.Errorf("%s: meta %s=%q, want %s=%q", c.name, kv.Key, kv.Value, RecordedStrategyKey, c.spec)
			}
			sp, err := strategies.ParseSpec(kv.Value)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			back, err := torchlike.ParseConfig(sp)
			cfg, _ := c.s.Config()
			if err != nil || !back.SameRecordedSettings(cfg) {
				t.Errorf("%s: %q gives other settings (%v)", c.name, kv.Value, err)
			}
		}
		if n := ReplayNote(m, torchlike.DefaultConfig()); !strings.Contains(n, "recorded with") {
			t.Errorf("%s: a default replay says nothing of the recorded settings (meta %s=%q)", c.name, kv.Key, kv.Value)
		}
	}
}

// TestRecordedMetaBounded: a recorded PYTORCH_CUDA_ALLOC_CONF of megabytes
// (a hostile file; a real one is a few knobs) is named in the recorded
// settings, and so in every replay's note, cut as other settings text is
// (maxSettingText), not whole: a 5 MB value made 10 MB note lines.
func TestRecordedMetaBounded(t *testing.T) {
	for _, conf := range []string{
		"max_non_split_rounding_mb:" + strings.Repeat("9", 5<<20),
		"bogus_" + strings.Repeat("é", 1<<20) + ":1",
	} {
		kv, ok := recordedMeta(&Settings{MaxSplitSize: -1, PYTORCH_CUDA_ALLOC_CONF: conf})
		if !ok || kv.Key != RecordedSettingsKey || len(kv.Value) > 4*maxSettingText || !utf8.ValidString(kv.Value) {
			t.Errorf("conf of %d B: meta %s of %d B (valid UTF-8 %v)", len(conf), kv.Key, len(kv.Value), utf8.ValidString(kv.Value))
		}
		if n := ReplayNote(traces.Meta{kv}, torchlike.DefaultConfig()); len(n) > 5*maxSettingText {
			t.Errorf("conf of %d B: a note of %d B", len(conf), len(n))
		}
	}
}
