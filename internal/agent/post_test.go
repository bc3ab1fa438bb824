package agent

import (
	"context"
	"errors"
	"sync"
	"testing"

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
