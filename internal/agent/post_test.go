package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestPost(t *testing.T) {
	h := newHarness(t, echo, nil)
	ctx := context.Background()
	if _, err := h.runner.Post(ctx, Post{SessionKey: "agent:main:main", Text: "x"}); !errors.Is(err, ErrNoSession) {
		t.Fatalf("Post to a missing session = %v, want ErrNoSession", err)
	}
	h.wait(h.submit(Input{RunID: "run-1", Message: "hello"}).RunID)

	var (
		mu    sync.Mutex
		posts []Event
	)
	h.runner.Subscribe(func(ev Event) {
		if ev.Stream == StreamPost {
			mu.Lock()
			posts = append(posts, ev)
			mu.Unlock()
		}
	})
	prov := &transcript.Provenance{Kind: transcript.ProvenanceInterSession, SourceSessionKey: "agent:main:other"}
	// Concurrent posts with one key: one message, one event, one id.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := h.runner.Post(ctx, Post{SessionKey: "agent:main:main", Text: "announce", Label: "note", Provenance: prov, IdempotencyKey: "k-1"})
			if err != nil {
				t.Errorf("Post: %v", err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("post ids = %v, want one id", ids)
		}
	}
	msgs := h.transcript("agent:main:main")
	if len(msgs) != 3 {
		t.Fatalf("transcript has %d entries, want 3", len(msgs))
	}
	m := msgs[2].Entry.Message
	if msgs[2].Entry.ID != ids[0] || m.Role != "assistant" || m.Content.Text() != "announce" || m.Provider != PostProvider ||
		m.Model != PostModel || m.IdempotencyKey != "k-1" || m.Provenance == nil || m.Provenance.SourceSessionKey != "agent:main:other" {
		t.Errorf("posted message = %+v", m)
	}
	mu.Lock()
	if len(posts) != 1 || posts[0].SessionKey != "agent:main:main" || posts[0].Message == nil || posts[0].Message.Content.Text() != "announce" {
		t.Errorf("post events = %+v", posts)
	}
	mu.Unlock()
	// A post without a key always posts, and the model sees posts in the
	// next turn's history.
	if _, err := h.runner.Post(ctx, Post{SessionKey: "agent:main:main", Text: "note 2"}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.transcript("agent:main:main")); n != 4 {
		t.Errorf("%d entries after a keyless post, want 4", n)
	}
}

// TestPostAfterRun: a post with AfterRun waits for the run in progress, so
// it never lands between that run's input and its reply.
func TestPostAfterRun(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textReply("answer"), nil
	}, nil)
	h.submit(Input{RunID: "busy", Message: "question"})
	<-entered // the run is in its model call
	posted := make(chan error, 1)
	go func() {
		_, err := h.runner.Post(context.Background(), Post{SessionKey: "agent:main:main", Text: "an announce", AfterRun: true})
		posted <- err
	}()
	select {
	case err := <-posted:
		t.Fatalf("the post did not wait for the run: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range h.transcript("agent:main:main") {
		if m.Entry.Message != nil {
			texts = append(texts, m.Entry.Message.Content.Text())
		}
	}
	if strings.Join(texts, "|") != "question|answer|an announce" {
		t.Errorf("transcript %q", texts)
	}
}

// postCounter counts the store writes of posts: the message and the
// session's update. It is no store.SessionPoster (the Store it embeds
// hides that).
type postCounter struct {
	Store
	writes atomic.Int32
}

func (c *postCounter) PostMessage(ctx context.Context, sessionID, idemKey string, msg store.Message) (store.Message, bool, error) {
	c.writes.Add(1)
	return c.Store.PostMessage(ctx, sessionID, idemKey, msg)
}

func (c *postCounter) UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error) {
	c.writes.Add(1)
	return c.Store.UpdateSession(ctx, key, create, fn)
}

// sessionPostCounter is a postCounter that keeps the wrapped store's
// one-transaction post.
type sessionPostCounter struct{ *postCounter }

func (c sessionPostCounter) PostToSession(ctx context.Context, key, sessionID, idemKey string, msg store.Message, at time.Time) (store.Message, bool, error) {
	c.writes.Add(1)
	return store.PostToSession(ctx, c.Store, key, sessionID, idemKey, msg, at)
}

// postWrites posts once to a session that has had a turn, through the
// runner's store wrapped by wrap, and returns the post's store writes; it
// checks that the message is stored and the session's UpdatedAt moved to
// the post's time.
func postWrites(t *testing.T, wrap func(*postCounter) Store) int32 {
	t.Helper()
	var pc *postCounter
	h := newHarness(t, echo, func(c *Config) {
		pc = &postCounter{Store: c.Store}
		c.Store = wrap(pc)
	})
	const key = "agent:main:main"
	h.wait(h.submit(Input{RunID: "run-1", Message: "hello"}).RunID)
	ctx := context.Background()
	before, err := h.store.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from := pc.writes.Load()
	postedAt := time.Now().Truncate(time.Millisecond) // the store keeps milliseconds
	if _, err := h.runner.Post(ctx, Post{SessionKey: key, Text: "an announce", IdempotencyKey: "k-1"}); err != nil {
		t.Fatal(err)
	}
	writes := pc.writes.Load() - from
	msgs := h.transcript(key)
	if last := msgs[len(msgs)-1].Entry.Message; last.Content.Text() != "an announce" {
		t.Errorf("last message %q, want the post", last.Content.Text())
	}
	after, err := h.store.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if after.UpdatedAt.Before(before.UpdatedAt) || after.UpdatedAt.Before(postedAt) {
		t.Errorf("session UpdatedAt %v after the post (before %v, posted from %v)", after.UpdatedAt, before.UpdatedAt, postedAt)
	}
	return writes
}

// TestPostIsOneWrite: a post stores its message and moves its session's
// UpdatedAt in one store write where the store can (store.SessionPoster):
// an agent-to-agent announce is one commit, not two.
func TestPostIsOneWrite(t *testing.T) {
	if n := postWrites(t, func(c *postCounter) Store { return sessionPostCounter{c} }); n != 1 {
		t.Errorf("a post took %d store writes, want 1", n)
	}
}

// TestPostWithoutSessionPoster: a store that cannot gets the message,
// then the session's update.
func TestPostWithoutSessionPoster(t *testing.T) {
	if n := postWrites(t, func(c *postCounter) Store { return c }); n != 2 {
		t.Errorf("a post took %d store writes, want 2 (PostMessage, UpdateSession)", n)
	}
}
