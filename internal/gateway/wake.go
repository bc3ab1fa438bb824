package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// wake and last-heartbeat. The reference queues a system event for the
// main session's next heartbeat (a scheduled agent turn), or runs that
// heartbeat at once ("now"). Switchboard has no heartbeat schedule: the
// event is a turn of the session right away, in either mode, and its end
// is the heartbeat event last-heartbeat returns.

// wakeProvenance marks a wake's input in the transcript.
const wakeProvenance = "system_event"

// heartbeatPreviewRunes bounds the reply preview of a heartbeat event.
const heartbeatPreviewRunes = 200

// heartbeatEvent is the reference's heartbeat event (last-heartbeat).
type heartbeatEvent struct {
	TS         int64  `json:"ts"`
	Status     string `json:"status"` // "sent", "ok-empty" or "failed"
	SessionKey string `json:"sessionKey,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Preview    string `json:"preview,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

func (s *Server) handleWake(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Mode, Text, SessionKey, AgentID string
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	agentID := s.defaultAgent
	if p.AgentID != "" {
		agentID = s.agentID(p.AgentID)
	}
	key := sessionkey.MainKey(agentID, s.alias.MainKey)
	if strings.TrimSpace(p.SessionKey) != "" {
		key = s.canonicalKey(p.SessionKey, agentID)
		if p.AgentID != "" && sessionkey.AgentID(key) != agentID {
			return nil, invalid("wake agentId contradicts the agent that owns sessionKey; pass a single canonical wake target")
		}
		agentID = sessionkey.AgentID(key)
	}
	if !s.knownAgent(agentID) {
		return nil, unknownAgent(agentID)
	}
	if sessionkey.IsSubagent(key) {
		return nil, invalid("wake sessionKey cannot target a subagent session")
	}
	runID := uuid.NewString()
	s.wakes.Store(runID, s.now())
	// A wake is a system event, not a message: it takes no command, no
	// send policy and no queue settings of its own.
	_, err := s.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginStep, Input: agent.Input{
		RunID: runID, SessionKey: key, AgentID: agentID, Message: "System: " + strings.TrimSpace(p.Text),
		IdempotencyKey: runID + ":user", Channel: internalChannel,
		Provenance: &agent.Provenance{Kind: wakeProvenance},
	}})
	if err != nil {
		s.wakes.Delete(runID)
		if ctx.Err() == nil {
			s.recordHeartbeat(heartbeatEvent{TS: s.now().UnixMilli(), Status: "failed", SessionKey: key, Reason: err.Error()})
		}
		return nil, err
	}
	return wire.OKResult{OK: true}, nil
}

// wakeEnded records the heartbeat event of a wake's run when ev ends one.
func (s *Server) wakeEnded(ev agent.Event) {
	if ev.Stream != agent.StreamLifecycle || ev.Phase != agent.PhaseEnd {
		return
	}
	v, ok := s.wakes.LoadAndDelete(ev.RunID)
	if !ok {
		return
	}
	started := v.(time.Time)
	hb := heartbeatEvent{TS: ev.Time.UnixMilli(), Status: "ok-empty", SessionKey: ev.SessionKey, DurationMs: ev.Time.Sub(started).Milliseconds()}
	reply := ""
	if ev.Message != nil {
		reply = strings.Join(strings.Fields(ev.Message.Content.Text()), " ")
	}
	switch {
	case ev.Run != nil && ev.Run.Status != store.RunOK:
		hb.Status, hb.Reason = "failed", ev.Run.Error
		if hb.Reason == "" {
			hb.Reason = string(ev.Run.Status)
		}
	case reply != "" && reply != silentReply:
		hb.Status = "sent"
		if r := []rune(reply); len(r) > heartbeatPreviewRunes {
			reply = string(r[:heartbeatPreviewRunes-1]) + "…"
		}
		hb.Preview = reply
	}
	s.recordHeartbeat(hb)
}

func (s *Server) recordHeartbeat(hb heartbeatEvent) {
	b, err := json.Marshal(hb)
	if err != nil {
		return
	}
	raw := json.RawMessage(b)
	s.lastHeartbeat.Store(&raw)
}

// handleLastHeartbeat returns the last heartbeat event, null before the
// first.
func (s *Server) handleLastHeartbeat(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	if hb := s.lastHeartbeat.Load(); hb != nil {
		return *hb, nil
	}
	return json.RawMessage("null"), nil
}
