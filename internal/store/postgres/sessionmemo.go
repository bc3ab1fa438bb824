package postgres

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

// maxMemoSessions bounds sessionMemo: past it the memo starts again empty.
const maxMemoSessions = 4096

// sessionMemoAge is how long after it was read a remembered session row is
// served: within it no 2^32 transactions can pass, so a row version's xmin
// names one version.
const sessionMemoAge = time.Minute

// Session rows with their version (xmin, the transaction that wrote the
// row version): qGetSessionVer reads one (and finishRun returns the one
// it wrote); qSessionIs fails (division_by_zero) unless session $1's row
// is still version $2.
const qGetSessionVer = `SELECT ` + sessionCols + `, xmin::text::bigint FROM sessions WHERE key = $1`

const qSessionIs = `SELECT 1 / count(*) FROM sessions WHERE key = $1 AND xmin = $2::text::xid`

// sessionMemo remembers the session rows this store last read or wrote
// at a run's end, with their version, so that a turn's admission (a
// context with a store.SessionCheck) is served the session without a
// round trip. A remembered row is a guess, like tailCache's tails: the
// run's open or creation checks its version in its transaction
// (qSessionIs) and is refused with store.ErrSessionMoved when another
// writer (another node, another path) wrote the row since, and the
// admission then reads it again. So no fence or claim is needed for it:
// a node that lost the lane, or a session patched on another node, only
// costs that retry.
type sessionMemo struct {
	mu sync.Mutex
	m  map[string]memoSession
	// clock counts puts and drops: a read begun at clock c fills a row
	// only when nothing was put or dropped for its key since (fill).
	clock uint64
}

// memoSession is one remembered row; a nil s marks a row dropped at
// stamp.
type memoSession struct {
	s     *store.Session
	ver   int64
	at    time.Time
	stamp uint64
}

// get returns a copy of key's remembered row and its version.
func (c *sessionMemo) get(key string) (*store.Session, int64, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || e.s == nil || time.Since(e.at) > sessionMemoAge {
		return nil, 0, false
	}
	return e.s.Clone(), e.ver, true
}

// now returns the clock, for fill, before a read.
func (c *sessionMemo) now() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock
}

// put remembers s (which put keeps: the caller gives it up) at version
// ver, as a write left it.
func (c *sessionMemo) put(s *store.Session, ver int64) { c.set(s.Key, s, ver, 0, false) }

// fill remembers s at version ver, as a read begun at clock since found
// it, unless s's row was put or dropped since: then a write may have
// come after the read, and the read's row is not remembered over it.
func (c *sessionMemo) fill(since uint64, s *store.Session, ver int64) {
	c.set(s.Key, s, ver, since, true)
}

// drop forgets key's row, and that a read begun before has one to fill.
func (c *sessionMemo) drop(key string) { c.set(key, nil, 0, 0, false) }

func (c *sessionMemo) set(key string, s *store.Session, ver int64, since uint64, read bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; read && ok && e.stamp > since {
		return
	}
	if c.m == nil || len(c.m) >= maxMemoSessions {
		c.m = make(map[string]memoSession)
	}
	c.clock++
	c.m[key] = memoSession{s: s, ver: ver, at: time.Now(), stamp: c.clock}
}

// verRow is a row of sessionCols and the row's version.
type verRow struct {
	pgx.Row
	ver *int64
}

func (r verRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.ver)...) }

// scanSessionVer reads a row of qGetSessionVer.
func scanSessionVer(row pgx.Row) (*store.Session, int64, error) {
	var ver int64
	s, err := scanSession(verRow{row, &ver})
	return s, ver, err
}

// memoSessionFor serves GetSession from the memo when ctx carries a
// session check, which then records the version served.
func (s *Store) memoSessionFor(ctx context.Context, key string) (*store.Session, bool) {
	c := store.SessionCheckOf(ctx)
	if c == nil {
		return nil, false
	}
	sess, ver, ok := s.sessions.get(key)
	if !ok {
		c.Forget(key)
		return nil, false
	}
	c.Served(key, ver)
	return sess, true
}

// checkedVersion returns the version of sessionKey's row that ctx's
// session check says was served from memory, as qSessionIs's argument.
func checkedVersion(ctx context.Context, sessionKey string) (string, bool) {
	ver, ok := store.SessionCheckOf(ctx).Version(sessionKey)
	if !ok {
		return "", false
	}
	return strconv.FormatInt(ver, 10), true
}

// verifyServed checks, in a statement of its own, that the session row
// ctx's check says was served from memory is still the stored row: the
// run's writes that follow are as fresh as after a read there. It returns
// store.ErrSessionMoved when it is not.
func (s *Store) verifyServed(ctx context.Context, sessionKey string) error {
	ver, ok := checkedVersion(ctx, sessionKey)
	if !ok {
		return nil
	}
	var one int
	err := s.pool.QueryRow(ctx, qSessionIs, sessionKey, ver).Scan(&one)
	if isCode(err, "22012") {
		s.sessions.drop(sessionKey)
		return store.ErrSessionMoved
	}
	return err
}
