package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// openNodes opens n Stores on one fresh database, as n gateway nodes would.
func openNodes(t testing.TB, n int) []*Store {
	t.Helper()
	dsn := pgtest.DB(t)
	out := make([]*Store, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range out {
		// Concurrent Opens of a new database: the migration lock makes
		// one migrate and the others wait.
		wg.Go(func() { out[i], errs[i] = Open(context.Background(), dsn, Options{MaxConns: 4}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open node %d: %v", i, err)
		}
		t.Cleanup(func() { out[i].Close() })
	}
	return out
}

func userMsg(text string) store.Message {
	return store.Message{Entry: transcript.Entry{
		Type:    transcript.TypeMessage,
		Message: &transcript.Message{Role: transcript.RoleUser, Content: transcript.StringContent(text)},
	}}
}

// TestNodesStartRunOnce races every run's start on three nodes: each run
// starts once, and its transcript holds its input once.
func TestNodesStartRunOnce(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	const runs = 40
	for i := range runs {
		if err := nodes[0].CreateRun(ctx, &store.Run{RunID: fmt.Sprintf("r%d", i), SessionKey: "agent:main:main"}); err != nil {
			t.Fatal(err)
		}
	}
	var wins [runs]atomic.Int32
	var wg sync.WaitGroup
	for n, s := range nodes {
		for w := range 2 {
			wg.Go(func() {
				for i := range runs {
					id := fmt.Sprintf("r%d", i)
					_, _, err := s.StartRun(ctx, id, time.Now(), "sid-"+id, []store.Message{userMsg(fmt.Sprintf("node %d/%d", n, w))})
					switch {
					case err == nil:
						wins[i].Add(1)
					case !errors.Is(err, store.ErrConflict):
						t.Errorf("node %d: StartRun %s: %v", n, id, err)
					}
				}
			})
		}
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		n, err := nodes[1].CountMessages(ctx, "sid-"+id)
		if wins[i].Load() != 1 || n != 1 || err != nil {
			t.Errorf("%s: started %d times, %d messages (%v); want 1 and 1", id, wins[i].Load(), n, err)
		}
	}
}

// TestNodesAppendOneTranscript appends to one transcript from three nodes:
// the sequence stays gapless and the parent chain unbroken.
func TestNodesAppendOneTranscript(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	const per = 30
	var wg sync.WaitGroup
	for n, s := range nodes {
		wg.Go(func() {
			for i := range per {
				if _, err := s.AppendMessages(ctx, "shared", []store.Message{userMsg(fmt.Sprintf("%d.%d.a", n, i)), userMsg(fmt.Sprintf("%d.%d.b", n, i))}); err != nil {
					t.Errorf("node %d: %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	hist, err := nodes[2].History(ctx, "shared", store.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2*per*len(nodes) {
		t.Fatalf("%d entries, want %d", len(hist), 2*per*len(nodes))
	}
	for i, m := range hist {
		if m.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, m.Seq)
		}
		if i > 0 && (m.Entry.ParentID == nil || *m.Entry.ParentID != hist[i-1].Entry.ID) {
			t.Fatalf("entry %d: parent %v, want %s", i, m.Entry.ParentID, hist[i-1].Entry.ID)
		}
		// A batch's two messages stay adjacent.
		if txt := m.Entry.Message.Content.Text(); strings.HasSuffix(txt, ".a") &&
			(i+1 >= len(hist) || hist[i+1].Entry.Message.Content.Text() != strings.TrimSuffix(txt, "a")+"b") {
			t.Fatalf("batch of %q interleaved", txt)
		}
	}
}

// TestNodesPostMessageOnce posts with one idempotency key from three nodes
// at once: one message is stored and every caller gets it.
func TestNodesPostMessageOnce(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	for round := range 10 {
		key := fmt.Sprintf("idem-%d", round)
		var (
			posted atomic.Int32
			mu     sync.Mutex
			ids    = map[string]bool{}
			wg     sync.WaitGroup
		)
		for n, s := range nodes {
			for range 3 {
				wg.Go(func() {
					m, ok, err := s.PostMessage(ctx, "posts", key, userMsg(fmt.Sprintf("from %d", n)))
					if err != nil {
						t.Errorf("node %d: %v", n, err)
						return
					}
					if ok {
						posted.Add(1)
					}
					mu.Lock()
					ids[m.Entry.ID] = true
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		if posted.Load() != 1 || len(ids) != 1 {
			t.Fatalf("round %d: posted %d times, callers saw %d different messages; want 1 and 1", round, posted.Load(), len(ids))
		}
	}
	if n, _ := nodes[0].CountMessages(ctx, "posts"); n != 10 {
		t.Errorf("%d messages, want 10", n)
	}
}

// TestNodesUpdateSessionCreate creates and updates one session from three
// nodes at once: no update is lost and fn never sees a half-made row.
func TestNodesUpdateSessionCreate(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	const per = 15
	var wg sync.WaitGroup
	for n, s := range nodes {
		wg.Go(func() {
			for range per {
				_, err := s.UpdateSession(ctx, "agent:main:race", true, func(sess *store.Session) error {
					if sess.InputTokens == 0 && sess.SessionID != "" {
						return errors.New("existing row seen as new")
					}
					if sess.SessionID == "" {
						sess.SessionID = "sid-race"
					}
					sess.InputTokens++
					return nil
				})
				if err != nil {
					t.Errorf("node %d: %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := nodes[0].GetSession(ctx, "agent:main:race")
	if err != nil {
		t.Fatal(err)
	}
	if got.InputTokens != per*int64(len(nodes)) || got.SessionID != "sid-race" {
		t.Errorf("session = %d updates, id %q; want %d, sid-race", got.InputTokens, got.SessionID, per*len(nodes))
	}
}

// TestNodesOutboxClaimOnce claims every pending item from three nodes with
// UpdateOutbox's compare-and-set: each item is claimed exactly once.
func TestNodesOutboxClaimOnce(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	const items = 30
	for i := range items {
		if err := nodes[0].PutOutbox(ctx, &store.OutboxItem{ID: fmt.Sprintf("o%d", i), Kind: "announce", SessionKey: "agent:main:main"}); err != nil {
			t.Fatal(err)
		}
	}
	errTaken := errors.New("taken")
	var claims [items]atomic.Int32
	var wg sync.WaitGroup
	for n, s := range nodes {
		wg.Go(func() {
			for i := range items {
				_, err := s.UpdateOutbox(ctx, fmt.Sprintf("o%d", i), func(it *store.OutboxItem) error {
					if it.Status != store.OutboxPending {
						return errTaken
					}
					it.Status = store.OutboxDelivered
					it.LastError = fmt.Sprintf("node %d", n)
					return nil
				})
				switch {
				case err == nil:
					claims[i].Add(1)
				case !errors.Is(err, errTaken):
					t.Errorf("node %d: %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range items {
		if c := claims[i].Load(); c != 1 {
			t.Errorf("o%d claimed %d times", i, c)
		}
	}
}
