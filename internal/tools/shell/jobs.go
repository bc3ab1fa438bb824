package shell

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// Defaults of JobsConfig (the reference's tools.exec.backgroundMs and
// cleanupMs, and its registry bounds).
const (
	DefaultYield       = 10 * time.Second
	DefaultCleanupTTL  = 30 * time.Minute
	DefaultMaxFinished = 50
	// pendingMax bounds the output kept for the next poll.
	pendingMax = 30_000
	// maxPollWait bounds how long one poll waits.
	maxPollWait = 2 * time.Minute
)

// JobsConfig configures a Jobs registry. Zero fields take the defaults.
type JobsConfig struct {
	// Yield is how long exec waits before backgrounding a command that
	// is still running (tools.exec.backgroundMs).
	Yield time.Duration
	// CleanupTTL is how long a finished job is kept (tools.exec.cleanupMs).
	CleanupTTL time.Duration
	// MaxFinished bounds the finished jobs kept.
	MaxFinished int
	Now         func() time.Time
}

// Jobs holds the commands exec moved to the background, for the process
// tool: their output, input and exit. Jobs are scoped per agent. Close
// kills the ones still running. Safe for concurrent use.
type Jobs struct {
	cfg    JobsConfig
	mu     sync.Mutex
	jobs   map[string]*job
	closed bool
}

// NewJobs returns an empty registry.
func NewJobs(cfg JobsConfig) *Jobs {
	if cfg.Yield <= 0 {
		cfg.Yield = DefaultYield
	}
	if cfg.CleanupTTL <= 0 {
		cfg.CleanupTTL = DefaultCleanupTTL
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = DefaultMaxFinished
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Jobs{cfg: cfg, jobs: map[string]*job{}}
}

// Close kills every running job and waits for them to end.
func (js *Jobs) Close() {
	js.mu.Lock()
	js.closed = true
	all := make([]*job, 0, len(js.jobs))
	for _, j := range js.jobs {
		all = append(all, j)
	}
	js.mu.Unlock()
	for _, j := range all {
		j.kill()
		<-j.done
	}
}

// add registers j, or kills it when the registry is closed.
func (js *Jobs) add(j *job) error {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.closed {
		return errors.New("exec: the gateway is shutting down")
	}
	js.sweepLocked()
	js.jobs[j.id] = j
	return nil
}

// sweepLocked drops finished jobs past their TTL, and the oldest finished
// ones beyond MaxFinished.
func (js *Jobs) sweepLocked() {
	now := js.cfg.Now()
	var finished []*job
	for id, j := range js.jobs {
		end, ok := j.ended()
		if !ok {
			continue
		}
		if now.Sub(end) > js.cfg.CleanupTTL {
			delete(js.jobs, id)
			continue
		}
		finished = append(finished, j)
	}
	if over := len(finished) - js.cfg.MaxFinished; over > 0 {
		slices.SortFunc(finished, func(a, b *job) int {
			ea, _ := a.ended()
			eb, _ := b.ended()
			return ea.Compare(eb)
		})
		for _, j := range finished[:over] {
			delete(js.jobs, j.id)
		}
	}
}

// get returns agent's job id.
func (js *Jobs) get(agent, id string) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.sweepLocked()
	j, ok := js.jobs[id]
	if !ok || j.agent != agent {
		return nil, fmt.Errorf("No session found for %s", id)
	}
	return j, nil
}

// list returns agent's jobs, oldest first.
func (js *Jobs) list(agent string) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.sweepLocked()
	var out []*job
	for _, j := range js.jobs {
		if j.agent == agent {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *job) int { return cmp.Or(a.start.Compare(b.start), cmp.Compare(a.id, b.id)) })
	return out
}

// remove drops a finished job.
func (js *Jobs) remove(agent, id string) error {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.jobs[id]
	if !ok || j.agent != agent {
		return fmt.Errorf("No session found for %s", id)
	}
	if _, ended := j.ended(); !ended {
		return fmt.Errorf("Session %s is still running; kill it first", id)
	}
	delete(js.jobs, id)
	return nil
}

// job is one started command: its output, its end, and (backgrounded)
// its input.
type job struct {
	id, agent, command string
	proc               Process
	stdin              io.WriteCloser // nil when not backgroundable
	out                *capBuffer     // everything, head and tail
	pending            *pendingBuffer // not yet returned by a poll
	start              time.Time
	timeout            time.Duration
	done               chan struct{} // closed when the command ended
	// guardStop ends the command's guard (see Guarder) once it ended and
	// says why the guard stopped it, if it did.
	guardStop func() string

	mu      sync.Mutex
	result  *tools.Result // set before done closes
	endedAt time.Time
	killed  bool // by process kill
}

// newJobID returns a short random session id.
func newJobID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// watch waits for the command (killing its group at the timeout) and
// records its result; it closes done.
func (j *job) watch(cwd string) {
	defer close(j.done)
	type exit struct {
		code int
		sig  string
		err  error
	}
	waitErr := make(chan exit, 1)
	go func() {
		var e exit
		e.code, e.sig, e.err = j.proc.Wait()
		waitErr <- e
	}()
	var timer <-chan time.Time
	if j.timeout > 0 {
		tm := time.NewTimer(j.timeout)
		defer tm.Stop()
		timer = tm.C
	}
	timedOut := false
	var e exit
	select {
	case e = <-waitErr:
	case <-timer:
		timedOut = true
		j.proc.Kill()
		e = <-waitErr
	}
	stopped := j.guardStop()
	res := finalResult(e.code, e.sig, e.err, j.out, time.Since(j.start), cwd, timedOut, j.timeout)
	if stopped != "" && !timedOut && e.err == nil {
		// The guard's reason replaces the signal's.
		text, _ := j.out.String()
		res.Details.(*Details).Status = "failed"
		res.Text = joinOutput(text, stopped)
	}
	j.mu.Lock()
	j.result, j.endedAt = res, time.Now()
	j.mu.Unlock()
}

// kill ends the command and everything in its group.
func (j *job) kill() {
	j.mu.Lock()
	j.killed = true
	j.mu.Unlock()
	j.proc.Kill()
}

// ended returns when the job ended, if it has.
func (j *job) ended() (time.Time, bool) {
	select {
	case <-j.done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.endedAt, true
	default:
		return time.Time{}, false
	}
}

// pendingBuffer keeps the newest output not yet polled, at most max
// bytes, and counts what it dropped. Safe for concurrent use.
type pendingBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped int64
	notify  chan struct{} // closed and replaced on each write
}

func newPendingBuffer(max int) *pendingBuffer {
	return &pendingBuffer{max: max, notify: make(chan struct{})}
}

func (p *pendingBuffer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	if over := len(p.buf) - p.max; over > 0 {
		p.dropped += int64(over)
		p.buf = append(p.buf[:0], p.buf[over:]...)
	}
	close(p.notify)
	p.notify = make(chan struct{})
	return len(b), nil
}

// take returns and clears what is pending, with how many older bytes were
// dropped.
func (p *pendingBuffer) take() (string, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, d := string(trimPartialRuneStart(p.buf)), p.dropped
	p.buf, p.dropped = nil, 0
	return s, d
}

// changed returns a channel closed at the next write.
func (p *pendingBuffer) changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.notify
}
