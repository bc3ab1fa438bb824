package timerslack

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboardhq/switchboard/internal/timerslack/early"
)

// Current returns the calling thread's timer slack. Every thread of the
// process has the one it started with unless something set its own.
func Current() (time.Duration, error) {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("timerslack: PR_GET_TIMERSLACK: %w", err)
	}
	return time.Duration(ns), nil
}

func reexec(want time.Duration) error {
	if err := early.Exec(os.Args, uint64(want)); err != nil {
		return fmt.Errorf("timerslack: %w", err)
	}
	return nil
}
