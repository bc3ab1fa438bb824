package store

import (
	"context"
	"errors"
	"time"
)

// SessionPoster is a Store that can post a message and move its
// session's UpdatedAt in one transaction: a post (an agent-to-agent
// announce, an injected note) is then one commit instead of two.
type SessionPoster interface {
	// PostToSession is PostMessage of msg to transcript sessionID with
	// idemKey, and, when the message is posted, moves the UpdatedAt of
	// session key forward to at (never back) in the same transaction; a
	// missing session row is not an error. A store that cannot (a
	// wrapper around a store that is no SessionPoster) returns
	// errors.ErrUnsupported with nothing written.
	PostToSession(ctx context.Context, key, sessionID, idemKey string, msg Message, at time.Time) (stored Message, posted bool, err error)
}

// PostToSession is st's PostToSession when st is a SessionPoster, else
// errors.ErrUnsupported with nothing written: for wrappers, which keep the
// wrapped store's one-transaction post visible.
func PostToSession(ctx context.Context, st any, key, sessionID, idemKey string, msg Message, at time.Time) (Message, bool, error) {
	if p, ok := st.(SessionPoster); ok {
		return p.PostToSession(ctx, key, sessionID, idemKey, msg, at)
	}
	return Message{}, false, errors.ErrUnsupported
}

// PostSettle is an outbox item to settle in the transaction that posts a
// message (PostToSession), carried by the post's context (WithPostSettle):
// an agent-to-agent flow whose last step is its announce's post is then
// settled in that post's commit, not in a commit of its own after it. A
// store that can (SQLite's PostToSession) applies Apply to the item as
// UpdateOutbox applies its fn, in the post's transaction, when the
// message is posted (not for a repeat) and the item exists, and marks it
// stored once the transaction committed; an error from Apply refuses the
// post. Where nothing stores it, Stored stays false and the item is
// settled as before.
type PostSettle struct {
	// OutboxChange is the item and how Apply records its outcome.
	OutboxChange

	carried
}

type postSettleKey struct{}

// WithPostSettle returns ctx carrying p, for one post.
func WithPostSettle(ctx context.Context, p *PostSettle) context.Context {
	return context.WithValue(ctx, postSettleKey{}, p)
}

// PostSettleOf returns the PostSettle ctx carries, nil when none (or when
// it is stored already).
func PostSettleOf(ctx context.Context) *PostSettle {
	p, _ := ctx.Value(postSettleKey{}).(*PostSettle)
	if p == nil || p.Apply == nil || p.Stored() {
		return nil
	}
	return p
}
