package postgres

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// The benchmarks run on the harness's throwaway cluster (fsync off), so
// write figures leave out the disk; see the README for figures on a
// durable server.

const (
	benchSessions = 100_000
	benchMessages = 100_000
	benchSID      = "0195d2a4-bbbb-7000-8000-000000000001"
)

// bigDB is a database with benchSessions sessions and one transcript of
// benchMessages entries, built once per test binary run (the harness drops
// it with the cluster).
var bigDB struct {
	once sync.Once
	s    *Store
	err  error
}

func bigStore(b *testing.B) *Store {
	b.Helper()
	bigDB.once.Do(func() {
		start := time.Now()
		// The database outlives this benchmark: it is the cluster's, dropped
		// when the cluster stops.
		dsn := pgtest.DB(&keep{TB: b})
		if bigDB.s, bigDB.err = Open(context.Background(), dsn, Options{}); bigDB.err != nil {
			return
		}
		if bigDB.err = seedSessions(bigDB.s, benchSessions); bigDB.err != nil {
			return
		}
		if bigDB.err = seedTranscript(bigDB.s, benchSID, benchMessages); bigDB.err != nil {
			return
		}
		_, bigDB.err = bigDB.s.pool.Exec(context.Background(), `ANALYZE`)
		b.Logf("seeded %d sessions and %d messages in %v", benchSessions, benchMessages, time.Since(start))
	})
	if bigDB.err != nil {
		b.Fatal(bigDB.err)
	}
	return bigDB.s
}

// keep is a testing.TB whose cleanups never run: the shared dataset lives
// until the cluster stops.
type keep struct{ testing.TB }

func (keep) Cleanup(func()) {}

// seedSessions copies n sessions in with COPY.
func seedSessions(s *Store, n int) error {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := make([][]any, 0, n)
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
			UpdatedAt:       base.Add(time.Duration((i*7919)%(n/7+1)) * time.Minute),
		}
		if i%5 == 0 {
			sess.SpawnedBy = fmt.Sprintf("agent:%s:main", agent)
			sess.Label = "worker"
		}
		args, err := sessionArgs(sess)
		if err != nil {
			return err
		}
		rows = append(rows, args)
	}
	var names []string
	for _, c := range strings.Split(sessionCols+", key_class, search", ",") {
		names = append(names, strings.TrimSpace(c))
	}
	_, err := s.pool.CopyFrom(context.Background(), pgx.Identifier{"sessions"}, names, pgx.CopyFromRows(rows))
	return err
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
	const batch = 2000
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

func BenchmarkListSessions100of100k(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts store.ListOptions
	}{
		{"all", store.ListOptions{Limit: 100}},
		{"offset1000", store.ListOptions{Limit: 100, Offset: 1000}},
		{"agent", store.ListOptions{AgentID: "agent03", Limit: 100}},
		{"spawnedBy", store.ListOptions{SpawnedBy: "agent:agent05:main", Limit: 100}},
		{"excludeSubagents", store.ListOptions{Exclude: store.ClassSubagent | store.ClassCronRun, Limit: 100}},
		{"search", store.ListOptions{Search: "USER 9", Limit: 100}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := s.ListSessions(ctx, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != 100 {
					b.Fatalf("got %d sessions, want 100", len(got))
				}
			}
		})
	}
}

func BenchmarkHistoryTail50of100k(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.History(ctx, benchSID, store.HistoryOptions{Limit: 50})
		if err != nil || len(got) != 50 {
			b.Fatalf("History: %d, %v", len(got), err)
		}
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	s, err := Open(context.Background(), pgtest.DB(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.AppendMessages(ctx, "sid-append", []store.Message{benchMessage(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnStore is the store's share of one warm turn: the run
// queued, started with its input, the reply appended, the run finished
// (usage onto the session).
func BenchmarkTurnStore(b *testing.B) {
	s, err := Open(context.Background(), pgtest.DB(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:main", SessionID: "sid-warm"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint("r", i)
		if err := s.CreateRun(ctx, &store.Run{RunID: id, SessionKey: "agent:main:main"}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.StartRun(ctx, id, time.Now(), "sid-warm", []store.Message{userMsg("hi")}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, "sid-warm", []store.Message{benchMessage(i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.FinishRun(ctx, id, store.RunResult{Status: store.RunOK, Usage: transcript.Usage{Input: 5, Output: 5, TotalTokens: 10}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFencedTurn is the store's share of one warm turn on a node, as
// the runner makes it: the run opened under its lane's claim (OpenRun,
// one round trip with the remembered tail) and ended with its reply
// (EndRun, one round trip). Besides the time it reports server-µs/op: the
// CPU time of the database's backends per turn, read from /proc, so that
// the server's share is seen apart from the client's.
func BenchmarkFencedTurn(b *testing.B) {
	ctx := context.Background()
	s := openNodes(b, 1)[0]
	const key = "agent:main:fenced"
	fenced, _ := claimedSession(b, s, key)
	i := 0
	turn := func() {
		i++
		id := fmt.Sprint("r", i)
		if err := openTurn(fenced, s, key, id); err != nil {
			b.Fatal(err)
		}
		out := benchMessage(i)
		out.RunID = id
		if _, _, err := s.EndRun(fenced, id, store.RunResult{Status: store.RunOK, Usage: transcript.Usage{Input: 5, Output: 5, TotalTokens: 10}},
			"sid", []store.Message{out}); err != nil {
			b.Fatal(err)
		}
	}
	for range 20 { // the statements prepared, generic plans chosen
		turn()
	}
	backends := func() time.Duration {
		rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		var ticks int64
		for _, pid := range pids {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				b.Skipf("backend CPU: %v", err)
			}
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			u, _ := strconv.ParseInt(f[11], 10, 64)
			k, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + k
		}
		return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ
	}
	cpu0 := backends()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		turn()
	}
	b.StopTimer()
	b.ReportMetric(float64((backends()-cpu0).Microseconds())/float64(b.N), "server-µs/op")
}
