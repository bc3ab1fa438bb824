package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// qUsageByDay sums run usage per day over the runs_ended index. A day is
// floor((ended_at + offset) / 86400000) in unix-ms days. Sums are floats,
// as in the SQLite backend.
const qUsageByDay = `SELECT floor((ended_at + $1)::float8 / 86400000)::bigint AS day, COUNT(*),
	COALESCE(SUM((usage->>'input')::float8), 0), COALESCE(SUM((usage->>'output')::float8), 0),
	COALESCE(SUM((usage->>'cacheRead')::float8), 0), COALESCE(SUM((usage->>'cacheWrite')::float8), 0),
	COALESCE(SUM((usage->>'totalTokens')::float8), 0),
	COALESCE(SUM((usage->'cost'->>'input')::float8), 0), COALESCE(SUM((usage->'cost'->>'output')::float8), 0),
	COALESCE(SUM((usage->'cost'->>'cacheRead')::float8), 0), COALESCE(SUM((usage->'cost'->>'cacheWrite')::float8), 0),
	COALESCE(SUM((usage->'cost'->>'total')::float8), 0),
	COUNT(*) FILTER (WHERE (usage->'cost' IS NULL OR json_typeof(usage->'cost') = 'null')
		AND COALESCE((usage->>'totalTokens')::float8, 0) > 0)
	FROM runs WHERE ended_at >= $2 AND ended_at < $3 AND ended_at > 0
	GROUP BY day ORDER BY day`

// UsageByDay implements store.Store.
func (s *Store) UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]store.UsageDay, error) {
	if err := s.checkOpen("UsageByDay"); err != nil {
		return nil, err
	}
	off := zoneOffset.Milliseconds()
	zone := time.FixedZone("", int(zoneOffset.Seconds()))
	out, err := sqlstore.All(ctx, poolReads{s}, 0, func(sc sqlstore.Scanner) (store.UsageDay, error) {
		return sqlstore.ScanUsageDay(sc, off, zone)
	}, qUsageByDay, off, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("postgres.UsageByDay: %w", err)
	}
	return out, nil
}

const (
	// qRunLines reads what RunStats counts of a run's messages: every
	// role, the lines of those it reads.
	qRunLines = `SELECT role, CASE WHEN role IN ('assistant', 'toolResult', 'tool') THEN line ELSE '' END
		FROM messages WHERE session_id = (SELECT session_id FROM runs WHERE run_id = $1) AND run_id = $1`
	// qRunsUsage reads finished runs by their end (runs_ended).
	qRunsUsage = `SELECT run_id, session_key, agent_id, ended_at, usage::text, stats::text FROM runs
		WHERE ended_at >= $1 AND ended_at < $2 AND ended_at > 0 AND ($3 = '' OR agent_id = $3) AND ($4 = '' OR session_key = $4)
		ORDER BY ended_at, run_id LIMIT $5`
)

// runStats counts the messages of run runID (store.RunStats) as JSON.
func (s *Store) runStats(ctx context.Context, runID string) (string, error) {
	var stats store.RunStats
	rows, err := s.pool.Query(ctx, qRunLines, runID)
	if err != nil {
		return "", err
	}
	var role, line string
	_, err = pgx.ForEachRow(rows, []any{&role, &line}, func() error {
		stats.Count(role, []byte(line))
		return nil
	})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(stats)
	return string(b), err
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
	out, err := sqlstore.All(ctx, poolReads{s}, 0, sqlstore.ScanRunUsage, qRunsUsage, f.From.UnixMilli(), f.To.UnixMilli(), f.AgentID, f.SessionKey, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres.RunsUsage: %w", err)
	}
	return out, nil
}
