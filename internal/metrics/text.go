package metrics

import (
	"bufio"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file is the Prometheus text exposition format (version 0.0.4) for
// the few metric shapes Switchboard has: counters and histograms with
// labels, gauges and counters read at scrape time, and the Go runtime and
// process figures. The client library it replaces brought protobuf, a
// registry and ~30 runtime series, and initialised them in every process
// (0.8 ms and 0.3 MB before main, ~2 MB of binary).

// metricType is a family's TYPE.
type metricType string

const (
	typeCounter   metricType = "counter"
	typeGauge     metricType = "gauge"
	typeHistogram metricType = "histogram"
)

// sample is one line of a family: its label values (in the family's label
// order) and value.
type sample struct {
	values []string
	v      float64
}

// family is one metric name on a scrape: HELP, TYPE and its samples (a
// histogram's come from its vec).
type family interface {
	metricName() string
	write(w *bufio.Writer)
}

func (v *vec) metricName() string       { return v.name }
func (f funcFamily) metricName() string { return f.name }

// vec is a counter or a histogram with labels. Safe for concurrent use.
type vec struct {
	name, help string
	typ        metricType
	labels     []string
	buckets    []float64 // histograms only: upper bounds, ascending

	mu     sync.RWMutex
	series map[string]*series // by label values joined with labelSep
}

// labelSep joins label values into a series key; it cannot occur in
// valid UTF-8.
const labelSep = "\xff"

// series is one label combination of a vec.
type series struct {
	values []string
	mu     sync.Mutex
	v      float64  // a counter's value, a histogram's sum
	counts []uint64 // a histogram's per-bucket counts (not cumulative)
	n      uint64   // a histogram's count
}

func newVec(name, help string, typ metricType, buckets []float64, labels ...string) *vec {
	return &vec{name: name, help: help, typ: typ, labels: labels, buckets: buckets, series: make(map[string]*series)}
}

// with returns the series of values (one per label), creating it at zero.
func (v *vec) with(values ...string) *series {
	key := strings.Join(values, labelSep)
	v.mu.RLock()
	s := v.series[key]
	v.mu.RUnlock()
	if s != nil {
		return s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s = v.series[key]; s == nil {
		s = &series{values: slices.Clone(values)}
		if v.typ == typeHistogram {
			s.counts = make([]uint64, len(v.buckets))
		}
		v.series[key] = s
	}
	return s
}

// add adds d to a counter.
func (s *series) add(d float64) {
	s.mu.Lock()
	s.v += d
	s.mu.Unlock()
}

// observe records x in a histogram with bounds buckets.
func (s *series) observe(buckets []float64, x float64) {
	i, _ := slices.BinarySearch(buckets, x) // the first bound ≥ x
	s.mu.Lock()
	if i < len(s.counts) {
		s.counts[i]++
	}
	s.n++
	s.v += x
	s.mu.Unlock()
}

// value is a counter's value.
func (s *series) value() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

func (v *vec) write(w *bufio.Writer) {
	writeHeader(w, v.name, v.help, v.typ)
	v.mu.RLock()
	all := make([]*series, 0, len(v.series))
	for _, s := range v.series {
		all = append(all, s)
	}
	v.mu.RUnlock()
	slices.SortFunc(all, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	for _, s := range all {
		s.mu.Lock()
		val, n, counts := s.v, s.n, slices.Clone(s.counts)
		s.mu.Unlock()
		if v.typ != typeHistogram {
			writeSample(w, v.name, v.labels, s.values, "", "", val)
			continue
		}
		cum := uint64(0)
		for i, bound := range v.buckets {
			cum += counts[i]
			writeSample(w, v.name+"_bucket", v.labels, s.values, "le", formatFloat(bound), float64(cum))
		}
		writeSample(w, v.name+"_bucket", v.labels, s.values, "le", "+Inf", float64(n))
		writeSample(w, v.name+"_sum", v.labels, s.values, "", "", val)
		writeSample(w, v.name+"_count", v.labels, s.values, "", "", float64(n))
	}
}

// funcFamily is a family read at scrape time; read returning false leaves
// the family out of that scrape (its source failed).
type funcFamily struct {
	name, help string
	typ        metricType
	labels     []string
	read       func() ([]sample, bool)
}

func (f funcFamily) write(w *bufio.Writer) {
	samples, ok := f.read()
	if !ok {
		return
	}
	slices.SortFunc(samples, func(a, b sample) int { return slices.Compare(a.values, b.values) })
	writeHeader(w, f.name, f.help, f.typ)
	for _, s := range samples {
		writeSample(w, f.name, f.labels, s.values, "", "", s.v)
	}
}

// single is a family of one unlabelled sample read at scrape time.
func single(name, help string, typ metricType, read func() float64) funcFamily {
	return funcFamily{name: name, help: help, typ: typ, read: func() ([]sample, bool) {
		return []sample{{v: read()}}, true
	}}
}

func writeHeader(w *bufio.Writer, name, help string, typ metricType) {
	w.WriteString("# HELP " + name + " ")
	w.WriteString(escape(help, false))
	w.WriteString("\n# TYPE " + name + " " + string(typ) + "\n")
}

// writeSample writes name{labels…,extra="extraValue"} v, the labels
// sorted by name as Prometheus writes them.
func writeSample(w *bufio.Writer, name string, labels, values []string, extra, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		order := make([]int, len(labels))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
		w.WriteByte('{')
		for n, i := range order {
			if n > 0 {
				w.WriteByte(',')
			}
			w.WriteString(labels[i] + `="`)
			w.WriteString(escape(values[i], true))
			w.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extra + `="` + extraValue + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// escape escapes backslashes and newlines in a HELP text, and double
// quotes too in a label value.
func escape(s string, quotes bool) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '"' && quotes:
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// formatFloat writes v as the Prometheus text format does.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// runtimeFamilies are the Go runtime's and the process's figures.
func runtimeFamilies() []family {
	// runtime.MemStats, not runtime/metrics: the figures are the same
	// (HeapAlloc is /memory/classes/heap/objects:bytes, Sys
	// /memory/classes/total:bytes, NumGC /gc/cycles/total:gc-cycles), and
	// runtime/metrics builds its table of every metric in each process's
	// init.
	rt := func(name, help string, typ metricType, read func(*runtime.MemStats) uint64) funcFamily {
		return single(name, help, typ, func() float64 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return float64(read(&ms))
		})
	}
	fams := []family{
		single("go_goroutines", "Number of goroutines that currently exist.", typeGauge,
			func() float64 { return float64(runtime.NumGoroutine()) }),
		single("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously.", typeGauge,
			func() float64 { return float64(runtime.GOMAXPROCS(0)) }),
		rt("go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects.", typeGauge, func(ms *runtime.MemStats) uint64 { return ms.HeapAlloc }),
		rt("go_memstats_sys_bytes", "Bytes of memory obtained from the OS.", typeGauge, func(ms *runtime.MemStats) uint64 { return ms.Sys }),
		rt("go_gc_cycles_total", "Completed GC cycles.", typeCounter, func(ms *runtime.MemStats) uint64 { return uint64(ms.NumGC) }),
		rt("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", typeGauge, func(ms *runtime.MemStats) uint64 { return ms.NextGC }),
		funcFamily{name: "go_info", help: "Information about the Go environment.", typ: typeGauge, labels: []string{"version"},
			read: func() ([]sample, bool) { return []sample{{values: []string{runtime.Version()}, v: 1}}, true }},
	}
	if _, ok := cpuSeconds(); ok {
		fams = append(fams, single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", typeCounter,
			func() float64 {
				s, _ := cpuSeconds()
				return s
			}))
	}
	if _, err := os.Stat("/proc/self/statm"); err == nil {
		fams = append(fams,
			single("process_resident_memory_bytes", "Resident memory size in bytes.", typeGauge, func() float64 {
				return statm(1)
			}),
			single("process_virtual_memory_bytes", "Virtual memory size in bytes.", typeGauge, func() float64 {
				return statm(0)
			}),
			single("process_open_fds", "Number of open file descriptors.", typeGauge, func() float64 {
				fds, err := os.ReadDir("/proc/self/fd")
				if err != nil {
					return math.NaN()
				}
				return float64(len(fds))
			}),
		)
	}
	return fams
}

// statm is field i of /proc/self/statm (in pages) in bytes.
func statm(i int) float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if i >= len(f) {
		return math.NaN()
	}
	n, err := strconv.ParseFloat(f[i], 64)
	if err != nil {
		return math.NaN()
	}
	return n * float64(os.Getpagesize())
}
