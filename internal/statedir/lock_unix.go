//go:build unix

package statedir

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive lock without waiting; false means another
// open file description holds it.
func tryLock(f *os.File) (bool, error) { return flock(f, unix.LOCK_EX) }

// tryLockShared takes a shared lock without waiting; false means someone
// holds it exclusively.
func tryLockShared(f *os.File) (bool, error) { return flock(f, unix.LOCK_SH) }

func flock(f *os.File, how int) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		default:
			return false, err
		}
	}
}

func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
