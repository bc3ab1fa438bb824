// Package store owns the durable data model of Switchboard: sessions, their
// transcripts and agent runs, and the Store contract every backend implements
// (sqlite by default, postgres for several gateway nodes).
//
// It imports only leaf packages (transcript, sessionkey); backends live in
// sub-packages and are chosen by the daemon. Users depend on the Store
// interface (or a smaller interface of their own), never on a backend.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Sentinel errors callers branch on. Backends wrap them with context; test
// with errors.Is.
var (
	// ErrNotFound: the session, run or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a row with that identity already exists, or an
	// optimistic precondition failed.
	ErrConflict = errors.New("conflict")
)

// DeliveryContext is where replies for a session go by default.
type DeliveryContext struct {
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`
}

// IsZero reports whether no field is set.
func (d *DeliveryContext) IsZero() bool { return d == nil || *d == DeliveryContext{} }

// Session is one session entry: the row behind sessions.list and
// sessions_list. Key is the canonical store key (agent:<id>:<rest>, or a
// reserved key such as "global").
type Session struct {
	Key       string `json:"key"`
	SessionID string `json:"sessionId"` // current transcript id (uuid); rotates on reset
	AgentID   string `json:"agentId"`
	// Kind is the gateway row kind: "direct", "group", "global" or "unknown".
	Kind     string `json:"kind"`
	Channel  string `json:"channel,omitempty"`
	ChatType string `json:"chatType,omitempty"` // direct|group|channel|unknown

	DisplayName string `json:"displayName,omitempty"`
	Label       string `json:"label,omitempty"`
	SpawnedBy   string `json:"spawnedBy,omitempty"` // canonical key of the spawning session
	SpawnDepth  int    `json:"spawnDepth,omitempty"`

	Model         string `json:"model,omitempty"` // "<provider>/<modelId>" override
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	VerboseLevel  string `json:"verboseLevel,omitempty"`

	ContextTokens int64 `json:"contextTokens,omitempty"`
	InputTokens   int64 `json:"inputTokens,omitempty"`
	OutputTokens  int64 `json:"outputTokens,omitempty"`
	TotalTokens   int64 `json:"totalTokens,omitempty"`

	SystemSent     bool `json:"systemSent"`
	AbortedLastRun bool `json:"abortedLastRun"`

	SendPolicy string `json:"sendPolicy,omitempty"` // "allow", "deny" or "" (inherit)

	LastChannel     string           `json:"lastChannel,omitempty"`
	LastTo          string           `json:"lastTo,omitempty"`
	LastAccountID   string           `json:"lastAccountId,omitempty"`
	DeliveryContext *DeliveryContext `json:"deliveryContext,omitempty"`

	CreatedAt time.Time `json:"-"`
	UpdatedAt time.Time `json:"-"`

	// Extra keeps other SessionEntry fields (for example origin, subject) as
	// an opaque JSON object so imported entries round-trip.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// Clone returns a deep copy of s.
func (s *Session) Clone() *Session {
	c := *s
	if s.DeliveryContext != nil {
		d := *s.DeliveryContext
		c.DeliveryContext = &d
	}
	if s.Extra != nil {
		c.Extra = append(json.RawMessage(nil), s.Extra...)
	}
	return &c
}

// Message is one stored transcript entry of a session's transcript.
type Message struct {
	SessionID string
	// Seq is the 1-based position in the transcript, assigned by the store.
	Seq int64
	// Entry is the transcript entry. Its ID and ParentID are assigned by the
	// store on append when empty.
	Entry transcript.Entry
	// Role is Entry.Message.Role for message entries, "" otherwise.
	Role string
	// RunID is the run that produced the entry, if any.
	RunID     string
	CreatedAt time.Time
}

// RunStatus is the state of an agent run.
type RunStatus string

// Run statuses. Queued and running are live; the rest are terminal.
const (
	RunQueued  RunStatus = "queued"
	RunRunning RunStatus = "running"
	RunOK      RunStatus = "ok"
	RunError   RunStatus = "error"
	RunTimeout RunStatus = "timeout"
	RunAborted RunStatus = "aborted"
)

// Terminal reports whether s is a final status.
func (s RunStatus) Terminal() bool {
	switch s {
	case RunOK, RunError, RunTimeout, RunAborted:
		return true
	}
	return false
}

// Run is one agent run: one input processed on one session's lane.
type Run struct {
	RunID      string
	SessionKey string
	SessionID  string // transcript the run wrote to; set when it starts
	AgentID    string
	Lane       string
	Status     RunStatus
	// Input is the runner's durable description of the run (message,
	// provenance, options), opaque to the store, so queued runs survive a
	// restart.
	Input json.RawMessage

	CreatedAt  time.Time
	StartedAt  time.Time // zero until running
	EndedAt    time.Time // zero until terminal
	Error      string
	StopReason string
	Usage      transcript.Usage
}

// Clone returns a deep copy of r.
func (r *Run) Clone() *Run {
	c := *r
	c.Input = append(json.RawMessage(nil), r.Input...)
	if r.Usage.Cost != nil {
		cost := *r.Usage.Cost
		c.Usage.Cost = &cost
	}
	return &c
}

// ListOptions filters and pages ListSessions. Zero fields do not filter.
// Results are ordered by UpdatedAt descending, then Key ascending.
type ListOptions struct {
	AgentID   string
	SpawnedBy string
	Label     string
	Kind      string
	// UpdatedSince keeps sessions updated at or after this instant.
	UpdatedSince time.Time
	// Search is a case-insensitive substring of key, sessionId, label or
	// displayName.
	Search string
	// Exclude leaves out sessions whose key is in any of these classes.
	Exclude KeyClass
	Limit   int // 0 = no limit
	Offset  int
}

// HistoryOptions selects a window of a transcript.
type HistoryOptions struct {
	// Limit is the number of most recent entries to return (0 = all).
	Limit int
	// BeforeSeq, when > 0, returns only entries with Seq < BeforeSeq.
	BeforeSeq int64
	// RunID, when set, returns only entries written by that run.
	RunID string
}

// RunFilter selects runs for ListRuns. Zero fields do not filter.
// Results are ordered by CreatedAt ascending, then RunID (descending, both,
// with Newest).
type RunFilter struct {
	SessionKey string
	// SessionKeys, when set, selects the runs of any of these sessions
	// (with SessionKey, of both).
	SessionKeys []string
	Statuses    []RunStatus
	Limit       int
	// Newest orders newest first, so Limit keeps the latest runs.
	Newest bool
}

// UsageDay is the usage of the runs that ended on one day.
type UsageDay struct {
	// Day is the day's first instant, in the zone UsageByDay was asked for.
	Day  time.Time
	Runs int64
	// Usage sums the runs' tokens, and the cost of those that report one.
	Usage transcript.Usage
	// MissingCost counts the runs that used tokens but report no cost.
	MissingCost int64
}

// RunResult is the terminal outcome FinishRun records.
type RunResult struct {
	Status     RunStatus // must be terminal
	Error      string
	StopReason string
	Usage      transcript.Usage
	EndedAt    time.Time
	// Outbox holds items (announces, agent-to-agent messages) to enqueue in
	// the same transaction that marks the run terminal, so they exist if and
	// only if the run finished. Each is stored with PutOutbox's defaults; an
	// empty RunID means the finished run. An item whose ID already exists
	// (queued earlier, or twice in this slice) is skipped, not an error.
	Outbox []OutboxItem
}

// OutboxStatus is the delivery state of an outbox item.
type OutboxStatus string

// Outbox statuses. Pending items wait for delivery; the rest are final.
const (
	// OutboxPending: not delivered yet; due at NextAttemptAt.
	OutboxPending OutboxStatus = "pending"
	// OutboxDelivered: delivered; kept so that enqueueing the same ID again
	// stays a no-op.
	OutboxDelivered OutboxStatus = "delivered"
	// OutboxDead: the dispatcher gave up on it (see LastError).
	OutboxDead OutboxStatus = "dead"
)

// Valid reports whether s is one of the defined statuses.
func (s OutboxStatus) Valid() bool {
	switch s {
	case OutboxPending, OutboxDelivered, OutboxDead:
		return true
	}
	return false
}

// OutboxItem is one durable message waiting to be delivered to a session:
// an agent-to-agent flow step or a sub-agent completion announce. Producers
// enqueue items (PutOutbox, or RunResult.Outbox); a dispatcher lists due
// items, delivers them and records the outcome with UpdateOutbox, with
// backoff through NextAttemptAt. Items survive restarts.
type OutboxItem struct {
	// ID is unique and doubles as the idempotency key, for example
	// "announce:<childRunId>:<targetKey>": enqueueing an existing ID fails
	// with ErrConflict (or is skipped by FinishRun), so a retried producer
	// never queues a message twice.
	ID string
	// Kind tells the dispatcher how to deliver the item, e.g. "a2a" or
	// "announce".
	Kind string
	// SessionKey is the session the item will be delivered to. It may be
	// changed (re-routed) by UpdateOutbox.
	SessionKey string
	// RunID is the run the item is about, "" if none.
	RunID string
	// Payload is the dispatcher's description of the message, opaque to
	// the store; when set it must be valid JSON.
	Payload json.RawMessage

	Status OutboxStatus
	// Attempts counts delivery attempts; the dispatcher maintains it.
	Attempts int
	// NextAttemptAt is when a pending item is due (next try after backoff).
	NextAttemptAt time.Time
	// LastError is the error of the last failed attempt.
	LastError string

	CreatedAt time.Time
	UpdatedAt time.Time // set to now by every write
	// DeliveredAt is when the item was delivered; zero until then. Stores
	// set it to now when an item is written as delivered with it zero.
	DeliveredAt time.Time
}

// Clone returns a deep copy of it.
func (it *OutboxItem) Clone() *OutboxItem {
	c := *it
	if it.Payload != nil {
		c.Payload = append(json.RawMessage(nil), it.Payload...)
	}
	return &c
}

// OutboxFilter selects items for ListOutbox. Zero fields do not filter.
// Results are ordered by NextAttemptAt ascending, then CreatedAt, then ID.
type OutboxFilter struct {
	Kind       string
	SessionKey string
	RunID      string
	Statuses   []OutboxStatus
	// DueBefore, when set, keeps only pending items with NextAttemptAt at
	// or before it: the items a dispatcher should try now. Combined with
	// Statuses that exclude OutboxPending it matches nothing.
	DueBefore time.Time
	// Newest orders by CreatedAt descending (then ID descending) instead of
	// the dispatch order.
	Newest bool
	Limit  int // 0 = no limit
	Offset int
}

// SubagentStatus is the registry state of a spawned sub-agent run.
type SubagentStatus string

// Sub-agent registry statuses.
const (
	// SubagentActive: the child session exists (running, or finished and
	// not yet archived or deleted).
	SubagentActive SubagentStatus = "active"
	// SubagentRetired: the child was archived or deleted; the row is kept
	// for listings and lineage.
	SubagentRetired SubagentStatus = "retired"
)

// Valid reports whether s is one of the SubagentStatus values.
func (s SubagentStatus) Valid() bool { return s == SubagentActive || s == SubagentRetired }

// SubagentRun is the registry row of one spawned sub-agent run: who spawned
// which child, and when it is archived. The registry is not a delivery
// queue; the child's completion announce is an OutboxItem.
type SubagentRun struct {
	ChildRunID      string // primary key
	ChildSessionKey string
	RequesterKey    string
	Status          SubagentStatus
	// ArchiveAt is when a finished run-mode child is archived; zero never.
	ArchiveAt time.Time
	// Payload is the spawner's full record, opaque to the store; valid JSON
	// when set.
	Payload   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time // set to now by every write
}

// Clone returns a deep copy of r.
func (r *SubagentRun) Clone() *SubagentRun {
	c := *r
	if r.Payload != nil {
		c.Payload = append(json.RawMessage(nil), r.Payload...)
	}
	return &c
}

// SubagentFilter selects registry rows for ListSubagents. Zero fields do
// not filter. Rows come newest first (CreatedAt, then ChildRunID,
// descending).
type SubagentFilter struct {
	RequesterKey    string
	ChildSessionKey string
	Statuses        []SubagentStatus
	// ArchiveDueBefore keeps only rows with a non-zero ArchiveAt at or
	// before it.
	ArchiveDueBefore time.Time
	Limit            int // 0 = no limit
	Offset           int
}

// Store is the durable store. Implementations are safe for concurrent use.
// Errors wrap ErrNotFound or ErrConflict where documented. Create methods do
// not modify their input; returned rows are copies, exactly as stored (UTC,
// millisecond precision).
type Store interface {
	// GetSession returns the session with the canonical key, or ErrNotFound.
	GetSession(ctx context.Context, key string) (*Session, error)
	// SessionsByID returns every session whose current SessionID is id
	// (normally zero or one).
	SessionsByID(ctx context.Context, id string) ([]*Session, error)
	// ListSessions returns sessions matching opts.
	ListSessions(ctx context.Context, opts ListOptions) ([]*Session, error)
	// CountSessions returns how many sessions match opts' filters (its
	// Limit and Offset are ignored).
	CountSessions(ctx context.Context, opts ListOptions) (int64, error)
	// CreateSession inserts s; ErrConflict if the key exists. CreatedAt and
	// UpdatedAt default to now when zero.
	CreateSession(ctx context.Context, s *Session) error
	// UpdateSession applies fn to the stored session inside one transaction
	// and stores the result; fn's error aborts the update unchanged. With
	// create set, a missing session is passed to fn as a zero Session with
	// only Key set, and inserted. Returns the stored row. UpdatedAt is stored
	// as fn leaves it (it is not bumped automatically). fn must not call the
	// Store: backends with a single writer would deadlock.
	UpdateSession(ctx context.Context, key string, create bool, fn func(*Session) error) (*Session, error)
	// DeleteSession removes the session row, and its transcripts when
	// deleteTranscript is set. ErrNotFound if absent.
	DeleteSession(ctx context.Context, key string, deleteTranscript bool) error

	// AppendMessages appends entries to transcript sessionID in order,
	// assigning Seq, and Entry.ID / Entry.ParentID when empty (the parent is
	// the previous entry). It returns the stored messages.
	AppendMessages(ctx context.Context, sessionID string, msgs []Message) ([]Message, error)
	// History returns a window of transcript sessionID in ascending Seq.
	History(ctx context.Context, sessionID string, opts HistoryOptions) ([]Message, error)
	// PostMessage appends msg to transcript sessionID as AppendMessages
	// does, unless a message posted with the same non-empty idemKey is
	// already in that transcript: then it returns that message and posted
	// false. The check and the append are one transaction, so concurrent
	// posts with one key store one message.
	PostMessage(ctx context.Context, sessionID, idemKey string, msg Message) (stored Message, posted bool, err error)
	// CountMessages returns the number of entries in transcript sessionID.
	CountMessages(ctx context.Context, sessionID string) (int64, error)

	// CreateRun inserts r; ErrConflict if RunID exists.
	CreateRun(ctx context.Context, r *Run) error
	// GetRun returns the run, or ErrNotFound.
	GetRun(ctx context.Context, runID string) (*Run, error)
	// UpdateRun applies fn to the stored run in one transaction. fn must
	// not call the Store.
	UpdateRun(ctx context.Context, runID string, fn func(*Run) error) (*Run, error)
	// StartRun marks a queued run running (StartedAt startedAt, SessionID
	// sessionID) and, in the same transaction, appends msgs (the run's
	// input message) to transcript sessionID as AppendMessages does: a run
	// is never running without its input in the transcript. ErrConflict if
	// the run is not queued, ErrNotFound if absent; on any error nothing is
	// written. It returns the run and the stored messages.
	StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []Message) (*Run, []Message, error)
	// ListRuns returns runs matching f.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// UsageByDay sums the usage of the runs that ended in [from, to), by
	// day. Days run from midnight to midnight in the fixed zone east of
	// UTC by zoneOffset; days without runs are left out. Ordered by day.
	UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]UsageDay, error)
	// RunsUsage returns the usage and message counts of the runs f
	// selects (over the runs' end index), oldest end first.
	RunsUsage(ctx context.Context, f RunUsageFilter) ([]RunUsage, error)
	// FinishRun marks a live run terminal and, in the same transaction,
	// counts the messages the run wrote (RunStats, kept with the run),
	// adds the usage to its session's token counters, sets the session's
	// AbortedLastRun (true only for RunAborted), bumps its UpdatedAt and
	// enqueues res.Outbox. The run's usage is replaced by res.Usage; the
	// session's input, output and total token counters are increased by it.
	// A missing session is not an error. Outbox items whose ID already
	// exists are skipped, so a retried finish never queues twice.
	// ErrConflict if the run is already terminal, ErrNotFound if it is
	// absent; on any error nothing is written, outbox items included.
	FinishRun(ctx context.Context, runID string, res RunResult) (*Run, error)
	// AbortInterrupted marks every run left running (by a crash) aborted
	// with the given error text, and sets AbortedLastRun on their sessions,
	// in one transaction. Queued runs are left alone (they resume after a
	// restart). It returns the runs it changed.
	AbortInterrupted(ctx context.Context, now time.Time, errText string) ([]*Run, error)

	// PutOutbox enqueues item; ErrConflict if its ID exists, which callers
	// treat as "already queued" (enqueueing is idempotent by ID). Defaults:
	// an empty Status means pending, zero CreatedAt and UpdatedAt mean now,
	// and a zero NextAttemptAt means CreatedAt (due at once). The ID must
	// not be empty and Status must be one of the OutboxStatus values.
	// item itself is not modified.
	PutOutbox(ctx context.Context, item *OutboxItem) error
	// GetOutbox returns the item, or ErrNotFound.
	GetOutbox(ctx context.Context, id string) (*OutboxItem, error)
	// ListOutbox returns items matching f, ordered by NextAttemptAt, then
	// CreatedAt, then ID.
	ListOutbox(ctx context.Context, f OutboxFilter) ([]*OutboxItem, error)
	// UpdateOutbox applies fn to the stored item in one write transaction
	// and stores the result with UpdatedAt set to now; fn's error is
	// returned as is and leaves the item unchanged, which makes fn a
	// compare-and-set (for example, claim only if still pending). fn may
	// not change ID and must not call the Store. Returns the stored item;
	// ErrNotFound if absent.
	UpdateOutbox(ctx context.Context, id string, fn func(*OutboxItem) error) (*OutboxItem, error)

	// PruneOutbox deletes the delivered items of kind (every kind when
	// empty) delivered before deliveredBefore, and returns how many.
	PruneOutbox(ctx context.Context, kind string, deliveredBefore time.Time) (int64, error)

	// PutSubagent inserts a registry row; ErrConflict if its ChildRunID
	// exists. An empty Status means active; zero CreatedAt and UpdatedAt
	// mean now. r itself is not modified.
	PutSubagent(ctx context.Context, r *SubagentRun) error
	// GetSubagent returns the row of a child run, or ErrNotFound.
	GetSubagent(ctx context.Context, childRunID string) (*SubagentRun, error)
	// ListSubagents returns rows matching f, newest first.
	ListSubagents(ctx context.Context, f SubagentFilter) ([]*SubagentRun, error)
	// UpdateSubagent applies fn to the stored row in one write transaction
	// and stores it with UpdatedAt set to now; fn's error is returned as is
	// and leaves the row unchanged. fn may not change ChildRunID and must
	// not call the Store. ErrNotFound if absent.
	UpdateSubagent(ctx context.Context, childRunID string, fn func(*SubagentRun) error) (*SubagentRun, error)

	// Close releases the store. A second call returns net.ErrClosed.
	Close() error
}
