package validate

import (
	"strings"
	"testing"

	"membench/torchlike/snapshot"
)

// TestNothingToValidate: a snapshot with nothing the model can be checked
// against is an error, as `run` makes it one, not a silent agreement.
func TestNothingToValidate(t *testing.T) {
	if _, err := Validate(&snapshot.Snapshot{}, Options{}); err == nil || !strings.Contains(err.Error(), "nothing to validate") {
		t.Errorf("empty snapshot: %v", err)
	}
	unknown := &snapshot.Snapshot{DeviceTraces: [][]snapshot.TraceEntry{{{Action: "teleport", Addr: 1 << 20, Size: 512}}}}
	if _, err := Validate(unknown, Options{}); err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("only unknown actions: %v", err)
	}
}
