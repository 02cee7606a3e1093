package torchlike

import (
	"testing"

	"membench/strategies"
)

// TestRecordedSpec: the spec RecordedSpec writes for a configuration's
// recorded settings parses back to the same settings (a replay under it
// is the recorded one), names no knob left at its default, and is "torch"
// for the defaults; a max_split_size no whole number of MB gives no spec.
func TestRecordedSpec(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"torch", "torch"},
		{"torch:expandable_segments=true", "torch:expandable_segments:True"},
		{"torch:max_split_size_mb=128", "torch:max_split_size_mb:128"},
		{"torch:garbage_collection_threshold=0.6,per_process_memory_fraction=0.5", "torch:garbage_collection_threshold:0.6,per_process_memory_fraction:0.5"},
		{"torch:roundup_power2_divisions=4", ""},
		{"torch:roundup_power2_divisions:[256:1,>:4],max_non_split_rounding_mb:64,large_segment_size_mb:40", ""},
		{"torch:per_process_memory_fraction=0", "torch:per_process_memory_fraction:0"},
		// Settings a snapshot does not record are not in the spec.
		{"torch:pinned_num_register_threads=4", "torch"},
	} {
		sp, err := strategies.ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(sp)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := cfg.RecordedSpec()
		if !ok || c.want != "" && got != c.want {
			t.Errorf("%s: RecordedSpec %q, %v; want %q", c.spec, got, ok, c.want)
		}
		back, err := strategies.ParseSpec(got)
		if err != nil {
			t.Fatalf("%s: %q does not parse: %v", c.spec, got, err)
		}
		again, err := ParseConfig(back)
		if err != nil {
			t.Fatalf("%s: %q: %v", c.spec, got, err)
		}
		if !again.SameRecordedSettings(cfg) || !cfg.SameRecordedSettings(again) {
			t.Errorf("%s: %q replays other settings: %+v against %+v", c.spec, got, again, cfg)
		}
		if c.spec != "torch" && c.want != "torch" && DefaultConfig().SameRecordedSettings(cfg) {
			t.Errorf("%s: the same recorded settings as the defaults", c.spec)
		}
	}
	odd := DefaultConfig()
	odd.MaxSplitSize = 100<<20 + 512
	if s, ok := odd.RecordedSpec(); ok {
		t.Errorf("max_split_size of %d B: spec %q, want none", odd.MaxSplitSize, s)
	}
	// Each recorded setting on its own makes a difference.
	for _, k := range []string{"max_split_size_mb=64", "max_non_split_rounding_mb=64", "large_segment_size_mb=40",
		"garbage_collection_threshold=0.5", "roundup_power2_divisions=2", "expandable_segments=true", "per_process_memory_fraction=0.9"} {
		sp, _ := strategies.ParseSpec("torch:" + k)
		cfg, err := ParseConfig(sp)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SameRecordedSettings(DefaultConfig()) {
			t.Errorf("%s: same recorded settings as the defaults", k)
		}
	}
}
