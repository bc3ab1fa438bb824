// Package service runs exec approvals for the gateway: the broker with
// its journal and the allowlist file in the state directory, the gate
// exec runs behind, the report of approvals a restart cut, and the
// approvals document the operator methods read and replace. The gateway
// is reached through a consumer-side interface, attached once it exists.
package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Gateway is what approvals reach of the gateway (gateway.Server): where
// requests and resolutions are shown, and whether a client can decide.
type Gateway interface {
	approval.Notifier
	HasApprovalClients() bool
}

// Approvals wires exec approvals: the broker, its journal and allowlist
// files in the state directory, and the gate exec runs behind. The
// gateway, created later, is reached through gw (see Attach).
type Approvals struct {
	set   *settings.Settings
	lists *approval.Allowlists
	// Broker holds the pending approvals; Gate is what exec runs behind.
	Broker  *approval.Broker
	Gate    *approval.GateConfig
	journal approval.FileJournal
	gw      atomic.Pointer[Gateway]
}

// New opens the allowlist file in stateDir and builds the broker and the
// gate; refused counts a denied approval (nil: not counted).
func New(set *settings.Settings, stateDir string, refused func(kind string)) (*Approvals, error) {
	lists, err := approval.OpenAllowlists(filepath.Join(stateDir, approval.AllowlistFile))
	if err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	a := &Approvals{set: set, lists: lists, journal: approval.FileJournal{Path: filepath.Join(stateDir, approval.PendingFile)}}
	a.Broker = approval.NewBroker(approval.BrokerConfig{Timeout: set.ExecApprovalTimeout, Notifier: a, Journal: a.journal})
	a.Gate = &approval.GateConfig{
		Broker: a.Broker, Allowlists: lists,
		Policy: a.policy,
		Clients: func() bool {
			gw := a.gw.Load()
			return gw != nil && (*gw).HasApprovalClients()
		},
		Decided: func(outcome string) {
			if outcome != "allowed" && refused != nil {
				refused("exec-approval")
			}
		},
	}
	return a, nil
}

// Attach hands requests and resolutions to gw from now on (before, they
// are only kept by the broker).
func (a *Approvals) Attach(gw Gateway) { a.gw.Store(&gw) }

// ApprovalRequested implements approval.Notifier.
func (a *Approvals) ApprovalRequested(r approval.Record) {
	if gw := a.gw.Load(); gw != nil {
		(*gw).ApprovalRequested(r)
	}
}

// ApprovalResolved implements approval.Notifier.
func (a *Approvals) ApprovalResolved(r approval.Resolved) {
	if gw := a.gw.Load(); gw != nil {
		(*gw).ApprovalResolved(r)
	}
}

// ExpiredReason is the denial reason of an approval a restart cut.
const ExpiredReason = "approval-expired: gateway restarted"

// RecoverPending reports the approvals a crash left pending to their
// sessions: each waiting exec call gets its result, a denial saying the
// approval expired, so the model sees what happened to the command (it
// did not run). The journal is emptied afterwards. Call it before the
// broker takes new approvals.
func (a *Approvals) RecoverPending(ctx context.Context, st store.Store, log *slog.Logger) error {
	recs, err := a.journal.Load()
	if err != nil {
		// Unreadable (it is written atomically, so this is damage from
		// outside): keep it for inspection and start without it.
		aside := a.journal.Path + ".corrupt"
		log.Error("exec approval journal unreadable; moved aside, its approvals cannot be reported", "err", err, "file", aside)
		if rerr := os.Rename(a.journal.Path, aside); rerr != nil {
			return fmt.Errorf("approval: %w (and moving it aside: %v)", err, rerr)
		}
		return nil
	}
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		text := approval.DeniedText(r.ID, ExpiredReason, r.Request.Command)
		log.Warn("exec approval cut by a restart reported expired", "id", r.ID, "session", r.Request.SessionKey, "command", r.Request.Command)
		if r.Request.SessionKey == "" || r.Request.ToolCallID == "" {
			continue
		}
		sess, err := st.GetSession(ctx, r.Request.SessionKey)
		if err != nil {
			log.Warn("exec approval's session is gone", "id", r.ID, "session", r.Request.SessionKey, "err", err)
			continue
		}
		details, _ := json.Marshal(map[string]any{"status": "failed", "exitCode": nil, "durationMs": 0,
			"aggregated": text, "timedOut": true, "cwd": r.Request.Cwd, "approvalId": r.ID})
		now := time.Now()
		msg := transcript.NewToolResult(r.Request.ToolCallID, "exec", text, details, false, now)
		msg.Meta = &transcript.Meta{RunID: r.Request.RunID}
		if _, err := st.AppendMessages(ctx, sess.SessionID, []store.Message{{
			SessionID: sess.SessionID, Entry: transcript.MessageEntry(msg, now), Role: msg.Role, RunID: r.Request.RunID,
		}}); err != nil {
			return fmt.Errorf("approval: report expired approval %s: %w", r.ID, err)
		}
	}
	if err := a.journal.Save(nil); err != nil {
		return fmt.Errorf("approval: clear approval journal: %w", err)
	}
	return nil
}

// Document answers exec.approvals.get: the approvals document and the
// default agent's effective policy.
func (a *Approvals) Document() (*wire.ExecApprovalsGetResult, error) {
	path, exists, raw, err := a.lists.Document()
	if err != nil {
		return nil, err
	}
	res := &wire.ExecApprovalsGetResult{Path: path, Exists: exists}
	if err := json.Unmarshal(raw, &res.File); err != nil {
		return nil, fmt.Errorf("approvals document %s: %w", path, err)
	}
	if res.File.Agents == nil {
		res.File.Agents = map[string]wire.ExecApprovalsAgent{}
	}
	res.Hash = approval.Hash(raw)
	n := a.policy(a.set.DefaultAgent).Normalized()
	res.ResolvedDefaults = wire.ExecApprovalDefaults{Security: n.Security, Ask: n.Ask, AskFallback: n.AskFallback}
	return res, nil
}

// SetDocument answers exec.approvals.set: it replaces the approvals
// document when baseHash names the current one, and answers as
// exec.approvals.get.
func (a *Approvals) SetDocument(file json.RawMessage, baseHash string) (*wire.ExecApprovalsGetResult, error) {
	if err := a.lists.Replace(file, baseHash); err != nil {
		return nil, err
	}
	return a.Document()
}

// policy is agent's effective exec approval policy: the stricter of
// tools.exec (with the agent's own) and the approvals document, as the
// reference combines them.
func (a *Approvals) policy(agentID string) approval.Policy {
	p := a.set.ExecApprovals(agentID)
	conf := approval.Policy{Security: p.Security, Ask: p.Ask, AskFallback: p.AskFallback, SafeBins: p.SafeBins, SafeEnv: p.SafeEnv}
	return conf.Stricter(a.lists.Policy(agentID))
}
