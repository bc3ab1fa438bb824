package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestErrInterruptedAsBefore: errInterrupted (a static value since issue
// 37, no init-time work) reads and matches as the fmt.Errorf wrapping of
// errAborted it was.
func TestErrInterruptedAsBefore(t *testing.T) {
	old := fmt.Errorf("interrupted by a newer message: %w", errAborted)
	if got, want := errInterrupted.Error(), old.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(errInterrupted, errAborted) {
		t.Error("errInterrupted does not wrap errAborted")
	}
	if errors.Is(errAborted, errInterrupted) || errors.Is(old, errInterrupted) {
		t.Error("errInterrupted matches a plain abort")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("lane: %w", errInterrupted))
	if cause := context.Cause(ctx); !errors.Is(cause, errInterrupted) || !errors.Is(cause, errAborted) {
		t.Errorf("cause %v: not an interruption and an abort", cause)
	}
}
