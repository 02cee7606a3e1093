package snapshot

import (
	"fmt"
	"unicode/utf8"

	"membench/strategies"
	"membench/torchlike"
	"membench/traces"
)

// Config is the allocator configuration the settings record: the
// structured fields, and from the recorded PYTORCH_CUDA_ALLOC_CONF the
// knobs they do not carry (max_non_split_rounding_mb,
// large_segment_size_mb, per_process_memory_fraction); with no settings
// (s nil), PyTorch's defaults. desc says what was read, for a report.
// validate replays a snapshot under it, and a replay under other settings
// says so (RecordedSpec).
func (s *Settings) Config() (torchlike.Config, string) {
	cfg, confErr := s.config()
	return cfg, s.describe(confErr)
}

// describe is Config's description, given config's confErr.
func (s *Settings) describe(confErr error) string {
	if s == nil {
		return "no allocator_settings recorded: PyTorch defaults"
	}
	desc := fmt.Sprintf("max_split_size=%d garbage_collection_threshold=%g expandable_segments=%t roundup_power2_divisions=%v",
		s.MaxSplitSize, s.GarbageCollectionThreshold, s.ExpandableSegments, s.RoundupPower2Divisions)
	if s.PYTORCH_CUDA_ALLOC_CONF != "" {
		// Each cut as other settings text is (maxSettingText): the
		// description is the recorded-settings meta, which every
		// replay's note repeats, and a hostile string of megabytes
		// (whose parse error quotes it) made note lines of megabytes.
		desc += fmt.Sprintf(" (PYTORCH_CUDA_ALLOC_CONF=%q)", cutText(s.PYTORCH_CUDA_ALLOC_CONF))
		if confErr != nil {
			desc += fmt.Sprintf(" [conf string not fully understood: %s]", cutText(confErr.Error()))
		}
	}
	return desc
}

// cutText is t cut to maxSettingText bytes, at a rune boundary, with
// "..." where it was cut.
func cutText(t string) string {
	if len(t) <= maxSettingText {
		return t
	}
	n := maxSettingText
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n] + "..."
}

// config is Config without its description, for the import, which reads
// it for every snapshot (a description costs allocations it has no use
// for); confErr is why the recorded PYTORCH_CUDA_ALLOC_CONF was not read
// whole.
func (s *Settings) config() (cfg torchlike.Config, confErr error) {
	cfg = torchlike.DefaultConfig()
	if s == nil {
		return cfg, nil
	}
	if s.MaxSplitSize > 0 {
		cfg.MaxSplitSize = s.MaxSplitSize
	}
	cfg.GCThreshold = s.GarbageCollectionThreshold
	cfg.ExpandableSegments = s.ExpandableSegments
	cfg.Divisions = s.RoundupPower2Divisions
	if s.PYTORCH_CUDA_ALLOC_CONF != "" {
		// Knobs the structured fields do not carry are only in the
		// recorded string: take them from there.
		// A string that does not even split into knobs is as little
		// understood as one with a knob ParseConfig refuses.
		if sp, err := strategies.ParseSpec("torch:" + s.PYTORCH_CUDA_ALLOC_CONF); err != nil {
			confErr = err
		} else if conf, err := torchlike.ParseConfig(sp); err == nil {
			cfg.MaxNonSplitRounding = conf.MaxNonSplitRounding
			cfg.LargeSegmentSize = conf.LargeSegmentSize
			if conf.FractionSet {
				cfg.MemoryFraction, cfg.FractionSet = conf.MemoryFraction, true
			}
		} else {
			confErr = err
		}
	}
	return cfg, confErr
}

// RecordedStrategyKey is the meta key of a snapshot recorded with settings
// other than PyTorch's defaults: the torch strategy spec that replays them
// (torchlike.Config.RecordedSpec), so that a replay under other settings
// can say so and name it. A snapshot whose settings no spec gives exactly
// has RecordedSettingsKey instead, with what they are.
const (
	RecordedStrategyKey = "recorded-strategy"
	RecordedSettingsKey = "recorded-settings"
)

// recordedMeta is the meta entry naming the recorded settings, and false
// for PyTorch's defaults. A recorded PYTORCH_CUDA_ALLOC_CONF that was not
// read whole may hold a knob the structured fields do not carry
// (max_non_split_rounding_mb beside a key ParseConfig refuses is lost
// with it), so no spec is offered as replaying it as recorded.
func recordedMeta(s *Settings) (traces.KV, bool) {
	cfg, confErr := s.config()
	spec, ok := cfg.RecordedSpec()
	switch {
	case !ok || confErr != nil:
		return traces.KV{Key: RecordedSettingsKey, Value: s.describe(confErr)}, true
	case spec != "torch":
		return traces.KV{Key: RecordedStrategyKey, Value: spec}, true
	}
	return traces.KV{}, false
}

// ReplayNote is what a replay of a snapshot under cfg says about the
// settings the snapshot was recorded with (its meta, recordedMeta): empty
// when they agree, or when the snapshot was taken under PyTorch's defaults
// (replaying it under other settings is the what-if a user asks by naming
// them); otherwise which spec replays it as recorded, so that a default
// `torch` on a snapshot taken with, say, expandable segments is not read
// as the recording's own allocator.
func ReplayNote(m traces.Meta, cfg torchlike.Config) string {
	if desc := m.Get(RecordedSettingsKey); desc != "" {
		return "recorded with allocator settings no strategy spec gives exactly (" + desc + "); this replay runs its own"
	}
	rec := m.Get(RecordedStrategyKey)
	if rec == "" {
		return ""
	}
	sp, err := strategies.ParseSpec(rec)
	if err != nil {
		return ""
	}
	recCfg, err := torchlike.ParseConfig(sp)
	if err != nil || recCfg.SameRecordedSettings(cfg) {
		return ""
	}
	return "recorded with other allocator settings than this replay's: --strategy '" + rec + "' replays it as recorded"
}

// The allocator_settings keys of a membench export of another model than
// PyTorch's (harness.ExportMemoryViz writes them as ForeignSettings).
const (
	ForeignStrategyKey = "membench_strategy"
	ForeignDeviceKey   = "membench_device"
	ForeignModelKey    = "membench_model"
)

// Foreign says, when the settings are those of a membench export of
// another model than PyTorch's (a BFC or the TPU runtime), which model,
// strategy and device made it. Such a file holds that model's decisions,
// not a PyTorch process's, so nothing recorded in it can be held against
// the torch model, and its settings are no PyTorch configuration.
func (s *Settings) Foreign() (string, bool) {
	if s == nil {
		return "", false
	}
	model, ok := s.Raw[ForeignModelKey]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("membench's export of the %s model's replay (strategy %s on %s)",
		cutText(model), cutText(s.Raw[ForeignStrategyKey]), cutText(s.Raw[ForeignDeviceKey])), true
}
