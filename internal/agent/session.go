package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// ensureSession returns the session of in, creating it (with its
// sessionStartedAt) when it does not exist yet. known, when not nil, is
// the session as just read.
func (r *Runner) ensureSession(ctx context.Context, in *Input, known *store.Session, dup *dupCheck) (*store.Session, error) {
	// The common case, an existing session, needs no write (nor does
	// outside input to a session already marked as driven by it).
	origin := in.Untrusted()
	s, err := known, error(nil)
	if s == nil {
		s, err = r.cfg.Store.GetSession(ctx, in.SessionKey)
	}
	if err == nil && s.SessionID != "" && s.AgentID != "" && (origin == "" || SessionUntrusted(s) == origin) {
		if in.AgentID == "" {
			in.AgentID = s.AgentID
		}
		return s, nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err := dup.check(ctx); err != nil {
		return nil, err // a repeated input changes no session
	}
	return r.cfg.Store.UpdateSession(ctx, in.SessionKey, true, func(s *store.Session) error {
		if s.SessionID == "" {
			s.SessionID = r.newID()
			MarkSessionStarted(s, r.now())
		}
		if s.AgentID == "" {
			s.AgentID = in.AgentID
		}
		if s.CreatedAt.IsZero() {
			if s.Label == "" {
				s.Label = in.Label
			}
			if s.SpawnedBy == "" {
				s.SpawnedBy = in.SpawnedBy
			}
			if r.cfg.InitSession != nil {
				r.cfg.InitSession(s, in)
			}
		}
		if in.AgentID == "" {
			in.AgentID = s.AgentID
		}
		if origin != "" {
			s.Extra = setMember(s.Extra, sessionUntrustedField, origin)
		}
		s.UpdatedAt = r.now()
		return nil
	})
}

// MarkSessionStarted records t as the start of sess's current transcript
// (its sessionStartedAt, which the daily and idle resets read).
func MarkSessionStarted(sess *store.Session, t time.Time) {
	sess.Extra = setMember(sess.Extra, "sessionStartedAt", t.UnixMilli())
}

// sessionUntrustedField is the session's extra field naming the outside
// origin that last drove it (shown on session rows as "untrusted").
const sessionUntrustedField = "untrusted"

// SessionUntrusted returns the outside origin that last drove sess
// ("webhook", "a2a", "<channel> room"; "" when only the operator and its
// own agents have).
func SessionUntrusted(sess *store.Session) string {
	var x struct {
		Untrusted string `json:"untrusted"`
	}
	if sess == nil || len(sess.Extra) == 0 || json.Unmarshal(sess.Extra, &x) != nil {
		return ""
	}
	return x.Untrusted
}
