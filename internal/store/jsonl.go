package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TranscriptReader is what ExportTranscript needs of a store.
type TranscriptReader interface {
	GetSession(ctx context.Context, key string) (*Session, error)
	History(ctx context.Context, sessionID string, opts HistoryOptions) ([]Message, error)
}

// exportPageSize is how many entries ExportTranscript holds at once.
const exportPageSize = 1000

// ExportTranscript writes the current transcript of the session with key
// sessionKey to w as JSONL: a header (type "session", version
// transcript.HeaderVersion, id = the SessionID, timestamp = the session's
// CreatedAt; cwd is not stored and so omitted), then every entry in Seq
// order, one line each. It reads the transcript in pages, so a long one is
// never held in memory, and writes the entries that existed when it started.
// ErrNotFound if the session does not exist.
func ExportTranscript(ctx context.Context, s TranscriptReader, sessionKey string, w io.Writer) error {
	sess, err := s.GetSession(ctx, sessionKey)
	if err != nil {
		return fmt.Errorf("store.ExportTranscript: %w", err)
	}
	if err := exportTranscript(ctx, s, sess, w); err != nil {
		return fmt.Errorf("store.ExportTranscript: %s: %w", sessionKey, err)
	}
	return nil
}

func exportTranscript(ctx context.Context, s TranscriptReader, sess *Session, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := transcript.NewEncoder(bw)
	h := transcript.NewHeader(sess.SessionID, sess.CreatedAt, "")
	if err := enc.WriteHeader(h); err != nil {
		return err
	}
	last, err := s.History(ctx, sess.SessionID, HistoryOptions{Limit: 1})
	if err != nil {
		return err
	}
	var maxSeq int64
	if len(last) > 0 {
		maxSeq = last[0].Seq
	}
	// History pages backwards from BeforeSeq, so walk forward in windows
	// [lo, hi) of Seq. Seqs are gap-free positions, but the filter keeps
	// this correct even for a backend that left gaps.
	for lo := int64(1); lo <= maxSeq; lo += exportPageSize {
		hi := min(lo+exportPageSize, maxSeq+1)
		page, err := s.History(ctx, sess.SessionID, HistoryOptions{BeforeSeq: hi, Limit: int(hi - lo)})
		if err != nil {
			return err
		}
		for _, m := range page {
			if m.Seq < lo {
				continue
			}
			if err := enc.WriteEntry(m.Entry); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// ImportTranscript reads a JSONL transcript from r and appends its entries,
// ids, parentIds and timestamps unchanged, to the session with key
// sessionKey.
//
// A missing session is created with SessionID = the header id (or a new
// UUID when another session or an existing transcript already uses that
// id), AgentID = agentID (derived from the key when empty), Kind derived
// from the key, CreatedAt = the header timestamp and UpdatedAt = the last
// entry's timestamp. An existing session gets the entries appended to its
// current transcript.
//
// The whole input is parsed before anything is written, so a malformed
// transcript writes nothing. The entries are appended in one AppendMessages
// call; if that fails, a session created here is deleted again. A parentId
// of null on an entry other than the first is replaced by the previous
// entry's id (the Store contract cannot express a second root).
func ImportTranscript(ctx context.Context, s Store, sessionKey, agentID string, r io.Reader) (*Session, error) {
	if sessionKey == "" {
		return nil, errors.New("store.ImportTranscript: empty session key")
	}
	h, entries, err := transcript.ReadJSONL(r)
	if err != nil {
		return nil, fmt.Errorf("store.ImportTranscript: %w", err)
	}
	msgs := make([]Message, len(entries))
	for i, e := range entries {
		m := Message{Entry: e, CreatedAt: parseTime(e.Timestamp)}
		if e.Message != nil {
			m.Role = e.Message.Role
			if e.Message.Meta != nil {
				m.RunID = e.Message.Meta.RunID
			}
		}
		msgs[i] = m
	}

	sess, created, err := importSession(ctx, s, sessionKey, agentID, h, msgs)
	if err != nil {
		return nil, fmt.Errorf("store.ImportTranscript: %w", err)
	}
	if len(msgs) > 0 {
		if _, err := s.AppendMessages(ctx, sess.SessionID, msgs); err != nil {
			if created {
				// Undo, even if ctx is what failed the append.
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if derr := s.DeleteSession(cctx, sessionKey, true); derr != nil {
					err = errors.Join(err, fmt.Errorf("undo: %w", derr))
				}
			}
			return nil, fmt.Errorf("store.ImportTranscript: %w", err)
		}
	}
	sess, err = s.GetSession(ctx, sessionKey)
	if err != nil {
		return nil, fmt.Errorf("store.ImportTranscript: %w", err)
	}
	return sess, nil
}

// importSession returns the session to import into, creating it if missing;
// created reports whether it did.
func importSession(ctx context.Context, s Store, key, agentID string, h transcript.Header, msgs []Message) (_ *Session, created bool, _ error) {
	sess, err := s.GetSession(ctx, key)
	if err == nil {
		if sess.SessionID == "" {
			return nil, false, fmt.Errorf("session %q has no session id", key)
		}
		return sess, false, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	sid, err := freeSessionID(ctx, s, h.ID)
	if err != nil {
		return nil, false, err
	}
	if agentID == "" {
		agentID = sessionkey.AgentID(key)
	}
	sess = &Session{
		Key:       key,
		SessionID: sid,
		AgentID:   agentID,
		Kind:      string(sessionkey.RowKindOf(key)),
		CreatedAt: parseTime(h.Timestamp),
	}
	if n := len(msgs); n > 0 {
		sess.UpdatedAt = msgs[n-1].CreatedAt
	}
	if sess.UpdatedAt.Before(sess.CreatedAt) {
		sess.UpdatedAt = sess.CreatedAt
	}
	if err := s.CreateSession(ctx, sess); errors.Is(err, ErrConflict) {
		// Created concurrently: import into that one.
		sess, err = s.GetSession(ctx, key)
		return sess, false, err
	} else if err != nil {
		return nil, false, err
	}
	return sess, true, nil
}

// freeSessionID returns id if no session and no stored transcript use it,
// else a new UUID.
func freeSessionID(ctx context.Context, s Store, id string) (string, error) {
	if id == "" {
		return uuid.NewString(), nil
	}
	users, err := s.SessionsByID(ctx, id)
	if err != nil {
		return "", err
	}
	if len(users) > 0 {
		return uuid.NewString(), nil
	}
	n, err := s.CountMessages(ctx, id)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return uuid.NewString(), nil
	}
	return id, nil
}

// parseTime parses an ISO transcript timestamp; the zero time if it cannot.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
