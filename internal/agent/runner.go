// Package agent owns agent runs: per-session lanes (one active run per
// session, later input queued in order), the provider↔tool loop with a step
// limit, runIds and idempotency, server-side waits, timeouts, aborts, and the
// event stream that gateways and tools subscribe to.
//
// It depends on the store, provider and tools contracts only; the daemon wires
// concrete backends in. Imported by daemon, gateway and tool packages.
package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/stackstart"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
	"github.com/switchboardhq/switchboard/internal/workers"
)

// Defaults used when Config leaves a field zero.
const (
	DefaultMaxSteps     = 32
	DefaultTimeout      = 600 * time.Second
	DefaultHistoryLimit = 400
	// DefaultOpenLinger is how long a run's open may wait uncommitted for
	// the run's end to share its commit (Config.OpenLinger).
	DefaultOpenLinger = 2 * time.Millisecond
)

// Errors reported as run errors or returned by Runner methods.
var (
	// ErrClosed is returned by Submit after Shutdown or Close began.
	ErrClosed = errors.New("agent: runner closed")
	// errAborted is the cancellation cause of an aborted run.
	errAborted = errors.New("aborted")
	// errShutdown is the cancellation cause of runs cut by shutdown.
	errShutdown = errors.New(ShutdownError)
)

// Store is the subset of store.Store the runner needs.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error)
	UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error)
	AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error)
	PostMessage(ctx context.Context, sessionID, idemKey string, msg store.Message) (store.Message, bool, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
	CountMessages(ctx context.Context, sessionID string) (int64, error)
	CreateRun(ctx context.Context, r *store.Run) error
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	UpdateRun(ctx context.Context, runID string, fn func(*store.Run) error) (*store.Run, error)
	StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error)
	FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error)
	AbortInterrupted(ctx context.Context, now time.Time, errText string) ([]*store.Run, error)
}

var _ Store = store.Store(nil)

// Model is a resolved model: the provider to stream from and the names to
// record in transcripts.
type Model struct {
	Provider   provider.Provider
	ProviderID string // e.g. "openai"
	ModelID    string // the provider's model id
	API        string // e.g. "openai-completions"
	MaxTokens  int
	// ContextTokens and ContextWindow are the catalogue's limits (0:
	// unset); see compaction.ResolveWindow.
	ContextTokens int
	ContextWindow int
	// Price is what the model costs (models.providers.<p>.models[].cost);
	// nil when not configured, and the usage then carries no cost.
	Price *Price
}

// Price is a model's price per million tokens of each kind.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is the cost of usage u at price p.
func (p *Price) Cost(u transcript.Usage) *transcript.Cost {
	if p == nil {
		return nil
	}
	c := &transcript.Cost{
		Input:      float64(u.Input) * p.Input / 1e6,
		Output:     float64(u.Output) * p.Output / 1e6,
		CacheRead:  float64(u.CacheRead) * p.CacheRead / 1e6,
		CacheWrite: float64(u.CacheWrite) * p.CacheWrite / 1e6,
	}
	c.Total = c.Input + c.Output + c.CacheRead + c.CacheWrite
	return c
}

// ModelResolver finds the model for a run.
type ModelResolver interface {
	// ResolveModel returns the model for agentID; ref is an explicit
	// "<provider>/<model>" override or "" for the agent's default.
	ResolveModel(agentID, ref string) (Model, error)
}

// RunInfo describes a run to the callbacks that shape it.
type RunInfo struct {
	RunID      string
	SessionKey string
	AgentID    string
	Lane       string
	Session    *store.Session
	Input      *Input
}

// Config configures a Runner. Store and Models are required.
type Config struct {
	Store  Store
	Models ModelResolver
	// Tools returns the tools offered to a run; nil means none. ctx is the
	// run's (it may start MCP servers or read the store).
	Tools func(ctx context.Context, info RunInfo) *tools.Set
	// Preflight, when set, runs before the first model call; an error ends
	// the run with that error and the model is never called (the sandbox
	// fails closed this way when its backend is unavailable).
	Preflight func(context.Context, RunInfo) error
	// Workspace returns the directory a run's file tools work in (handed to
	// tools as the caller's Workspace), within the run's ctx. Optional.
	Workspace func(ctx context.Context, info RunInfo) string
	// SystemPrompt returns the base system prompt of a run; the input's
	// ExtraSystemPrompt is appended after it. ctx is the run's.
	SystemPrompt func(ctx context.Context, info RunInfo) string
	// InitSession fills in a session row created by the runner for a new
	// key (kind, chat type, channel...). Optional.
	InitSession func(s *store.Session, in *Input)
	// RedactToolCall, when set, rewrites a tool call's arguments for the
	// stored transcript and events (the tool still gets the original), e.g.
	// to keep attachment contents out of persisted sessions_spawn calls.
	RedactToolCall func(name string, args json.RawMessage) json.RawMessage
	// MaskText, when set, masks secrets in tool results (their text,
	// blocks and details) before the model, the transcript or an event
	// sees them: a command that prints the gateway's environment or a
	// file holding a key leaks nothing.
	MaskText func(string) string
	// Tracer, when set, records spans of runs, model calls and tool calls
	// in their chain's trace; nil is tracing off.
	Tracer *telemetry.Tracer
	// OnFinish is called just before a run is recorded terminal; items it
	// appends to res.Outbox are stored in the same transaction (how a
	// sub-agent's completion announce can never be lost). last is the run's
	// last assistant message (nil when none). It must not block for long.
	// Optional.
	OnFinish func(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message)

	// MaxSteps bounds model turns per run (a guard against tool loops).
	MaxSteps int
	// DefaultTimeout applies to runs whose Input.Timeout is zero.
	DefaultTimeout time.Duration
	// HistoryLimit bounds how many transcript entries are sent to the model.
	HistoryLimit int
	// OpenLinger is how long the open of a run on an idle lane may wait
	// uncommitted, with the run going on, for its end (or any other write)
	// to share its commit (store.Linger): a model that answers within it
	// makes the turn one commit instead of two. Submit returns once the
	// open is committed. Zero means DefaultOpenLinger; negative, never.
	OpenLinger time.Duration
	// Compaction configures context management for long sessions.
	Compaction CompactionConfig
	// Pruning trims old tool results in requests (contextPruning).
	Pruning PruningConfig
	// ResetRule returns a session's automatic reset (session.reset);
	// nil means none.
	ResetRule func(*store.Session) compaction.ResetRule
	// OnCompact, when set, is called (and awaited) before every compaction
	// of a session (phase CompactBefore, res nil) and after each one that
	// compacted (CompactAfter): the session:compact:before|after hooks.
	OnCompact func(ctx context.Context, phase string, sess *store.Session, res *CompactResult)
	// RootBudget returns the spending limits of a session tree rooted at a
	// session of agentID (agents.defaults.budget, agents.list[].budget);
	// nil or zero limits: none. A spawned session's own limits are stored
	// on it at spawn.
	RootBudget func(agentID string) spend.Limits
	// Queue is messages.queue: how messages to a busy session are queued,
	// for callers that resolve it through QueueSettings.
	Queue policy.QueueConfig
	// Lanes, when set, shares session lanes with other gateway nodes on
	// the same store (see Lanes); nil: this runner owns every lane.
	Lanes Lanes

	Logger *slog.Logger
	Now    func() time.Time
	NewID  func() string
}

// Input is one request to run an agent turn on a session. It is stored with
// the run, so a queued run survives a restart.
type Input struct {
	// RunID is the caller's idempotency key; a new id is made when empty.
	// Submitting the same RunID again returns the existing run.
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"` // canonical store key
	AgentID    string `json:"agentId"`
	Message    string `json:"message"`
	Lane       string `json:"lane,omitempty"`

	// Provenance marks input that did not come from a person.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Chain is the chain of causes this input continues (sessions_send,
	// spawns, their flows); nil starts a new chain at this run.
	Chain *tools.Chain `json:"chain,omitempty"`
	// IdempotencyKey recorded on the stored user message.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`

	ExtraSystemPrompt string `json:"extraSystemPrompt,omitempty"`
	Model             string `json:"model,omitempty"`
	Thinking          string `json:"thinking,omitempty"`
	// Images go with Message in the user message (image blocks after its
	// text block); callers check type and size (see package media).
	Images []provider.Image `json:"images,omitempty"`
	// Sampling is forwarded best-effort to every model call of the run.
	Sampling *provider.Sampling `json:"sampling,omitempty"`
	// ClientTools are tools the caller executes itself (the HTTP API's
	// function tools): offered to the model beside the agent's own (a name
	// that collides fails the run with ClientToolConflict), and a call of
	// one ends the run with the call pending in the last assistant message,
	// for the caller to answer in its next message.
	ClientTools []provider.ToolDef `json:"clientTools,omitempty"`
	// Timeout bounds the run; zero means Config.DefaultTimeout, negative
	// means no timeout.
	Timeout time.Duration `json:"timeout,omitempty"`

	// Origin of the input, handed to tools as the caller's channel.
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`

	// QueueMode is what the input does when its session is busy, resolved
	// when it was accepted (steer, followup, collect, interrupt; "" is
	// followup). It is stored with the run, so a queued message keeps its
	// mode across a restart.
	QueueMode string `json:"queueMode,omitempty"`
	// QueueCap bounds the session's queued runs when this input arrives
	// (0: no cap); QueueDrop ("summarize", "old", "new") says what happens
	// at the cap.
	QueueCap  int    `json:"queueCap,omitempty"`
	QueueDrop string `json:"queueDrop,omitempty"`
	// QueueDebounceMs is the quiet window before a collected turn runs.
	QueueDebounceMs int `json:"queueDebounceMs,omitempty"`
	// QueueKeep exempts the input from being dropped at another input's
	// cap: a sub-agent's result announced to its requester is never lost.
	QueueKeep bool `json:"queueKeep,omitempty"`

	// Carries names the outbox items (announces) the run delivers: a
	// dispatcher that finds the run made already settles these and no
	// others claimed for it.
	Carries []string `json:"carries,omitempty"`

	// Step marks an internal step of a flow (a reply-back turn, an
	// announce step): not a turn of the session's conversation, so a
	// steered message never joins it; it waits for the next turn.
	Step bool `json:"step,omitempty"`
	// Compact, when set, makes the run a manual compaction of the
	// session instead of a model turn (see CompactRun).
	Compact *CompactInput `json:"compact,omitempty"`

	// Used only when the session does not exist yet.
	Label     string `json:"label,omitempty"`
	SpawnedBy string `json:"spawnedBy,omitempty"`

	// Session, when not nil, is the session as the caller read it just
	// before Enqueue (admission does): Enqueue does not read it again.
	// Not stored with the run.
	Session *store.Session `json:"-"`
}

// Untrusted returns where the input comes from when that is outside the
// operator ("" when it is not): the origin its chain of causes carries,
// else the one its own door gives it (channel, provenance kind, session
// key; see policy.Untrusted). Submit folds it into the stored chain, so
// everything the run causes inherits it.
func (in *Input) Untrusted() string {
	if in.Chain != nil && in.Chain.Untrusted != "" {
		return in.Chain.Untrusted
	}
	prov := ""
	if in.Provenance != nil {
		prov = in.Provenance.Kind
	}
	return policy.Untrusted(in.Channel, prov, in.SessionKey)
}

// Provenance is where non-human input came from (stored on the message as
// provenance, with kind "inter_session" for session-to-session sends).
type Provenance struct {
	Kind             string `json:"kind"`
	SourceSessionKey string `json:"sourceSessionKey,omitempty"`
	SourceChannel    string `json:"sourceChannel,omitempty"`
	SourceTool       string `json:"sourceTool,omitempty"`
	// SourceSessionKeys lists every source of an input that carries
	// several (a batch of sub-agent announces), SourceSessionKey first.
	// It is kept with the run, not on the transcript's message.
	SourceSessionKeys []string `json:"sourceSessionKeys,omitempty"`
}

// Runner executes agent runs. Safe for concurrent use. Create with New, start
// background recovery with Recover, stop with Shutdown or Close.
type Runner struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	newID  func() string
	ctx    context.Context // cancelled with errShutdown on Close
	cancel context.CancelCauseFunc
	// writes is ctx without its cancellation, made once: a run's end and
	// its other writes go on through a shutdown, and each turn makes
	// several of them.
	writes context.Context
	wg     sync.WaitGroup
	// lanes run on kept workers (a run's stack is grown already); wg
	// tracks the lanes themselves.
	workers *workers.Pool

	closeOnce sync.Once
	windows   *windowCache
	toolDefs  toolDefs

	// calib scales token estimates by providers' reported usage.
	calib        compaction.Calibrator
	budgets      treeBudgets
	durations    runDurations
	compactLocks sessionLocks
	// compactSlots hold the results of compaction runs for the callers
	// waiting on them, by run id; guarded by mu.
	compactSlots map[string]*compactSlot
	summarySem   chan struct{} // bounds summary calls
	bg           backgroundState
	// bgCtx bounds background summaries and flushes; cancelled when
	// shutdown begins.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	prunes   pruneStates
	warned   sync.Map // model refs warned about a small window

	stampMu   sync.Mutex // guards lastStamp
	lastStamp time.Time  // creation time of the latest run this runner made

	// mu guards the fields that follow. Never held across store or
	// provider calls.
	mu      sync.Mutex
	closing bool
	lanes   map[string]*lane                   // by session key; present while busy
	active  map[string]context.CancelCauseFunc // running runs by runID
	fences  map[string]store.Fence             // by runID, with Lanes (fence.go)
	waiters map[string][]*waiter               // by runID
	// live are the runs this node started whose end it has not told
	// yet: each is sure to wake its waiters (wakeEnded), so a wait for
	// one reads nothing first.
	live    map[string]bool
	subs    map[uint64]subscriber
	nextSub uint64

	// subList is a copy-on-write snapshot of subs for the emit hot path.
	subList atomic.Pointer[[]subscriber]
	// events logs every run's recent events for Watch.
	events *eventLog
	// noOpen is set once the store turned out not to be a RunOpener
	// (openIdle).
	noOpen atomic.Bool
	// interests are the registered Interest funcs (interest.go).
	interests interests
}

type subscriber struct {
	id uint64
	fn func(Event)
	// local: only the events of runs executing here (SubscribeLocal).
	local bool
}

type lane struct {
	queue []string // runIDs, in submission order
	// modes holds the queue mode of each queued run (absent: followup).
	modes map[string]string
	// keep holds the queued runs that are never dropped at the cap.
	keep map[string]bool
	// delivered holds the queued runs whose input came from another
	// session or the gateway (Provenance set), not from a person: steered
	// in, they never skip tool calls the model already asked for.
	delivered map[string]bool
	// steers counts the steer-mode runs in queue, so that a run's steps
	// look for steered input only when there is some.
	steers int
	// untrusted holds the queued runs whose input comes from outside the
	// operator (Input.Untrusted). Such input never joins (steers into or is
	// collected with) a run of more trust: it waits for a turn of its own,
	// so a turn's tools are always those of every input it carries.
	untrusted map[string]bool
	// active is the run executing now ("" between runs);
	// activeUntrusted says whether its input comes from outside.
	active          string
	activeUntrusted bool
	// lastArrival is when the newest run joined; the collect quiet window
	// ends debounce after it.
	lastArrival time.Time
	debounce    time.Duration // of the newest collect-mode run
	// overflow holds what drop "summarize" dropped, until the next run
	// of the lane starts and carries the summary.
	overflow overflowState
	// created holds the records of queued runs this node's Submit stored,
	// so their start reads nothing it wrote (execute).
	created map[string]*store.Run
}

// newLane returns an idle lane. Its maps are made by their first put: a
// lane lives for one warm turn, most of which queue nothing behind them.
func newLane() *lane { return &lane{} }

// put sets (*m)[k] to v, making the map first when it is nil.
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = make(map[string]V)
	}
	(*m)[k] = v
}

// New returns a runner. Call Recover once before serving.
func New(cfg Config) (*Runner, error) {
	if cfg.Store == nil {
		return nil, errors.New("agent.New: Store is required")
	}
	if cfg.Models == nil {
		return nil, errors.New("agent.New: Models is required")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.HistoryLimit <= 0 {
		cfg.HistoryLimit = DefaultHistoryLimit
	}
	if cfg.OpenLinger == 0 {
		cfg.OpenLinger = DefaultOpenLinger
	}
	r := &Runner{
		cfg:     cfg,
		log:     cfg.Logger,
		now:     cfg.Now,
		newID:   cfg.NewID,
		lanes:   make(map[string]*lane),
		active:  make(map[string]context.CancelCauseFunc),
		waiters: make(map[string][]*waiter),
		live:    make(map[string]bool),
		subs:    make(map[uint64]subscriber),
		windows: newWindowCache(cfg.HistoryLimit),
		events:  newEventLog(),
		workers: workers.New(maxIdleLaneWorkers),
	}
	r.summarySem = make(chan struct{}, cmp.Or(cfg.Compaction.MaxConcurrent, 4))
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "agent")
	if r.now == nil {
		r.now = time.Now
	}
	if r.newID == nil {
		r.newID = uuid.NewString
	}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	r.writes = context.WithoutCancel(r.ctx)
	r.bgCtx, r.bgCancel = context.WithCancel(r.ctx)
	return r, nil
}

// waitPoll is how often a wait on a node of several re-reads its run.
const waitPoll = time.Second

// InterruptedError is the error of a run that a crash or restart cut:
// Recover marks such runs aborted with it.
const InterruptedError = "run interrupted by gateway restart"

// ShutdownError is the error recorded on a run the gateway's shutdown cut
// (status aborted): its grace ran out before the run ended.
const ShutdownError = "gateway shutting down"

// Recover repairs state left by a crash and resumes queued work: runs left
// running are marked aborted (their sessions get abortedLastRun), and runs
// still queued are put back on their lanes in submission order. It returns
// the runs it aborted.
//
// With Lanes set, other nodes may be running runs of the same store: the
// cluster adopts the work of dead nodes instead, and Recover does nothing.
func (r *Runner) Recover(ctx context.Context) ([]*store.Run, error) {
	if r.cfg.Lanes != nil {
		return nil, nil
	}
	aborted, err := r.cfg.Store.AbortInterrupted(ctx, r.now(), InterruptedError)
	if err != nil {
		return nil, fmt.Errorf("agent.Recover: %w", err)
	}
	for _, run := range aborted {
		r.log.Warn("run interrupted by restart marked aborted", "runId", run.RunID, "sessionKey", run.SessionKey)
	}
	queued, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunQueued}})
	if err != nil {
		return aborted, fmt.Errorf("agent.Recover: %w", err)
	}
	for _, run := range queued {
		var in Input
		_ = json.Unmarshal(run.Input, &in) // a bad input fails when the run starts
		if _, err := r.enqueue(run.SessionKey, run.RunID, &in, nil); err != nil {
			return aborted, err
		}
	}
	stackstart.Go(r.wg.Go, r.sweepOrphans)
	return aborted, nil
}

// Submit queues in on its session's lane and returns the run record. When a
// run with in.RunID already exists, Submit returns it and created is false.
// Doors do not call it: they go through package admission (see Enqueue).
func (r *Runner) Submit(ctx context.Context, in Input) (run *store.Run, created bool, err error) {
	e, err := r.Enqueue(ctx, in)
	return e.Run, e.Created, err
}

// Enqueued is what Enqueue did with an input.
type Enqueued struct {
	// Run is the stored run (the existing one for a repeated RunID).
	Run *store.Run
	// Created is false when a run with the input's RunID already existed.
	Created bool
	// Position is how many runs are ahead of it on its session's lane
	// when it was queued (0: it runs now, or it existed already).
	Position int
}

// Enqueue is Submit with the run's place on its lane: it stores the run
// with its input (durably, before it returns) and queues it on its
// session's lane. On an idle lane the run is stored already started, with
// its input message, in one transaction (openIdle).
func (r *Runner) Enqueue(ctx context.Context, in Input) (Enqueued, error) {
	if in.SessionKey == "" {
		return Enqueued{}, errors.New("agent.Submit: sessionKey required")
	}
	// A given run id may exist (a repeated request): the run's insert
	// finds it, and it is read first only before a write that a repeat
	// must not cause (dupCheck).
	dup := &dupCheck{st: r.cfg.Store, runID: in.RunID}
	if in.RunID == "" {
		in.RunID = r.newID()
	}
	r.mu.Lock()
	closing := r.closing
	r.mu.Unlock()
	if closing {
		if err := dup.check(ctx); err != nil {
			return dup.enqueued(err)
		}
		return Enqueued{}, ErrClosed
	}
	known, err := r.autoReset(ctx, &in, in.Session, dup)
	in.Session = nil
	if err != nil {
		return dup.enqueued(err)
	}
	sess, err := r.ensureSession(ctx, &in, known, dup)
	if err != nil {
		return dup.enqueued(err)
	}
	origin := in.Untrusted()
	var chain tools.Chain
	if in.Chain == nil || in.Chain.ID == "" {
		// A run nothing else caused starts a chain of its own, named
		// after it; it is stored with the run like any other chain.
		chain = tools.Chain{ID: in.RunID, Path: []string{in.SessionKey}}
	} else {
		chain = *in.Chain
	}
	// Who is speaking is decided here, once, and stored with the run: the
	// chain carries the least-trusted origin to everything the run causes.
	chain = chain.Taint(origin)
	in.Chain = &chain
	raw, err := json.Marshal(&in)
	if err != nil {
		return Enqueued{}, fmt.Errorf("agent.Submit: %w", err)
	}
	run := &store.Run{
		RunID:      in.RunID,
		SessionKey: in.SessionKey,
		SessionID:  sess.SessionID,
		AgentID:    sess.AgentID,
		Lane:       in.Lane,
		Status:     store.RunQueued,
		Input:      raw,
		CreatedAt:  r.runCreatedAt(),
	}
	if err := r.admit(ctx, &in, dup); err != nil {
		if errors.Is(err, errDuplicate) {
			return dup.enqueued(err)
		}
		return Enqueued{}, err
	}
	if e, done, err := r.openIdle(ctx, run, &in, sess); done {
		return e, err
	}
	if err := storeChild(ctx, in.SessionKey); err != nil {
		return Enqueued{}, fmt.Errorf("agent.Submit: %w", err)
	}
	if err := r.cfg.Store.CreateRun(ctx, run); err != nil {
		if errors.Is(err, store.ErrConflict) {
			existing, gerr := r.cfg.Store.GetRun(ctx, in.RunID)
			if gerr != nil {
				return Enqueued{}, fmt.Errorf("agent.Submit: %w", gerr)
			}
			return Enqueued{Run: existing}, nil
		}
		return Enqueued{}, fmt.Errorf("agent.Submit: %w", err)
	}
	pos, err := r.enqueue(in.SessionKey, in.RunID, &in, run.Clone())
	if err != nil {
		return Enqueued{}, err
	}
	if pos > 0 {
		r.emitQueued(run, &in, pos)
	}
	r.afterEnqueue(ctx, &in)
	return Enqueued{Run: run.Clone(), Created: true, Position: pos}, nil
}

// runCreatedAt returns the creation time of a new run: now, or 1 ms after
// the previous run's when the clock has not moved on since. The store keeps
// milliseconds and lists runs by creation time (then by id), which is the
// order queued runs resume in after a restart; runs accepted within one
// millisecond must still differ to keep their arrival order.
func (r *Runner) runCreatedAt() time.Time {
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	t := r.now().Truncate(time.Millisecond)
	if !t.After(r.lastStamp) {
		t = r.lastStamp.Add(time.Millisecond)
	}
	r.lastStamp = t
	return t
}

// enqueue appends runID to the session's lane, starting the lane worker when
// the lane is idle.
//
// created is the run's record when Submit just stored it (nil otherwise).
func (r *Runner) enqueue(sessionKey, runID string, in *Input, created *store.Run) (position int, err error) {
	mode, debounceMs := in.QueueMode, in.QueueDebounceMs
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return 0, ErrClosed
	}
	l, busy := r.lanes[sessionKey]
	if !busy {
		l = newLane()
		r.lanes[sessionKey] = l
	}
	if mode == ModeInterrupt && busy {
		// The newest message runs next, right after the aborted run.
		l.queue = append([]string{runID}, l.queue...)
		position = 1
	} else {
		l.queue = append(l.queue, runID)
		if busy {
			position = len(l.queue)
			if l.active == "" {
				position-- // the lane is between runs: nothing runs ahead but the queue
			}
		}
	}
	if mode != "" {
		put(&l.modes, runID, mode)
	}
	if mode == ModeSteer {
		l.steers++
	}
	if in.QueueKeep {
		put(&l.keep, runID, true)
	}
	if in.Untrusted() != "" {
		put(&l.untrusted, runID, true)
	}
	if in.Provenance != nil {
		put(&l.delivered, runID, true)
	}
	if created != nil {
		put(&l.created, runID, created)
	}
	if mode == ModeCollect {
		l.debounce = time.Duration(debounceMs) * time.Millisecond
	}
	l.lastArrival = time.Now() // a real-time quiet window, not the injected clock
	if !busy {
		r.wg.Add(1)
		r.workers.Go(func() {
			defer r.wg.Done()
			r.drain(sessionKey, l)
		})
	}
	return position, nil
}

// drain runs the lane's queue one run at a time until it is empty. With
// Lanes, it claims the lane first and gives it up at the end.
func (r *Runner) drain(sessionKey string, l *lane) {
	if r.cfg.Lanes != nil && !r.claimLane(sessionKey, l) {
		return
	}
	for {
		r.mu.Lock()
		if len(l.queue) == 0 && !r.closing && r.cfg.Lanes != nil {
			r.mu.Unlock()
			if r.releaseLane(sessionKey, l) {
				continue
			}
			return
		}
		if len(l.queue) == 0 || r.closing {
			delete(r.lanes, sessionKey)
			r.mu.Unlock()
			return
		}
		runID := l.queue[0]
		if l.modes[runID] == ModeCollect {
			r.mu.Unlock()
			r.collectQuiet(l)
			r.mu.Lock()
			if len(l.queue) == 0 || r.closing {
				r.mu.Unlock()
				continue // the loop head ends the lane
			}
			runID = l.queue[0]
		}
		var collected []string
		if l.modes[runID] == ModeCollect {
			collected = l.takeCollectLocked(runID)
		}
		l.queue = l.queue[1:]
		l.active, l.activeUntrusted = runID, l.untrusted[runID]
		runCtx, cancel := context.WithCancelCause(r.ctx)
		r.active[runID] = cancel
		created := l.created[runID]
		l.forget(runID)
		r.mu.Unlock()
		r.execute(runCtx, cancel, runID, collected, created)
		r.mu.Lock()
		l.active = ""
		r.mu.Unlock()
	}
}

// queueLength returns how many runs wait behind the active one on the
// session's lane.
func (r *Runner) queueLength(sessionKey string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.lanes[sessionKey]; ok {
		return len(l.queue)
	}
	return 0
}

// LaneStats returns how many sessions have a run in progress or queued,
// how many runs wait behind them in all, and the longest single queue.
func (r *Runner) LaneStats() (busy, queued, longest int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lanes {
		busy++
		queued += len(l.queue)
		longest = max(longest, len(l.queue))
	}
	return busy, queued, longest
}

// QueueDepth is one session's count of runs waiting behind its active run.
type QueueDepth struct {
	SessionKey string
	Queued     int
}

// DeepestQueues returns up to n sessions with queued runs, deepest first
// (ties by key).
func (r *Runner) DeepestQueues(n int) []QueueDepth {
	r.mu.Lock()
	var out []QueueDepth
	for key, l := range r.lanes {
		if len(l.queue) > 0 {
			out = append(out, QueueDepth{key, len(l.queue)})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b QueueDepth) int {
		return cmp.Or(b.Queued-a.Queued, strings.Compare(a.SessionKey, b.SessionKey))
	})
	return out[:min(n, len(out))]
}

// Busy reports whether the session has a run in progress or queued.
func (r *Runner) Busy(sessionKey string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.lanes[sessionKey]
	return ok
}

// Wait waits up to timeout (negative: no limit) for the run to end and
// returns its record. done is false when the wait timed out or ctx ended
// first. The run need not exist yet: a wait registered before Submit is
// satisfied when that run ends.
func (r *Runner) Wait(ctx context.Context, runID string, timeout time.Duration) (run *store.Run, done bool, err error) {
	w, live := r.newLiveWaiter(runID)
	defer r.dropWaiter(runID, w)

	// A run this node started and has not ended yet wakes w with its
	// record: nothing to read first.
	if !live {
		run, err = r.cfg.Store.GetRun(ctx, runID)
		switch {
		case err == nil && run.Status.Terminal():
			return run, true, nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, false, fmt.Errorf("agent.Wait: %w", err)
		}
	}
	var timer <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	// With other nodes, a run's end is relayed from the node that ran it;
	// the store is also looked at now and then, in case a relay is lost.
	var poll <-chan time.Time
	if r.cfg.Lanes != nil {
		t := time.NewTicker(waitPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-poll:
			if cur, err := r.cfg.Store.GetRun(ctx, runID); err == nil && cur.Status.Terminal() {
				return cur, true, nil
			}
			continue
		case <-w.ch:
			if w.end != nil {
				// The run ended on this node, which handed over the record
				// it stored: nothing to read back.
				return w.end.Clone(), true, nil
			}
			run, err = r.cfg.Store.GetRun(context.WithoutCancel(ctx), runID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, false, fmt.Errorf("agent.Wait: %w", err)
			}
			if err == nil && run.Status.Terminal() {
				return run, true, nil
			}
			// Woken to look again (WakeAll) before the run ended: wait on.
			w = r.newWaiter(runID)
			defer r.dropWaiter(runID, w)
			continue
		case <-timer:
		case <-ctx.Done():
		}
		break
	}
	if cur, err := r.cfg.Store.GetRun(context.WithoutCancel(ctx), runID); err == nil {
		run = cur
		if cur.Status.Terminal() {
			return cur, true, nil // it ended as the wait did
		}
	}
	return run, false, nil
}

// waiter is one wait for a run's end: ch is closed when the run ends (or
// at WakeAll); end is then the run's terminal record when the runner that
// ended it handed it over (set before ch is closed), else nil.
type waiter struct {
	ch  chan struct{}
	end *store.Run
}

// newWaiter registers a waiter for runID: its channel is closed when the
// run ends here, is relayed as ended, or the runner is asked to look at
// every run again (WakeAll).
func (r *Runner) newWaiter(runID string) *waiter {
	w, _ := r.newLiveWaiter(runID)
	return w
}

// newLiveWaiter is newWaiter, also reporting whether runID is live (see
// Runner.live) as the waiter is registered: then its end wakes it.
func (r *Runner) newLiveWaiter(runID string) (*waiter, bool) {
	w := &waiter{ch: make(chan struct{})}
	r.mu.Lock()
	r.waiters[runID] = append(r.waiters[runID], w)
	live := r.live[runID]
	r.mu.Unlock()
	return w, live
}

// setLive marks run runID started on this node (Runner.live).
func (r *Runner) setLive(runID string) {
	r.mu.Lock()
	r.live[runID] = true
	r.mu.Unlock()
}

// notLive unmarks run runID, whose end this node will not tell (it could
// not record it).
func (r *Runner) notLive(runID string) {
	r.mu.Lock()
	delete(r.live, runID)
	r.mu.Unlock()
}

func (r *Runner) dropWaiter(runID string, w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[runID]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, runID)
	} else {
		r.waiters[runID] = ws
	}
}

func (r *Runner) wakeWaiters(runID string) { r.wakeEnded(runID, nil) }

// wakeEnded wakes runID's waiters; end, when not nil, is the run's
// terminal record as this node stored it, handed to them so that they do
// not read it back.
func (r *Runner) wakeEnded(runID string, end *store.Run) {
	r.mu.Lock()
	ws := r.waiters[runID]
	delete(r.waiters, runID)
	delete(r.live, runID)
	r.mu.Unlock()
	for _, w := range ws {
		if end != nil && end.Status.Terminal() {
			w.end = end
		}
		close(w.ch)
	}
}

// Abort stops a run: an active run is cancelled and ends with status
// aborted; a queued run is removed from its lane and marked aborted. It
// reports whether the run was live.
func (r *Runner) Abort(ctx context.Context, runID string) (bool, error) {
	r.mu.Lock()
	if cancel, ok := r.active[runID]; ok {
		r.mu.Unlock()
		cancel(errAborted)
		return true, nil
	}
	removed := false
	for _, l := range r.lanes {
		for i, id := range l.queue {
			if id == runID {
				l.queue = append(l.queue[:i], l.queue[i+1:]...)
				l.forget(runID)
				removed = true
				break
			}
		}
	}
	r.mu.Unlock()
	run, err := r.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("agent.Abort: %w", err)
	}
	switch run.Status {
	case store.RunQueued:
		return true, r.finishQueued(ctx, run, "aborted before start")
	case store.RunRunning:
		// It started after the first look; the cancel func is registered
		// before a run is marked running.
		r.mu.Lock()
		cancel, ok := r.active[runID]
		r.mu.Unlock()
		if ok {
			cancel(errAborted)
			return true, nil
		}
		if r.cfg.Lanes != nil {
			// It runs on another node.
			if err := r.cfg.Lanes.AbortRemote(ctx, runID); err != nil {
				return false, fmt.Errorf("agent.Abort: %w", err)
			}
			return true, nil
		}
	}
	return removed, nil
}

// AbortSession cancels the session's queued runs first (so draining the
// lane cannot start one of them into a half-stopped session), then aborts
// the active run, and returns their ids.
func (r *Runner) AbortSession(ctx context.Context, sessionKey string) ([]string, error) {
	ids, err := r.AbortQueued(ctx, sessionKey)
	if err != nil {
		return ids, fmt.Errorf("agent.AbortSession: %w", err)
	}
	id, err := r.AbortActive(ctx, sessionKey)
	if err != nil {
		return ids, fmt.Errorf("agent.AbortSession: %w", err)
	}
	if id != "" {
		ids = append(ids, id)
	}
	return ids, nil
}

func (r *Runner) finishQueued(ctx context.Context, run *store.Run, msg string) error {
	res := store.RunResult{Status: store.RunAborted, Error: msg, StopReason: provider.StopAborted, EndedAt: r.now()}
	if r.cfg.OnFinish != nil {
		r.cfg.OnFinish(ctx, run, &res, nil)
	}
	fin, err := r.cfg.Store.FinishRun(ctx, run.RunID, res)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil // finished meanwhile
		}
		return fmt.Errorf("agent.Abort: %w", err)
	}
	r.emit(&runState{run: fin}, Event{Stream: StreamLifecycle, Phase: PhaseEnd, Run: fin})
	r.wakeEnded(run.RunID, fin)
	return nil
}

// Subscribe registers fn for every run event: this node's runs' and the
// ones relayed from other nodes or recovered from the store (IsRemote).
// Of a run executing on another node, every node gets the end; its other
// events only while this node wants them (WantsRelayed, AddInterest).
// fn runs on the run's goroutine and must not block. The returned func
// unsubscribes. A door that follows given runs or sessions uses Watch or
// WatchSession instead.
func (r *Runner) Subscribe(fn func(Event)) (unsubscribe func()) {
	return r.subscribe(fn, false)
}

// SubscribeLocal registers fn for the events of the runs executing on this
// runner only (what metrics count and the cluster relays to other nodes):
// events relayed from other nodes and ends recovered from the store do not
// reach it. Otherwise as Subscribe.
func (r *Runner) SubscribeLocal(fn func(Event)) (unsubscribe func()) {
	return r.subscribe(fn, true)
}

func (r *Runner) subscribe(fn func(Event), local bool) (unsubscribe func()) {
	r.mu.Lock()
	id := r.nextSub
	r.nextSub++
	r.subs[id] = subscriber{id: id, fn: fn, local: local}
	r.publishSubsLocked()
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.publishSubsLocked()
		r.mu.Unlock()
	}
}

func (r *Runner) publishSubsLocked() {
	list := make([]subscriber, 0, len(r.subs))
	for _, sub := range r.subs {
		list = append(list, sub)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	r.subList.Store(&list)
}

// Shutdown stops accepting input and waits for running runs to finish until
// ctx ends; then runs still going are cancelled and recorded as aborted.
// Queued runs that never started stay queued and resume at the next
// Recover. Shutdown returns after every run goroutine has exited.
func (r *Runner) Shutdown(ctx context.Context) error {
	first := false
	r.closeOnce.Do(func() { first = true })
	if !first {
		return net.ErrClosed
	}
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.bgCancel() // optional background work does not hold shutdown up
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.cancel(errShutdown)
		<-done
	}
	r.cancel(errShutdown)
	r.workers.Close()
	return nil
}

// maxIdleLaneWorkers bounds the goroutines kept to run lanes on: about
// the sessions busy at once under load.
const maxIdleLaneWorkers = 64

// Close is Shutdown with no grace period.
func (r *Runner) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return r.Shutdown(ctx)
}
