package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// Approvals serves the exec.approval.* methods (the daemon passes
// *approval.Broker).
type Approvals interface {
	Pending() []approval.Record
	Get(id string) (approval.Record, bool)
	Resolve(id, decision, by string) (approval.Resolved, error)
	Wait(ctx context.Context, id string) (string, approval.Record, error)
}

var _ Approvals = (*approval.Broker)(nil)

// approvalClient reports whether a connection answers exec approvals: an
// operator with operator.approvals (or admin) that declares the approvals
// capability or is one of the reference's approval apps.
func approvalClient(role string, scopes, caps []string, clientID string) bool {
	if role != wire.RoleOperator || !allowed(scopes, wire.ScopeApprovals) {
		return false
	}
	return slices.Contains(caps, wire.CapApprovals) || slices.Contains(caps, wire.CapExecApprovals) ||
		slices.Contains(wire.ApprovalClientIDs, clientID)
}

// HasApprovalClients reports whether a connected client can answer an
// exec approval; with none, approvals fall back at once (headless).
func (s *Server) HasApprovalClients() bool {
	for _, c := range *s.connList.Load() {
		c.mu.Lock()
		ok := c.ready && !c.closing && c.approvals
		c.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// broadcastApprovals sends an event to the approval clients only.
func (s *Server) broadcastApprovals(event string, payload any) {
	b, err := json.Marshal(payload)
	if err != nil {
		s.log.Error("event encoding failed", "event", event, "err", err)
		return
	}
	for _, c := range *s.connList.Load() {
		c.mu.Lock()
		ok := c.approvals
		c.mu.Unlock()
		if ok {
			c.sendEvent(event, b, false)
		}
	}
}

// ApprovalRequested implements approval.Notifier.
func (s *Server) ApprovalRequested(r approval.Record) {
	s.broadcastApprovals(wire.EventExecApprovalRequested, r)
}

// ApprovalResolved implements approval.Notifier.
func (s *Server) ApprovalResolved(r approval.Resolved) {
	s.broadcastApprovals(wire.EventExecApprovalResolved, r)
}

var _ approval.Notifier = (*Server)(nil)

func (s *Server) approvals() (Approvals, error) {
	if s.cfg.Approvals == nil {
		return nil, wire.NewError(wire.CodeUnavailable, "exec approvals are not enabled")
	}
	return s.cfg.Approvals, nil
}

func approvalError(err error) error {
	var na *approval.DecisionNotAllowedError
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return wire.NewError(wire.CodeInvalidRequest, "unknown or expired approval id").
			WithDetails(map[string]any{"reason": wire.CodeApprovalNotFound,
				"remediation": "Re-request the action; pending approvals are cleared after expiry or restart."})
	case errors.Is(err, approval.ErrAlreadyResolved):
		return wire.NewError(wire.CodeInvalidRequest, "approval already resolved").
			WithDetails(map[string]any{"reason": "APPROVAL_ALREADY_RESOLVED"})
	case errors.As(err, &na):
		if !approval.ValidDecision(na.Decision) {
			return invalid("invalid decision")
		}
		return invalid(na.Decision + " is unavailable for this command")
	}
	return err
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) handleExecApprovalList(ctx context.Context, cl *call) (any, error) {
	a, err := s.approvals()
	if err != nil {
		return nil, err
	}
	return a.Pending(), nil // an array, as the reference answers
}

func (s *Server) handleExecApprovalGet(ctx context.Context, cl *call) (any, error) {
	var p wire.ExecApprovalIDParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	a, err := s.approvals()
	if err != nil {
		return nil, err
	}
	rec, ok := a.Get(p.ID)
	if !ok {
		return nil, approvalError(approval.ErrNotFound)
	}
	r := rec.Request
	return map[string]any{"id": rec.ID, "commandText": r.Command, "commandPreview": nil,
		"allowedDecisions": r.AllowedDecisions, "host": r.Host, "nodeId": nil, "agentId": orNull(r.AgentID),
		"expiresAtMs": rec.ExpiresAtMs}, nil
}

func (s *Server) handleExecApprovalResolve(ctx context.Context, cl *call) (any, error) {
	var p wire.ExecApprovalResolveParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	a, err := s.approvals()
	if err != nil {
		return nil, err
	}
	by := cl.c.client.DisplayName
	if by == "" {
		by = cl.c.client.ID
	}
	if _, err := a.Resolve(p.ID, p.Decision, by); err != nil {
		return nil, approvalError(err)
	}
	return map[string]any{"ok": true}, nil
}

// handleExecApprovalWaitDecision answers {id, decision, createdAtMs,
// expiresAtMs} once the approval ends; decision is null when it expired
// or timeoutMs passed first.
func (s *Server) handleExecApprovalWaitDecision(ctx context.Context, cl *call) (any, error) {
	var p wire.ExecApprovalIDParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	a, err := s.approvals()
	if err != nil {
		return nil, err
	}
	rec, pending := a.Get(p.ID)
	wctx := ctx
	if p.TimeoutMs > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	decision, r, err := a.Wait(wctx, p.ID)
	switch {
	case err == nil:
		rec = r
	case errors.Is(err, context.DeadlineExceeded) && pending && ctx.Err() == nil:
		decision = ""
	case errors.Is(err, approval.ErrNotFound):
		return nil, invalid("approval expired or not found")
	default:
		return nil, approvalError(err)
	}
	var d any
	if decision != "" {
		d = decision
	}
	return map[string]any{"id": p.ID, "decision": d, "createdAtMs": rec.CreatedAtMs, "expiresAtMs": rec.ExpiresAtMs}, nil
}

func (s *Server) handleExecApprovalsGet(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(&struct{}{}); err != nil {
		return nil, err
	}
	if s.cfg.ApprovalsDocument == nil {
		return nil, wire.NewError(wire.CodeUnavailable, "exec approvals are not enabled")
	}
	doc, err := s.cfg.ApprovalsDocument()
	if err != nil {
		return nil, fmt.Errorf("exec.approvals.get: %w", err)
	}
	return doc, nil
}

func (s *Server) handleExecApprovalsSet(ctx context.Context, cl *call) (any, error) {
	var p wire.ExecApprovalsSetParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.ApprovalsSet == nil {
		return nil, wire.NewError(wire.CodeUnavailable, "exec approvals are not enabled")
	}
	if len(p.File) == 0 || p.File[0] != '{' {
		return nil, invalid("exec approvals file is required")
	}
	doc, err := s.cfg.ApprovalsSet(p.File, p.BaseHash)
	var bad *approval.InvalidDocumentError
	switch {
	case errors.Is(err, approval.ErrBaseHashRequired), errors.Is(err, approval.ErrChanged), errors.As(err, &bad):
		return nil, invalid(err.Error())
	case err != nil:
		return nil, fmt.Errorf("exec.approvals.set: %w", err)
	}
	return doc, nil
}
