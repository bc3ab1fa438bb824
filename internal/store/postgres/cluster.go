package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

// This file holds what several gateway nodes on one database coordinate
// through: the nodes table (each node's lease, renewed by its heartbeat),
// the lanes table (which node runs a session's lane), the run's node_id
// (which node executes a running run), the relay of run events between
// nodes, and LISTEN/NOTIFY for wake-ups. Package cluster drives it.
//
// Leases are kept on the database's clock: a node's lease ends at
// lease_until, which only its own heartbeat moves. A node whose lease ended
// is dead to the others: any node may adopt its work (abort its running
// runs as a restart would, and free its lanes for a live node to claim).

// Notification channels.
const (
	// ChanLane carries "<nodeId> <sessionKey>": the node that owns the
	// session's lane should look for queued runs.
	ChanLane = "switchboard_lane"
	// ChanAbort carries a run id: the node running it should abort it.
	ChanAbort = "switchboard_abort"
	// ChanEvents carries "<origin> <id>" of a cluster_events row.
	ChanEvents = "switchboard_events"
	// ChanNodes carries "join <id>" or "leave <id>": membership changed.
	ChanNodes = "switchboard_nodes"
)

// Node states.
const (
	NodeActive  = "active"
	NodeLeaving = "leaving"
)

// NodeInfo is one gateway node as the nodes table records it.
type NodeInfo struct {
	ID      string
	Address string
	Version string
	State   string

	StartedAt   time.Time
	HeartbeatAt time.Time
	LeaseUntil  time.Time
	// Alive is whether its lease had not ended when it was read.
	Alive bool

	// Load, as of its last heartbeat.
	ActiveRuns int
	QueuedRuns int
	Lanes      int
}

// NodeLoad is what a heartbeat reports of a node's work.
type NodeLoad struct {
	ActiveRuns, QueuedRuns, Lanes int
}

// SetNode makes the store act for gateway node id: StartRun then starts a
// run only while this node holds the run's session lane under a live
// lease, and records the node on the run. Call it once, before the store
// is used for runs; "" (the default) is a single gateway with no lanes.
func (s *Store) SetNode(id string) { s.node.Store(&id) }

// nodeID is the node set by SetNode, "" when none.
func (s *Store) nodeID() string {
	if p := s.node.Load(); p != nil {
		return *p
	}
	return ""
}

// RegisterNode adds (or renews) this node's row with a lease of lease from
// now, state active.
func (s *Store) RegisterNode(ctx context.Context, n NodeInfo, lease time.Duration) error {
	if err := s.checkOpen("RegisterNode"); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO nodes (node_id, address, version, state, started_at, heartbeat_at, lease_until)
		VALUES ($1, $2, $3, 'active', now(), now(), now() + $4::interval)
		ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, version = excluded.version,
			state = 'active', started_at = now(), heartbeat_at = now(), lease_until = excluded.lease_until`,
		n.ID, n.Address, n.Version, interval(lease))
	if err != nil {
		return fmt.Errorf("postgres.RegisterNode: %w", err)
	}
	return nil
}

// ErrLeaseLost is returned by RenewNode when the node's row is gone: its
// lease ended and another node adopted its work.
var ErrLeaseLost = errors.New("node lease lost")

// RenewNode extends the node's lease to lease from now and records its
// load. It returns how many other nodes are alive. ErrLeaseLost when the
// node's row was removed by an adoption.
//
// It runs on a connection of its own, outside the pool (a pool busy with
// runs' writes, or a connection stuck in a cut network, never delays it),
// whose statement_timeout is a tenth of the lease (at least 100ms), so a
// renewal fails fast rather than blocking; the connection is dropped after
// any failure and made again by the next renewal. ctx should end well
// before the lease does.
func (s *Store) RenewNode(ctx context.Context, id string, lease time.Duration, load NodeLoad) (peers int, err error) {
	if err := s.checkOpen("RenewNode"); err != nil {
		return 0, err
	}
	s.renewMu.Lock()
	defer s.renewMu.Unlock()
	if s.renewConn == nil {
		cfg := s.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(lease/10, 100*time.Millisecond).Milliseconds(), 10)
		// Named for the node: OfferLane offers lanes only to a node whose
		// lease connection is up (one killed has none, at once).
		cfg.RuntimeParams["application_name"] = leaseConnName(id)
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return 0, fmt.Errorf("postgres.RenewNode: connect: %w", err)
		}
		s.renewConn = conn
	}
	var mine int
	err = s.renewConn.QueryRow(ctx, `WITH me AS (
			UPDATE nodes SET heartbeat_at = now(), lease_until = now() + $2::interval,
				active_runs = $3, queued_runs = $4, lanes = $5
			WHERE node_id = $1 AND lease_until > now() RETURNING node_id)
		SELECT (SELECT count(*) FROM me), (SELECT count(*) FROM nodes WHERE node_id <> $1 AND lease_until > now())`,
		id, interval(lease), load.ActiveRuns, load.QueuedRuns, load.Lanes).Scan(&mine, &peers)
	if err != nil {
		s.closeRenewConn()
		return 0, fmt.Errorf("postgres.RenewNode: %w", err)
	}
	if mine == 0 {
		return peers, fmt.Errorf("postgres.RenewNode: %s: %w", id, ErrLeaseLost)
	}
	return peers, nil
}

// closeRenewConn drops the lease connection; renewMu must be held.
func (s *Store) closeRenewConn() {
	if s.renewConn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = s.renewConn.Close(ctx) // a connection that failed may not answer a goodbye
	s.renewConn = nil
}

// SetNodeState records the node's state (NodeActive, NodeLeaving).
func (s *Store) SetNodeState(ctx context.Context, id, state string) error {
	if err := s.checkOpen("SetNodeState"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE nodes SET state = $2 WHERE node_id = $1`, id, state); err != nil {
		return fmt.Errorf("postgres.SetNodeState: %w", err)
	}
	return nil
}

// LeaveNode removes the node: its lanes are freed (their queued runs stay
// queued, for a live node to claim) and its row deleted, in one
// transaction. Runs still running on it are left to the caller, who has
// finished or aborted them.
func (s *Store) LeaveNode(ctx context.Context, id string) error {
	if err := s.checkOpen("LeaveNode"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `WITH l AS (`+lanesInOrder("")+`)
			DELETE FROM lanes USING l WHERE lanes.session_key = l.session_key`, []string{id}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM nodes WHERE node_id = $1`, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ChanNodes, "leave "+id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres.LeaveNode: %w", err)
	}
	return nil
}

// ListNodes returns the nodes, ordered by id.
func (s *Store) ListNodes(ctx context.Context) ([]NodeInfo, error) {
	if err := s.checkOpen("ListNodes"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT node_id, address, version, state, started_at, heartbeat_at, lease_until,
			lease_until > now(), active_runs, queued_runs, lanes FROM nodes ORDER BY node_id`)
	if err != nil {
		return nil, fmt.Errorf("postgres.ListNodes: %w", err)
	}
	defer rows.Close()
	var out []NodeInfo
	for rows.Next() {
		var n NodeInfo
		if err := rows.Scan(&n.ID, &n.Address, &n.Version, &n.State, &n.StartedAt, &n.HeartbeatAt, &n.LeaseUntil,
			&n.Alive, &n.ActiveRuns, &n.QueuedRuns, &n.Lanes); err != nil {
			return nil, fmt.Errorf("postgres.ListNodes: %w", err)
		}
		n.StartedAt, n.HeartbeatAt, n.LeaseUntil = n.StartedAt.UTC(), n.HeartbeatAt.UTC(), n.LeaseUntil.UTC()
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres.ListNodes: %w", err)
	}
	return out, nil
}

// ClaimLane makes node the owner of the session's lane unless a live
// active node other than it owns it. It returns the owner: node when the
// claim holds, the other node otherwise; and, when node holds it, the
// claim's epoch, new with every claim (the fence of node's writes for the
// lane, see store.Fence).
func (s *Store) ClaimLane(ctx context.Context, node, sessionKey string) (owner string, epoch int64, err error) {
	if err := s.checkOpen("ClaimLane"); err != nil {
		return "", 0, err
	}
	err = s.pool.QueryRow(ctx, `WITH claim AS (
			INSERT INTO lanes (session_key, node_id) VALUES ($1, $2)
			ON CONFLICT (session_key) DO UPDATE SET node_id = excluded.node_id, claimed_at = now(), epoch = excluded.epoch
			WHERE lanes.node_id = excluded.node_id OR NOT EXISTS (
				SELECT 1 FROM nodes n WHERE n.node_id = lanes.node_id AND n.lease_until > now())
			RETURNING node_id, epoch)
		SELECT COALESCE((SELECT node_id FROM claim), (SELECT node_id FROM lanes WHERE session_key = $1), ''),
			COALESCE((SELECT epoch FROM claim), 0)`,
		sessionKey, node).Scan(&owner, &epoch)
	if err != nil {
		return "", 0, fmt.Errorf("postgres.ClaimLane: %w", err)
	}
	if owner == "" {
		// The row vanished between the conflict and the read (its owner
		// released it): try once more.
		return s.ClaimLane(ctx, node, sessionKey)
	}
	return owner, epoch, nil
}

// leaseConnName is the application_name of node id's lease connection
// (PostgreSQL keeps 63 bytes of it).
func leaseConnName(id string) string {
	name := "switchboard-lease " + id
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// OfferLane makes node the owner of the session's lane when no live node
// owns it and node's lease connection is up (a node killed a moment ago
// still has a lease, but no connection), without a claim of its own: node
// (another node than the caller, which tells it) claims the lane when it
// runs the session's runs. A lane a live node holds, node included, is left
// as it is (its claim's epoch unchanged). It returns the owner, "" when the
// lane was not offered and no node owns it.
func (s *Store) OfferLane(ctx context.Context, node, sessionKey string) (owner string, err error) {
	if err := s.checkOpen("OfferLane"); err != nil {
		return "", err
	}
	err = s.pool.QueryRow(ctx, `WITH offer AS (
			INSERT INTO lanes (session_key, node_id)
			SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $3)
			ON CONFLICT (session_key) DO UPDATE SET node_id = excluded.node_id, claimed_at = now(), epoch = excluded.epoch
			WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = lanes.node_id AND n.lease_until > now())
			RETURNING node_id)
		SELECT COALESCE((SELECT node_id FROM offer), (SELECT node_id FROM lanes WHERE session_key = $1), '')`,
		sessionKey, node, leaseConnName(node)).Scan(&owner)
	if err != nil {
		return "", fmt.Errorf("postgres.OfferLane: %w", err)
	}
	return owner, nil
}

// fenceIdleTimeout bounds how long a fenced transaction may wait for its
// client between statements (the longest an adoption waits for a cut-off
// node's transaction). A fenced transaction's first statement checks the
// fence (qFenceGuard): the node still holds the lane with the fence's
// epoch under a live lease. The check share-locks the lane row for the
// rest of the transaction: an adoption (which deletes the row) or another
// claim (which updates it) waits until the fenced write committed, so no
// fenced write lands after the lane moved. So that a node cut off (or
// paused) in the middle of such a transaction cannot hold the lane for
// long, the transaction is ended by the server when idle for this long.
const fenceIdleTimeout = 2 * time.Second

// lanesInOrder selects the lanes l of the nodes in $1 (and cond, "" or
// " AND …"), locking them (FOR UPDATE) in the byte order of their keys:
// the order ClaimOrphans and a group of fenced writes (groupCommitter)
// take lanes in, so that a transaction that deletes several lanes never
// waits for such a group in a cycle.
func lanesInOrder(cond string) string {
	return `SELECT l.session_key FROM lanes l WHERE l.node_id = ANY($1)` + cond +
		` ORDER BY l.session_key COLLATE "C" FOR UPDATE OF l`
}

// ReleaseLanes gives up node's lanes of the sessions in keys that have no
// queued runs, in one statement, and returns those it released; the
// others stay node's (their queued runs are for it to run).
func (s *Store) ReleaseLanes(ctx context.Context, node string, keys []string) ([]string, error) {
	if err := s.checkOpen("ReleaseLanes"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `WITH l AS (`+lanesInOrder(` AND l.session_key = ANY($2)
			AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_key = l.session_key AND r.status = 'queued')`)+`)
		DELETE FROM lanes USING l WHERE lanes.session_key = l.session_key
		RETURNING lanes.session_key`, []string{node}, keys)
	if err != nil {
		return nil, fmt.Errorf("postgres.ReleaseLanes: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres.ReleaseLanes: %w", err)
	}
	return out, nil
}

// LaneOwner returns the live node that owns the session's lane, "" when
// none does.
func (s *Store) LaneOwner(ctx context.Context, sessionKey string) (string, error) {
	if err := s.checkOpen("LaneOwner"); err != nil {
		return "", err
	}
	var owner string
	err := s.pool.QueryRow(ctx, `SELECT l.node_id FROM lanes l JOIN nodes n ON n.node_id = l.node_id
		WHERE l.session_key = $1 AND n.lease_until > now()`, sessionKey).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres.LaneOwner: %w", err)
	}
	return owner, nil
}

// RunningOn returns the runs the store has running on node, ordered by
// CreatedAt, then RunID.
func (s *Store) RunningOn(ctx context.Context, node string) ([]*store.Run, error) {
	if err := s.checkOpen("RunningOn"); err != nil {
		return nil, err
	}
	out, err := s.queryRuns(ctx, `SELECT `+runCols+` FROM runs WHERE status = 'running' AND node_id = $1
		ORDER BY created_at, run_id`, node)
	if err != nil {
		return nil, fmt.Errorf("postgres.RunningOn: %w", err)
	}
	return out, nil
}

// Adoption is what AdoptDead did.
type Adoption struct {
	// Nodes are the dead nodes whose work was adopted.
	Nodes []string
	// Aborted are the runs that were running on them, now aborted.
	Aborted []*store.Run
	// Lanes counts the lanes freed.
	Lanes int
}

// AdoptDead takes over the work of nodes whose lease ended before now (and
// of the nodes named in also, such as this node's previous incarnation,
// which cannot be alive because this one holds its address): in one
// transaction their running runs are aborted with errText, as a restart
// aborts them (their sessions get abortedLastRun), their lanes are freed
// and their rows deleted. Queued runs stay queued for ClaimOrphans. Dead
// nodes another adopter is handling are skipped (SKIP LOCKED).
func (s *Store) AdoptDead(ctx context.Context, errText string, also ...string) (Adoption, error) {
	var a Adoption
	if err := s.checkOpen("AdoptDead"); err != nil {
		return a, err
	}
	if also == nil {
		also = []string{}
	}
	now := s.nowTime()
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		a = Adoption{}
		rows, err := tx.Query(ctx, `SELECT node_id FROM nodes WHERE lease_until <= now() OR node_id = ANY($1)
			ORDER BY node_id FOR UPDATE SKIP LOCKED`, also)
		if err != nil {
			return err
		}
		dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// An incarnation that left no row (deleted by an earlier adoption
		// or a graceful leave) may still own running runs.
		for _, id := range also {
			if !slices.Contains(dead, id) {
				dead = append(dead, id)
			}
		}
		if len(dead) == 0 {
			return nil
		}
		// The lanes first: deleting them waits for the dead nodes' fenced
		// writes in flight (they share-lock the lane, then lock the run),
		// and takes locks in the order those writes do.
		tag, err := tx.Exec(ctx, `WITH l AS (`+lanesInOrder("")+`)
			DELETE FROM lanes USING l WHERE lanes.session_key = l.session_key`, dead)
		if err != nil {
			return err
		}
		a.Lanes = int(tag.RowsAffected())
		rows, err = tx.Query(ctx, `WITH locked AS (
				SELECT run_id FROM runs WHERE status = 'running' AND node_id = ANY($3) ORDER BY run_id FOR UPDATE
			)
			UPDATE runs SET status = 'aborted', ended_at = $1, error = $2
			FROM locked WHERE runs.run_id = locked.run_id AND runs.status = 'running'
			RETURNING runs.run_id, runs.session_key, runs.session_id, runs.agent_id, runs.lane,
				runs.status, runs.input, runs.created_at, runs.started_at, runs.ended_at, runs.error,
				runs.stop_reason, runs.usage`, toMs(now), errText, dead)
		if err != nil {
			return err
		}
		var keys []string
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return err
			}
			a.Aborted = append(a.Aborted, r)
			keys = append(keys, r.SessionKey)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(keys) > 0 {
			if _, err := tx.Exec(ctx, qAbortSessions, keys); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM nodes WHERE node_id = ANY($1)`, dead); err != nil {
			return err
		}
		a.Nodes = dead
		return nil
	})
	if err != nil {
		return Adoption{}, fmt.Errorf("postgres.AdoptDead: %w", err)
	}
	sortRuns(a.Aborted)
	return a, nil
}

// ClaimOrphans finds sessions with queued runs and no live lane owner,
// claims their lanes for node (the lane upsert decides which of the nodes
// sweeping at once gets each), and returns them together with the
// sessions whose lanes node already owns and that have queued runs. At
// most limit sessions are claimed per call.
func (s *Store) ClaimOrphans(ctx context.Context, node string, limit int) ([]string, error) {
	if err := s.checkOpen("ClaimOrphans"); err != nil {
		return nil, err
	}
	var out []string
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		// Only lane rows are locked, in key order: the runs are not (a
		// fenced write locks its lane, then its run, so locking runs
		// here first could deadlock with it), and the lane upsert alone
		// decides which of several sweepers wins a lane.
		rows, err := tx.Query(ctx, `SELECT r.session_key FROM runs r
			WHERE r.status = 'queued' AND NOT EXISTS (
				SELECT 1 FROM lanes l JOIN nodes n ON n.node_id = l.node_id
				WHERE l.session_key = r.session_key AND n.lease_until > now())
			ORDER BY r.created_at, r.run_id LIMIT $1`, limit)
		if err != nil {
			return err
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		var orphans []string
		for _, key := range keys {
			if !slices.Contains(orphans, key) {
				orphans = append(orphans, key)
			}
		}
		slices.Sort(orphans)
		for _, key := range orphans {
			tag, err := tx.Exec(ctx, `INSERT INTO lanes (session_key, node_id) VALUES ($1, $2)
				ON CONFLICT (session_key) DO UPDATE SET node_id = excluded.node_id, claimed_at = now(), epoch = excluded.epoch
				WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = lanes.node_id AND n.lease_until > now())`, key, node)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				out = append(out, key)
			}
		}
		rows, err = tx.Query(ctx, `SELECT DISTINCT l.session_key FROM lanes l
			WHERE l.node_id = $1 AND EXISTS (SELECT 1 FROM runs r WHERE r.session_key = l.session_key AND r.status = 'queued')`, node)
		if err != nil {
			return err
		}
		mine, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, key := range mine {
			if !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres.ClaimOrphans: %w", err)
	}
	return out, nil
}

// Notify sends payload on channel to every listening node.
func (s *Store) Notify(ctx context.Context, channel, payload string) error {
	if err := s.checkOpen("Notify"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("postgres.Notify: %w", err)
	}
	return nil
}

// NotifyAll sends a notification on channel for each of payloads, in
// order, in one statement.
func (s *Store) NotifyAll(ctx context.Context, channel string, payloads []string) error {
	if err := s.checkOpen("NotifyAll"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, channel, payloads); err != nil {
		return fmt.Errorf("postgres.NotifyAll: %w", err)
	}
	return nil
}

// Listen holds one connection listening on channels and calls fn for every
// notification, in order, until ctx ends or the connection fails; then it
// returns the error. ready, when set, is called once the channels are
// listened to (notifications sent after it are not missed).
func (s *Store) Listen(ctx context.Context, channels []string, ready func(), fn func(channel, payload string)) error {
	if err := s.checkOpen("Listen"); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres.Listen: %w", err)
	}
	// The connection carries LISTEN state: it never goes back to the pool.
	defer func() {
		c := conn.Hijack()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.Close(closeCtx)
	}()
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("postgres.Listen: %w", err)
		}
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("postgres.Listen: %w", err)
		}
		fn(n.Channel, n.Payload)
	}
}

// PublishEvents stores one batch of relayed run events (body, opaque) from
// origin and notifies the other nodes of its id, in one statement (the
// notification is sent when it commits).
func (s *Store) PublishEvents(ctx context.Context, origin string, body []byte) (int64, error) {
	if err := s.checkOpen("PublishEvents"); err != nil {
		return 0, err
	}
	var (
		id   int64
		void string
	)
	err := s.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO cluster_events (origin, body) VALUES ($1, $2) RETURNING id)
		SELECT id, pg_notify($3, $1 || ' ' || id)::text FROM ins`, origin, string(body), ChanEvents).Scan(&id, &void)
	if err != nil {
		return 0, fmt.Errorf("postgres.PublishEvents: %w", err)
	}
	return id, nil
}

// ReadEvents returns the body of the relayed event batch id.
func (s *Store) ReadEvents(ctx context.Context, id int64) ([]byte, error) {
	if err := s.checkOpen("ReadEvents"); err != nil {
		return nil, err
	}
	var body string
	err := s.pool.QueryRow(ctx, `SELECT body FROM cluster_events WHERE id = $1`, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres.ReadEvents: %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.ReadEvents: %w", err)
	}
	return []byte(body), nil
}

// PruneEvents deletes relayed events older than age.
func (s *Store) PruneEvents(ctx context.Context, age time.Duration) (int64, error) {
	if err := s.checkOpen("PruneEvents"); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM cluster_events WHERE created_at < now() - $1::interval`, interval(age))
	if err != nil {
		return 0, fmt.Errorf("postgres.PruneEvents: %w", err)
	}
	return tag.RowsAffected(), nil
}

// interval formats d for a $n::interval parameter.
func interval(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + " microseconds"
}
