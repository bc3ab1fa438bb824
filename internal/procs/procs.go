// Package procs adapts the Go scheduler's parallelism (GOMAXPROCS) to the
// gateway's load: one processor while one does, the runtime's default as
// soon as work queues for a processor.
//
// A conversation's turn passes between several goroutines: the
// connection's reader, a request worker, the run, the connection's writer.
// With more than one processor, each hand-off to a goroutine wakes an idle
// OS thread to run it, and that thread spins looking for work before it
// sleeps again. On a 2-core machine that was a fifth of a warm chat turn's
// CPU (bench/gateway -clients 1: 0.60 ms a turn with two processors, 0.47
// with one, and a lower latency). Under load one processor is not enough:
// runnable goroutines wait for it.
//
// A Controller samples, every Interval, how long the gateway's tasks (its
// requests and runs, handed to workers: workers.Waited) waited to start,
// which they do as soon as a processor is free, and how much CPU the
// process used. It starts on one processor. There it raises to the default
// at the first sample in which tasks waited; on the default it lowers to
// one once the load stayed calm and under one core for a while (see
// Policy). The runtime's default follows the container's CPU limit; while
// lowered it is not followed until the next raise.
//
// The wait is the workers' and not the runtime's own scheduling latencies
// (runtime/metrics): that package's initialiser builds its table of every
// metric in each process's start, CLI commands included.
package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// parallelism is the runtime's default GOMAXPROCS as a Controller last
// saw it (0 before any Controller ran).
var parallelism atomic.Int32

// Parallelism is how many goroutines CPU-bound work should spread over:
// the runtime's default GOMAXPROCS, also while a Controller has lowered
// the scheduler to one processor (the goroutines then queue for it, and
// the Controller raises it again at its next sample).
func Parallelism() int {
	if n := parallelism.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// Sample is what the process did over one interval.
type Sample struct {
	// Waiting is the seconds that tasks waited to start per second of
	// the interval: the mean number of tasks waiting for a processor.
	Waiting float64
	// Cores is the CPU time the process used per second of the interval
	// (user and system, every thread).
	Cores float64
}

// Policy says when to move between one processor and the default. The
// zero value is not useful; DefaultPolicy is.
type Policy struct {
	// Raise is the Waiting at or above which one processor is not enough:
	// the next sample on one processor with as much raises to the default.
	Raise float64
	// Calm is the Waiting under which the default's tasks are calm.
	Calm float64
	// MaxCores is the load, in cores, under which one processor would do.
	MaxCores float64
	// CalmSamples is how many calm samples in a row, each under MaxCores,
	// lower the default to one processor.
	CalmSamples int
	// MaxCalmSamples caps CalmSamples' growth: a raise soon after a lower
	// (within RecentSamples) doubles the calm samples the next lower needs,
	// so that a load at the edge does not flap.
	MaxCalmSamples int
	// RecentSamples is how many samples after a lower count as soon; once
	// one processor has lasted this long, the next lower needs
	// CalmSamples again.
	RecentSamples int
}

// DefaultPolicy is calibrated on bench/gateway (2 cores, 100 ms samples):
// on one processor, one client's warm turns have 0.06–0.08 tasks waiting
// and use 0.7–0.9 cores, and 100 clients' first sample 1.8–13; on the
// default, 100 clients have 2–13 waiting.
var DefaultPolicy = Policy{Raise: 0.5, Calm: 0.25, MaxCores: 1.1, CalmSamples: 5, MaxCalmSamples: 600, RecentSamples: 300}

// State is where a Policy stands between samples.
type State struct {
	// Low is true while the process runs on one processor.
	Low bool
	// calm counts the calm samples in a row on the default.
	calm int
	// need is how many calm samples the next lower needs (0 means
	// CalmSamples).
	need int
	// since counts the samples since the last lower.
	since int
}

// Next returns the state after sample x. When the result's Low differs
// from s's, the caller moves GOMAXPROCS.
func (p Policy) Next(s State, x Sample) State {
	if s.need == 0 {
		s.need = p.CalmSamples
	}
	if s.Low {
		s.since++
		if x.Waiting >= p.Raise {
			if s.since <= p.RecentSamples {
				s.need = min(2*s.need, max(p.MaxCalmSamples, p.CalmSamples))
			}
			s.Low, s.calm = false, 0
			return s
		}
		if s.since > p.RecentSamples {
			s.need = p.CalmSamples
		}
		return s
	}
	if x.Waiting < p.Calm && x.Cores < p.MaxCores {
		s.calm++
	} else {
		s.calm = 0
	}
	if s.calm >= s.need {
		s.Low, s.calm, s.since = true, 0, 0
	}
	return s
}

// Interval is how often a Controller samples; IdleInterval how often
// while the process is on one processor and idle (under IdleCores), so
// that an idle gateway does not wake ten times a second for it.
const (
	Interval     = 100 * time.Millisecond
	IdleInterval = time.Second
	IdleCores    = 0.02
)

// reading is a source's cumulative figures at one instant.
type reading struct {
	wait float64   // seconds tasks waited to start
	cpu  float64   // CPU seconds the process used
	at   time.Time // when
}

// source reads the cumulative figures.
type source interface {
	read() (reading, bool)
}

// Controller moves GOMAXPROCS between one and the runtime's default by
// Policy, from a goroutine that Run owns.
type Controller struct {
	policy Policy
	src    source
	set    func(low bool)
	tick   <-chan time.Time // nil: a ticker of Interval
	log    *slog.Logger
	// moved, when set (tests), is sent each state a sample left.
	moved chan<- State
}

// Enabled reports whether a Controller may move GOMAXPROCS in this
// process: not when GOMAXPROCS is set in the environment (the operator
// chose), not when the default is one processor, and not where the
// process's CPU time cannot be read.
func Enabled() bool {
	return os.Getenv("GOMAXPROCS") == "" && Parallelism() > 1 && cpuSupported
}

// LowerAtStart runs the scheduler on one processor from now on, when
// Enabled, as a Controller would once it starts. The binary calls it first
// thing in serve: lowering then, before the start has allocated on every
// processor, leaves about 0.2 MiB less memory resident than lowering once
// ready (each processor's allocation caches), and the start, which is
// sequential, is as fast.
func LowerAtStart() {
	if Enabled() {
		setProcs(true)
	}
}

// New returns a Controller of this process's scheduler. waited reports how
// long the process's tasks have waited to start, in all (workers.Waited);
// log (may be nil) gets a debug line at each move.
func New(waited func() time.Duration, log *slog.Logger) *Controller {
	return &Controller{policy: DefaultPolicy, src: &processSource{wait: waited, now: time.Now, cpu: processCPU},
		set: setProcs, log: log}
}

// setProcs runs the scheduler on one processor, or on the runtime's
// default (which then follows the container's CPU limit again).
func setProcs(low bool) {
	if low {
		if prev := runtime.GOMAXPROCS(1); prev > 1 {
			parallelism.Store(int32(prev))
		}
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	parallelism.Store(0)
}

// Run samples until ctx ends, then leaves the runtime's default in place.
func (c *Controller) Run(ctx context.Context) {
	tick := c.tick
	var ticker *time.Ticker // nil when the test ticks
	if tick == nil {
		ticker = time.NewTicker(Interval)
		defer ticker.Stop()
		tick = ticker.C
	}
	// The daemon starts this once it is ready, with nothing to do yet:
	// on one processor, which the first sample with tasks waiting
	// leaves.
	var (
		st    = State{Low: true}
		every = Interval // the ticker's period
	)
	c.set(true)
	c.logMove(Sample{})
	defer func() {
		if st.Low {
			c.set(false)
		}
	}()
	prev, ok := c.src.read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		cur, cok := c.src.read()
		if !cok || !ok {
			prev, ok = cur, cok
			continue
		}
		x, valid := sampleOf(prev, cur)
		prev = cur
		if !valid {
			continue
		}
		next := c.policy.Next(st, x)
		if next.Low != st.Low {
			c.set(next.Low)
			c.logMove(x)
		}
		st = next
		if d := intervalAfter(st, x); ticker != nil && d != every {
			every = d
			ticker.Reset(every)
		}
		if c.moved != nil {
			c.moved <- st
		}
	}
}

// logMove logs the processors a move left, and the sample that moved them.
func (c *Controller) logMove(x Sample) {
	if c.log != nil {
		c.log.Debug("scheduler processors moved", "processors", runtime.GOMAXPROCS(0),
			"waiting", x.Waiting, "cores", x.Cores)
	}
}

// intervalAfter is how long to wait for the next sample once x left st:
// IdleInterval on one processor with next to no work, else Interval.
func intervalAfter(st State, x Sample) time.Duration {
	if st.Low && x.Cores < IdleCores {
		return IdleInterval
	}
	return Interval
}

// sampleOf is the Sample between two readings; false when no time passed
// between them or a figure went backwards.
func sampleOf(a, b reading) (Sample, bool) {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 || b.wait < a.wait || b.cpu < a.cpu {
		return Sample{}, false
	}
	return Sample{Waiting: (b.wait - a.wait) / dt, Cores: (b.cpu - a.cpu) / dt}, true
}
