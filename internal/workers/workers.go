// Package workers runs tasks on goroutines kept between tasks. A task that
// needs a deep stack (a gateway request, an agent run) then finds one grown
// already, where a new goroutine starts small and copies its stack each
// time it doubles: that copying was 4–5% of the gateway's CPU per chat
// turn. Handing a task to an idle worker costs what starting a goroutine
// costs (the worker is made runnable next on the caller's processor).
package workers

import "sync"

// Pool keeps up to a bounded number of idle workers. The zero value is not
// usable; make one with New. The tasks themselves are their caller's to
// track (a Pool waits only for its idle workers, in Close).
type Pool struct {
	max int

	mu     sync.Mutex
	idle   []chan func()
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
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- fn // buffered: never blocks
		return
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		go fn()
		return
	}
	go p.work(fn)
}

// work runs fn and then the tasks handed to it while it is idle, until the
// pool is full of idle workers or closed.
func (p *Pool) work(fn func()) {
	ch := make(chan func(), 1)
	for {
		fn()
		fn = nil // what the task held is not kept while idle
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
		fn = next
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
