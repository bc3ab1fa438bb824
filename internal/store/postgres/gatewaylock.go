package postgres

import (
	"context"
	"errors"
	"fmt"
)

// ErrInUse is returned by CheckIdle when a gateway node serves from the
// database.
var ErrInUse = errors.New("a gateway is using this database")

// CheckIdle returns ErrInUse when a gateway node with a live lease serves
// from the database (what `switchboard migrate` must not write into).
func (s *Store) CheckIdle(ctx context.Context) error {
	if err := s.checkOpen("CheckIdle"); err != nil {
		return err
	}
	var live []string
	rows, err := s.pool.Query(ctx, `SELECT node_id FROM nodes WHERE lease_until > now() ORDER BY node_id`)
	if err != nil {
		return fmt.Errorf("postgres.CheckIdle: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("postgres.CheckIdle: %w", err)
		}
		live = append(live, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres.CheckIdle: %w", err)
	}
	if len(live) > 0 {
		return fmt.Errorf("postgres.CheckIdle: node %s: %w", live[0], ErrInUse)
	}
	return nil
}
