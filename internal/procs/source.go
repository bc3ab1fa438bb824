package procs

import "time"

// processSource reads how long tasks waited to start from wait, and the
// process's CPU time from the operating system.
type processSource struct {
	wait func() time.Duration
	now  func() time.Time
	cpu  func() (float64, bool)
}

func (r *processSource) read() (reading, bool) {
	cpu, ok := r.cpu()
	if !ok {
		return reading{}, false
	}
	return reading{wait: r.wait().Seconds(), cpu: cpu, at: r.now()}, true
}
