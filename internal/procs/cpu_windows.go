//go:build windows

package procs

import "syscall"

const cpuSupported = true

// processCPU returns the CPU seconds the process used, user and kernel.
func processCPU() (float64, bool) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, false
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, false
	}
	// Filetimes count 100 ns ticks.
	ticks := func(t syscall.Filetime) float64 { return float64(uint64(t.HighDateTime)<<32 | uint64(t.LowDateTime)) }
	return (ticks(kernel) + ticks(user)) / 1e7, true
}
