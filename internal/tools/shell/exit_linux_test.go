package shell

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// awaitExit waits until process pid has exited (it need not be a child of
// the test): a pidfd becomes readable when its process ends.
func awaitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EINTR) {
			t.Fatalf("poll pidfd %d: %v", pid, err)
		}
	}
}
