package gateway

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// anchorScanPage is how many entries one read takes while looking for a
// messageId anchor.
const anchorScanPage = 500

// historyPage reads the entries of one chat.history page and fills in the
// paging members of res. Without paging params it is the newest limit
// entries of the current transcript. sessionId picks an archived
// transcript of the key (one the current one continues after resets);
// offset skips the newest entries; messageId ends the page at that entry;
// historyCursor continues from a previous page's NextHistoryCursor, which
// crosses into the archived transcripts.
func (s *Server) historyPage(ctx context.Context, sess *store.Session, p *wire.ChatHistoryParams, limit int, res *wire.ChatHistoryResult) ([]store.Message, error) {
	sid, before := sess.SessionID, int64(0)
	if p.HistoryCursor != "" {
		c, err := parseHistoryCursor(p.HistoryCursor)
		if err != nil {
			return nil, invalid("invalid chat.history params: historyCursor: " + err.Error())
		}
		sid, before = c.sessionID, c.beforeSeq
	} else if p.SessionID != "" {
		sid = p.SessionID
	}
	if sid != sess.SessionID {
		chain, err := store.TranscriptChain(ctx, s.cfg.Store, sess.SessionID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(chain, sid) {
			return nil, invalid(fmt.Sprintf("sessionId %q is not a transcript of session %q", sid, sess.Key))
		}
		res.SessionID = sid
	}
	total, err := s.cfg.Store.CountMessages(ctx, sid)
	if err != nil {
		return nil, err
	}
	anchored := p.MessageID != ""
	switch {
	case anchored:
		seq, err := s.findEntry(ctx, sid, p.MessageID)
		if err != nil {
			return nil, err
		}
		before = seq + 1
	case p.Offset != nil && p.HistoryCursor == "":
		if *p.Offset < 0 {
			return nil, invalid("invalid chat.history params: offset must be >= 0")
		}
		before = max(total-int64(*p.Offset)+1, 1)
	}
	var hist []store.Message
	if before != 1 {
		if hist, err = s.cfg.Store.History(ctx, sid, store.HistoryOptions{Limit: limit, BeforeSeq: before}); err != nil {
			return nil, err
		}
	}
	// Older entries: in this transcript before the first one returned,
	// else in the transcript this one continues.
	first := before
	if len(hist) > 0 {
		first = hist[0].Seq
	} else if first == 0 {
		first = total + 1
	}
	more := first > 1
	if more {
		res.NextHistoryCursor = historyCursor{sid, first}.String()
	} else if prev, err := store.PreviousSessionID(ctx, s.cfg.Store, sid); err != nil {
		return nil, err
	} else if prev != "" {
		res.NextHistoryCursor = historyCursor{prev, 0}.String()
	}
	if !anchored && p.HistoryCursor == "" {
		offset := 0
		if p.Offset != nil {
			offset = *p.Offset
		}
		n := int(total)
		res.Offset, res.TotalMessages, res.HasMore = &offset, &n, &more
		if more {
			res.NextOffset = offset + len(hist)
		}
	}
	return hist, nil
}

// findEntry returns the seq of the entry with id in transcript sid.
func (s *Server) findEntry(ctx context.Context, sid, id string) (int64, error) {
	before := int64(0)
	for {
		page, err := s.cfg.Store.History(ctx, sid, store.HistoryOptions{Limit: anchorScanPage, BeforeSeq: before})
		if err != nil {
			return 0, err
		}
		for i := len(page) - 1; i >= 0; i-- {
			if page[i].Entry.ID == id {
				return page[i].Seq, nil
			}
		}
		if len(page) < anchorScanPage || page[0].Seq <= 1 {
			return 0, invalid(fmt.Sprintf("messageId %q not found in transcript %q", id, sid))
		}
		before = page[0].Seq
	}
}

// historyCursor is a position in a key's transcripts: the entries of
// sessionID before beforeSeq (0: from its newest entry).
type historyCursor struct {
	sessionID string
	beforeSeq int64
}

func (c historyCursor) String() string {
	return c.sessionID + ":" + strconv.FormatInt(c.beforeSeq, 10)
}

func parseHistoryCursor(s string) (historyCursor, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return historyCursor{}, fmt.Errorf("malformed cursor %q", s)
	}
	seq, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || seq < 0 {
		return historyCursor{}, fmt.Errorf("malformed cursor %q", s)
	}
	return historyCursor{sessionID: s[:i], beforeSeq: seq}, nil
}
