package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// errResetRaced aborts an automatic reset whose session changed meanwhile.
var errResetRaced = errors.New("session changed")

// SessionStartedAt returns when the session's current transcript began:
// its "sessionStartedAt" (ms) when recorded, else its creation time.
func SessionStartedAt(s *store.Session) time.Time {
	var extra struct {
		Started int64 `json:"sessionStartedAt"`
	}
	if len(s.Extra) > 0 && json.Unmarshal(s.Extra, &extra) == nil && extra.Started > 0 {
		return time.UnixMilli(extra.Started)
	}
	return s.CreatedAt
}

// autoReset starts a fresh transcript for in's session when its reset rule
// (session.reset: daily or idle) says it expired, before a person's input
// is queued on it. A busy session is not reset; input from other sessions,
// announces and tools never resets one. known, when not nil, is the
// session as just read (returned unread when no reset rule applies).
func (r *Runner) autoReset(ctx context.Context, in *Input, known *store.Session, dup *dupCheck) (*store.Session, error) {
	if r.cfg.ResetRule == nil || in.Provenance != nil {
		return known, nil
	}
	sess, err := known, error(nil)
	if sess == nil {
		sess, err = r.cfg.Store.GetSession(ctx, in.SessionKey)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && sess.SessionID == "") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := r.now()
	reason, stale := r.cfg.ResetRule(sess).Stale(SessionStartedAt(sess), sess.UpdatedAt, now)
	if !stale {
		return sess, nil
	}
	r.mu.Lock()
	busy := r.lanes[in.SessionKey] != nil
	r.mu.Unlock()
	if busy {
		return sess, nil
	}
	if err := dup.check(ctx); err != nil {
		return nil, err // a repeated input resets nothing
	}
	old, fresh := sess.SessionID, r.newID()
	sess, err = r.cfg.Store.UpdateSession(ctx, in.SessionKey, false, func(s *store.Session) error {
		if s.SessionID != old {
			return errResetRaced
		}
		s.SessionID = fresh
		s.SystemSent, s.AbortedLastRun = false, false
		s.InputTokens, s.OutputTokens, s.TotalTokens, s.ContextTokens = 0, 0, 0, 0
		s.Extra = setMember(s.Extra, "previousSessionId", old)
		s.Extra = setMember(s.Extra, "sessionStartedAt", now.UnixMilli())
		s.Extra = setMember(s.Extra, "compactionCount", nil)
		s.UpdatedAt = now
		return nil
	})
	if errors.Is(err, errResetRaced) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("automatic reset: %w", err)
	}
	e := transcript.Entry{Type: transcript.TypeReset, Timestamp: transcript.FormatTime(now), Extra: map[string]json.RawMessage{}}
	e.Extra["reason"], _ = json.Marshal(reason)
	e.Extra["previousSessionId"], _ = json.Marshal(old)
	if _, err := r.cfg.Store.AppendMessages(ctx, fresh, []store.Message{{SessionID: fresh, Entry: e}}); err != nil {
		return nil, fmt.Errorf("automatic reset: %w", err)
	}
	r.log.Info("session reset", "sessionKey", in.SessionKey, "reason", reason, "previousSessionId", old, "sessionId", sess.SessionID)
	return sess, nil
}

// setMember sets (or with a nil v removes) one member of a JSON object.
func setMember(raw json.RawMessage, name string, v any) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name], _ = json.Marshal(v)
	}
	if len(m) == 0 {
		return nil
	}
	out, _ := json.Marshal(m)
	return out
}
