// Package sessions implements the session tools of the product spec —
// sessions_list, sessions_history, sessions_send (with the agent-to-agent
// reply-back loop and announce step) and agents_list — with the reference's
// parameters, defaults, result shapes, statuses and error strings. The same
// tools serve agents in runs, the gateway's tools.invoke method and the CLI.
//
// Decisions come from internal/policy; data from small store and runner
// interfaces declared here. Only the daemon constructs it.
package sessions

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
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
	PutOutbox(ctx context.Context, item *store.OutboxItem) error
	ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error)
	UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error)
}

// Runner starts and waits for runs.
type Runner interface {
	Submit(ctx context.Context, in agent.Input) (*store.Run, bool, error)
	Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error)
}

// Deliverer posts an announce reply into a session's channel. Today every
// channel is internal: the text is appended to the session's transcript and
// emitted as a chat event; real chat channels come behind this interface.
type Deliverer interface {
	Deliver(ctx context.Context, d Delivery) error
}

// Delivery is one message posted to a session's channel.
type Delivery struct {
	SessionKey string
	Text       string
	// Source names where it came from, e.g. the sending session.
	SourceSessionKey string
	SourceTool       string
	// IdempotencyKey makes a repeated delivery a no-op.
	IdempotencyKey string
}

// Deps are the session tools' collaborators. Store, Runner and Config are
// required.
type Deps struct {
	Store     Store
	Runner    Runner
	Config    *config.Config
	Deliverer Deliverer
	Logger    *slog.Logger
	Now       func() time.Time
	NewID     func() string
	// StateDir is used for transcriptPath.
	StateDir string
}

// Tools is the session tool set. Create with New.
type Tools struct {
	d        Deps
	log      *slog.Logger
	alias    sessionkey.MainAlias
	redactor *sanitize.Redactor
	flows    *flows
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
		alias: sessionkey.NewMainAlias(d.Config.Scope(), d.Config.MainKey()),
		redactor: sanitize.NewRedactor(sanitize.RedactOptions{
			Mode: d.Config.RedactSensitive(), Patterns: d.Config.RedactPatterns(), Secrets: configSecrets(d.Config),
		}),
	}
	t.flows = newFlows(t)
	return t
}

// All returns the tools: sessions_list, sessions_history, sessions_send and
// agents_list.
func (t *Tools) All() []tools.Tool {
	return []tools.Tool{listTool{t}, historyTool{t}, sendTool{t}, agentsListTool{t}}
}

// Recover resumes agent-to-agent flows left pending by a crash or shutdown.
// Call it once at start-up, after the runner's Recover.
func (t *Tools) Recover(ctx context.Context) error { return t.flows.recover(ctx) }

// Close stops background agent-to-agent flows and waits for them; flows
// still going stay recorded and resume at the next Recover.
func (t *Tools) Close() { t.flows.close() }

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

// newCallCtx derives the caller facts of §2.3 and §3.
func (t *Tools) newCallCtx(ctx context.Context, caller tools.Caller, action policy.Action) (*callCtx, error) {
	cfg := t.d.Config
	c := &callCtx{caller: caller}
	c.requester = t.alias.RequesterKey(caller.SessionKey)
	c.agentID = sessionkey.NormalizeAgentID(cmp.Or(caller.AgentID, sessionkey.AgentID(c.requester)))
	c.sandboxed = caller.Sandboxed
	if !c.sandboxed && caller.SessionKey != "" {
		c.sandboxed = policy.ChildSandboxed(cfg.SandboxMode(c.agentID), caller.SessionKey,
			sessionkey.MainKey(c.agentID, cfg.MainKey()))
	}
	clamp := cfg.SessionToolsVisibility()
	c.visibility = policy.EffectiveVisibility(policy.ParseVisibility(cfg.Visibility()), c.sandboxed, clamp)
	c.restrict = policy.RestrictToSpawned(c.sandboxed, clamp, c.requester)
	c.a2a = policy.A2A{Enabled: cfg.AgentToAgentEnabled(), Allow: cfg.AgentToAgentAllow()}
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
	return sessionkey.ToStoreKey(c.agentID, key, t.d.Config.MainKey())
}

// configSecrets lists the secret values of the configuration that must
// never come back out of a transcript: the gateway's token and password
// and every provider's API key.
func configSecrets(c *config.Config) []string {
	auth := c.GatewayAuth()
	out := []string{auth.Token, auth.Password}
	for _, p := range c.Providers() {
		out = append(out, p.APIKey)
	}
	return out
}
