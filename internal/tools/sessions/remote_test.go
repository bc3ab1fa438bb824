package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// fakeRemote answers per message text: "slow" is still working, "fail"
// ended failed, "down" is a transport error, anything else is echoed.
type fakeRemote struct {
	mu   sync.Mutex
	sent []RemoteMessage
}

func (r *fakeRemote) HasPeer(peer string) bool { return peer == "b" || peer == "c" }

func (r *fakeRemote) SendRemote(_ context.Context, m RemoteMessage) (RemoteResult, error) {
	r.mu.Lock()
	r.sent = append(r.sent, m)
	r.mu.Unlock()
	switch {
	case m.Text == "down":
		return RemoteResult{}, errors.New("a2a peer \"b\": SendMessage: connection refused")
	case m.Wait == 0 || m.Text == "slow":
		return RemoteResult{TaskID: "task-1"}, nil
	case m.Text == "fail":
		return RemoteResult{TaskID: "task-1", Final: true, Error: "A2A peer b: task failed: model down"}, nil
	}
	return RemoteResult{TaskID: "task-1", Final: true, OK: true, Reply: "echo: " + m.Text}, nil
}

const remoteOpen = `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main", "b"]}},
  channels: {a2a: {peers: {b: {token: "t", url: "http://127.0.0.1:9/a2a/v1"}, c: {token: "u", url: "http://127.0.0.1:9/a2a/v1"}, in: {token: "v"}}}}}`

func TestSendRemote(t *testing.T) {
	r := &fakeRemote{}
	e := newEnv(t, remoteOpen, func(d *Deps) { d.Remote = r })
	caller := tools.Caller{SessionKey: "agent:main:main", Chain: tools.Chain{ID: "run-1", Hops: 1, Path: []string{"agent:main:main"}}}
	for _, tt := range []struct {
		name, peer, text string
		timeout          int
		status, want     string
	}{
		{"ok", "b", "hi", 5, "ok", "echo: hi"},
		{"accepted", "b", "hi", 0, "accepted", ""},
		{"timeout", "b", "slow", 1, "timeout", "continues on A2A peer b"},
		{"failed task", "b", "fail", 5, "error", "model down"},
		{"transport error", "b", "down", 5, "error", "connection refused"},
		{"not in allow", "c", "hi", 5, "forbidden", "tools.agentToAgent.allow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := e.mustCall(caller, "sessions_send", map[string]any{"sessionKey": "a2a:" + tt.peer, "message": tt.text, "timeoutSeconds": tt.timeout})
			if d["status"] != tt.status || d["sessionKey"] != "a2a:"+tt.peer {
				t.Fatalf("sessions_send = %v, want %s", d, tt.status)
			}
			got, _ := d["reply"].(string)
			if tt.status != "ok" {
				got, _ = d["error"].(string)
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("sessions_send = %v, want %q", d, tt.want)
			}
		})
	}
	m := r.sent[0]
	if m.Peer != "b" || m.SourceKey != "agent:main:main" || m.Chain.ID != "run-1" || m.Chain.Hops != 2 {
		t.Fatalf("sent %+v", m)
	}
	n := len(r.sent)
	// The hop limit applies before anything is sent.
	deep := caller
	deep.Chain.Hops = 100
	if d := e.mustCall(deep, "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "hi"}); d["status"] != "error" ||
		!strings.Contains(d["error"].(string), "Loop protection") || len(r.sent) != n {
		t.Fatalf("over the hop limit = %v", d)
	}

	// agents_list shows the peers we may send to, marked remote (c is
	// not in tools.agentToAgent.allow).
	l := e.mustCall(caller, "agents_list", map[string]any{})
	var remote []string
	for _, a := range l["agents"].([]any) {
		if a := a.(map[string]any); a["remote"] == true {
			remote = append(remote, a["sessionKey"].(string))
		}
	}
	if strings.Join(remote, ",") != "a2a:b" {
		t.Fatalf("agents_list remote = %v", l)
	}
}
