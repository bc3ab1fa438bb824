package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// gatewayLock is the advisory lock key a gateway holds for as long as it
// serves from a database ("SWGATE").
const gatewayLock = 0x5357_4741_5445

// ErrInUse is returned by LockGateway when another gateway holds the
// database.
var ErrInUse = errors.New("another gateway is using this database")

// LockGateway makes this process the database's one gateway: it takes a
// session-level advisory lock on a connection of its own, kept until Close.
// Until gateways coordinate their runs, one database serves one gateway:
// a second one would, at start, abort the first one's running runs as
// interrupted. ErrInUse when another process holds the lock.
func (s *Store) LockGateway(ctx context.Context) error {
	if err := s.checkOpen("LockGateway"); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres.LockGateway: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(gatewayLock)).Scan(&ok); err != nil {
		conn.Release()
		return fmt.Errorf("postgres.LockGateway: %w", err)
	}
	if !ok {
		conn.Release()
		return fmt.Errorf("postgres.LockGateway: %w", ErrInUse)
	}
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.lockConn != nil {
		unlock(conn)
		return errors.New("postgres.LockGateway: already held")
	}
	s.lockConn = conn
	return nil
}

// unlock releases the gateway lock and gives its connection back.
func unlock(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(gatewayLock)); err != nil {
		// The lock lives as long as the session: end the session.
		conn.Conn().Close(ctx)
	}
	conn.Release()
}

// relockGateway checks the gateway lock's connection, if the lock was
// taken, and takes the lock again on a new connection when that one was
// cut (the server released the lock with it).
func (s *Store) relockGateway(ctx context.Context) error {
	s.lockMu.Lock()
	conn := s.lockConn
	if conn == nil {
		s.lockMu.Unlock()
		return nil
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		s.lockMu.Unlock()
		return nil
	}
	s.lockConn = nil
	s.lockMu.Unlock()
	conn.Conn().Close(context.Background())
	conn.Release()
	if err := s.LockGateway(ctx); err != nil {
		return fmt.Errorf("gateway lock lost: %w", err)
	}
	return nil
}
