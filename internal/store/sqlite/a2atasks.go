package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.A2ATaskStore = (*Store)(nil)

const qPutA2ATask = sqlstore.PutA2ATask

// PutA2ATask implements store.A2ATaskStore.
func (s *Store) PutA2ATask(ctx context.Context, t *store.A2ATask) error {
	if err := s.checkOpen("PutA2ATask"); err != nil {
		return err
	}
	if t == nil || t.Peer == "" || t.ID == "" || t.State == "" {
		return errors.New("sqlite.PutA2ATask: task needs a peer, an id and a state")
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, qPutA2ATask, sqlstore.SQLite.A2ATaskArgs(t, s.nowTime())...)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutA2ATask %q/%q: %w", t.Peer, t.ID, err)
	}
	return nil
}
