//go:build unix

package metrics

import (
	"syscall"
	"time"
)

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), true
}
