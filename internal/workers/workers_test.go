package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// goroutineID is the id of the calling goroutine, from its stack header
// ("goroutine 42 [running]:").
func goroutineID(t *testing.T) uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, err := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	if err != nil {
		t.Errorf("goroutine id from %q: %v", buf[:], err)
	}
	return id
}

// newTestPool returns a pool whose workers report each time they go idle.
func newTestPool(maxIdle int) (*Pool, chan struct{}) {
	p := New(maxIdle)
	parks := make(chan struct{}, 16)
	p.afterPark = func() { parks <- struct{}{} }
	return p, parks
}

// TestTaskRunsOnKeptWorker: a task handed over after an earlier one ended
// runs on the goroutine that ran the earlier one.
func TestTaskRunsOnKeptWorker(t *testing.T) {
	p, parks := newTestPool(1)
	ids := make(chan uint64, 2)
	p.Go(func() { ids <- goroutineID(t) })
	<-parks
	p.Go(func() { ids <- goroutineID(t) })
	<-parks
	if a, b := <-ids, <-ids; a != b {
		t.Fatalf("second task ran on goroutine %d, want the first task's %d", b, a)
	}
	p.Close()
	if n := p.Idle(); n != 0 {
		t.Fatalf("idle workers after Close = %d, want 0", n)
	}
}

// TestIdleWorkersBounded: of four workers that finish together, two (the
// bound) stay idle and the others end.
func TestIdleWorkersBounded(t *testing.T) {
	p, parks := newTestPool(2)
	defer p.Close()
	started, release := make(chan struct{}), make(chan struct{})
	for range 4 {
		p.Go(func() {
			started <- struct{}{}
			<-release
		})
	}
	for range 4 {
		<-started // four tasks at once: four workers
	}
	if n := p.Idle(); n != 0 {
		t.Fatalf("idle workers while every task runs = %d, want 0", n)
	}
	close(release)
	<-parks
	<-parks
	if n := p.Idle(); n != 2 {
		t.Fatalf("idle workers = %d, want 2", n)
	}
}

// TestGoWithoutWorkers: a closed pool, and a nil one, still run tasks.
func TestGoWithoutWorkers(t *testing.T) {
	p, parks := newTestPool(4)
	p.Close()
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	if n := len(parks); n != 0 {
		t.Fatalf("a worker of a closed pool went idle (%d)", n)
	}
	var nilPool *Pool
	ran = make(chan struct{})
	nilPool.Go(func() { close(ran) })
	<-ran
	nilPool.Close()
}

// TestWaitedCountsTheWaitToStart: a task handed to a pool while the only
// processor is busy waits until the caller lets it run, and Waited grows
// by at least that wait, for a new worker and for an idle one alike.
func TestWaitedCountsTheWaitToStart(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p, parks := newTestPool(1)
	defer p.Close()
	for _, worker := range []string{"new", "idle"} {
		before := Waited()
		started := make(chan struct{})
		// A fresh time slice: the scheduler preempts a goroutine only
		// after 10 ms of one, longer than the busy loop below.
		runtime.Gosched()
		p.Go(func() { close(started) })
		// One processor, and this goroutine keeps it: the worker cannot
		// start before the busy loop ends.
		const busy = 5 * time.Millisecond
		for end := time.Now().Add(busy); time.Now().Before(end); {
		}
		<-started
		<-parks
		if got := Waited() - before; got < busy {
			t.Errorf("%s worker: Waited grew by %v, want at least %v", worker, got, busy)
		}
	}
}
