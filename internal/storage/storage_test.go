package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// enderStore is a store.Store that counts how a run's end reaches it.
type enderStore struct {
	store.Store             // nil: only the methods below are called
	ends, appends, finishes int
}

func (e *enderStore) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	e.ends++
	return &store.Run{RunID: runID, Status: res.Status}, msgs, nil
}

func (e *enderStore) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	e.appends++
	return msgs, nil
}

func (e *enderStore) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	e.finishes++
	return &store.Run{RunID: runID, Status: res.Status}, nil
}

// TestOpenedEndsARunInOneTransaction checks that a run's end through
// Opened (what the runner holds) reaches the store's one-transaction
// EndRun, not AppendMessages then FinishRun.
func TestOpenedEndsARunInOneTransaction(t *testing.T) {
	inner := &enderStore{}
	var o store.RunFinisher = &Opened{Store: inner}
	msgs := []store.Message{{SessionID: "s"}}
	if _, _, err := store.EndRun(context.Background(), o, "r", store.RunResult{Status: store.RunOK}, "s", msgs); err != nil {
		t.Fatal(err)
	}
	if inner.ends != 1 || inner.appends != 0 || inner.finishes != 0 {
		t.Errorf("EndRun %d, AppendMessages %d, FinishRun %d times; want the one-transaction EndRun once and nothing else",
			inner.ends, inner.appends, inner.finishes)
	}
}

// TestOpenedEndOfAnEndedRunAppendsNothing: the opened store keeps the
// backend's one-transaction end of a run (store.RunEnder), which its
// embedding hid: ending a run that already ended appends nothing (with
// an append then a finish, the message landed and the finish failed).
func TestOpenedEndOfAnEndedRunAppendsNothing(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, settings.StorageSettings{Backend: settings.BackendSQLite}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := any(st).(store.RunEnder); !ok {
		t.Fatal("the opened store is not a store.RunEnder")
	}
	const key = "agent:main:main"
	if err := st.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateRun(ctx, &store.Run{RunID: "r1", SessionKey: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(ctx, "r1", store.RunResult{Status: store.RunAborted}); err != nil {
		t.Fatal(err)
	}
	text := "late"
	m := transcript.NewAssistantMessage([]transcript.Block{{Type: transcript.BlockText, Text: &text}}, time.Now())
	msg := store.Message{Entry: transcript.MessageEntry(m, time.Now()), RunID: "r1"}
	if _, stored, err := store.EndRun(ctx, st, "r1", store.RunResult{Status: store.RunOK}, "sid", []store.Message{msg}); !errors.Is(err, store.ErrConflict) || stored != nil {
		t.Fatalf("EndRun of an ended run = %v, %v; want ErrConflict and nothing stored", stored, err)
	}
	if n, err := st.CountMessages(ctx, "sid"); err != nil || n != 0 {
		t.Fatalf("%d messages (%v), want none", n, err)
	}
}

// TestOpenedKeepsPostsAndClaimsWithOneCommit: the opened SQLite store,
// wrapped as the daemon wraps it (the store timer), keeps the backend's
// one-transaction post (store.SessionPoster) and its claims in a run's
// transaction (store.RunClaimer) visible: the runner and the sub-agent
// manager are handed Opened.
func TestOpenedKeepsPostsAndClaimsWithOneCommit(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, settings.StorageSettings{Backend: settings.BackendSQLite}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Store = metrics.NewStoreTimer().Wrap(st.Store)
	if !store.ClaimsWithRuns(st) {
		t.Error("the opened store does not make claims with runs")
	}
	const key = "agent:main:main"
	if err := st.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	text := "posted"
	m := transcript.NewAssistantMessage([]transcript.Block{{Type: transcript.BlockText, Text: &text}}, time.Now())
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, posted, err := store.PostToSession(ctx, st, key, "sid", "k", store.Message{Entry: transcript.MessageEntry(m, time.Now())}, at); err != nil || !posted {
		t.Fatalf("PostToSession through Opened = %v, %v", posted, err)
	}
	if sess, err := st.GetSession(ctx, key); err != nil || !sess.UpdatedAt.Equal(at) {
		t.Errorf("session after the post = %+v, %v; want UpdatedAt %v", sess, err, at)
	}
}
