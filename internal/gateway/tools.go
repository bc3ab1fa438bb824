package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/toolinvoke"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// ToolInvoker runs one tool outside a run with the agents' tool policy
// (*toolinvoke.Invoker, configured by the daemon without the HTTP deny
// list). Safe for concurrent use.
type ToolInvoker interface {
	Invoke(ctx context.Context, req toolinvoke.Request) *toolinvoke.Outcome
}

// rpcErrorCode maps an invocation's error type to the reference's
// tools.invoke error code ("" for an unknown type).
func rpcErrorCode(typ string) string {
	switch typ {
	case toolinvoke.TypeInvalidRequest:
		return "validation_error"
	case toolinvoke.TypeNotFound:
		return "not_found"
	case toolinvoke.TypeBlocked:
		return "forbidden"
	case toolinvoke.TypeToolError:
		return "internal_error"
	}
	return ""
}

// handleToolsInvoke runs one tool outside a run, as the caller session
// (the agent's main session unless sessionKey names another), through the
// same resolution and tool policy as agents. Like the reference, a tool
// that cannot run answers a result with ok false and an error code, not an
// error frame.
func (s *Server) handleToolsInvoke(ctx context.Context, cl *call) (any, error) {
	var p wire.ToolsInvokeParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(p.Name)
	if name == "" {
		name = strings.TrimSpace(p.Tool)
	}
	if name == "" {
		return nil, invalid("invalid tools.invoke params: name required")
	}
	if s.cfg.Invoker == nil {
		return nil, wire.NewError(wire.CodeUnavailable, "tools are not enabled")
	}
	o := s.cfg.Invoker.Invoke(ctx, toolinvoke.Request{
		Tool: name, Action: p.Action, Args: p.Args, SessionKey: p.SessionKey,
		AgentID: p.AgentID, IdempotencyKey: p.IdempotencyKey, Channel: internalChannel,
	})
	if !o.OK() {
		code := rpcErrorCode(o.Err.Type)
		if code == "" {
			code = "internal_error"
		}
		return wire.ToolsInvokeResult{OK: false, ToolName: name, Tool: name,
			Error: &wire.ToolsInvokeError{Code: code, Message: o.Err.Message}}, nil
	}
	details, err := json.Marshal(o.Result.Details)
	if err != nil {
		return nil, fmt.Errorf("tools.invoke: encode details: %w", err)
	}
	return wire.ToolsInvokeResult{
		OK: true, ToolName: name, Tool: name, Details: details, IsError: o.Result.IsError,
		Content: []wire.TextBlock{{Type: transcript.BlockText, Text: o.Result.Text}},
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
	// RunID, when set, files the message under that run id (a command's
	// reply under the chat.send that carried the command), so a client
	// that waits on the send finds it.
	RunID string
	// Images follow the text (image blocks).
	Images []transcript.Block
}

// Inject posts an assistant-role message into a session's transcript
// through the runner (atomic and idempotent by key); the runner's post
// event reaches every connected client as a chat final event. It is how
// chat.inject and command replies reach a session.
func (s *Server) Inject(ctx context.Context, in Injection) (messageID string, err error) {
	return s.cfg.Runner.Post(ctx, agent.Post{
		SessionKey: in.SessionKey, Text: in.Text, Label: in.Label,
		Provenance: in.Provenance, IdempotencyKey: in.IdempotencyKey, RunID: in.RunID, Images: in.Images,
	})
}
