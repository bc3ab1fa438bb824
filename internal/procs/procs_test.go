package procs

import (
	"context"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

var testPolicy = Policy{Raise: 0.5, Calm: 0.25, MaxCores: 1.1, CalmSamples: 3, MaxCalmSamples: 12, RecentSamples: 5}

var (
	calm  = Sample{Waiting: 0.1, Cores: 0.9}
	busy  = Sample{Waiting: 2, Cores: 0.9}   // goroutines queue
	heavy = Sample{Waiting: 0.1, Cores: 1.5} // calm, but more than a core of work
	edge  = Sample{Waiting: 0.3, Cores: 0.9} // neither calm nor queueing
)

// lows runs samples through testPolicy from the default and returns
// whether each left the process on one processor.
func lows(samples ...Sample) []bool {
	var s State
	out := make([]bool, len(samples))
	for i, x := range samples {
		s = testPolicy.Next(s, x)
		out[i] = s.Low
	}
	return out
}

func TestPolicy(t *testing.T) {
	rep := func(x Sample, n int) []Sample {
		out := make([]Sample, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	cat := func(parts ...[]Sample) []Sample {
		var out []Sample
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    string // per sample: 'L' one processor, 'D' the default
	}{
		{"calm samples lower once there are CalmSamples in a row", rep(calm, 4), "DDLL"},
		{"a busy sample breaks the row", cat(rep(calm, 2), []Sample{busy}, rep(calm, 3)), "DDDDDL"},
		{"more than a core of work never lowers", rep(heavy, 6), "DDDDDD"},
		{"between the thresholds is not calm", rep(edge, 6), "DDDDDD"},
		{"edge on one processor does not raise", cat(rep(calm, 3), rep(edge, 3)), "DDLLLL"},
		{"the first busy sample on one processor raises", cat(rep(calm, 3), []Sample{calm, busy, calm}), "DDLLDD"},
		{"a quick raise doubles the next row", cat(rep(calm, 3), []Sample{busy}, rep(calm, 6)), "DDLDDDDDDL"},
		{"flapping doubles up to the cap", cat(rep(calm, 3), []Sample{busy}, rep(calm, 6), []Sample{busy},
			rep(calm, 12), []Sample{busy}, rep(calm, 12)),
			"DDLD" + "DDDDDL" + "D" + "DDDDDDDDDDDL" + "D" + "DDDDDDDDDDDL"},
		{"one processor that lasted resets the row", cat(rep(calm, 3), []Sample{busy}, rep(calm, 6), rep(calm, 6),
			[]Sample{busy}, rep(calm, 3)), "DDLD" + "DDDDDL" + "LLLLLL" + "D" + "DDL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, l := range lows(tc.samples...) {
				if l {
					got += "L"
				} else {
					got += "D"
				}
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSampleOf(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, tc := range []struct {
		name string
		a, b reading
		want Sample
		ok   bool
	}{
		{"rates per second", reading{1, 10, t0}, reading{1.05, 10.09, t0.Add(100 * time.Millisecond)}, Sample{0.5, 0.9}, true},
		{"no time", reading{1, 10, t0}, reading{2, 11, t0}, Sample{}, false},
		{"time backwards", reading{1, 10, t0}, reading{2, 11, t0.Add(-time.Second)}, Sample{}, false},
		{"wait backwards", reading{2, 10, t0}, reading{1, 11, t0.Add(time.Second)}, Sample{}, false},
		{"cpu backwards", reading{1, 11, t0}, reading{2, 10, t0.Add(time.Second)}, Sample{}, false},
	} {
		got, ok := sampleOf(tc.a, tc.b)
		if ok != tc.ok || math.Abs(got.Waiting-tc.want.Waiting) > 1e-9 || math.Abs(got.Cores-tc.want.Cores) > 1e-9 {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// fakeSource hands out the readings a test queues.
type fakeSource struct {
	mu  sync.Mutex
	rs  []reading
	bad bool // the next read fails
}

func (f *fakeSource) read() (reading, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bad {
		f.bad = false
		return reading{}, false
	}
	r := f.rs[0]
	f.rs = f.rs[1:]
	return r, true
}

func TestControllerMovesAndRestores(t *testing.T) {
	t0 := time.Unix(0, 0)
	step := 100 * time.Millisecond
	// Cumulative readings: two calm intervals (0.1 waiting, 0.9 cores),
	// a busy one (1 waiting), then calm ones.
	src := &fakeSource{}
	var wait, cpu float64
	at := t0
	src.rs = append(src.rs, reading{wait, cpu, at})
	for _, w := range []float64{0.1, 0.1, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1} {
		wait += w * step.Seconds()
		cpu += 0.9 * step.Seconds()
		at = at.Add(step)
		src.rs = append(src.rs, reading{wait, cpu, at})
	}
	var sets []bool
	tick := make(chan time.Time)
	moved := make(chan State)
	c := &Controller{policy: testPolicy, src: src, set: func(low bool) { sets = append(sets, low) }, tick: tick, moved: moved}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	var states string
	for range 9 {
		tick <- time.Time{}
		if (<-moved).Low {
			states += "L"
		} else {
			states += "D"
		}
	}
	// On one processor from the start; the busy sample raises, soon after
	// the start, so the next lower needs twice CalmSamples.
	if want := "LLD" + "DDDDDL"; states != want {
		t.Errorf("states %s, want %s", states, want)
	}
	cancel()
	<-done
	// Lowered at the start, raised, lowered again, the default restored at
	// the end.
	if want := []bool{true, false, true, false}; !slices.Equal(sets, want) {
		t.Errorf("sets %v, want %v", sets, want)
	}
}

func TestControllerSkipsFailedReads(t *testing.T) {
	t0 := time.Unix(0, 0)
	src := &fakeSource{rs: []reading{{0, 0, t0}, {0.1, 0.09, t0.Add(100 * time.Millisecond)}}}
	tick := make(chan time.Time)
	moved := make(chan State)
	c := &Controller{policy: Policy{Raise: 0.5, Calm: 0.25, MaxCores: 1.1, CalmSamples: 1}, src: src, set: func(bool) {}, tick: tick, moved: moved}
	src.bad = true // Run's first read fails
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	tick <- time.Time{} // a reading, but none before it: no sample
	tick <- time.Time{} // the first whole interval: tasks waited
	if st := <-moved; st.Low {
		t.Errorf("state after the first whole interval: %+v, want the default", st)
	}
}

func TestEnabledHonoursTheEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	if Enabled() {
		t.Error("Enabled with GOMAXPROCS set in the environment")
	}
}

// TestProcessSourceReadsCPU checks the source over the operating system:
// the process's CPU time grows with work, and the wait is the function's.
func TestProcessSourceReadsCPU(t *testing.T) {
	if !cpuSupported {
		t.Skip("no process CPU time on " + runtime.GOOS)
	}
	w := 3 * time.Second
	src := &processSource{wait: func() time.Duration { return w }, now: time.Now, cpu: processCPU}
	before, ok := src.read()
	if !ok {
		t.Fatal("read failed")
	}
	spin(20 * time.Millisecond)
	w += 500 * time.Millisecond
	after, ok := src.read()
	if !ok {
		t.Fatal("read failed")
	}
	if before.wait != 3 || after.wait != 3.5 {
		t.Errorf("waits %v, %v; want 3, 3.5", before.wait, after.wait)
	}
	if after.cpu <= before.cpu {
		t.Errorf("CPU time did not grow: %v then %v", before.cpu, after.cpu)
	}
	if !after.at.After(before.at) {
		t.Errorf("time did not pass: %v then %v", before.at, after.at)
	}
}

// spin keeps the processor busy for about d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

func TestParallelismWhileLowered(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	setProcs(true)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("lowered GOMAXPROCS = %d, want 1", got)
	}
	if got := Parallelism(); got != def {
		t.Errorf("Parallelism while lowered = %d, want the default %d", got, def)
	}
	setProcs(true) // again, as Run does after LowerAtStart
	if got := Parallelism(); got != def {
		t.Errorf("Parallelism after a second lower = %d, want the default %d", got, def)
	}
	if def > 1 && cpuSupported && os.Getenv("GOMAXPROCS") == "" && !Enabled() {
		t.Error("not Enabled once lowered")
	}
	setProcs(false)
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Errorf("raised GOMAXPROCS = %d, want the default %d", got, def)
	}
	if got := Parallelism(); got != def {
		t.Errorf("Parallelism = %d, want %d", got, def)
	}
}

func TestIntervalAfter(t *testing.T) {
	for _, tc := range []struct {
		low   bool
		cores float64
		want  time.Duration
	}{
		{true, 0, IdleInterval},
		{true, IdleCores / 2, IdleInterval},
		{true, IdleCores, Interval},
		{true, 0.9, Interval},
		{false, 0, Interval}, // on the default, sample at the pace that lowers it
	} {
		if got := intervalAfter(State{Low: tc.low}, Sample{Cores: tc.cores}); got != tc.want {
			t.Errorf("low %v, cores %v: %v, want %v", tc.low, tc.cores, got, tc.want)
		}
	}
}
