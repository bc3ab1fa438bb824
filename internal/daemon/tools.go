package daemon

import (
	"cmp"
	"context"
	"os"
	"sync/atomic"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// toolbox holds every tool and decides which a run gets.
type toolbox struct {
	cfg *config.Config
	all atomic.Pointer[tools.Set]
}

func (b *toolbox) set(ts ...tools.Tool) { b.all.Store(tools.NewSet(ts...)) }

// forRun returns the tools offered to a run: everything for a top-level
// session; for a sub-agent the set minus what the sub-agent tool policy
// denies at its depth (reference §9.4).
func (b *toolbox) forRun(info agent.RunInfo) *tools.Set {
	all := b.all.Load()
	depth := sessionkey.SubagentDepth(info.SessionKey)
	if info.Session != nil && info.Session.SpawnDepth > depth {
		depth = info.Session.SpawnDepth
	}
	if depth == 0 {
		return all
	}
	tp := b.cfg.SubagentTools()
	maxDepth := b.cfg.MaxSpawnDepth()
	return all.Filter(func(t tools.Tool) bool {
		return policy.SubagentToolAllowed(t.Name(), depth, maxDepth, tp.Allow, tp.AlsoAllow, tp.Deny)
	})
}

// deliverer posts agent-to-agent results into sessions through the
// runner's Post: one transaction for the idempotency check and the append,
// and a post event the gateway shows as a chat event.
type deliverer struct {
	runner *agent.Runner
}

var _ sessions.Deliverer = deliverer{}

func (d deliverer) Deliver(ctx context.Context, del sessions.Delivery) error {
	_, err := d.runner.Post(ctx, agent.Post{
		SessionKey:     del.SessionKey,
		Text:           del.Text,
		IdempotencyKey: del.IdempotencyKey,
		Provenance: &transcript.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: del.SourceSessionKey, SourceTool: del.SourceTool,
		},
	})
	return err
}

// workspaces resolves the directory a run works in: its agent's workspace,
// except that a sub-agent works in the workspace of the session tree's root
// (the spec: sub-agents inherit the parent workspace). Directories are made
// on first use.
type workspaces struct {
	cfg   *config.Config
	store interface {
		GetSession(ctx context.Context, key string) (*store.Session, error)
	}
}

func (w *workspaces) forRun(info agent.RunInfo) string {
	agentID := info.AgentID
	parent := ""
	if info.Session != nil {
		parent = info.Session.SpawnedBy
	}
	// Walk up the spawn chain (bounded by the maximum depth) to the root.
	for i := 0; parent != "" && i < 8; i++ {
		agentID = sessionkey.AgentID(parent)
		s, err := w.store.GetSession(context.Background(), parent)
		if err != nil {
			break
		}
		agentID = cmp.Or(s.AgentID, agentID)
		parent = s.SpawnedBy
	}
	dir := w.cfg.AgentWorkspace(agentID)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return ""
		}
	}
	return dir
}
