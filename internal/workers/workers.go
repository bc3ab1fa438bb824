// Package workers runs tasks on goroutines kept between tasks. A task that
// needs a deep stack (a gateway request, an agent run) then finds one grown
// already, where a new goroutine starts small and copies its stack each
// time it doubles: that copying was 4–5% of the gateway's CPU per chat
// turn. Handing a task to an idle worker costs what starting a goroutine
// costs (the worker is made runnable next on the caller's processor).
package workers

import (
	"sync"
	"sync/atomic"
	"time"
)

// waited is how long the tasks of every Pool waited between Go and their
// start, in nanoseconds.
var waited atomic.Int64

// Waited returns how long the tasks of every Pool in the process have
// waited, in all, between Go and the moment their worker began them: the
// time a worker, idle or new, waited to be scheduled. It grows as fast as
// tasks queue for a processor (package procs reads it).
func Waited() time.Duration { return time.Duration(waited.Load()) }

// task is a function handed to a worker, and when.
type task struct {
	fn func()
	at time.Time
}

// Pool keeps up to a bounded number of idle workers. The zero value is not
// usable; make one with New. The tasks themselves are their caller's to
// track (a Pool waits only for its idle workers, in Close).
type Pool struct {
	max int

	mu     sync.Mutex
	idle   []chan task
	closed bool
	// parked counts the workers waiting in idle; Close waits for them.
	parked sync.WaitGroup
	// afterPark, when set (by tests, before the first Go), is called by
	// a worker once it is idle.
	afterPark func()
}

// New returns a pool that keeps at most maxIdle idle workers.
func New(maxIdle int) *Pool {
	return &Pool{max: max(maxIdle, 0)}
}

// Go runs fn on an idle worker, or on a new one when none is idle. After
// Close, or on a nil Pool, it runs fn on a goroutine of its own.
func (p *Pool) Go(fn func()) {
	if p == nil {
		go fn()
		return
	}
	t := task{fn, time.Now()}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- t // buffered: never blocks
		return
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		go fn()
		return
	}
	go p.work(t)
}

// work runs fn and then the tasks handed to it while it is idle, until the
// pool is full of idle workers or closed.
func (p *Pool) work(t task) {
	ch := make(chan task, 1)
	for {
		waited.Add(int64(time.Since(t.at)))
		t.fn()
		t = task{} // what the task held is not kept while idle
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.max {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, ch)
		p.parked.Add(1)
		p.mu.Unlock()
		if p.afterPark != nil {
			p.afterPark()
		}
		next, ok := <-ch
		p.parked.Done()
		if !ok {
			return
		}
		t = next
	}
}

// Close ends the idle workers and waits for them; a worker running a task
// ends after it. Go still works afterwards, without workers. A nil Pool
// has nothing to close.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ch := range idle {
		close(ch)
	}
	p.parked.Wait()
}

// Idle reports how many workers wait for a task.
func (p *Pool) Idle() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
