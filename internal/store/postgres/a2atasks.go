package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.A2ATaskStore = (*Store)(nil)

// PutA2ATask implements store.A2ATaskStore.
func (s *Store) PutA2ATask(ctx context.Context, t *store.A2ATask) error {
	if err := s.checkOpen("PutA2ATask"); err != nil {
		return err
	}
	if t == nil || t.Peer == "" || t.ID == "" || t.State == "" {
		return errors.New("postgres.PutA2ATask: task needs a peer, an id and a state")
	}
	if _, err := s.pool.Exec(ctx, s.q.putA2ATask, sqlstore.Postgres.A2ATaskArgs(t, s.nowTime())...); err != nil {
		return fmt.Errorf("postgres.PutA2ATask %q/%q: %w", t.Peer, t.ID, err)
	}
	return nil
}
