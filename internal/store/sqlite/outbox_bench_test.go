package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

const benchOutboxItems = 100_000

// benchOutboxNow is the dispatcher's "now" in the outbox benchmarks.
var benchOutboxNow = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

// benchPayload is a realistic announce payload of about 400 bytes.
var benchPayload = json.RawMessage(`{"childSessionKey":"agent:main:subagent:0195d2a4-0000-7000-8000-000000000001",` +
	`"requesterSessionKey":"agent:main:main","label":"research",` +
	`"status":"ok","result":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor ` +
	`incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation.",` +
	`"stats":{"runtimeMs":41250,"tokens":{"input":12000,"output":800,"total":12800}}}`)

// seedOutbox bulk-inserts n items in one transaction: 80% delivered, 5%
// dead, 15% pending, of which half are due at benchOutboxNow and half are
// backing off into the future. It returns the number of due items.
func seedOutbox(s *Store, n int) (due int, err error) {
	ctx := context.Background()
	created := benchOutboxNow.Add(-48 * time.Hour)
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		for i := range n {
			it := &store.OutboxItem{
				ID:         fmt.Sprintf("announce:run-%07d:agent:main:s%04d", i, i%1000),
				Kind:       []string{"announce", "a2a"}[i%2],
				SessionKey: fmt.Sprintf("agent:main:s%04d", i%1000),
				RunID:      fmt.Sprintf("run-%07d", i),
				Payload:    benchPayload,
				Status:     store.OutboxDelivered,
				CreatedAt:  created.Add(time.Duration(i) * time.Second),
			}
			it.UpdatedAt = it.CreatedAt
			it.NextAttemptAt = it.CreatedAt
			switch r := i % 100; {
			case r < 5:
				it.Status = store.OutboxDead
				it.Attempts, it.LastError = 10, "session not found"
			case r < 20:
				it.Status = store.OutboxPending
				if r%2 == 0 {
					due++
					it.NextAttemptAt = benchOutboxNow.Add(-time.Duration(i%3600) * time.Second)
				} else {
					it.Attempts, it.LastError = 3, "target busy"
					it.NextAttemptAt = benchOutboxNow.Add(time.Duration(1+i%3600) * time.Second)
				}
			default:
				it.DeliveredAt = it.CreatedAt.Add(time.Second)
			}
			args, err := outboxArgs(it, it.CreatedAt)
			if err != nil {
				return err
			}
			if ok, err := s.insertOutboxTx(ctx, tx, args); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("duplicate id %q", it.ID)
			}
		}
		return nil
	})
	return due, err
}

func BenchmarkPutOutbox(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "outbox.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.Run("new", func(b *testing.B) {
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			it := &store.OutboxItem{ID: fmt.Sprintf("a2a:run-%d:1", i), Kind: "a2a",
				SessionKey: "agent:main:main", RunID: fmt.Sprintf("run-%d", i), Payload: benchPayload}
			if err := s.PutOutbox(ctx, it); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The idempotent path: the item is already queued.
	b.Run("conflict", func(b *testing.B) {
		it := &store.OutboxItem{ID: "a2a:dup", Kind: "a2a", SessionKey: "agent:main:main", Payload: benchPayload}
		if err := s.PutOutbox(ctx, it); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.PutOutbox(ctx, it); err == nil {
				b.Fatal("PutOutbox of a queued item succeeded")
			}
		}
	})
}

func BenchmarkListOutboxDue100k(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "outbox.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	due, err := seedOutbox(s, benchOutboxItems)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d outbox items (%d due) in %v", benchOutboxItems, due, time.Since(start))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    store.OutboxFilter
		want int
	}{
		{"due100", store.OutboxFilter{DueBefore: benchOutboxNow, Limit: 100}, 100},
		{"dueKind100", store.OutboxFilter{Kind: "announce", DueBefore: benchOutboxNow, Limit: 100}, 100},
		{"dueAll", store.OutboxFilter{DueBefore: benchOutboxNow}, due},
		{"dueNone", store.OutboxFilter{DueBefore: benchOutboxNow.Add(-72 * time.Hour), Limit: 100}, 0},
		{"session", store.OutboxFilter{SessionKey: "agent:main:s0042"}, benchOutboxItems / 1000},
		{"run", store.OutboxFilter{RunID: "run-0054321"}, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.ListOutbox(ctx, tc.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != tc.want {
					b.Fatalf("got %d items, want %d", len(got), tc.want)
				}
			}
		})
	}
}
