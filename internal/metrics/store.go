package metrics

import (
	"context"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// timedStore times the store calls on the hot paths of a turn (sessions,
// transcript, runs, outbox) for /metrics; every other call goes straight
// to the store it wraps. Make one with (*StoreTimer).Wrap.
type timedStore struct {
	store.Store
	t *StoreTimer
}

// Wrap returns st with its hot-path calls timed by t.
func (t *StoreTimer) Wrap(st store.Store) store.Store { return timedStore{Store: st, t: t} }

func (s timedStore) since(op string, t0 time.Time) { s.t.Observe(op, time.Since(t0)) }

func (s timedStore) GetSession(ctx context.Context, key string) (*store.Session, error) {
	defer s.since("get_session", time.Now())
	return s.Store.GetSession(ctx, key)
}

func (s timedStore) ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error) {
	defer s.since("list_sessions", time.Now())
	return s.Store.ListSessions(ctx, opts)
}

func (s timedStore) UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error) {
	defer s.since("update_session", time.Now())
	return s.Store.UpdateSession(ctx, key, create, fn)
}

func (s timedStore) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	defer s.since("append_messages", time.Now())
	return s.Store.AppendMessages(ctx, sessionID, msgs)
}

func (s timedStore) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	defer s.since("history", time.Now())
	return s.Store.History(ctx, sessionID, opts)
}

func (s timedStore) CreateRun(ctx context.Context, r *store.Run) error {
	defer s.since("create_run", time.Now())
	return s.Store.CreateRun(ctx, r)
}

func (s timedStore) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	defer s.since("get_run", time.Now())
	return s.Store.GetRun(ctx, runID)
}

func (s timedStore) StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	defer s.since("start_run", time.Now())
	return s.Store.StartRun(ctx, runID, startedAt, sessionID, msgs)
}

func (s timedStore) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	defer s.since("finish_run", time.Now())
	return s.Store.FinishRun(ctx, runID, res)
}

func (s timedStore) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error) {
	defer s.since("list_runs", time.Now())
	return s.Store.ListRuns(ctx, f)
}

func (s timedStore) PutOutbox(ctx context.Context, item *store.OutboxItem) error {
	defer s.since("put_outbox", time.Now())
	return s.Store.PutOutbox(ctx, item)
}

// EndRun keeps the store's one-transaction end of a run (store.RunEnder)
// visible through the timer.
func (s timedStore) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	defer s.since("finish_run", time.Now())
	return store.EndRun(ctx, s.Store, runID, res, sessionID, msgs)
}

// OpenRun keeps the store's one-transaction queue and start of a run
// (store.RunOpener) visible through the timer.
func (s timedStore) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	defer s.since("open_run", time.Now())
	return store.OpenRun(ctx, s.Store, r, msgs)
}

// OpenChildRun keeps the store's one-transaction spawn and child run
// (store.ChildRunOpener) visible through the timer.
func (s timedStore) OpenChildRun(ctx context.Context, c *store.ChildOpen, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	defer s.since("open_run", time.Now())
	return store.OpenChildRun(ctx, s.Store, c, r, msgs)
}

// CreateChild keeps the store's one-transaction spawn
// (store.ChildCreator) visible through the timer.
func (s timedStore) CreateChild(ctx context.Context, key string, fn func(*store.Session) error, r *store.SubagentRun) (*store.Session, error) {
	defer s.since("create_child", time.Now())
	return store.CreateChild(ctx, s.Store, key, fn, r)
}

// PostToSession keeps the store's one-transaction post
// (store.SessionPoster) visible through the timer.
func (s timedStore) PostToSession(ctx context.Context, key, sessionID, idemKey string, msg store.Message, at time.Time) (store.Message, bool, error) {
	defer s.since("post_message", time.Now())
	return store.PostToSession(ctx, s.Store, key, sessionID, idemKey, msg, at)
}

// ClaimsWithRuns keeps the store's claims in a run's transaction
// (store.RunClaimer) visible through the timer.
func (s timedStore) ClaimsWithRuns() bool { return store.ClaimsWithRuns(s.Store) }
