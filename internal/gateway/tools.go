package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// handleToolsInvoke runs one tool outside a run, through the same code path
// agents use: the caller is the given session (the session tools then apply
// its visibility), or nobody when no session is named.
func (s *Server) handleToolsInvoke(ctx context.Context, cl *call) (any, error) {
	var p wire.ToolsInvokeParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	var set *tools.Set
	if s.cfg.Tools != nil {
		set = s.cfg.Tools()
	}
	t, ok := set.Get(p.Tool)
	if !ok {
		return nil, invalid("unknown tool: " + p.Tool)
	}
	caller := tools.Caller{Channel: internalChannel}
	if p.SessionKey != "" {
		caller.SessionKey = s.canonicalKey(p.SessionKey, s.agentID(p.AgentID))
		caller.AgentID = sessionkey.AgentID(caller.SessionKey)
	} else if p.AgentID != "" {
		caller.AgentID = s.agentID(p.AgentID)
	}
	args := p.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := t.Call(tools.WithCaller(ctx, caller), args)
	if err != nil {
		res = tools.ErrorResult(p.Tool, err)
	}
	details, err := json.Marshal(res.Details)
	if err != nil {
		return nil, fmt.Errorf("tools.invoke: encode details: %w", err)
	}
	return wire.ToolsInvokeResult{
		OK: true, Tool: p.Tool, Details: details, IsError: res.IsError,
		Content: []wire.TextBlock{{Type: transcript.BlockText, Text: res.Text}},
	}, nil
}

// Injection is a message posted into a session without a run.
type Injection struct {
	SessionKey string // canonical key
	Text       string
	Label      string
	// Provenance, when set, records where the message came from.
	Provenance *transcript.Provenance
	// IdempotencyKey, when set, makes a repeated injection return the
	// first one's message id without posting again.
	IdempotencyKey string
}

// ErrNoSession is returned by Inject for a session that does not exist.
var ErrNoSession = agent.ErrNoSession

// Inject posts an assistant-role message into a session's transcript
// through the runner (atomic and idempotent by key); the runner's post
// event reaches every connected client as a chat final event. It is how
// chat.inject and command replies reach a session.
func (s *Server) Inject(ctx context.Context, in Injection) (messageID string, err error) {
	return s.cfg.Runner.Post(ctx, agent.Post{
		SessionKey: in.SessionKey, Text: in.Text, Label: in.Label,
		Provenance: in.Provenance, IdempotencyKey: in.IdempotencyKey,
	})
}
