package subagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Names. The registry of spawned runs is the store's sub-agent table; an
// "announce" outbox item is a child's completion, written in the
// transaction that ends the child run and delivered to the requester
// exactly once by the outbox dispatcher.
const (
	KindAnnounce = "announce"
	// LaneSubagent is the lane of spawned child runs.
	LaneSubagent = "subagent"
	// LaneAnnounce is the lane of announce runs on the requester.
	LaneAnnounce = "announce"
	// announceSource is the inputProvenance sourceTool of announces.
	announceSource = "subagent_announce"
)

// Defaults of the dispatcher and sweeper.
const (
	DefaultAnnounceExpiry = 7 * 24 * time.Hour
	DefaultSweepInterval  = 60 * time.Second
	// announceRetention is how long delivered announces are kept (for
	// announces.list and subagents.list) before the dispatcher prunes them.
	announceRetention = 30 * 24 * time.Hour
)

// Store is what the manager needs of the store.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error)
	DeleteSession(ctx context.Context, key string, deleteTranscript bool) error
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	PutOutbox(ctx context.Context, item *store.OutboxItem) error
	GetOutbox(ctx context.Context, id string) (*store.OutboxItem, error)
	ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error)
	UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error)
	PutSubagent(ctx context.Context, r *store.SubagentRun) error
	GetSubagent(ctx context.Context, childRunID string) (*store.SubagentRun, error)
	ListSubagents(ctx context.Context, f store.SubagentFilter) ([]*store.SubagentRun, error)
	UpdateSubagent(ctx context.Context, childRunID string, fn func(*store.SubagentRun) error) (*store.SubagentRun, error)
}

// Outbox is the dispatcher that delivers announces (internal/outbox).
type Outbox interface {
	KickTargeted()
	KickSession(kind, key string)
	Redeliver(ctx context.Context, id string) (*store.OutboxItem, error)
}

// Runner is what the manager needs of the agent runner.
type Runner interface {
	Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error)
	Abort(ctx context.Context, runID string) (bool, error)
	Busy(sessionKey string) bool
	Subscribe(fn func(agent.Event)) (unsubscribe func())
	QueueSettings(ctx context.Context, sessionKey, requestMode, channel string) (policy.QueueSettings, error)
	Budgets(ctx context.Context, sessionKey string) ([]agent.BudgetNode, error)
}

// Admitter starts runs: the admission step (*admission.Admitter).
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// Config configures a Manager. Store, Runner, Admit and Settings are
// required.
type Config struct {
	Store    Store
	Runner   Runner
	Admit    Admitter
	Settings *settings.Settings
	// Models validates explicit model overrides; nil accepts any.
	Models agent.ModelResolver
	// AnnounceExpiry is how long an announce is retried before it becomes
	// a dead letter; zero means DefaultAnnounceExpiry.
	AnnounceExpiry time.Duration
	// Shared says that other gateway nodes deliver announces from the
	// same store: a batch another dispatcher claimed is left to it while
	// it may still be at work (see staleClaim).
	Shared bool
	// NodeID is this gateway node's id when Shared. A batch claimed by an
	// earlier process of the same node (before a restart) is taken over
	// at once: that process is gone, so no one is at work on it.
	NodeID string
	// NodeAlive, when set (a cluster), reports whether the gateway node
	// with the given id holds a live lease. A batch claimed by a node
	// whose lease ended is taken over at once, as its runs and lanes are:
	// that node is dead (or fenced), and waiting staleClaim for it would
	// hold its requesters' results long after its work was adopted.
	NodeAlive func(ctx context.Context, id string) (bool, error)
	// NodeValid, when set (a cluster), reports whether this node may still
	// act under its lease. A batch is not claimed, nor its run made, while
	// it may not: once the lease ended another node takes the claim over
	// (NodeAlive), and a run made after that would post the results twice.
	NodeValid func() bool
	// SweepInterval is the archive sweeper's period; zero means 60s.
	SweepInterval time.Duration
	// OnRefusal, when set, is told of each spawn a guardrail refused
	// ("loop", "budget"), for counting.
	OnRefusal func(kind string)
	Logger    *slog.Logger
	// Tracer records spawn and announce spans; nil is tracing off.
	Tracer *telemetry.Tracer
	// Outbox is the dispatcher that runs AnnounceHandler (register it
	// there); required by Start.
	Outbox Outbox
	Now    func() time.Time
	NewID  func() string
}

// Manager spawns sub-agent runs, turns their completions into durable
// announces, delivers those to the requester when its lane is idle, and
// archives finished children. Safe for concurrent use; Start begins its
// background work and Close stops it.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	alias sessionkey.MainAlias

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	unsub  func()

	// claimer tags this process's batch claims (Announce.ClaimedBy):
	// the node's id, a slash, and an id of this process.
	claimer string
	// delivering serialises deliverAnnounces on a store no other node
	// delivers from (not Config.Shared): a lone announce is delivered
	// there without a claim (deliverBatch), which only one delivery at a
	// time keeps exactly-once.
	delivering sync.Mutex

	// mu guards the fields that follow.
	mu     sync.Mutex
	active map[string]map[string]string // live children: requester → child run id → child key
	closed bool
	// claiming holds the batch run ids this process is delivering now.
	claiming map[string]bool
	// passes counts the reconcile passes under way; ended holds the
	// child runs whose finish hook ran meanwhile, so that a pass that
	// read such a run live before it ended does not count it (cleared
	// when no pass is under way).
	passes int
	ended  map[string]bool

	// reconcile asks reconcileLoop for a pass (capacity one: requests
	// made while one waits are coalesced with it).
	reconcile chan struct{}
}

// Record is the registry payload of one spawned run.
type Record struct {
	ChildRunID        string `json:"childRunId"`
	ChildSessionKey   string `json:"childSessionKey"`
	AgentID           string `json:"agentId"`
	RequesterKey      string `json:"requesterKey"`
	RequesterDisplay  string `json:"requesterDisplay"`
	RequesterParent   string `json:"requesterParent,omitempty"`
	RequesterChannel  string `json:"requesterChannel,omitempty"`
	Task              string `json:"task"`
	Label             string `json:"label,omitempty"`
	Cleanup           string `json:"cleanup"`
	Mode              string `json:"mode"`
	Model             string `json:"model,omitempty"`
	RunTimeoutSeconds int    `json:"runTimeoutSeconds"`
	CreatedAt         int64  `json:"createdAt"`
	ArchiveAtMs       int64  `json:"archiveAtMs,omitempty"`
	Workspace         string `json:"workspace,omitempty"`
	AttachmentsDir    string `json:"attachmentsDir,omitempty"`
	RetainAttachments bool   `json:"retainAttachments,omitempty"`
	// Killed is set by Kill (subagents kill, /stop) before the run is
	// aborted: its end is not announced to the requester (the reference's
	// suppressAnnounceReason "killed"), since whoever killed it asked for
	// the work to stop, not for a turn about it. Cleanup still runs.
	Killed bool `json:"killed,omitempty"`
}

// Announce is the payload of an announce item.
type Announce struct {
	ChildRunID      string `json:"childRunId"`
	ChildSessionKey string `json:"childSessionKey"`
	RequesterKey    string `json:"requesterKey"`
	// Skip is set when the child answered ANNOUNCE_SKIP/NO_REPLY: nothing
	// is posted, but cleanup still runs.
	Skip    bool   `json:"skip,omitempty"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// BatchRunID is the requester run this announce was claimed for; set
	// just before that run is submitted.
	BatchRunID string `json:"batchRunId,omitempty"`
	// ClaimedBy is the claiming process's Manager.claimer (node id/process
	// id), with BatchRunID.
	ClaimedBy string `json:"claimedBy,omitempty"`
	// Untrusted is the outside origin the child's run came from (its
	// chain's; "" for the operator's): the requester's turn that takes the
	// result is as untrusted as the child was.
	Untrusted string `json:"untrusted,omitempty"`
}

// New returns a manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Runner == nil || cfg.Admit == nil || cfg.Settings == nil {
		return nil, errors.New("subagent.New: Store, Runner, Admit and Settings are required")
	}
	if cfg.AnnounceExpiry <= 0 {
		cfg.AnnounceExpiry = DefaultAnnounceExpiry
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	m := &Manager{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "subagent"),
		alias:     sessionkey.NewMainAlias(cfg.Settings.Scope, cfg.Settings.MainKey),
		active:    make(map[string]map[string]string),
		claiming:  make(map[string]bool),
		reconcile: make(chan struct{}, 1),
		claimer:   cfg.NodeID + "/" + strings.ReplaceAll(cfg.NewID(), "/", "-"),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// announceID is idempotent on (child run, target).
func announceID(childRunID, target string) string {
	return KindAnnounce + ":" + childRunID + ":" + target
}

// announceRunID is the run id of the announce run on the requester; a
// repeated delivery gets the same run back (exactly once).
func announceRunID(childKey, childRunID string) string {
	return "announce:v1:" + childKey + ":" + childRunID
}

// Start recovers state left by a crash and starts the archive sweeper;
// announces are delivered by the outbox dispatcher of Config.Outbox.
// Call it after the runner's Recover.
func (m *Manager) Start(ctx context.Context) error {
	if m.cfg.Outbox == nil {
		return errors.New("subagent: Start without an Outbox")
	}
	if err := m.recover(ctx); err != nil {
		return err
	}
	m.unsub = m.cfg.Runner.Subscribe(func(ev agent.Event) {
		if ev.Stream != agent.StreamLifecycle || ev.Phase != agent.PhaseEnd {
			return
		}
		// The event comes after the run (and its announce) is stored.
		if ev.Lane == LaneSubagent && ev.SpawnedBy != "" {
			m.cfg.Outbox.KickSession(KindAnnounce, ev.SpawnedBy)
			return
		}
		// A requester's lane may have gone idle: its deferred announces
		// are listed between full scans, and only those need a pass.
		m.cfg.Outbox.KickTargeted()
	})
	m.wg.Go(m.sweepLoop)
	m.wg.Go(m.reconcileLoop)
	return nil
}

// Close stops the background work and waits for it. A second call returns
// net.ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return net.ErrClosed
	}
	m.closed = true
	m.mu.Unlock()
	if m.unsub != nil {
		m.unsub()
	}
	m.cancel()
	m.wg.Wait()
	return nil
}

// Reconcile writes the announces of children that ended outside the
// runner's finish path since Start: runs aborted when the gateway node
// running them died and another node adopted its work.
func (m *Manager) Reconcile(ctx context.Context) error { return m.recover(ctx) }

// Reconcile's retries: the first after reconcileRetryMin, each next one
// twice as late, up to reconcileRetryMax.
const (
	reconcileRetryMin = 100 * time.Millisecond
	reconcileRetryMax = 30 * time.Second
	// reconcileEvery is how many archive sweeps go between two passes
	// that write any announce a failed write left out.
	reconcileEvery = 5
)

// ReconcileSoon asks for a Reconcile pass in the background, retried with
// backoff until one succeeds or Close; requests made while one waits are
// coalesced with it. It does not block.
func (m *Manager) ReconcileSoon() {
	select {
	case m.reconcile <- struct{}{}:
	default:
	}
}

// reconcileLoop runs the passes ReconcileSoon asks for until Close.
func (m *Manager) reconcileLoop() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.reconcile:
		}
		for delay := reconcileRetryMin; ; delay = min(2*delay, reconcileRetryMax) {
			err := m.recover(m.ctx)
			if err == nil {
				m.pruneActive(m.ctx, "")
				break
			}
			if m.ctx.Err() != nil {
				return
			}
			m.log.Warn("sub-agent announces not reconciled; retrying", "err", err, "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-m.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// recover rebuilds the live-children index and writes the announce of every
// child that ended while no announce could be written (a run aborted by a
// restart ends outside the runner's finish path).
func (m *Manager) recover(ctx context.Context) error {
	m.mu.Lock()
	m.passes++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.passes--; m.passes == 0 {
			m.ended = nil
		}
	}()
	rows, err := m.cfg.Store.ListSubagents(ctx, store.SubagentFilter{Statuses: []store.SubagentStatus{store.SubagentActive}})
	if err != nil {
		return fmt.Errorf("subagent: recover: %w", err)
	}
	for _, row := range rows {
		rec, err := decodeRecord(row)
		if err != nil {
			m.log.Error("bad sub-agent record", "err", err)
			continue
		}
		run, err := m.cfg.Store.GetRun(ctx, rec.ChildRunID)
		if errors.Is(err, store.ErrNotFound) {
			continue // the spawn never got its run
		}
		if err != nil {
			return fmt.Errorf("subagent: recover: %w", err)
		}
		if !run.Status.Terminal() {
			m.addLive(rec.RequesterKey, rec.ChildRunID, rec.ChildSessionKey)
			continue
		}
		if !run.EndedAt.IsZero() && m.cfg.Now().Sub(run.EndedAt) > announceRetention/2 {
			// Long over: its delivered announce may have been pruned
			// (announceRetention), and must not be written again.
			continue
		}
		target := rec.RequesterKey
		if _, err := m.cfg.Store.GetOutbox(ctx, announceID(rec.ChildRunID, target)); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("subagent: recover: %w", err)
		}
		item, err := m.announceItem(ctx, rec, run, store.RunResult{Status: run.Status, Error: run.Error, Usage: run.Usage, EndedAt: run.EndedAt}, nil)
		if err != nil {
			return err
		}
		if err := m.cfg.Store.PutOutbox(ctx, item); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("subagent: recover: %w", err)
		}
		m.log.Info("announce written for a child that ended during a restart", "child", rec.ChildSessionKey, "runId", rec.ChildRunID)
	}
	return nil
}

func (m *Manager) addActive(requester, runID, childKey string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addActiveLocked(requester, runID, childKey)
}

func (m *Manager) addActiveLocked(requester, runID, childKey string) {
	set := m.active[requester]
	if set == nil {
		set = make(map[string]string)
		m.active[requester] = set
	}
	set[runID] = childKey
}

// addLive is addActive for a reconcile pass that read the run live: not
// when the run's finish hook ran since the pass began.
func (m *Manager) addLive(requester, runID, childKey string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ended[runID] {
		m.addActiveLocked(requester, runID, childKey)
	}
}

// finished is dropActive for a child run whose finish hook runs: a
// reconcile pass under way that read it live does not count it again.
func (m *Manager) finished(requester, runID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.passes > 0 {
		if m.ended == nil {
			m.ended = make(map[string]bool)
		}
		m.ended[runID] = true
	}
	m.dropActiveLocked(requester, runID)
}

func (m *Manager) dropActive(requester, runID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropActiveLocked(requester, runID)
}

func (m *Manager) dropActiveLocked(requester, runID string) {
	if set := m.active[requester]; set != nil {
		delete(set, runID)
		if len(set) == 0 {
			delete(m.active, requester)
		}
	}
}

// ActiveDescendants returns how many sub-agents below key (its children,
// theirs, and so on) are still running.
func (m *Manager) ActiveDescendants(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	seen := map[string]bool{key: true}
	queue := []string{key}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, child := range m.active[cur] {
			n++
			if !seen[child] {
				seen[child] = true
				queue = append(queue, child)
			}
		}
	}
	return n
}

// pruneActive drops from the live-children index of requester (of every
// requester when "") each child whose run the store has as ended: a child
// counted live here (a reconcile rebuilt the index) may have ended on
// another gateway node, where this node's finish hook never ran. An entry
// whose run is not stored yet (a spawn under way) stays, and so does one
// the store could not be asked about.
func (m *Manager) pruneActive(ctx context.Context, requester string) {
	type entry struct{ requester, runID string }
	var entries []entry
	m.mu.Lock()
	for req, set := range m.active {
		if requester != "" && req != requester {
			continue
		}
		for runID := range set {
			entries = append(entries, entry{req, runID})
		}
	}
	m.mu.Unlock()
	for _, en := range entries {
		run, err := m.cfg.Store.GetRun(ctx, en.runID)
		if err == nil && run.Status.Terminal() {
			m.dropActive(en.requester, en.runID)
		}
	}
}

// ActiveChildren returns how many children of requester are still running.
func (m *Manager) ActiveChildren(requester string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active[requester])
}

// OnFinish is the runner's finish hook: when a registered child run ends,
// its announce is added to the outbox in the same transaction.
func (m *Manager) OnFinish(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message) {
	if run.Lane != LaneSubagent {
		return
	}
	rec, err := m.record(ctx, run.RunID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			m.log.Error("sub-agent record unreadable; announce deferred to recovery", "runId", run.RunID, "err", err)
		}
		return
	}
	m.finished(rec.RequesterKey, run.RunID)
	item, err := m.announceItem(ctx, rec, run, *res, last)
	if err != nil {
		m.log.Error("announce not built; deferred to recovery", "runId", run.RunID, "err", err)
		return
	}
	res.Outbox = append(res.Outbox, *item)
}

// announceItem builds the announce of a finished child run.
func (m *Manager) announceItem(ctx context.Context, rec *Record, run *store.Run, res store.RunResult, last *transcript.Message) (*store.OutboxItem, error) {
	var result *string
	if last != nil {
		if txt := transcript.AssistantText(last); txt != "" {
			result = FreezeResult(txt)
		}
	}
	if result == nil {
		result = m.childResult(ctx, rec.ChildSessionKey, run.RunID)
	}
	a := Announce{ChildRunID: rec.ChildRunID, ChildSessionKey: rec.ChildSessionKey, RequesterKey: rec.RequesterKey}
	var cin agent.Input
	if json.Unmarshal(run.Input, &cin) == nil {
		a.Untrusted = cin.Untrusted()
	}
	outcome := Outcome{Status: "ok"}
	switch res.Status {
	case store.RunOK:
	case store.RunTimeout:
		outcome = Outcome{Status: "timeout"}
	default:
		outcome = Outcome{Status: "error", Error: cmp.Or(res.Error, string(res.Status)), Budget: res.StopReason == agent.StopBudget}
	}
	a.Status = outcome.Status
	if rec.Killed || res.Status == store.RunOK && result != nil && (sanitize.IsSkip(*result, sanitize.AnnounceSkip) || sanitize.IsSkip(*result, sanitize.NoReply)) {
		a.Skip = true
	} else {
		a.Message = m.eventText(ctx, rec, run, res, outcome, result)
	}
	payload, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	return &store.OutboxItem{
		ID: announceID(rec.ChildRunID, rec.RequesterKey), Kind: KindAnnounce, SessionKey: rec.RequesterKey,
		RunID: rec.ChildRunID, Payload: payload, Status: store.OutboxPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
	}, nil
}

// eventText is the internal task-completion event posted to the requester.
func (m *Manager) eventText(ctx context.Context, rec *Record, run *store.Run, res store.RunResult, outcome Outcome, result *string) string {
	var sessionID string
	var in, out, total int64
	if s, err := m.cfg.Store.GetSession(ctx, rec.ChildSessionKey); err == nil {
		sessionID = s.SessionID
		in, out, total = s.InputTokens, s.OutputTokens, s.TotalTokens
	}
	// The session counters do not include this run yet (they are added in
	// the same transaction that records it).
	if res.Status != "" && !run.Status.Terminal() {
		in, out, total = in+res.Usage.Input, out+res.Usage.Output, total+res.Usage.TotalTokens
	}
	ended := res.EndedAt
	if ended.IsZero() {
		ended = run.EndedAt
	}
	var runtime time.Duration
	if !run.StartedAt.IsZero() && !ended.IsZero() {
		runtime = ended.Sub(run.StartedAt)
	}
	findings := ""
	if result != nil {
		findings = *result
	}
	requesterIsSub := sessionkey.SubagentDepth(rec.RequesterKey) >= 1
	return AnnounceMessage(Event{
		Source: "subagent", ChildSessionKey: rec.ChildSessionKey, ChildSessionID: cmp.Or(sessionID, "unknown"),
		AnnounceType: "subagent task", TaskLabel: TaskLabel(rec.Label, rec.Task), Status: outcome.Status,
		StatusLabel: StatusLabel(outcome), Result: findings, StatsLine: StatsLine(runtime, in, out, total),
		ReplyInstruction: ReplyInstruction(requesterIsSub, true),
	})
}

// childResult is the child's frozen output: its latest assistant text, else
// the latest tool result text (never user text).
func (m *Manager) childResult(ctx context.Context, childKey, runID string) *string {
	s, err := m.cfg.Store.GetSession(ctx, childKey)
	if err != nil {
		return nil
	}
	msgs, err := m.cfg.Store.History(ctx, s.SessionID, store.HistoryOptions{RunID: runID, Limit: 200})
	if err != nil {
		return nil
	}
	var toolText string
	for i := len(msgs) - 1; i >= 0; i-- {
		msg := msgs[i].Entry.Message
		if msg == nil {
			continue
		}
		switch msg.Role {
		case transcript.RoleAssistant:
			if txt := transcript.AssistantText(msg); txt != "" {
				return FreezeResult(txt)
			}
		case transcript.RoleToolResult, transcript.RoleTool:
			if toolText == "" {
				toolText = msg.Content.Text()
			}
		}
	}
	return FreezeResult(toolText)
}
