package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
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
	FROM runs WHERE ended_at >= $2 AND ended_at < $3
	GROUP BY day ORDER BY day`

// UsageByDay implements store.Store.
func (s *Store) UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]store.UsageDay, error) {
	if err := s.checkOpen("UsageByDay"); err != nil {
		return nil, err
	}
	off := zoneOffset.Milliseconds()
	zone := time.FixedZone("", int(zoneOffset.Seconds()))
	rows, err := s.pool.Query(ctx, qUsageByDay, off, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("postgres.UsageByDay: %w", err)
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
			return nil, fmt.Errorf("postgres.UsageByDay: %w", err)
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
		return nil, fmt.Errorf("postgres.UsageByDay: %w", err)
	}
	return out, nil
}
