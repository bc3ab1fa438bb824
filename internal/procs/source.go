package procs

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatencies is the runtime's histogram of how long goroutines waited
// runnable before they ran.
const schedLatencies = "/sched/latencies:seconds"

// runtimeSource reads the scheduler's latencies from runtime/metrics and
// the process's CPU time from the operating system.
type runtimeSource struct {
	s   []metrics.Sample
	now func() time.Time
	cpu func() (float64, bool)
}

func newRuntimeSource() *runtimeSource {
	return &runtimeSource{s: []metrics.Sample{{Name: schedLatencies}}, now: time.Now, cpu: processCPU}
}

func (r *runtimeSource) read() (reading, bool) {
	metrics.Read(r.s)
	if r.s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return reading{}, false // not in this runtime
	}
	cpu, ok := r.cpu()
	if !ok {
		return reading{}, false
	}
	return reading{wait: histogramSum(r.s[0].Value.Float64Histogram()), cpu: cpu, at: r.now()}, true
}

// histogramSum estimates the sum of the values a histogram counted: each
// bucket's count times its middle. An open-ended bucket counts at its
// finite edge.
func histogramSum(h *metrics.Float64Histogram) float64 {
	var sum float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		var v float64
		switch {
		case math.IsInf(lo, -1) && math.IsInf(hi, 1):
			continue
		case math.IsInf(lo, -1):
			v = hi
		case math.IsInf(hi, 1):
			v = lo
		default:
			v = (lo + hi) / 2
		}
		sum += float64(n) * v
	}
	return sum
}
