package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// DefaultTimeout is how long an approval waits for a decision (the
// reference's 30 minutes).
const DefaultTimeout = 30 * time.Minute

// Errors of Resolve and Wait.
var (
	// ErrNotFound: no pending or recently resolved approval has that id.
	ErrNotFound = errors.New("approval expired or not found")
	// ErrAlreadyResolved: the approval got a different decision first.
	ErrAlreadyResolved = errors.New("approval already resolved")
	// ErrClosed: the broker is shutting down.
	ErrClosed = errors.New("approval broker closed")
)

// DecisionNotAllowedError is Resolve's error for a decision the approval
// does not offer.
type DecisionNotAllowedError struct{ Decision string }

// Error implements error.
func (e *DecisionNotAllowedError) Error() string {
	return fmt.Sprintf("decision %s is not allowed for this approval", e.Decision)
}

// Request is what an operator is asked to approve, in the reference's
// exec.approval.requested request shape.
type Request struct {
	Command     string   `json:"command"`
	CommandArgv []string `json:"commandArgv,omitempty"`
	Cwd         string   `json:"cwd,omitempty"`
	Host        string   `json:"host"`
	Security    string   `json:"security"`
	Ask         string   `json:"ask"`
	AskFallback string   `json:"askFallback,omitempty"`
	AgentID     string   `json:"agentId,omitempty"`
	SessionKey  string   `json:"sessionKey,omitempty"`
	RunID       string   `json:"runId,omitempty"`
	ToolCallID  string   `json:"toolCallId,omitempty"`
	// AllowedDecisions are the decisions the operator may give.
	AllowedDecisions []string `json:"allowedDecisions"`
	// ResolvedPath is the executable the command's first segment runs.
	ResolvedPath string `json:"resolvedPath,omitempty"`
	// Bins are the executables of every segment (allow-always adds them).
	Bins []string `json:"bins,omitempty"`
}

// Record is one approval: the exec.approval.requested payload.
type Record struct {
	// ApprovalKind is "exec".
	ApprovalKind string  `json:"approvalKind,omitempty"`
	ID           string  `json:"id"`
	Request      Request `json:"request"`
	CreatedAtMs  int64   `json:"createdAtMs"`
	ExpiresAtMs  int64   `json:"expiresAtMs"`
}

// Resolved is the exec.approval.resolved payload.
type Resolved struct {
	ID         string  `json:"id"`
	Decision   string  `json:"decision"`
	ResolvedBy string  `json:"resolvedBy,omitempty"`
	Ts         int64   `json:"ts"`
	Request    Request `json:"request"`
}

// Notifier hears about approvals: the gateway broadcasts them to the
// operator clients that can answer. Calls must not block.
type Notifier interface {
	ApprovalRequested(Record)
	ApprovalResolved(Resolved)
}

// Journal keeps the pending approvals durably, so that a crash cannot
// lose one: Save is called with every pending approval after each change.
type Journal interface {
	Save(pending []Record) error
}

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	// Timeout is how long an approval waits; 0 means DefaultTimeout.
	Timeout time.Duration
	// Notifier hears of requests and decisions; nil means nobody.
	Notifier Notifier
	// Journal persists pending approvals; nil keeps them in memory only.
	Journal Journal
	// Now and NewID are seams for tests; nil means time.Now and UUIDs.
	Now   func() time.Time
	NewID func() string
}

// Broker holds pending approvals until an operator decides, they expire,
// or their caller goes away. Safe for concurrent use. It starts no
// goroutines: each approval is waited for on its caller's goroutine.
type Broker struct {
	cfg BrokerConfig

	// mu guards the fields that follow.
	mu       sync.Mutex
	pending  map[string]*entry
	order    []string            // pending ids, oldest first
	resolved map[string]resolved // recent outcomes, for waitDecision and repeats
	closed   bool
	// journalMu serialises journal writes so the last write wins in order.
	journalMu sync.Mutex
}

type entry struct {
	rec      Record
	done     chan struct{} // closed when decided (decision set) or expired
	decision string        // "" when expired
}

type resolved struct {
	decision string // "" when expired
	rec      Record
	at       time.Time
}

// keepResolved is how long an outcome is remembered.
const keepResolved = 10 * time.Minute

// NewBroker returns a broker.
func NewBroker(cfg BrokerConfig) *Broker {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	return &Broker{cfg: cfg, pending: map[string]*entry{}, resolved: map[string]resolved{}}
}

// Timeout is how long an approval waits.
func (b *Broker) Timeout() time.Duration { return b.cfg.Timeout }

// Open registers an approval for req and announces it. The caller must
// Await it (which also forgets it).
func (b *Broker) Open(req Request) (Record, error) {
	now := b.cfg.Now()
	rec := Record{ApprovalKind: "exec", ID: b.cfg.NewID(), Request: req, CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(b.cfg.Timeout).UnixMilli()}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return Record{}, ErrClosed
	}
	b.pending[rec.ID] = &entry{rec: rec, done: make(chan struct{})}
	b.order = append(b.order, rec.ID)
	b.mu.Unlock()
	if err := b.journal(); err != nil {
		b.forget(rec.ID)
		return Record{}, fmt.Errorf("approval: persist: %w", err)
	}
	if b.cfg.Notifier != nil {
		b.cfg.Notifier.ApprovalRequested(rec)
	}
	return rec, nil
}

// Await waits for the decision on approval id: allow-once, allow-always
// or deny; "" when it expired. It returns ctx's error when ctx ends
// first. Either way the approval is no longer pending afterwards.
func (b *Broker) Await(ctx context.Context, id string) (string, error) {
	b.mu.Lock()
	e := b.pending[id]
	b.mu.Unlock()
	if e == nil {
		return "", ErrNotFound
	}
	wait := time.UnixMilli(e.rec.ExpiresAtMs).Sub(b.cfg.Now())
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	var err error
	select {
	case <-e.done:
	case <-t.C:
		b.finish(id, "", "")
	case <-ctx.Done():
		err = context.Cause(ctx)
		b.finish(id, "", "")
	}
	<-e.done
	b.forget(id)
	return e.decision, err
}

// Resolve records an operator's decision on approval id. Repeating the
// same decision succeeds; a different one after the first is
// ErrAlreadyResolved.
func (b *Broker) Resolve(id, decision, by string) (Resolved, error) {
	if !ValidDecision(decision) {
		return Resolved{}, &DecisionNotAllowedError{Decision: decision}
	}
	b.mu.Lock()
	e := b.pending[id]
	if e != nil && isDone(e) {
		e = nil // ended, not yet forgotten: answer from its outcome
	}
	if e == nil {
		r, ok := b.resolved[id]
		b.mu.Unlock()
		switch {
		case ok && r.decision == decision:
			return Resolved{ID: id, Decision: decision, Request: r.rec.Request, Ts: r.at.UnixMilli()}, nil
		case ok && r.decision != "":
			return Resolved{}, ErrAlreadyResolved
		}
		return Resolved{}, ErrNotFound
	}
	if !slices.Contains(e.rec.Request.AllowedDecisions, decision) {
		b.mu.Unlock()
		return Resolved{}, &DecisionNotAllowedError{Decision: decision}
	}
	b.mu.Unlock()
	res, ok := b.finish(id, decision, by)
	if !ok {
		// Raced with expiry or another decision, which finish has
		// recorded: answer from it (this cannot loop).
		return b.Resolve(id, decision, by)
	}
	return res, nil
}

// isDone reports whether e has ended. b.mu is held.
func isDone(e *entry) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// finish ends approval id with decision ("" expires it) and announces a
// decision. It reports false when the approval had already ended.
func (b *Broker) finish(id, decision, by string) (Resolved, bool) {
	now := b.cfg.Now()
	b.mu.Lock()
	e := b.pending[id]
	if e == nil {
		b.mu.Unlock()
		return Resolved{}, false
	}
	select {
	case <-e.done:
		b.mu.Unlock()
		return Resolved{}, false
	default:
	}
	e.decision = decision
	close(e.done)
	b.resolved[id] = resolved{decision: decision, rec: e.rec, at: now}
	for k, r := range b.resolved {
		if now.Sub(r.at) > keepResolved {
			delete(b.resolved, k)
		}
	}
	b.mu.Unlock()
	res := Resolved{ID: id, Decision: decision, ResolvedBy: by, Ts: now.UnixMilli(), Request: e.rec.Request}
	if decision != "" && b.cfg.Notifier != nil {
		b.cfg.Notifier.ApprovalResolved(res)
	}
	return res, true
}

// forget drops approval id from the pending set and the journal.
func (b *Broker) forget(id string) {
	b.mu.Lock()
	if _, ok := b.pending[id]; !ok {
		b.mu.Unlock()
		return
	}
	delete(b.pending, id)
	b.order = slices.DeleteFunc(b.order, func(s string) bool { return s == id })
	b.mu.Unlock()
	_ = b.journal() // a stale entry is reported expired after a restart
}

// Wait is exec.approval.waitDecision: it waits for approval id's decision
// and returns it with the record; decision "" means it expired. It
// returns ErrNotFound for an id that is neither pending nor recent.
func (b *Broker) Wait(ctx context.Context, id string) (string, Record, error) {
	b.mu.Lock()
	e := b.pending[id]
	if e == nil {
		r, ok := b.resolved[id]
		b.mu.Unlock()
		if !ok {
			return "", Record{}, ErrNotFound
		}
		return r.decision, r.rec, nil
	}
	b.mu.Unlock()
	select {
	case <-e.done:
		return e.decision, e.rec, nil
	case <-ctx.Done():
		return "", Record{}, context.Cause(ctx)
	}
}

// Get returns pending approval id.
func (b *Broker) Get(id string) (Record, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.pending[id]; e != nil {
		return e.rec, true
	}
	return Record{}, false
}

// Pending returns the pending approvals, oldest first.
func (b *Broker) Pending() []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pendingLocked()
}

func (b *Broker) pendingLocked() []Record {
	out := make([]Record, 0, len(b.order))
	for _, id := range b.order {
		if e := b.pending[id]; e != nil {
			select {
			case <-e.done:
				continue
			default:
			}
			out = append(out, e.rec)
		}
	}
	return out
}

func (b *Broker) journal() error {
	if b.cfg.Journal == nil {
		return nil
	}
	b.journalMu.Lock()
	defer b.journalMu.Unlock()
	b.mu.Lock()
	recs := make([]Record, 0, len(b.order))
	for _, id := range b.order {
		recs = append(recs, b.pending[id].rec)
	}
	b.mu.Unlock()
	return b.cfg.Journal.Save(recs)
}

// Close stops taking approvals. Pending ones stay in the journal: the
// next start reports them expired to their sessions.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.closed = true
	return nil
}
