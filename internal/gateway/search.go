package gateway

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Bounds of sessions.search.
const (
	defaultSearchLimit = 10
	maxSearchKeys      = 200
	// maxSearchScan bounds the entries one search reads, over all of its
	// sessions' transcripts.
	maxSearchScan = 200000
	searchPage    = 500
	// searchExcerpt is how much text around the match a hit carries.
	searchExcerpt = 200
)

// handleSessionsSearch is sessions.search: the user and assistant messages
// of the given sessions (or the most recently updated ones) that contain
// the query, case-insensitively, newest first within each session, from
// its current transcript and the ones it had before resets.
func (s *Server) handleSessionsSearch(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsSearchParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if len(p.SessionKeys) > maxSearchKeys {
		return nil, invalid("invalid sessions.search params: at /sessionKeys: must have at most 200 items")
	}
	query := strings.ToLower(strings.TrimSpace(p.Query))
	if query == "" {
		return nil, invalid("invalid sessions.search params: query is empty")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	res := wire.SessionsSearchResult{Results: []wire.SessionsSearchHit{}}
	sessions, err := s.searchSessions(ctx, &p)
	if err != nil {
		return nil, err
	}
	budget := maxSearchScan
	for _, sess := range sessions {
		read, _, err := store.WalkTranscripts(ctx, s.cfg.Store, sess.SessionID, searchPage, budget, func(_ string, m store.Message) bool {
			if hit, ok := matchEntry(m, query); ok {
				hit.SessionKey = sess.Key
				res.Results = append(res.Results, hit)
			}
			return len(res.Results) < limit
		})
		if err != nil {
			return nil, err
		}
		if len(res.Results) == limit {
			return res, nil
		}
		if budget -= read; budget <= 0 {
			res.Truncated = true
			return res, nil
		}
	}
	return res, nil
}

// searchSessions returns the sessions a search reads: the named ones that
// exist, or the most recently updated ones (of the agent, when named).
func (s *Server) searchSessions(ctx context.Context, p *wire.SessionsSearchParams) ([]*store.Session, error) {
	if len(p.SessionKeys) == 0 {
		opts := store.ListOptions{Limit: maxSearchKeys}
		if p.AgentID != "" {
			opts.AgentID = s.agentID(p.AgentID)
		}
		return s.cfg.Store.ListSessions(ctx, opts)
	}
	var out []*store.Session
	for _, k := range p.SessionKeys {
		sess, err := s.cfg.Store.GetSession(ctx, s.canonicalKey(k, s.agentID(p.AgentID)))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, nil
}

// matchEntry reports whether a user or assistant message contains query
// (lower case) and returns it as a hit with the text around the first
// occurrence and the number of occurrences as its score.
func matchEntry(m store.Message, query string) (wire.SessionsSearchHit, bool) {
	msg := m.Entry.Message
	if m.Entry.Type != transcript.TypeMessage || msg == nil || (msg.Role != transcript.RoleUser && msg.Role != transcript.RoleAssistant) {
		return wire.SessionsSearchHit{}, false
	}
	text := msg.Content.Text()
	lower := strings.ToLower(text)
	i := strings.Index(lower, query)
	if i < 0 {
		return wire.SessionsSearchHit{}, false
	}
	hit := wire.SessionsSearchHit{SessionID: m.SessionID, MessageID: m.Entry.ID, Role: msg.Role,
		Snippet: excerptAround(text, min(i, len(text)), len(query)), Score: float64(strings.Count(lower, query))}
	if ts, err := time.Parse(time.RFC3339Nano, m.Entry.Timestamp); err == nil {
		hit.Timestamp = ts.UnixMilli()
	} else if msg.Timestamp > 0 {
		hit.Timestamp = msg.Timestamp
	}
	return hit, true
}

// excerptAround returns at most about searchExcerpt bytes of text around
// the match at [i, i+n), cut at rune boundaries, with "…" where cut.
func excerptAround(text string, i, n int) string {
	if len(text) <= searchExcerpt {
		return text
	}
	start := max(0, i-(searchExcerpt-n)/2)
	end := min(len(text), start+searchExcerpt)
	start = max(0, end-searchExcerpt)
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}
