package store

import (
	"context"
	"encoding/json"
	"time"
)

// A2ATask is one stored A2A task, keyed by (Peer, ID): a peer never sees
// another peer's task. The A2A server owns Task (the task's wire JSON);
// the store owns the columns it queries.
type A2ATask struct {
	Peer      string
	ID        string
	ContextID string
	State     string // the wire state, for example "TASK_STATE_WORKING"
	// Final is true once the task reached a terminal state; tasks not final
	// at start were cut by a crash or restart.
	Final bool
	// RunID is the agent run that answers the task ("" for none).
	RunID     string
	Task      json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxA2ATaskList bounds one ListA2ATasks or OpenA2ATasks answer.
const MaxA2ATaskList = 1000

// A2ATaskStore persists A2A tasks. The A2A channel declares the subset it
// uses; both backends implement it.
type A2ATaskStore interface {
	// PutA2ATask inserts or replaces task (Peer, ID). CreatedAt is kept from
	// an existing row; UpdatedAt is set by the store.
	PutA2ATask(ctx context.Context, t *A2ATask) error
	// GetA2ATask returns the task or ErrNotFound.
	GetA2ATask(ctx context.Context, peer, id string) (*A2ATask, error)
	// ListA2ATasks returns up to limit (1..MaxA2ATaskList) of peer's tasks,
	// of one context when contextID is set, most recently updated first.
	ListA2ATasks(ctx context.Context, peer, contextID string, limit int) ([]*A2ATask, error)
	// OpenA2ATasks returns up to limit tasks of any peer that are not
	// final, oldest first.
	OpenA2ATasks(ctx context.Context, limit int) ([]*A2ATask, error)
}
