//go:build windows

package statedir

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive lock without waiting.
func tryLock(f *os.File) (bool, error) {
	return lockEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY)
}

// tryLockShared takes a shared lock without waiting.
func tryLockShared(f *os.File) (bool, error) {
	return lockEx(f, windows.LOCKFILE_FAIL_IMMEDIATELY)
}

// lockRange returns the locked region: one byte far past any record, so that
// the record itself stays readable (Windows locks are mandatory).
func lockRange() *windows.Overlapped { return &windows.Overlapped{OffsetHigh: 1} }

func lockEx(f *os.File, flags uint32) (bool, error) {
	ol := lockRange()
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return false, err
}

func unlock(f *os.File) error {
	ol := lockRange()
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}
