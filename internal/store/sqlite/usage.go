package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// qUsageByDay sums run usage per day over the runs_ended index. A day is
// (ended_at + offset) / 86400000 in unix-ms days.
const qUsageByDay = `SELECT (ended_at + ?1) / 86400000 AS day, COUNT(*),
	TOTAL(json_extract(usage, '$.input')), TOTAL(json_extract(usage, '$.output')),
	TOTAL(json_extract(usage, '$.cacheRead')), TOTAL(json_extract(usage, '$.cacheWrite')),
	TOTAL(json_extract(usage, '$.totalTokens')),
	TOTAL(json_extract(usage, '$.cost.input')), TOTAL(json_extract(usage, '$.cost.output')),
	TOTAL(json_extract(usage, '$.cost.cacheRead')), TOTAL(json_extract(usage, '$.cost.cacheWrite')),
	TOTAL(json_extract(usage, '$.cost.total')),
	SUM(json_extract(usage, '$.cost') IS NULL AND json_extract(usage, '$.totalTokens') > 0)
	FROM runs WHERE ended_at >= ?2 AND ended_at < ?3 AND ended_at > 0
	GROUP BY day ORDER BY day`

// UsageByDay implements store.Store.
func (s *Store) UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]store.UsageDay, error) {
	if err := s.checkOpen("UsageByDay"); err != nil {
		return nil, err
	}
	off := zoneOffset.Milliseconds()
	zone := time.FixedZone("", int(zoneOffset.Seconds()))
	out, err := sqlstore.All(ctx, readers{s}, 0, func(sc sqlstore.Scanner) (store.UsageDay, error) {
		return sqlstore.ScanUsageDay(sc, off, zone)
	}, qUsageByDay, off, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sqlite.UsageByDay: %w", err)
	}
	return out, nil
}

const (
	// qRunLines reads what RunStats counts of a run's messages (from the
	// run's first_seq on, sqlstore.RunFrom): every role, the lines of
	// those it reads.
	qRunLines = `SELECT role, CASE WHEN role IN ('assistant', 'toolResult', 'tool') THEN line ELSE '' END
		FROM messages WHERE session_id = ?1 AND run_id = ?2 AND ` + sqlstore.RunFrom
	// qRunsUsage reads finished runs by their end (runs_ended).
	qRunsUsage = `SELECT run_id, session_key, agent_id, ended_at, usage, stats FROM runs
		WHERE ended_at >= ? AND ended_at < ? AND ended_at > 0 AND (? = '' OR agent_id = ?) AND (? = '' OR session_key = ?)
		ORDER BY ended_at, run_id LIMIT ?`
)

// runStatsTx counts r's messages (those of its session with its run id)
// inside a write transaction, as the JSON stored in runs.stats.
func (s *Store) runStatsTx(ctx context.Context, tx wtx, r *store.Run) ([]byte, error) {
	var stats store.RunStats
	if r.SessionID != "" {
		q, err := s.wstmt(ctx, tx, qRunLines)
		if err != nil {
			return nil, err
		}
		rows, err := q.QueryContext(ctx, r.SessionID, r.RunID)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var role string
		var line []byte
		for rows.Next() {
			if err := rows.Scan(&role, &line); err != nil {
				return nil, err
			}
			stats.Count(role, line)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(stats)
}

// RunsUsage implements store.Store.
func (s *Store) RunsUsage(ctx context.Context, f store.RunUsageFilter) ([]store.RunUsage, error) {
	if err := s.checkOpen("RunsUsage"); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 || limit > store.MaxRunsUsage {
		limit = store.MaxRunsUsage
	}
	out, err := sqlstore.All(ctx, readers{s}, 0, sqlstore.ScanRunUsage, qRunsUsage, f.From.UnixMilli(), f.To.UnixMilli(), f.AgentID, f.AgentID, f.SessionKey, f.SessionKey, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite.RunsUsage: %w", err)
	}
	return out, nil
}
