package e2e

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// hangModel holds any request whose last user message is "hang" until the
// HTTP request is closed, and reports that; others go to the scripted
// model.
type hangModel struct {
	inner   provider.Provider
	started chan struct{}
	closed  chan time.Time
}

func (m *hangModel) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	last := ""
	for _, msg := range req.Messages {
		if msg.Role == provider.RoleUser {
			last = msg.Text
		}
	}
	if last != "hang" {
		return m.inner.Stream(ctx, req)
	}
	return func(yield func(*provider.Event, error) bool) {
		if !yield(&provider.Event{Type: provider.EventTextDelta, Text: "thinking..."}, nil) {
			return
		}
		m.started <- struct{}{}
		<-ctx.Done() // the gateway closed the upstream request
		m.closed <- time.Now()
		yield(nil, ctx.Err())
	}
}

// TestInterruptClosesUpstreamRequest: chat.send with queueMode interrupt to
// a session whose model call is streaming aborts the run — the fake
// provider sees its HTTP request closed — and the newest message runs next.
func TestInterruptClosesUpstreamRequest(t *testing.T) {
	m := &hangModel{inner: scripted.New(scripted.Options{}), started: make(chan struct{}, 1), closed: make(chan time.Time, 1)}
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Model: m})
	g := start(t, "", llm)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "hang", "idempotencyKey": "a1"})
	select {
	case <-m.started:
	case <-time.After(20 * time.Second):
		t.Fatal("model call did not start")
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply newest answered", "idempotencyKey": "i1", "queueMode": "interrupt"})
	select {
	case <-m.closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream request was not closed")
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "a1", "timeoutMs": 20000}); w["status"] != "error" || w["error"] != "aborted" {
		t.Errorf("interrupted run: %v", w)
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "i1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Errorf("interrupting run: %v", w)
	}
	got := strings.Join(texts(history(t, c, "agent:main:main")), "\n")
	// No partial reply of the aborted call is delivered as an answer.
	if want := "user: hang\nuser: /reply newest answered\nassistant: newest answered"; got != want {
		t.Errorf("history =\n%s\nwant\n%s", got, want)
	}
	reqs := llm.Requests()
	if n := len(reqs); n != 2 {
		t.Fatalf("model requests = %d, want 2", n)
	}
}

// TestQueuedMessagesSurviveKill9: three messages queued behind a running
// turn (one followup, two collect) are stored before their acks; the
// gateway process is killed with SIGKILL, and the restarted gateway runs
// each once, in order, under the mode it was accepted with: the followup
// as its own turn, the two collected ones as one turn.
func TestQueuedMessagesSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, dir, llm)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/sleep 60s\nlong", "idempotencyKey": "a1"})
	// The long turn's model request has reached the model (not only the
	// run started): a request still in flight at the kill would be
	// counted after it.
	eventually(t, "the long turn's model request", func() bool {
		for _, r := range llm.Requests() {
			if r.Request != nil && strings.Contains(lastUser(r.Request), "long") {
				return true
			}
		}
		return false
	})
	for _, m := range []struct{ id, text, mode string }{{"f1", "one", "followup"}, {"c1", "two", "collect"}, {"c2", "three", "collect"}} {
		call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": m.text, "idempotencyKey": m.id, "queueMode": m.mode})
	}
	g.kill()
	before := len(llm.Requests())

	g2 := start(t, dir, llm)
	c2 := g2.dial(t)
	for _, id := range []string{"f1", "c1", "c2"} {
		if w := call(t, c2, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000}); w["status"] != "ok" {
			t.Fatalf("%s after the restart = %v", id, w)
		}
	}
	var lasts []string
	for _, r := range llm.Requests()[before:] {
		if r.Request != nil {
			lasts = append(lasts, lastUser(r.Request))
		}
	}
	collected := policy.CollectPrompt("", []string{"two", "three"})
	if len(lasts) != 2 || lasts[0] != "one" || lasts[1] != collected {
		t.Fatalf("model turns after the restart end with %q, want [one, <two+three collected>]", lasts)
	}
	// Each accepted text is in the transcript once, in order.
	var users []string
	for _, s := range texts(history(t, c2, "agent:main:main")) {
		if strings.HasPrefix(s, "user: ") {
			users = append(users, strings.TrimPrefix(s, "user: "))
		}
	}
	want := []string{"/sleep 60s\nlong", "one", collected}
	if strings.Join(users, "|") != strings.Join(want, "|") {
		t.Fatalf("user messages = %q, want %q", users, want)
	}
}
