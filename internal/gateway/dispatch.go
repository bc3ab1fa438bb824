package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// call is one request being handled.
type call struct {
	c      *conn
	id     string
	method string
	params json.RawMessage
	// followUp, when a handler sets it, runs after the first response is
	// queued and its result is sent as a second response to the same id
	// (the agent method's final answer).
	followUp func(ctx context.Context) (any, error)
	// releaseAfterResponse, when a handler sets it, runs right after the
	// first response is queued (it releases a run's held events).
	releaseAfterResponse func()
	// received is when the request frame arrived.
	received time.Time
}

// handler serves one method. The returned error is a *wire.Error, a
// *wire.ParamsError, or an internal error reported as UNAVAILABLE.
type handler func(ctx context.Context, call *call) (any, error)

// method is one implemented method: the operator scope it needs and its
// handler. scopeFor, when set, computes the scope from the params.
type method struct {
	name     string
	scope    string
	scopeFor func(params json.RawMessage) string
	handle   handler
}

func (s *Server) registerMethods() {
	ms := []*method{
		{name: wire.MethodHealth, scope: wire.ScopeRead, handle: s.handleHealth},
		{name: wire.MethodLogsTail, scope: wire.ScopeRead, handle: s.handleLogsTail},
		{name: wire.MethodStatus, scope: wire.ScopeRead, handle: s.handleStatus},
		{name: wire.MethodSystemPresence, scope: wire.ScopeRead, handle: s.handleSystemPresence},
		{name: wire.MethodLastHeartbeat, scope: wire.ScopeRead, handle: s.handleLastHeartbeat},
		{name: wire.MethodUsageStatus, scope: wire.ScopeRead, handle: s.handleUsageStatus},
		{name: wire.MethodUsageCost, scope: wire.ScopeRead, handle: s.handleUsageCost},
		{name: wire.MethodSessionsUsage, scope: wire.ScopeRead, handle: s.handleSessionsUsage},
		{name: wire.MethodModelsList, scope: wire.ScopeRead, handle: s.handleModelsList},
		{name: wire.MethodConfigGet, scope: wire.ScopeRead, handle: s.handleConfigGet},
		{name: wire.MethodSessionsMessagesSubscribe, scope: wire.ScopeRead, handle: s.handleSessionsMessagesSubscribe},
		{name: wire.MethodSessionsMessagesUnsubscribe, scope: wire.ScopeRead, handle: s.handleSessionsMessagesUnsubscribe},
		{name: wire.MethodSessionsList, scope: wire.ScopeRead, handle: s.handleSessionsList},
		{name: wire.MethodSessionsResolve, scope: wire.ScopeRead, handle: s.handleSessionsResolve},
		{name: wire.MethodSessionsPatch, scope: wire.ScopeWrite, scopeFor: patchScope, handle: s.handleSessionsPatch},
		{name: wire.MethodSessionsReset, scope: wire.ScopeWrite, handle: s.handleSessionsReset},
		{name: wire.MethodSessionsCompact, scope: wire.ScopeAdmin, handle: s.handleSessionsCompact},
		{name: wire.MethodSessionsDelete, scope: wire.ScopeAdmin, handle: s.handleSessionsDelete},
		{name: wire.MethodSessionsCreate, scope: wire.ScopeWrite, handle: s.handleSessionsCreate},
		{name: wire.MethodChatSend, scope: wire.ScopeWrite, handle: s.handleChatSend},
		{name: wire.MethodChatHistory, scope: wire.ScopeRead, handle: s.handleChatHistory},
		{name: wire.MethodChatAbort, scope: wire.ScopeWrite, handle: s.handleChatAbort},
		{name: wire.MethodSessionsAbort, scope: wire.ScopeWrite, handle: s.handleSessionsAbort},
		{name: wire.MethodChatInject, scope: wire.ScopeAdmin, handle: s.handleChatInject},
		{name: wire.MethodAgent, scope: wire.ScopeWrite, handle: s.handleAgent},
		{name: wire.MethodAgentWait, scope: wire.ScopeWrite, handle: s.handleAgentWait},
		{name: wire.MethodAgentsList, scope: wire.ScopeRead, handle: s.handleAgentsList},
		{name: wire.MethodToolsInvoke, scope: wire.ScopeWrite, handle: s.handleToolsInvoke},
		{name: wire.MethodSessionsExport, scope: wire.ScopeAdmin, handle: s.handleSessionsExport},
		{name: wire.MethodSessionsSearch, scope: wire.ScopeRead, handle: s.handleSessionsSearch},
		{name: wire.MethodSessionsSend, scope: wire.ScopeWrite, handle: s.handleSessionsSend},
		{name: wire.MethodSessionsSteer, scope: wire.ScopeWrite, handle: s.handleSessionsSteer},
		{name: wire.MethodSubagentsList, scope: wire.ScopeRead, handle: s.handleSubagentsList},
		{name: wire.MethodSubagentsKill, scope: wire.ScopeWrite, handle: s.handleSubagentsKill},
		{name: wire.MethodAnnouncesList, scope: wire.ScopeRead, handle: s.handleAnnouncesList},
		{name: wire.MethodAnnouncesRedeliver, scope: wire.ScopeAdmin, handle: s.handleAnnouncesRedeliver},
		{name: wire.MethodMCPList, scope: wire.ScopeRead, handle: s.handleMCPList},
		{name: wire.MethodChannelsStatus, scope: wire.ScopeRead, handle: s.handleChannelsStatus},
		{name: wire.MethodRunsActive, scope: wire.ScopeRead, handle: s.handleRunsActive},
		{name: wire.MethodRunsWatch, scope: wire.ScopeRead, handle: s.handleRunsWatch},
		{name: wire.MethodSessionsWatch, scope: wire.ScopeRead, handle: s.handleSessionsWatch},
		{name: wire.MethodSessionsEdges, scope: wire.ScopeRead, handle: s.handleSessionsEdges},
		{name: wire.MethodNodesList, scope: wire.ScopeRead, handle: s.handleNodesList},
		{name: wire.MethodExecApprovalList, scope: wire.ScopeApprovals, handle: s.handleExecApprovalList},
		{name: wire.MethodExecApprovalGet, scope: wire.ScopeApprovals, handle: s.handleExecApprovalGet},
		{name: wire.MethodExecApprovalResolve, scope: wire.ScopeApprovals, handle: s.handleExecApprovalResolve},
		{name: wire.MethodExecApprovalWaitDecision, scope: wire.ScopeApprovals, handle: s.handleExecApprovalWaitDecision},
		{name: wire.MethodExecApprovalsGet, scope: wire.ScopeAdmin, handle: s.handleExecApprovalsGet},
		{name: wire.MethodExecApprovalsSet, scope: wire.ScopeAdmin, handle: s.handleExecApprovalsSet},
		{name: wire.MethodChatStartup, scope: wire.ScopeRead, handle: s.handleChatHistory},
		{name: wire.MethodSessionsDescribe, scope: wire.ScopeRead, handle: s.handleSessionsDescribe},
		{name: wire.MethodSessionsSubscribe, scope: wire.ScopeRead, handle: s.handleSessionsSubscribe},
		{name: wire.MethodSessionsUnsubscribe, scope: wire.ScopeRead, handle: s.handleSessionsUnsubscribe},
		{name: wire.MethodAgentIdentityGet, scope: wire.ScopeRead, handle: s.handleAgentIdentityGet},
		{name: wire.MethodModelsAuthStatus, scope: wire.ScopeRead, handle: s.handleModelsAuthStatus},
		{name: wire.MethodChatMetadata, scope: wire.ScopeRead, handle: s.handleChatMetadata},
		{name: wire.MethodSystemInfo, scope: wire.ScopeRead, handle: s.handleSystemInfo},
		{name: wire.MethodEnvironmentsList, scope: wire.ScopeRead, handle: s.handleEnvironmentsList},
		{name: wire.MethodNodeList, scope: wire.ScopeRead, handle: s.handleNodeList},
		{name: wire.MethodSkillsStatus, scope: wire.ScopeRead, handle: s.handleSkillsStatus},
		{name: wire.MethodUpdateStatus, scope: wire.ScopeAdmin, handle: s.handleUpdateStatus},
		{name: wire.MethodTasksList, scope: wire.ScopeRead, handle: s.handleTasksList},
	}
	ms = append(ms, &method{name: wire.MethodWake, scope: wire.ScopeWrite, handle: s.handleWake})
	ms = append(ms, s.memoryMethods()...)
	ms = append(ms, s.absentMethods()...)
	ms = append(ms, s.cronMethods()...)
	s.methods = make(map[string]*method, len(ms))
	for _, m := range ms {
		s.methods[m.name] = m
		s.methodNames = append(s.methodNames, m.name)
	}
}

// patchWriteFields are the sessions.patch fields operator.write may change
// (the envelope and the reference's write-scope mutations); any other
// field needs operator.admin (reference, 2026.9.6).
var patchWriteFields = []string{"key", "agentId", "expectedSessionId", "expectedLifecycleRevision",
	"expectedPermissionMode", "expectedMarkedUnreadAt", "label", "icon", "color", "category", "boardFace",
	"pinned", "archived", "unread", "model", "thinkingLevel", "fastMode"}

func patchScope(params json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return wire.ScopeWrite // invalid params are reported by validation
	}
	for name := range fields {
		if !slices.Contains(patchWriteFields, name) {
			return wire.ScopeAdmin
		}
	}
	return wire.ScopeWrite
}

// allowed reports whether the granted scopes satisfy need: operator.admin
// satisfies everything, operator.write also satisfies operator.read.
func allowed(granted []string, need string) bool {
	if slices.Contains(granted, wire.ScopeAdmin) || slices.Contains(granted, need) {
		return true
	}
	return need == wire.ScopeRead && slices.Contains(granted, wire.ScopeWrite)
}

// handleFrame handles one frame after hello-ok.
func (c *conn) handleFrame(data []byte) {
	f, err := wire.Decode(data)
	if err != nil {
		var de *wire.DecodeError
		if !errors.As(err, &de) || de.UnknownType {
			c.log.Debug("ignoring frame", "err", err)
			return
		}
		if de.Type == wire.FrameRequest && de.ID != "" {
			c.respond(de.ID, nil, wire.NewError(wire.CodeInvalidRequest, msgInvalidFrame+": "+trimFramePrefix(err.Error())))
			return
		}
		c.log.Debug("ignoring invalid frame", "err", err)
		return
	}
	switch f.Type {
	case wire.FrameRequest:
		c.dispatch(f)
	case wire.FrameCancel:
		c.mu.Lock()
		cancel := c.pending[f.ID]
		c.mu.Unlock()
		if cancel != nil {
			cancel(errRequestCancelled)
		}
	default:
		// Clients have no business sending res or event frames; ignore
		// them as the reference ignores what it does not expect.
	}
}

func trimFramePrefix(s string) string {
	const p = "invalid frame: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// dispatch checks a request and runs its handler on a new goroutine.
func (c *conn) dispatch(f *wire.Frame) {
	if f.Method == wire.MethodConnect {
		c.respond(f.ID, nil, wire.NewError(wire.CodeInvalidRequest, "invalid handshake: already connected"))
		return
	}
	m := c.s.methods[f.Method]
	if m == nil {
		c.respond(f.ID, nil, wire.NewError(wire.CodeInvalidRequest, "unknown method: "+f.Method))
		return
	}
	need := m.scope
	if m.scopeFor != nil {
		need = m.scopeFor(f.Params)
	}
	if !allowed(c.scopes, need) {
		c.respond(f.ID, nil, wire.NewError(wire.CodeForbidden, "missing scope: "+need).WithDetails(map[string]any{
			"code":           wire.DetailMissingScope,
			"missingScope":   need,
			"requiredScopes": []string{need},
		}))
		return
	}

	ctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	var refuse *wire.Error
	switch {
	case c.closing:
		refuse = wire.NewError(wire.CodeUnavailable, "connection closing")
	case c.pending[f.ID] != nil:
		refuse = wire.NewError(wire.CodeInvalidRequest, "duplicate request id: "+f.ID)
	case len(c.pending) >= c.s.cfg.MaxInflight:
		refuse = wire.NewError(wire.CodeUnavailable, "too many concurrent requests").
			WithDetails(map[string]any{"code": wire.DetailTooManyRequests}).WithRetry(1000)
	default:
		c.pending[f.ID] = cancel
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if refuse != nil {
		cancel(nil)
		c.respond(f.ID, nil, refuse)
		return
	}

	cl := &call{c: c, id: f.ID, method: f.Method, params: f.Params, received: time.Now()}
	// On a kept worker: a request's stack is grown already (c.wg tracks
	// the request, not the worker).
	c.s.calls.Go(func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.pending, cl.id)
			c.mu.Unlock()
			cancel(nil)
		}()
		res, err := m.handle(ctx, cl)
		if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errRequestCancelled) {
			err = errRequestCancelled
		}
		c.answer(cl, res, err)
		if err != nil || cl.followUp == nil {
			return
		}
		res, err = cl.followUp(ctx)
		if ctx.Err() != nil {
			return // cancelled or the connection ended: nobody to answer
		}
		c.respond(cl.id, res, err)
	})
}

// answer sends a call's first response, then runs its
// releaseAfterResponse. The writer wakes once, after both: the response
// and the run's events held until it (a run's start, at least, when its
// lane was idle) leave in one socket write instead of two.
func (c *conn) answer(cl *call, res any, err error) {
	if cl.releaseAfterResponse == nil {
		c.respond(cl.id, res, err)
		return
	}
	c.queueResponse(cl.id, res, err)
	cl.releaseAfterResponse()
	c.signal()
}

// decode validates the call's params and decodes them into v.
func (cl *call) decode(v any) error {
	return wire.DecodeParams(cl.method, cl.params, v)
}
