//go:build !unix && !windows

package procs

const cpuSupported = false

func processCPU() (float64, bool) { return 0, false }
