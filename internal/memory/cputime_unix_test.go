//go:build unix

package memory

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used, for
// benchmarks on a shared machine where wall time mostly measures the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
