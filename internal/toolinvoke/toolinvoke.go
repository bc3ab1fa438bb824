// Package toolinvoke owns direct tool invocation outside an agent run, as
// the reference gateway's invokeGatewayTool does it for HTTP POST
// /tools/invoke and the WebSocket method tools.invoke: the target session
// and agent are resolved from sessionKey/agentId ("main" by default), the
// tool must be among those a run in that session is offered (the same
// policy chain as agents), the HTTP surface also applies the default HTTP
// deny list adjusted by gateway.tools.{allow,deny}, an "action" is merged
// into the arguments when the tool's schema has one, and every outcome
// carries the reference's HTTP status, error type and message.
//
// It imports the tools and policy leaves and sessionkey only; the gateway
// (WebSocket) and httpapi (HTTP) import it, and the daemon configures it.
package toolinvoke

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Error types of a failed invocation (the reference's error.type values).
const (
	TypeInvalidRequest = "invalid_request"
	TypeNotFound       = "not_found"
	TypeBlocked        = "tool_call_blocked"
	TypeToolError      = "tool_error"
)

// Messages the reference answers with.
const (
	msgNameRequired = "tools.invoke requires name"
	msgExecFailed   = "tool execution failed"
)

// defaultChannel is the caller channel of an invocation without an
// x-openclaw-message-channel header (the reference's internal channel).
const defaultChannel = sessionkey.InternalChannel

// Request is one invocation. Tool is the tool name (the HTTP body's name,
// else tool). Args is the JSON arguments object; anything else counts as {}.
type Request struct {
	Tool           string
	Action         string
	Args           json.RawMessage
	SessionKey     string
	AgentID        string
	IdempotencyKey string

	// Group-policy context (x-openclaw-message-channel, -account-id,
	// -message-to, -thread-id); empty when not given.
	Channel   string
	AccountID string
	To        string
	ThreadID  string
}

// Error is a failed invocation's error body.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Outcome is what an invocation answers: Status is the HTTP status (200 on
// success), Result the tool's result on success, Err the error otherwise.
// SessionKey and AgentID are the resolved target when resolution got that
// far.
type Outcome struct {
	Status     int
	Tool       string
	SessionKey string
	AgentID    string
	Result     *tools.Result
	Err        *Error
}

// OK reports whether the tool ran.
func (o *Outcome) OK() bool { return o.Err == nil }

// Config configures an Invoker. Tools is required.
type Config struct {
	// Tools returns the tools a run of agentID in sessionKey would be
	// offered (the agents' policy chain); it must not return nil for a
	// configured agent. ctx is the request's.
	Tools func(ctx context.Context, agentID, sessionKey string) *tools.Set
	// Workspace returns the agent's workspace directory for file tools;
	// nil means none.
	Workspace func(ctx context.Context, agentID string) string
	// DefaultAgent is the agent of a request that names none.
	DefaultAgent string
	// KnownAgent reports whether an agent id is configured; nil admits
	// every valid id.
	KnownAgent func(agentID string) bool
	// GlobalScope is session.scope "global": "main" then means the
	// global session.
	GlobalScope bool
	// HTTP applies the default HTTP deny list with Allow and Deny
	// (gateway.tools.allow and gateway.tools.deny).
	HTTP  bool
	Allow []string
	Deny  []string
	// Logger receives tool execution failures; nil discards them.
	Logger *slog.Logger
}

// Invoker runs tools for direct invocations. Safe for concurrent use.
type Invoker struct {
	cfg Config
	log *slog.Logger
}

// New returns an Invoker for cfg.
func New(cfg Config) (*Invoker, error) {
	if cfg.Tools == nil {
		return nil, fmt.Errorf("toolinvoke.New: Tools is required")
	}
	if cfg.DefaultAgent == "" {
		cfg.DefaultAgent = sessionkey.DefaultAgentID
	}
	cfg.Allow, cfg.Deny = slices.Clone(cfg.Allow), slices.Clone(cfg.Deny)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Invoker{cfg: cfg, log: log.With("component", "toolinvoke")}, nil
}

func fail(status int, tool, typ, msg string) *Outcome {
	return &Outcome{Status: status, Tool: tool, Err: &Error{Type: typ, Message: msg}}
}

// Invoke resolves, authorises and runs one tool. It never returns a Go
// error: every failure is an Outcome with the reference's status and text.
// ctx cancels the tool.
func (iv *Invoker) Invoke(ctx context.Context, req Request) *Outcome {
	name := strings.TrimSpace(req.Tool)
	if name == "" {
		return fail(http.StatusBadRequest, "", TypeInvalidRequest, msgNameRequired)
	}
	agentID, key, msg := iv.resolveTarget(req.SessionKey, req.AgentID)
	if msg != "" {
		return fail(http.StatusBadRequest, name, TypeInvalidRequest, msg)
	}
	set := iv.cfg.Tools(ctx, agentID, key)
	t, ok := set.Get(name)
	if ok && iv.cfg.HTTP && !policy.HTTPToolAllowed(name, iv.cfg.Allow, iv.cfg.Deny) {
		ok = false
	}
	if !ok {
		return fail(http.StatusNotFound, name, TypeNotFound, "Tool not available: "+name)
	}
	args := MergeAction(t.Schema(), req.Action, objectOrEmpty(req.Args))
	caller := tools.Caller{
		SessionKey: key, AgentID: agentID, Channel: defaultChannel,
		AccountID: req.AccountID, To: req.To, ThreadID: req.ThreadID,
	}
	if c := strings.ToLower(strings.TrimSpace(req.Channel)); c != "" {
		caller.Channel = c
	}
	if iv.cfg.Workspace != nil {
		caller.Workspace = iv.cfg.Workspace(ctx, agentID)
	}
	res, err := callTool(tools.WithCaller(ctx, caller), t, args)
	if err != nil {
		if tools.IsInputError(err) {
			o := fail(http.StatusBadRequest, name, TypeToolError, err.Error())
			o.SessionKey, o.AgentID = key, agentID
			return o
		}
		if ctx.Err() == nil {
			iv.log.Warn("tool execution failed", "tool", name, "sessionKey", key, "err", err)
		}
		o := fail(http.StatusInternalServerError, name, TypeToolError, msgExecFailed)
		o.SessionKey, o.AgentID = key, agentID
		return o
	}
	return &Outcome{Status: http.StatusOK, Tool: name, SessionKey: key, AgentID: agentID, Result: res}
}

// callTool runs t, turning a panic into an error so that one bad tool
// cannot take the gateway down.
func callTool(ctx context.Context, t tools.Tool, args json.RawMessage) (res *tools.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("tool %s panicked: %v", t.Name(), r)
		}
	}()
	res, err = t.Call(ctx, args)
	if err == nil && res == nil {
		res = &tools.Result{}
	}
	return res, err
}

// resolveTarget maps the request's sessionKey and agentId to the agent and
// the canonical store key, or returns the reference's message for a
// conflict or an unknown agent. A missing key or "main" is the agent's
// main session (the global session in global scope).
func (iv *Invoker) resolveTarget(rawKey, rawAgent string) (agentID, key, msg string) {
	raw := strings.TrimSpace(rawKey)
	if raw == "" {
		raw = sessionkey.DefaultMainKey
	}
	requested := ""
	if a := strings.TrimSpace(rawAgent); a != "" {
		if !sessionkey.IsValidAgentID(a) {
			return "", "", fmt.Sprintf("Unknown agent id %q", a)
		}
		requested = sessionkey.NormalizeAgentID(a)
		if !iv.known(requested) {
			return "", "", fmt.Sprintf("Unknown agent id %q", a)
		}
	}
	agentID = iv.cfg.DefaultAgent
	if _, ok := sessionkey.Parse(raw); ok {
		keyAgent := sessionkey.AgentID(raw)
		if requested != "" && keyAgent != requested {
			return "", "", fmt.Sprintf("agent %q does not match session key agent %q", strings.TrimSpace(rawAgent), keyAgent)
		}
		if !iv.known(keyAgent) {
			return "", "", fmt.Sprintf("Unknown agent id %q", keyAgent)
		}
		agentID = keyAgent
	} else if requested != "" {
		agentID = requested
	}
	if strings.EqualFold(raw, sessionkey.DefaultMainKey) && iv.cfg.GlobalScope {
		return agentID, sessionkey.GlobalKey, ""
	}
	if sessionkey.IsReserved(raw) {
		return agentID, raw, ""
	}
	return agentID, sessionkey.ToStoreKey(agentID, raw, sessionkey.DefaultMainKey), ""
}

func (iv *Invoker) known(agentID string) bool {
	if agentID == iv.cfg.DefaultAgent {
		return true
	}
	return iv.cfg.KnownAgent == nil || iv.cfg.KnownAgent(agentID)
}

// objectOrEmpty returns args when it is a JSON object, else {} (the
// reference ignores non-object args).
func objectOrEmpty(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || m == nil {
		return json.RawMessage("{}")
	}
	return args
}

// MergeAction returns args with "action" set to action when action is not
// blank, args has no "action" member and the schema's properties declare
// one, as the reference merges the body's action field; otherwise args
// unchanged. args must be a JSON object.
func MergeAction(schema json.RawMessage, action string, args json.RawMessage) json.RawMessage {
	action = strings.TrimSpace(action)
	if action == "" {
		return args
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	if _, ok := s.Properties["action"]; !ok {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	if _, ok := m["action"]; ok {
		return args
	}
	m["action"], _ = json.Marshal(action)
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}
