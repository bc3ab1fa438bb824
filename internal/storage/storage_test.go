package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestOpenedEndsARunInOneTransaction: the opened store keeps the
// backend's one-transaction end of a run (store.RunEnder), which its
// embedding hid: ending a run that already ended appends nothing (with
// an append then a finish, the message landed and the finish failed).
func TestOpenedEndsARunInOneTransaction(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, &config.Config{Storage: config.Storage{Backend: config.BackendSQLite}}, t.TempDir())
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
