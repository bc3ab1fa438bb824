package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

const (
	benchSessions = 100_000
	benchMessages = 100_000
	benchSID      = "0195d2a4-bbbb-7000-8000-000000000001"
)

// bigDB is a database with benchSessions sessions and one transcript of
// benchMessages entries, built once per test binary run.
var bigDB struct {
	once sync.Once
	dir  string
	s    *Store
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDB.s != nil {
		bigDB.s.Close()
	}
	if bigDB.dir != "" {
		os.RemoveAll(bigDB.dir)
	}
	os.Exit(code)
}

// bigStore returns the shared 100k dataset, building it on first use.
func bigStore(b *testing.B) *Store {
	b.Helper()
	bigDB.once.Do(func() {
		start := time.Now()
		bigDB.dir, bigDB.err = os.MkdirTemp("", "switchboard-bench-*")
		if bigDB.err != nil {
			return
		}
		bigDB.s, bigDB.err = Open(context.Background(), filepath.Join(bigDB.dir, "big.db"), Options{})
		if bigDB.err != nil {
			return
		}
		if bigDB.err = seedSessions(bigDB.s, benchSessions); bigDB.err != nil {
			return
		}
		bigDB.err = seedTranscript(bigDB.s, benchSID, benchMessages)
		b.Logf("seeded %d sessions and %d messages in %v", benchSessions, benchMessages, time.Since(start))
	})
	if bigDB.err != nil {
		b.Fatal(bigDB.err)
	}
	return bigDB.s
}

// seedSessions bulk-inserts n sessions in one transaction.
func seedSessions(s *Store, n int) error {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		st, err := s.wstmt(ctx, tx, s.q.insertSession)
		if err != nil {
			return err
		}
		for i := range n {
			agent := fmt.Sprintf("agent%02d", i%10)
			sess := &store.Session{
				Key:         fmt.Sprintf("agent:%s:webchat:direct:user%06d", agent, i),
				SessionID:   fmt.Sprintf("0195d2a4-0000-7000-8000-%012d", i),
				AgentID:     agent,
				Kind:        "direct",
				Channel:     "webchat",
				ChatType:    "direct",
				DisplayName: fmt.Sprintf("User %d", i),
				Model:       "openai/gpt-test",
				InputTokens: int64(i), OutputTokens: int64(i), TotalTokens: int64(2 * i),
				SystemSent:      true,
				LastChannel:     "webchat",
				LastTo:          fmt.Sprintf("user%06d", i),
				DeliveryContext: &store.DeliveryContext{Channel: "webchat", To: fmt.Sprintf("user%06d", i)},
				Extra:           []byte(`{"origin":{"provider":"webchat"}}`),
				CreatedAt:       base,
				// Spread over ~70 days with collisions every 7 rows.
				UpdatedAt: base.Add(time.Duration((i*7919)%(n/7+1)) * time.Minute),
			}
			if i%5 == 0 {
				sess.SpawnedBy = fmt.Sprintf("agent:%s:main", agent)
				sess.Label = "worker"
			}
			args, err := sessionArgs(sess)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// benchMessage returns a realistic assistant entry of about 600 bytes.
func benchMessage(i int) store.Message {
	m := transcript.NewAssistantMessage([]transcript.Block{
		transcript.TextBlock(fmt.Sprintf("Reply number %d. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.", i)),
		transcript.ToolCallBlock(fmt.Sprintf("call_%d", i), "sessions_list", []byte(`{"limit":20,"kinds":["main","group"]}`)),
	}, time.UnixMilli(1770000000000+int64(i)))
	m.API, m.Provider, m.Model, m.StopReason = "openai-completions", "openai", "gpt-test", "toolUse"
	m.Usage = &transcript.Usage{Input: 1200, Output: 80, TotalTokens: 1280, Cost: &transcript.Cost{Total: 0.001}}
	m.Meta = &transcript.Meta{RunID: "run-bench"}
	return store.Message{Entry: transcript.MessageEntry(m, time.UnixMilli(1770000000000+int64(i)))}
}

// seedTranscript appends n messages to sid in batches.
func seedTranscript(s *Store, sid string, n int) error {
	const batch = 5000
	for i := 0; i < n; i += batch {
		msgs := make([]store.Message, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			msgs = append(msgs, benchMessage(j))
		}
		if _, err := s.AppendMessages(context.Background(), sid, msgs); err != nil {
			return err
		}
	}
	return nil
}

func BenchmarkAppendMessage(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"synchronous=NORMAL", Options{}},
		{"synchronous=FULL", Options{FullSync: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "append.db"), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			msg := []store.Message{benchMessage(0)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.AppendMessages(ctx, "bench", msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendMessageParallel appends from GOMAXPROCS goroutines to
// separate transcripts, all funnelled through the one writer.
func BenchmarkAppendMessageParallel(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "append.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n sync.Mutex
	id := 0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n.Lock()
		id++
		sid := fmt.Sprintf("bench-%d", id)
		n.Unlock()
		msg := []store.Message{benchMessage(0)}
		for pb.Next() {
			if _, err := s.AppendMessages(context.Background(), sid, msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkListSessions200of100k(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts store.ListOptions
		want int
	}{
		{"all", store.ListOptions{Limit: 200}, 200},
		{"offset1000", store.ListOptions{Limit: 200, Offset: 1000}, 200},
		{"agent", store.ListOptions{AgentID: "agent03", Limit: 200}, 200},
		{"spawnedBy", store.ListOptions{SpawnedBy: "agent:agent05:main", Limit: 200}, 200},
		{"kind", store.ListOptions{Kind: "direct", Limit: 200}, 200},
		{"label", store.ListOptions{Label: "worker", Limit: 200}, 200},
		{"updatedSince", store.ListOptions{UpdatedSince: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), Limit: 200}, 200},
		// Search cannot use an index; it scans until it has 200 matches.
		{"search", store.ListOptions{Search: "USER 9", Limit: 200}, 200},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.ListSessions(ctx, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != tc.want {
					b.Fatalf("got %d sessions, want %d", len(got), tc.want)
				}
			}
		})
	}
}

func BenchmarkHistoryTail50of100k(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts store.HistoryOptions
	}{
		{"tail", store.HistoryOptions{Limit: 50}},
		{"beforeSeq", store.HistoryOptions{Limit: 50, BeforeSeq: benchMessages / 2}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.History(ctx, benchSID, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != 50 {
					b.Fatalf("got %d messages", len(got))
				}
			}
		})
	}
}

func BenchmarkCountMessages100k(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	for b.Loop() {
		if n, err := s.CountMessages(ctx, benchSID); err != nil || n != benchMessages {
			b.Fatalf("CountMessages = %d, %v", n, err)
		}
	}
}

func BenchmarkGetSession(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.GetSession(ctx, "agent:agent07:webchat:direct:user054327"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures Open of a fresh database (the whole
// schema created) and of one a previous Open left (nothing to migrate):
// the store's share of the gateway's cold start.
func BenchmarkOpen(b *testing.B) {
	for _, existing := range []bool{false, true} {
		b.Run(fmt.Sprintf("existing=%v", existing), func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			if existing {
				s, err := Open(ctx, filepath.Join(dir, "store.db"), Options{})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				path := filepath.Join(dir, "store.db")
				if !existing {
					path = filepath.Join(dir, fmt.Sprint("fresh", i, ".db"))
				}
				s, err := Open(ctx, path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
