// Package sessions implements the session tools of the product spec —
// sessions_list, sessions_history, sessions_send and agents_list — with the
// reference's parameters, defaults, result shapes, statuses and error
// strings. The same tools serve agents in runs and the gateway's
// tools.invoke method.
//
// The tools are thin: decisions come from internal/policy, settings from
// internal/settings, data from the Store interface declared here, and
// sessions_send hands its message and the agent-to-agent flow that follows
// it (reply-back loop, announce step) to a Messenger, which internal/relay
// implements. This package sits below the runner: it never imports agent.
package sessions

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Store is what the session tools read.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	SessionsByID(ctx context.Context, id string) ([]*store.Session, error)
	ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error)
}

// Messenger carries sessions_send's messages: it queues a message as a
// run on the target's lane, waits for runs, reads a run's reply, and
// follows a sent message with the agent-to-agent flow (reply-back loop and
// announce step), durably, in the background. internal/relay implements it.
type Messenger interface {
	// Send queues m as a run on its target's lane and, when m.Flow is
	// set, records that flow (with the run's id as its WaitRunID) and
	// runs it in the background; a flow cut by a crash resumes after a
	// restart. A refused message records no flow.
	Send(ctx context.Context, m Message) (*store.Run, error)
	// Wait waits up to timeout for the run to end; done reports whether it
	// did.
	Wait(ctx context.Context, runID string, timeout time.Duration) (run *store.Run, done bool, err error)
	// Reply is the reply of run, which has ended, by the reference's
	// sessions_send "ok" rule ("" for none).
	Reply(ctx context.Context, run *store.Run) (string, error)
}

// Message is one sessions_send message to queue on the target's lane.
type Message struct {
	RunID     string
	TargetKey string
	Text      string
	// ExtraSystemPrompt is the agent-to-agent message context (docs/spec/reference-behaviour.md §6.2).
	ExtraSystemPrompt string
	SourceSessionKey  string
	SourceChannel     string
	// Chain is the chain of causes the message continues.
	Chain tools.Chain
	// Flow, when set, is the agent-to-agent flow that follows the
	// message. It is recorded in the transaction that stores the
	// message's run where the store can (one commit less on the
	// sender's path), else on its own right after.
	Flow *Flow
}

// Flow is everything the agent-to-agent flow of docs/spec/reference-behaviour.md §6.4 needs; it is stored
// as JSON while the flow is pending.
type Flow struct {
	TargetKey        string        `json:"targetKey"`
	DisplayKey       string        `json:"displayKey"`
	Message          string        `json:"message"`
	AnnounceTimeout  time.Duration `json:"announceTimeout"`
	MaxTurns         int           `json:"maxTurns"`
	RequesterKey     string        `json:"requesterKey,omitempty"`
	RequesterChannel string        `json:"requesterChannel,omitempty"`
	RoundOneReply    string        `json:"roundOneReply,omitempty"`
	// Chain is the chain of causes of the sent message; each step of the
	// flow is a hop further.
	Chain     tools.Chain `json:"chain,omitzero"`
	WaitRunID string      `json:"waitRunId,omitempty"`
	// RequesterRunID is the run that sent the message: the flow's steps
	// start once it has ended (bounded by the step wait), so that they
	// do not compete with its next steps.
	RequesterRunID string `json:"requesterRunId,omitempty"`
}

// Deps are the session tools' collaborators. Store, Messenger and Settings
// are required.
type Deps struct {
	Store     Store
	Messenger Messenger
	Settings  *settings.Settings
	Logger    *slog.Logger
	Now       func() time.Time
	NewID     func() string
	// StateDir is used for transcriptPath.
	StateDir string
	// OnRefusal, when set, is told of each call a guardrail refused
	// (RefusalLoop, RefusalDeadlock, RefusalBudget), for counting.
	OnRefusal func(kind string)
	// ExpectedWait, when set, estimates how long a message queued at
	// position on a session's lane waits before its run starts.
	ExpectedWait func(sessionKey string, position int) time.Duration
	// Budget, when set, returns the budget of the session tree rooted at
	// a session, for its sessions_list row (nil: none).
	Budget func(ctx context.Context, s *store.Session) (*BudgetView, error)
	// Remote, when set, carries sessions_send to "a2a:<peer>" targets to
	// remote A2A peers.
	Remote Remote
}

// BudgetView is a budgeted session tree as sessions_list shows it on the
// tree's root: its limits, what it used, and why it is spent, if it is.
type BudgetView struct {
	Limits    spend.Limits `json:"limits"`
	Used      BudgetUsed   `json:"used"`
	Exhausted string       `json:"exhausted,omitempty"`
}

// BudgetUsed is what a session tree used of its budget.
type BudgetUsed struct {
	Runs   int64   `json:"runs"`
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost"`
	// Children is the tree's sub-agents running now.
	Children int `json:"children"`
}

// Guardrail refusals reported to Deps.OnRefusal.
const (
	RefusalLoop     = "loop"
	RefusalDeadlock = "deadlock"
	RefusalBudget   = "budget"
)

// refused reports a guardrail refusal.
func (t *Tools) refused(kind string) {
	if t.d.OnRefusal != nil {
		t.d.OnRefusal(kind)
	}
}

// RemotePrefix starts the sessionKey of a remote A2A peer: "a2a:<peer>".
const RemotePrefix = "a2a:"

// RemoteChannel is the channel send policy rules see for a remote peer.
const RemoteChannel = "a2a"

// Remote sends to remote A2A peers. It is safe for concurrent use.
type Remote interface {
	// HasPeer reports whether peer has an outbound URL.
	HasPeer(peer string) bool
	// SendRemote sends m and waits up to m.Wait for the remote task to
	// end. With m.Wait 0 it may queue the send durably instead and return
	// the queue item's id as TaskID. A task that ends after SendRemote
	// returned has its outcome posted into the sender's session. An error
	// is a transport or protocol failure.
	SendRemote(ctx context.Context, m RemoteMessage) (RemoteResult, error)
}

// RemoteMessage is one sessions_send to a remote peer.
type RemoteMessage struct {
	Peer string
	// SourceKey is the sender session: one remote conversation each.
	SourceKey string
	Text      string
	// Chain is the message's chain of causes, carried to the peer so a
	// ring spanning gateways stops like one inside a gateway.
	Chain tools.Chain
	Wait  time.Duration
}

// RemoteResult is a remote task as last seen.
type RemoteResult struct {
	TaskID string
	// Final: the task ended; OK: it completed, with Reply.
	Final, OK bool
	Reply     string
	// Error is the remote's reason when it ended without completing.
	Error string
}

// Tools is the session tool set. Create with New.
type Tools struct {
	d        Deps
	log      *slog.Logger
	alias    sessionkey.MainAlias
	redactor *sanitize.Redactor
	waits    waitGraph // sessions blocked in a sessions_send wait
}

// New returns the session tools.
func New(d Deps) *Tools {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.NewID == nil {
		d.NewID = uuid.NewString
	}
	t := &Tools{
		d:     d,
		log:   d.Logger.With("component", "sessions-tools"),
		alias: sessionkey.NewMainAlias(d.Settings.Scope, d.Settings.MainKey),
		redactor: sanitize.NewRedactor(sanitize.RedactOptions{
			Mode: d.Settings.Sessions.RedactMode, Patterns: d.Settings.Sessions.RedactPatterns, Secrets: d.Settings.Sessions.Secrets,
		}),
	}
	return t
}

// All returns the tools: sessions_list, sessions_history, sessions_send and
// agents_list.
func (t *Tools) All() []tools.Tool {
	return []tools.Tool{listTool{t}, historyTool{t}, sendTool{t}, agentsListTool{t}}
}

// callCtx is everything derived once per tool call about the caller.
type callCtx struct {
	caller      tools.Caller
	requester   string // internal key of the requester (alias when none)
	agentID     string // requester's agent
	sandboxed   bool
	visibility  policy.Visibility
	restrict    bool
	a2a         policy.A2A
	guard       *policy.Guard
	spawnedKeys map[string]bool
}

// newCallCtx derives the caller facts of docs/spec/reference-behaviour.md §2.3 and §3.
func (t *Tools) newCallCtx(ctx context.Context, caller tools.Caller, action policy.Action) (*callCtx, error) {
	set := t.d.Settings
	c := &callCtx{caller: caller}
	c.requester = t.alias.RequesterKey(caller.SessionKey)
	c.agentID = sessionkey.NormalizeAgentID(cmp.Or(caller.AgentID, sessionkey.AgentID(c.requester)))
	c.sandboxed = caller.Sandboxed
	if !c.sandboxed && caller.SessionKey != "" {
		c.sandboxed = policy.ChildSandboxed(set.Agent(c.agentID).SandboxMode, caller.SessionKey,
			sessionkey.MainKey(c.agentID, set.MainKey))
	}
	clamp := set.Sessions.VisibilityClamp
	c.visibility = policy.EffectiveVisibility(set.Sessions.Visibility, c.sandboxed, clamp)
	c.restrict = policy.RestrictToSpawned(c.sandboxed, clamp, c.requester)
	c.a2a = set.Sessions.A2A
	if caller.Operator {
		// The operator reaches every session: all visibility, and every
		// agent allowed (an empty allow list).
		c.visibility, c.restrict, c.a2a = policy.VisibilityAll, false, policy.A2A{Enabled: true}
	}
	c.guard = &policy.Guard{Requester: c.requester, Visibility: c.visibility, A2A: c.a2a}
	if c.visibility == policy.VisibilityTree || c.restrict {
		keys, err := t.spawnedBy(ctx, c.requester)
		if err != nil {
			keys = nil // the reference treats a failed lookup as an empty set
		}
		c.spawnedKeys = keys
		c.guard.Spawned = func(k string) bool { return c.spawnedKeys[k] }
	}
	return c, nil
}

// spawnedBy returns the keys of sessions whose spawnedBy is requester
// (one level, at most 500, as the reference's gateway query).
func (t *Tools) spawnedBy(ctx context.Context, requester string) (map[string]bool, error) {
	rows, err := t.d.Store.ListSessions(ctx, store.ListOptions{SpawnedBy: requester, Limit: 500})
	if err != nil {
		return nil, err
	}
	keys := make(map[string]bool, len(rows))
	for _, r := range rows {
		keys[r.Key] = true
	}
	return keys, nil
}

// storeKey maps an internal key to the canonical store key: agent keys are
// re-normalised, anything else (including the alias) belongs to the
// requester's agent.
func (t *Tools) storeKey(c *callCtx, key string) string {
	if sessionkey.IsReserved(key) {
		return key
	}
	return sessionkey.ToStoreKey(c.agentID, key, t.d.Settings.MainKey)
}
