package storage

import (
	"context"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
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
