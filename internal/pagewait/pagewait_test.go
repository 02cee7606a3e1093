package pagewait

import (
	"errors"
	"testing"
)

// TestStale: only the protocol's error for a context that is gone is
// retried; a timeout or any other error is returned at once.
func TestStale(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("Cannot find context with specified id (-32000)"), true},
		{errors.New("waiting for function failed: Cannot find context with specified id"), true},
		{errors.New("waiting for function failed: timeout"), false},
		{errors.New("Execution context was destroyed."), false},
		{nil, false},
	} {
		if got := Stale(c.err); got != c.want {
			t.Errorf("Stale(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
