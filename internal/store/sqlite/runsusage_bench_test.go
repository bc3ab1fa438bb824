package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkRunsUsage30kRuns reads a 30-day range of 30,000 finished runs
// (three per session over 10,000 sessions, each with usage and message
// counts), as sessions.usage does, out of a table that also holds 30,000
// older runs outside the range.
func BenchmarkRunsUsage30kRuns(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "runs.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	end := time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC)
	const sessions, perSession = 10_000, 6
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		for i := range sessions * perSession {
			ended := end.Add(-time.Duration(i) * 86 * time.Second) // 60k runs over ~60 days
			_, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, session_key, session_id, agent_id, status, created_at, ended_at, usage, stats)
				VALUES (?, ?, ?, 'main', 'ok', ?, ?, ?, ?)`,
				fmt.Sprintf("run-%06d", i), fmt.Sprintf("agent:main:s%05d", i%sessions), fmt.Sprintf("sid-%05d", i%sessions),
				ended.UnixMilli(), ended.UnixMilli(), `{"input":1200,"output":300,"totalTokens":1500,"cost":{"total":0.01}}`,
				`{"user":1,"assistant":3,"toolCalls":4,"toolResults":4,"errors":1,"tools":{"exec":2,"read":1,"sessions_list":1}}`)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	f := store.RunUsageFilter{From: end.AddDate(0, 0, -30), To: end.Add(time.Hour)}
	b.ResetTimer()
	for b.Loop() {
		runs, err := s.RunsUsage(ctx, f)
		if err != nil || len(runs) < 29_000 || len(runs) > 31_000 {
			b.Fatalf("RunsUsage = %d runs, %v", len(runs), err)
		}
	}
}
