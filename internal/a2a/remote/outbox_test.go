package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fakeOutbox is OutboxStore over a map; sessions lists the sessions
// that exist.
type fakeOutbox struct {
	mu       sync.Mutex
	items    map[string]*store.OutboxItem
	sessions map[string]*store.Session
}

func (f *fakeOutbox) PutOutbox(_ context.Context, it *store.OutboxItem) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *it
	f.items[it.ID] = &c
	return nil
}

func (f *fakeOutbox) UpdateOutbox(_ context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, ok := f.items[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	if err := fn(it); err != nil {
		return nil, err
	}
	c := *it
	return &c, nil
}

func (f *fakeOutbox) GetSession(_ context.Context, key string) (*store.Session, error) {
	if s, ok := f.sessions[key]; ok {
		return s, nil
	}
	return nil, store.ErrNotFound
}

func (f *fakeOutbox) item(id string) *store.OutboxItem {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *f.items[id]
	return &c
}

// fakePoster keeps posts by idempotency key, as the store does, and fails
// while fail is set.
type fakePoster struct {
	mu    sync.Mutex
	fail  error
	calls int
	posts map[string]agent.Post
}

func (f *fakePoster) Post(_ context.Context, p agent.Post) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return "", f.fail
	}
	if f.posts == nil {
		f.posts = map[string]agent.Post{}
	}
	if _, ok := f.posts[p.IdempotencyKey]; !ok {
		f.posts[p.IdempotencyKey] = p
	}
	return "m1", nil
}

// fakePeer answers SendMessage with a working task and GetTask with it
// ended in state, with reply as its artifact; it counts requests.
func fakePeer(t *testing.T, state, reply string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		task := wire.Task{ID: "remote-1", ContextID: "c", Status: wire.TaskStatus{State: wire.StateWorking}}
		var result any = wire.SendResult{Task: &task}
		if req.Method == "GetTask" {
			task.Status.State = state
			if state == wire.StateCompleted {
				task.Artifacts = []wire.Artifact{{ArtifactID: "a", Parts: []wire.Part{wire.TextPart(reply)}}}
			} else {
				task.Status.Message = &wire.Message{MessageID: "s", Role: wire.RoleAgent, Parts: []wire.Part{wire.TextPart(reply)}}
			}
			result = task
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestA2ALateReplyPostedOnce: a fire-and-forget send's late reply is
// posted into the sender's session as an inter-session message from the
// peer; a post that fails is retried from the recorded reply (the peer is
// not asked again), and a delivered item never posts twice.
func TestA2ALateReplyPostedOnce(t *testing.T) {
	peer, requests := fakePeer(t, wire.StateCompleted, "the answer")
	st := &fakeOutbox{items: map[string]*store.OutboxItem{}, sessions: map[string]*store.Session{"agent:main:main": {Key: "agent:main:main"}}}
	poster := &fakePoster{fail: errors.New("store busy")}
	r := &Sender{c: outbound.New([]outbound.Peer{{Name: "b", URL: peer.URL}}, nil), st: st, poster: poster,
		log: slog.New(slog.DiscardHandler), kick: func() {}}
	id := "a2a-send:1"
	if err := r.put(t.Context(), id, a2aSendItem{Peer: "b", SourceKey: "agent:main:main", Text: "hi", MessageID: "m", ChainID: "ch", ChainHops: 1, RunID: id}); err != nil {
		t.Fatal(err)
	}

	if err := r.deliver(t.Context(), st.item(id)); err == nil || !strings.Contains(err.Error(), "store busy") {
		t.Fatalf("deliver with a failing post = %v", err)
	}
	var p a2aSendItem
	if err := json.Unmarshal(st.item(id).Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.TaskID != "remote-1" || p.State != wire.StateCompleted || p.Reply != "the answer" || p.Posted {
		t.Fatalf("item after the failed post: %+v", p)
	}
	sent := requests.Load()

	poster.fail = nil
	for range 2 { // the retry, then a stray redelivery
		if err := r.deliver(t.Context(), st.item(id)); err != nil {
			t.Fatal(err)
		}
	}
	if n := requests.Load(); n != sent {
		t.Errorf("the retries asked the peer again (%d requests, then %d)", sent, n)
	}
	if poster.calls != 2 || len(poster.posts) != 1 {
		t.Fatalf("post calls %d (want 2: the failed one and one more), posts %v", poster.calls, poster.posts)
	}
	got := poster.posts["a2a-late:"+id]
	want := agent.Post{SessionKey: "agent:main:main", Text: "Reply from a2a:b to sessions_send (runId a2a-send:1):\nthe answer",
		IdempotencyKey: "a2a-late:" + id, AfterRun: true,
		Provenance: &transcript.Provenance{Kind: transcript.ProvenanceInterSession, SourceSessionKey: "a2a:b",
			SourceChannel: "a2a", SourceTool: "sessions_send", ChainID: "ch", ChainHops: 1, Untrusted: "a2a"}}
	if got.Provenance == nil || *got.Provenance != *want.Provenance {
		t.Fatalf("provenance = %+v, want %+v", got.Provenance, want.Provenance)
	}
	if got.SessionKey != want.SessionKey || got.Text != want.Text || got.IdempotencyKey != want.IdempotencyKey || !got.AfterRun {
		t.Fatalf("post = %+v, want %+v", got, want)
	}
}

// TestA2ALateReplyNotPosted: a task that failed is reported with its
// reason; a sender without a session, or one whose send policy denies
// delivery, gets nothing, and the item is still delivered.
func TestA2ALateReplyNotPosted(t *testing.T) {
	peer, _ := fakePeer(t, wire.StateFailed, "model down")
	deny := &policy.SendPolicyConfig{Rules: []policy.SendRule{{Action: "deny", Match: policy.SendMatch{KeyPrefix: "agent:main:quiet"}}}}
	for _, c := range []struct{ name, key, want string }{
		{"failed task", "agent:main:main", "sessions_send to a2a:b (runId a2a-send:1) ended without a reply: A2A peer b: task failed: model down"},
		{"no session", "agent:main:gone", ""},
		{"send policy deny", "agent:main:quiet", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeOutbox{items: map[string]*store.OutboxItem{}, sessions: map[string]*store.Session{
				"agent:main:main": {Key: "agent:main:main"}, "agent:main:quiet": {Key: "agent:main:quiet"}}}
			poster := &fakePoster{}
			r := &Sender{c: outbound.New([]outbound.Peer{{Name: "b", URL: peer.URL}}, nil), st: st, poster: poster,
				sendRules: deny, log: slog.New(slog.DiscardHandler), kick: func() {}}
			id := "a2a-send:1"
			if err := r.put(t.Context(), id, a2aSendItem{Peer: "b", SourceKey: c.key, Text: "hi", MessageID: "m", RunID: id}); err != nil {
				t.Fatal(err)
			}
			if err := r.deliver(t.Context(), st.item(id)); err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, p := range poster.posts {
				texts = append(texts, p.Text)
			}
			if c.want == "" && len(texts) != 0 || c.want != "" && (len(texts) != 1 || texts[0] != c.want) {
				t.Fatalf("posted %q, want %q", texts, c.want)
			}
		})
	}
}
