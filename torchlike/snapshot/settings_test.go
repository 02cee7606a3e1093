package snapshot

import (
	"bytes"
	"testing"
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
