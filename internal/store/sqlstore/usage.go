package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// The usage statements read JSON and differ by dialect; they stay in their
// store, and return the rows read here.

// ScanUsageDay reads one row of a store's usage-by-day statement: the day
// number ((ended_at + offset) / 86,400,000, offset in milliseconds), the
// run count, the token and cost sums and the count of runs without a cost;
// zone is the offset's zone.
func ScanUsageDay(sc Scanner, offset int64, zone *time.Location) (store.UsageDay, error) {
	var (
		day, runs                   int64
		in, outTok, cr, cw, total   float64
		cIn, cOut, cCR, cCW, cTotal float64
		missing                     int64
	)
	if err := sc.Scan(&day, &runs, &in, &outTok, &cr, &cw, &total, &cIn, &cOut, &cCR, &cCW, &cTotal, &missing); err != nil {
		return store.UsageDay{}, err
	}
	d := store.UsageDay{
		Day:  time.UnixMilli(day*86400000 - offset).In(zone),
		Runs: runs,
		Usage: transcript.Usage{Input: int64(in), Output: int64(outTok), CacheRead: int64(cr),
			CacheWrite: int64(cw), TotalTokens: int64(total)},
		MissingCost: missing,
	}
	if cTotal != 0 || cIn != 0 || cOut != 0 || cCR != 0 || cCW != 0 {
		d.Usage.Cost = &transcript.Cost{Input: cIn, Output: cOut, CacheRead: cCR, CacheWrite: cCW, Total: cTotal}
	}
	return d, nil
}

// ScanRunUsage reads one row of a store's runs-usage statement: run id,
// session key, agent id, end, usage and stats (JSON text).
func ScanRunUsage(sc Scanner) (store.RunUsage, error) {
	var (
		u            store.RunUsage
		ended        int64
		usage, stats []byte
	)
	if err := sc.Scan(&u.RunID, &u.SessionKey, &u.AgentID, &ended, &usage, &stats); err != nil {
		return u, err
	}
	u.EndedAt = time.UnixMilli(ended)
	if err := json.Unmarshal(usage, &u.Usage); err != nil {
		return u, fmt.Errorf("run %s usage: %w", u.RunID, err)
	}
	if err := json.Unmarshal(stats, &u.Stats); err != nil {
		return u, fmt.Errorf("run %s stats: %w", u.RunID, err)
	}
	return u, nil
}
