package main

import (
	"math"

	"golang.org/x/sys/unix"
)

// cloexecInherited marks every descriptor above 2 close-on-exec, so that
// what the process inherited from its launcher (a pipe's write end, a
// socket, a file of the service manager) reaches no command it runs, on
// the host or in the sandbox: children get 0, 1 and 2 and what they are
// handed explicitly. close_range(2) does it in one call (Linux 5.11);
// older kernels get each descriptor /proc/self/fd lists.
func cloexecInherited() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	return cloexecListed("/proc/self/fd")
}
