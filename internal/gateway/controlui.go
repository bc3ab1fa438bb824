package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// The methods below are what the reference's Control UI (npm openclaw,
// dist/control-ui, 2026.9.6) calls besides Switchboard's own: with them
// its chat, sessions and agents views work against this gateway. What
// Switchboard has no notion of answers empty in the reference's shape
// (absent.go).

func (s *Server) handleSessionsDescribe(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Key                string `json:"key"`
		AgentID            string `json:"agentId"`
		IncludeLastMessage bool   `json:"includeLastMessage"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	agentFilter := ""
	if strings.TrimSpace(p.AgentID) != "" {
		agentFilter = sessionkey.NormalizeAgentID(p.AgentID)
	}
	key := s.canonicalKey(p.Key, agentFilter)
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return wire.SessionsDescribeResult{}, nil
	}
	if err != nil {
		return nil, err
	}
	r := row(sess)
	if r.Status, err = s.sessionStatus(ctx, sess); err != nil {
		return nil, err
	}
	if s.cfg.Budget != nil {
		b, err := s.cfg.Budget(ctx, sess)
		if err != nil {
			return nil, err
		}
		if b != nil {
			r.Budget = b
		}
	}
	if p.IncludeLastMessage {
		if r.LastMessagePreview, err = s.lastMessagePreview(ctx, sess); err != nil {
			return nil, err
		}
	}
	return wire.SessionsDescribeResult{Session: &r}, nil
}

// previewRunes caps lastMessagePreview.
const previewRunes = 200

// previewScan is how many of the newest transcript entries
// lastMessagePreview looks through for one with text.
const previewScan = 8

// lastMessagePreview is the start of the newest user or assistant message
// with text in sess's transcript, "" when there is none.
func (s *Server) lastMessagePreview(ctx context.Context, sess *store.Session) (string, error) {
	if sess.SessionID == "" {
		return "", nil
	}
	msgs, err := s.cfg.Store.History(ctx, sess.SessionID, store.HistoryOptions{Limit: previewScan})
	if err != nil {
		return "", err
	}
	for _, m := range slices.Backward(msgs) {
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil ||
			msg.Role != transcript.RoleUser && msg.Role != transcript.RoleAssistant {
			continue
		}
		text := strings.Join(strings.Fields(msg.Content.Text()), " ")
		if text == "" || text == silentReply {
			continue
		}
		if r := []rune(text); len(r) > previewRunes {
			text = string(r[:previewRunes-1]) + "…"
		}
		return text, nil
	}
	return "", nil
}

// handleSessionsSubscribe turns on sessions.changed events for the
// connection until it closes. Non-empty params are sessions.list's and
// the list comes back in the same response.
func (s *Server) handleSessionsSubscribe(ctx context.Context, cl *call) (any, error) {
	var p map[string]json.RawMessage
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	// Subscribed before the list is read: a change meanwhile is not lost.
	cl.c.mu.Lock()
	cl.c.sessionsSub = true
	s.subs.setSessions(cl.c, true)
	cl.c.mu.Unlock()
	res := wire.SessionsSubscribeResult{Subscribed: true}
	if len(p) == 0 {
		return res, nil
	}
	list, err := s.handleSessionsList(ctx, cl)
	if err != nil {
		return nil, err
	}
	l := list.(wire.SessionsListResult)
	res.List = &l
	return res, nil
}

func (s *Server) handleSessionsUnsubscribe(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	cl.c.mu.Lock()
	cl.c.sessionsSub = false
	s.subs.setSessions(cl.c, false)
	cl.c.mu.Unlock()
	return wire.SessionsSubscribeResult{}, nil
}

// sessionChange is one sessions.changed event waiting for its row, or a
// run's new transcript messages waiting to go out as session.message
// events, or both.
type sessionChange struct {
	key, reason, phase string
	ts                 int64
	// runID, when set, asks for the run's transcript messages not yet
	// sent as session.message; final says the run (or post) is over.
	runID string
	final bool
	// rows says sessions.changed goes out (someone subscribed).
	rows bool
}

// sessionChangesQueue bounds the changes waiting for their rows; past it
// the event goes out at once without the row (and a run's messages wait
// for its next change).
const sessionChangesQueue = 256

// sessionsChanged tells sessions.subscribe connections that the row of
// key changed, with the reference's reasons: sessions.patch ("patch"),
// reset ("reset"), delete ("delete") and create ("new"); runChanged
// covers runs. The event carries the row in "session" as
// sessions.describe returns it; sessionsChangedLoop reads it, so the
// caller (a run's event callback) never waits for the store.
func (s *Server) sessionsChanged(key, reason, phase string) {
	s.queueChange(sessionChange{key: key, reason: reason, phase: phase})
}

// runChanged is sessionsChanged for a run's progress: a run started
// ("agent.run.started", which makes the reference's Control UI reload the
// open chat), began a model turn or finished a tool (no reason: no
// sessions.changed), ended ("lifecycle", phase "end", final), or a post
// was written (final). Connections subscribed to the session's messages
// (sessions.messages.subscribe) get the transcript messages the run wrote
// since its last change as session.message events.
func (s *Server) runChanged(key, runID, reason, phase string, final bool) {
	s.queueChange(sessionChange{key: key, reason: reason, phase: phase, runID: runID, final: final})
}

func (s *Server) queueChange(ch sessionChange) {
	if ch.key == "" {
		return
	}
	ch.rows = ch.reason != "" && s.anySessionsSub()
	// A final change always goes through: it forgets what was sent of
	// the run.
	msgs := ch.runID != "" && (ch.final || s.anyMessagesSub(ch.key))
	if !ch.rows && !msgs {
		return
	}
	ch.ts = s.now().UnixMilli()
	select {
	case s.sessionChanges <- ch:
	default:
		if ch.rows {
			s.sendSessionsChanged(ch, nil)
		}
	}
}

func (s *Server) anySessionsSub() bool {
	for _, c := range s.subs.sessionsSubs() {
		c.mu.Lock()
		want := c.ready && c.sessionsSub
		c.mu.Unlock()
		if want {
			return true
		}
	}
	return false
}

// anyMessagesSub reports whether a connection subscribed to the messages
// of session key.
func (s *Server) anyMessagesSub(key string) bool {
	for _, c := range s.subs.subscribers(key) {
		c.mu.Lock()
		want := c.wantsMessagesLocked(key)
		c.mu.Unlock()
		if want {
			return true
		}
	}
	return false
}

// maxTrackedRuns bounds the runs sessionsChangedLoop remembers messages
// of; past it (final changes lost to a full queue) it starts over.
const maxTrackedRuns = 4096

// sessionsChangedLoop sends the queued changes in order: a run's new
// messages (session.message), then sessions.changed, each with the
// session's row as it is when the event is sent.
func (s *Server) sessionsChangedLoop() {
	// sent is the transcript seq of the last message sent per run; only
	// this goroutine touches it.
	sent := map[string]int64{}
	for {
		select {
		case <-s.ctx.Done():
			return
		case ch := <-s.sessionChanges:
			s.sendChange(ch, sent)
			if ch.final {
				delete(sent, ch.runID)
			}
		}
	}
}

// sendChange sends one queued change; sent is sessionsChangedLoop's.
func (s *Server) sendChange(ch sessionChange, sent map[string]int64) {
	msgs := ch.runID != "" && s.anyMessagesSub(ch.key)
	if !msgs && !ch.rows {
		return // a run's end nobody follows any more
	}
	var r *wire.SessionRow
	sess, err := s.cfg.Store.GetSession(s.ctx, ch.key)
	if err == nil {
		row := row(sess)
		// The status as the run's change left it (a lookup failure
		// only leaves it out).
		row.Status, _ = s.sessionStatus(s.ctx, sess)
		r = &row
	} else if !errors.Is(err, store.ErrNotFound) && s.ctx.Err() == nil {
		s.log.Debug("sessions.changed: reading the row", "key", ch.key, "err", err)
	}
	if msgs && sess != nil {
		if len(sent) >= maxTrackedRuns {
			clear(sent)
		}
		sent[ch.runID] = s.sendRunMessages(sess, r, ch.runID, sent[ch.runID])
	}
	if ch.rows {
		s.sendSessionsChanged(ch, r)
	}
}

// runMessagesPage bounds the messages of a run one change sends.
const runMessagesPage = 64

// sendRunMessages sends the transcript messages runID wrote after seq
// after to the connections subscribed to sess's messages, and returns the
// seq of the last one.
func (s *Server) sendRunMessages(sess *store.Session, r *wire.SessionRow, runID string, after int64) int64 {
	if sess.SessionID == "" {
		return after
	}
	msgs, err := s.cfg.Store.History(s.ctx, sess.SessionID, store.HistoryOptions{RunID: runID, Limit: runMessagesPage})
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Debug("session.message: reading the transcript", "key", sess.Key, "runId", runID, "err", err)
		}
		return after
	}
	last := after
	for _, m := range msgs {
		if m.Seq <= after {
			continue
		}
		last = max(last, m.Seq)
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil ||
			msg.Role == transcript.RoleAssistant && strings.TrimSpace(msg.Content.Text()) == silentReply {
			continue
		}
		raw, err := historyMessage(m)
		if err != nil {
			continue
		}
		b, err := json.Marshal(wire.SessionMessageEvent{
			SessionKey: sess.Key, AgentID: sess.AgentID, Message: raw,
			MessageID: m.Entry.ID, MessageSeq: m.Seq, Session: r,
		})
		if err != nil {
			continue
		}
		for _, c := range s.subs.subscribers(sess.Key) {
			c.mu.Lock()
			want := c.wantsMessagesLocked(sess.Key)
			c.mu.Unlock()
			if want {
				c.sendEvent(wire.EventSessionMessage, b, true)
			}
		}
	}
	return last
}

func (s *Server) sendSessionsChanged(ch sessionChange, r *wire.SessionRow) {
	ev := map[string]any{"sessionKey": ch.key, "reason": ch.reason, "ts": ch.ts}
	if ch.phase != "" {
		ev["phase"] = ch.phase
	}
	if r != nil {
		ev["session"] = r
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	for _, c := range s.subs.sessionsSubs() {
		c.mu.Lock()
		want := c.ready && c.sessionsSub
		c.mu.Unlock()
		if want {
			c.sendEvent(wire.EventSessionsChanged, b, true)
		}
	}
}

func (s *Server) handleAgentIdentityGet(ctx context.Context, cl *call) (any, error) {
	var p struct {
		AgentID    string `json:"agentId"`
		SessionKey string `json:"sessionKey"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	id := s.defaultAgent
	switch {
	case strings.TrimSpace(p.AgentID) != "":
		id = sessionkey.NormalizeAgentID(p.AgentID)
	case strings.TrimSpace(p.SessionKey) != "":
		if a := sessionkey.AgentID(s.canonicalKey(p.SessionKey, "")); a != "" {
			id = a
		}
	}
	if ids := s.conf.AgentIDs(); len(ids) > 0 && !slices.Contains(ids, id) {
		return nil, invalid("unknown agent id \"" + id + "\"")
	}
	res := wire.AgentIdentityResult{AgentID: id, Name: s.conf.Agent(id).Name, NameSource: "config", AvatarStatus: "none"}
	if res.Name == "" {
		res.Name, res.NameSource = "Switchboard", "default"
	}
	return res, nil
}

func (s *Server) handleModelsAuthStatus(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	res := wire.ModelsAuthStatusResult{TS: s.now().UnixMilli(), Providers: []wire.ProviderAuthStatus{}}
	seen := map[string]int{}
	for _, m := range s.catalog() {
		status := "missing"
		if m.Available {
			status = "static"
		}
		if i, ok := seen[m.Provider]; ok {
			if status == "static" {
				res.Providers[i].Status = status
			}
			continue
		}
		seen[m.Provider] = len(res.Providers)
		res.Providers = append(res.Providers, wire.ProviderAuthStatus{Provider: m.Provider, Status: status, Profiles: []any{}})
	}
	return res, nil
}
