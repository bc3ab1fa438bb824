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

// Provider and model recorded on posted messages (the reference's
// gateway-injected assistant messages).
const (
	PostProvider = "gateway"
	PostModel    = "gateway-injected"
)

// ErrNoSession is returned by Post for a session that does not exist.
var ErrNoSession = errors.New("session not found")

// Post is a message put into a session's transcript without a model turn:
// an operator note (chat.inject), a command's reply, an agent-to-agent
// result or an announce delivered to a session.
type Post struct {
	SessionKey string // canonical key; the session must exist
	Text       string
	// Label is shown by UIs beside the message (chat.inject's label).
	Label string
	// Provenance, when set, records where the message came from.
	Provenance *transcript.Provenance
	// IdempotencyKey, when set, makes a repeated post return the first
	// one's message without posting again.
	IdempotencyKey string
	// RunID, when set, is the run id the message is filed under (its
	// __openclaw.runId); default a fresh "inject-<id>".
	RunID string
	// Images are added after the text (image blocks: base64 data and a
	// MIME type), e.g. the /context map picture.
	Images []transcript.Block
	// AfterRun makes Post wait while the session has a run in progress,
	// so that the message does not land between that run's input and its
	// reply (an announce arriving mid-turn would otherwise sit inside the
	// turn the model is answering). ctx bounds the wait.
	AfterRun bool
}

// Post appends p to its session's transcript as an assistant message and
// emits it as a StreamPost event (a gateway shows it as a chat final
// event). The idempotency check and the append are one store transaction,
// so a repeated or concurrent post with the same key stores one message;
// a repeat emits nothing. It returns the message's entry id.
func (r *Runner) Post(ctx context.Context, p Post) (messageID string, err error) {
	if p.AfterRun {
		if err := r.waitIdle(ctx, p.SessionKey); err != nil {
			return "", fmt.Errorf("agent.Post: %w", err)
		}
	}
	sess, err := r.cfg.Store.GetSession(ctx, p.SessionKey)
	if errors.Is(err, store.ErrNotFound) || err == nil && sess.SessionID == "" {
		return "", fmt.Errorf("%w: %s", ErrNoSession, p.SessionKey)
	}
	if err != nil {
		return "", fmt.Errorf("agent.Post: %w", err)
	}
	now := r.now()
	msg := transcript.NewAssistantMessage(append([]transcript.Block{transcript.TextBlock(p.Text)}, p.Images...), now)
	msg.Provider, msg.Model, msg.StopReason = PostProvider, PostModel, "stop"
	msg.IdempotencyKey = p.IdempotencyKey
	msg.Provenance = p.Provenance
	postID := p.RunID
	if postID == "" {
		postID = "inject-" + r.newID()
	}
	msg.Meta = &transcript.Meta{RunID: postID}
	if p.Label != "" {
		label, _ := json.Marshal(p.Label)
		msg.Meta.Extra = map[string]json.RawMessage{"label": label}
	}
	stored, posted, err := r.postMessage(ctx, p.SessionKey, sess.SessionID, p.IdempotencyKey, store.Message{
		Entry: transcript.MessageEntry(msg, now), Role: msg.Role, RunID: postID,
	}, now)
	if err != nil {
		return "", fmt.Errorf("agent.Post: %w", err)
	}
	if !posted {
		return stored.Entry.ID, nil
	}
	r.windows.appended(stored)
	st := &runState{run: &store.Run{RunID: postID, SessionKey: p.SessionKey, SessionID: sess.SessionID, AgentID: sess.AgentID}, spawnedBy: sess.SpawnedBy}
	r.emit(st, Event{Stream: StreamPost, Message: msg, Time: now})
	return stored.Entry.ID, nil
}

// postMessage stores a posted message and moves its session's UpdatedAt
// to now: in one transaction where the store can (store.SessionPoster),
// else the message, then the session (a failed session update is logged;
// the message stands).
func (r *Runner) postMessage(ctx context.Context, key, sessionID, idemKey string, m store.Message, now time.Time) (store.Message, bool, error) {
	stored, posted, err := store.PostToSession(ctx, r.cfg.Store, key, sessionID, idemKey, m, now)
	if !errors.Is(err, errors.ErrUnsupported) {
		return stored, posted, err
	}
	stored, posted, err = r.cfg.Store.PostMessage(ctx, sessionID, idemKey, m)
	if err != nil || !posted {
		return stored, posted, err
	}
	if _, err := r.cfg.Store.UpdateSession(ctx, key, false, func(x *store.Session) error {
		x.UpdatedAt = now
		return nil
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		r.log.Warn("post: session update failed", "sessionKey", key, "err", err)
	}
	return stored, true, nil
}

// maxPostWait bounds how long a post waits for a busy session: under
// steady traffic a lane may never empty, and the post must still land.
const maxPostWait = 2 * time.Minute

// waitIdle waits until the session has no run in progress or queued (a
// queued run's input is already in the transcript, so a post landing then
// would sit between that input and its reply), for at most maxPostWait. A
// run that starts right after it returns sees what the caller appends next
// before its own input, which keeps turns whole.
func (r *Runner) waitIdle(outer context.Context, sessionKey string) error {
	ctx, cancel := context.WithTimeout(outer, maxPostWait)
	defer cancel()
	for {
		r.mu.Lock()
		next := ""
		if l := r.lanes[sessionKey]; l != nil {
			next = l.active
			if next == "" && len(l.queue) > 0 {
				next = l.queue[0]
			}
		}
		r.mu.Unlock()
		if next == "" {
			return nil
		}
		if _, _, err := r.Wait(ctx, next, -1); err != nil {
			if outer.Err() != nil {
				return err // the caller gave up (shutdown): the post is not made
			}
			return nil // waited maxPostWait: post anyway
		}
		// The lane lets go of an ended run a moment after its waiters
		// wake; do not spin on it.
		select {
		case <-ctx.Done():
			return outer.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
