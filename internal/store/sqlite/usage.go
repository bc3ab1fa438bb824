package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
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
	FROM runs WHERE ended_at >= ?2 AND ended_at < ?3
	GROUP BY day ORDER BY day`

// UsageByDay implements store.Store.
func (s *Store) UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]store.UsageDay, error) {
	if err := s.checkOpen("UsageByDay"); err != nil {
		return nil, err
	}
	off := zoneOffset.Milliseconds()
	zone := time.FixedZone("", int(zoneOffset.Seconds()))
	rows, err := s.query(ctx, qUsageByDay, off, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sqlite.UsageByDay: %w", err)
	}
	defer rows.Close()
	var out []store.UsageDay
	for rows.Next() {
		var (
			day, runs                   int64
			in, outTok, cr, cw, total   float64
			cIn, cOut, cCR, cCW, cTotal float64
			missing                     int64
		)
		if err := rows.Scan(&day, &runs, &in, &outTok, &cr, &cw, &total, &cIn, &cOut, &cCR, &cCW, &cTotal, &missing); err != nil {
			return nil, fmt.Errorf("sqlite.UsageByDay: %w", err)
		}
		d := store.UsageDay{
			Day:  time.UnixMilli(day*86400000 - off).In(zone),
			Runs: runs,
			Usage: transcript.Usage{Input: int64(in), Output: int64(outTok), CacheRead: int64(cr),
				CacheWrite: int64(cw), TotalTokens: int64(total)},
			MissingCost: missing,
		}
		if cTotal != 0 || cIn != 0 || cOut != 0 || cCR != 0 || cCW != 0 {
			d.Usage.Cost = &transcript.Cost{Input: cIn, Output: cOut, CacheRead: cCR, CacheWrite: cCW, Total: cTotal}
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.UsageByDay: %w", err)
	}
	return out, nil
}

const (
	// qRunLines reads what RunStats counts of a run's messages (over
	// messages_run): every role, the lines of those it reads.
	qRunLines = `SELECT role, CASE WHEN role IN ('assistant', 'toolResult', 'tool') THEN line ELSE '' END
		FROM messages WHERE session_id = ? AND run_id = ?`
	// qRunsUsage reads finished runs by their end (runs_ended).
	qRunsUsage = `SELECT run_id, session_key, agent_id, ended_at, usage, stats FROM runs
		WHERE ended_at >= ? AND ended_at < ? AND (? = '' OR agent_id = ?) AND (? = '' OR session_key = ?)
		ORDER BY ended_at, run_id LIMIT ?`
)

// runStatsTx counts r's messages (those of its session with its run id)
// inside a write transaction, as the JSON stored in runs.stats.
func (s *Store) runStatsTx(ctx context.Context, tx *sql.Tx, r *store.Run) (string, error) {
	var stats store.RunStats
	if r.SessionID != "" {
		q, err := s.wstmt(ctx, tx, qRunLines)
		if err != nil {
			return "", err
		}
		rows, err := q.QueryContext(ctx, r.SessionID, r.RunID)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		var role string
		var line []byte
		for rows.Next() {
			if err := rows.Scan(&role, &line); err != nil {
				return "", err
			}
			stats.Count(role, line)
		}
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(stats)
	if err != nil {
		return "", err
	}
	return string(b), nil
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
	rows, err := s.query(ctx, qRunsUsage, f.From.UnixMilli(), f.To.UnixMilli(), f.AgentID, f.AgentID, f.SessionKey, f.SessionKey, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite.RunsUsage: %w", err)
	}
	defer rows.Close()
	var out []store.RunUsage
	for rows.Next() {
		var (
			u            store.RunUsage
			ended        int64
			usage, stats []byte
		)
		if err := rows.Scan(&u.RunID, &u.SessionKey, &u.AgentID, &ended, &usage, &stats); err != nil {
			return nil, fmt.Errorf("sqlite.RunsUsage: %w", err)
		}
		u.EndedAt = time.UnixMilli(ended)
		if err := json.Unmarshal(usage, &u.Usage); err != nil {
			return nil, fmt.Errorf("sqlite.RunsUsage: run %s usage: %w", u.RunID, err)
		}
		if err := json.Unmarshal(stats, &u.Stats); err != nil {
			return nil, fmt.Errorf("sqlite.RunsUsage: run %s stats: %w", u.RunID, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.RunsUsage: %w", err)
	}
	return out, nil
}
