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
