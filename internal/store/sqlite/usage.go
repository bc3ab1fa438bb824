package sqlite

import (
	"context"
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
