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
	defaultSearchLimit = 50
	// maxSearchScan bounds the entries one search reads, over all of the
	// session's transcripts.
	maxSearchScan = 200000
	searchPage    = 500
	// searchExcerpt is how much text around the match a result carries.
	searchExcerpt = 200
)

func (s *Server) handleSessionsSearch(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsSearchParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	res := wire.SessionsSearchResult{Key: key, Matches: []wire.SessionsMatch{}}
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, invalid("No session found: " + p.Key)
	}
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	query := strings.ToLower(strings.TrimSpace(p.Query))
	scanned := 0
	for sid := sess.SessionID; sid != ""; {
		before := int64(0)
		for {
			page, err := s.cfg.Store.History(ctx, sid, store.HistoryOptions{Limit: searchPage, BeforeSeq: before})
			if err != nil {
				return nil, err
			}
			for i := len(page) - 1; i >= 0; i-- {
				if m, ok := matchEntry(page[i], query); ok {
					m.Current = sid == sess.SessionID
					res.Matches = append(res.Matches, m)
					if len(res.Matches) == limit {
						return res, nil
					}
				}
			}
			scanned += len(page)
			if scanned >= maxSearchScan {
				res.Truncated = true
				return res, nil
			}
			if len(page) < searchPage || page[0].Seq <= 1 {
				break
			}
			before = page[0].Seq
		}
		prev, err := store.PreviousSessionID(ctx, s.cfg.Store, sid)
		if err != nil {
			return nil, err
		}
		sid = prev
	}
	return res, nil
}

// matchEntry reports whether a transcript message contains query (lower
// case) and returns it as a match with the text around the first hit.
func matchEntry(m store.Message, query string) (wire.SessionsMatch, bool) {
	msg := m.Entry.Message
	if m.Entry.Type != transcript.TypeMessage || msg == nil {
		return wire.SessionsMatch{}, false
	}
	text := msg.Content.Text()
	i := strings.Index(strings.ToLower(text), query)
	if i < 0 {
		return wire.SessionsMatch{}, false
	}
	out := wire.SessionsMatch{SessionID: m.SessionID, Seq: m.Seq, ID: m.Entry.ID, Role: msg.Role, Text: excerptAround(text, i, len(query))}
	if ts, err := time.Parse(time.RFC3339Nano, m.Entry.Timestamp); err == nil {
		out.Timestamp = ts.UnixMilli()
	}
	return out, true
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
