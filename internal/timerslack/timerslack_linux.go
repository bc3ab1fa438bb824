package timerslack

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
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
	runtime.LockOSThread() // the prctl and the exec on one thread
	defer runtime.UnlockOSThread()
	had, err := Current()
	if err != nil {
		return err
	}
	if had >= want {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0); err != nil {
		return fmt.Errorf("timerslack: PR_SET_TIMERSLACK: %w", err)
	}
	// /proc/self/exe is the running image even when its file was replaced
	// or removed since (an upgrade in place).
	err = unix.Exec("/proc/self/exe", os.Args, append(os.Environ(), envDone+"=1"))
	// Still here: the exec failed. This thread goes back to the others'
	// slack.
	unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(had), 0, 0, 0)
	return fmt.Errorf("timerslack: exec %s again: %w", os.Args[0], err)
}
