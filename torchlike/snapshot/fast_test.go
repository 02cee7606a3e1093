package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"membench/internal/pickle"
	"membench/internal/sharedtraces"
)

// The machine's fast path for trace entries and blocks (pickle's
// fast.go) must be invisible: these tests decode every input twice, with
// and without it (pickle.Limits.NoFastPath), and want the same Snapshot
// or the same error, offset and message included.

// sharedSnapshots are the real snapshots of the shared collection.
var sharedSnapshots = []string{
	"opt125m-zo-finetune.pickle",
	"cs336-gpt2medium-ctx256-train-warm.pickle",
	"cs336-gpt2medium-ctx128-infer-warm.pickle",
	"cs336-lm-peak-probe.pickle",
	"liger-cross-entropy.pickle",
	"torch-compile-cross-entropy.pickle",
}

// slowLimits are lim without the fast path.
func slowLimits(lim Limits) Limits {
	lim.Pickle.NoFastPath = true
	return lim
}

// sameDecode decodes data with and without the fast path and fails t
// when the results differ. It reports the error (nil for a snapshot).
func sameDecode(t testing.TB, what string, data []byte, lim Limits) error {
	t.Helper()
	fast, ferr := DecodePickleLimits(bytes.NewReader(data), lim)
	slow, serr := DecodePickleLimits(bytes.NewReader(data), slowLimits(lim))
	switch {
	case (ferr == nil) != (serr == nil):
		t.Fatalf("%s: fast path: %v; general path: %v", what, ferr, serr)
	case ferr != nil:
		if ferr.Error() != serr.Error() {
			t.Fatalf("%s: fast path: %v\ngeneral path: %v", what, ferr, serr)
		}
		if errors.Is(ferr, ErrLimit) != errors.Is(serr, ErrLimit) {
			t.Fatalf("%s: ErrLimit differs: %v", what, ferr)
		}
		var fe, se *pickle.Error
		if errors.As(ferr, &fe) != errors.As(serr, &se) || (fe != nil && (fe.Offset != se.Offset || fe.Op != se.Op)) {
			t.Fatalf("%s: error positions differ: %v; %v", what, ferr, serr)
		}
	case !reflect.DeepEqual(fast, slow):
		t.Fatalf("%s: the snapshots differ:\n%s", what, firstDiff(fast, slow))
	}
	return ferr
}

// firstDiff describes where two snapshots differ first.
func firstDiff(a, b *Snapshot) string {
	if len(a.Segments) != len(b.Segments) {
		return fmt.Sprintf("%d segments, want %d", len(a.Segments), len(b.Segments))
	}
	for i := range a.Segments {
		if !reflect.DeepEqual(a.Segments[i], b.Segments[i]) {
			return fmt.Sprintf("segment %d: %+v\nwant %+v", i, a.Segments[i], b.Segments[i])
		}
	}
	if len(a.DeviceTraces) != len(b.DeviceTraces) {
		return fmt.Sprintf("%d traces, want %d", len(a.DeviceTraces), len(b.DeviceTraces))
	}
	for d := range a.DeviceTraces {
		ta, tb := a.DeviceTraces[d], b.DeviceTraces[d]
		if len(ta) != len(tb) {
			return fmt.Sprintf("trace %d: %d entries, want %d", d, len(ta), len(tb))
		}
		for i := range ta {
			if ta[i] != tb[i] {
				return fmt.Sprintf("trace %d entry %d: %+v\nwant %+v", d, i, ta[i], tb[i])
			}
		}
	}
	return fmt.Sprintf("settings: %+v\nwant %+v", a.Settings, b.Settings)
}

func TestFastPathSharedSnapshots(t *testing.T) {
	if sharedtraces.Dir() == "" {
		t.Skip("../shared/traces is absent: the real snapshots are not compared (generated ones are, in TestFastPathGenerated)")
	}
	for _, name := range sharedSnapshots {
		t.Run(strings.TrimSuffix(name, ".pickle"), func(t *testing.T) {
			data, err := os.ReadFile(realSnapPath(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := sameDecode(t, name, data, DefaultLimits); err != nil {
				t.Fatal(err)
			}
		})
	}
}
