package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// TestA2AJSSDKAgainstSwitchboard drives Switchboard's A2A channel with the
// official A2A JS SDK: the card, a blocking send answered by the agent, a
// streamed send, GetTask and ListTasks of the peer's tasks, the cancel of a
// stalled run, and a wrong token refused.
func TestA2AJSSDKAgainstSwitchboard(t *testing.T) {
	ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)),
		`channels: { a2a: { enabled: true, rateLimitPerMinute: 0, peers: { partner: { token: "peer-token" } } } }`)
	url := "http" + strings.TrimPrefix(ws, "ws")
	r := A2AJSClient{URL: url, Token: "peer-token"}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	want := []string{"load", "card", "send", "stream", "get", "list", "cancel", "wrong-token", "done"}
	if got := stepNames(r.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q\n%s", got, want, formatSteps(r.Steps))
	}
	if s := r.Step("send"); s["state"] != "TASK_STATE_COMPLETED" || s["reply"] != "echo: hello over a2a" {
		t.Errorf("send: %v", s)
	}
	if s := r.Step("stream"); s["final"] != "TASK_STATE_COMPLETED" || !strings.Contains(s["reply"].(string), "echo: streamed hello") {
		t.Errorf("stream: %v", s)
	}
	if g := r.Step("get"); g["taskId"] != r.Step("send")["taskId"] || g["state"] != "TASK_STATE_COMPLETED" || g["reply"] != "echo: hello over a2a" {
		t.Errorf("get: %v", g)
	}
	if l := r.Step("list"); l["count"].(float64) < 2 {
		t.Errorf("list: %v", l)
	}
	if c := r.Step("cancel"); c["state"] != "TASK_STATE_CANCELED" {
		t.Errorf("cancel: %v", c)
	}
	if w := r.Step("wrong-token"); w["refused"] != true {
		t.Errorf("wrong token: %v", w)
	}
}

// TestA2AJSV03ClientAgainstSwitchboard drives Switchboard's A2A channel
// with the A2A JS SDK's v0.3 client: its message/send (kind:"text" parts)
// must get a 0.3 result the SDK accepts, and so must message/stream,
// tasks/get and tasks/cancel; the cancel's status message names the task
// and its context.
func TestA2AJSV03ClientAgainstSwitchboard(t *testing.T) {
	ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)),
		`channels: { a2a: { enabled: true, rateLimitPerMinute: 0, peers: { partner: { token: "peer-token" } } } }`)
	r := A2AJSClient{URL: "http" + strings.TrimPrefix(ws, "ws"), Token: "peer-token", V03: true}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	want := []string{"load", "send", "stream", "get", "cancel", "done"}
	if got := stepNames(r.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q\n%s", got, want, formatSteps(r.Steps))
	}
	if s := r.Step("send"); s["state"] != "TASK_STATE_COMPLETED" || s["reply"] != "echo: hello over a2a 0.3" || s["contextId"] != "v03-ctx" {
		t.Errorf("send: %v", s)
	}
	if s := r.Step("stream"); s["final"] != "TASK_STATE_COMPLETED" || !strings.Contains(s["reply"].(string), "echo: streamed 0.3") {
		t.Errorf("stream: %v", s)
	}
	if g := r.Step("get"); g["taskId"] != r.Step("send")["taskId"] || g["state"] != "TASK_STATE_COMPLETED" {
		t.Errorf("get: %v", g)
	}
	if c := r.Step("cancel"); c["state"] != "TASK_STATE_CANCELED" || c["messageContextId"] != "v03-ctx" || c["messageTaskId"] != c["taskId"] {
		t.Errorf("cancel: %v", c)
	}
}

// TestSwitchboardSendsToA2AJSAgent: an echo agent written with the A2A JS
// SDK is a remote peer of the gateway; the agent's sessions_send to
// "a2a:js" gets the SDK agent's reply, the message carries the chain in
// its metadata, and one sender session keeps one remote contextId.
func TestSwitchboardSendsToA2AJSAgent(t *testing.T) {
	agent := StartA2AJSEchoAgent(t, "to-js-token")
	ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)), fmt.Sprintf(`
  channels: { a2a: { peers: { js: { token: "from-js-token", url: %q, outboundToken: "to-js-token" } } } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } }`, agent.URL+"/a2a/v1"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: ws, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(runID string, args map[string]any) map[string]any {
		t.Helper()
		return sessionsSend(ctx, t, c, "agent:main:main", runID, args)
	}
	r := send("js-1", map[string]any{"sessionKey": "a2a:js", "message": "hello js", "timeoutSeconds": 20})
	if r["status"] != "ok" || r["reply"] != "js echo: hello js" {
		t.Fatalf("sessions_send to the JS agent = %v\nagent stderr: %s", r, agent.Stderr())
	}
	r = send("js-2", map[string]any{"sessionKey": "a2a:js", "message": "slow one", "timeoutSeconds": 1})
	if r["status"] != "timeout" {
		t.Fatalf("sessions_send to a working JS task = %v", r)
	}
	got := agent.Received()
	if len(got) != 2 || got[0]["contextId"] != got[1]["contextId"] || got[0]["contextId"] == "" {
		t.Fatalf("the JS agent received %v; want two messages in one context", got)
	}
	meta, _ := got[0]["metadata"].(map[string]any)
	if meta["switchboard.chainId"] != "js-1" || meta["switchboard.chainHops"] != 1.0 {
		t.Fatalf("metadata = %v", got[0]["metadata"])
	}
}

// TestSwitchboardSendsToA2AJSExpressAgent: sessions_send to an A2A JS SDK
// agent built the documented way (Express handlers, v0.3 compatibility
// on, so the SDK checks the A2A-Version header against its card). With a
// card listing 1.0 and 0.3 the gateway speaks 1.0 and says so in the
// header; with a card listing only 0.3 it speaks 0.3 (message/stream).
func TestSwitchboardSendsToA2AJSExpressAgent(t *testing.T) {
	for _, tt := range []struct{ mode, version, method string }{
		{"both", "1.0", "SendStreamingMessage"},
		{"v03", "0.3", "message/stream"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			agent := StartA2AJSExpressAgent(t, "to-js-token", tt.mode)
			ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)), fmt.Sprintf(`
  channels: { a2a: { peers: { js: { token: "from-js-token", url: %q, outboundToken: "to-js-token" } } } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } }`, agent.URL+"/a2a/v1"))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			c, err := client.Dial(ctx, client.Options{URL: ws, Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i, text := range []string{"hello express", "again"} {
				r := sessionsSend(ctx, t, c, "agent:main:main", fmt.Sprintf("x-%d", i), map[string]any{"sessionKey": "a2a:js", "message": text, "timeoutSeconds": 20})
				if r["status"] != "ok" || r["reply"] != "js echo: "+text {
					t.Fatalf("sessions_send %d to the Express agent = %v\nagent stderr: %s", i, r, agent.Stderr())
				}
			}
			got := agent.Received()
			if len(got) != 2 || got[0]["contextId"] != got[1]["contextId"] {
				t.Fatalf("received %v", got)
			}
			for _, g := range got {
				if g["version"] != tt.version || g["method"] != tt.method {
					t.Errorf("received %v; want A2A-Version %s and %s", g, tt.version, tt.method)
				}
			}
		})
	}
}

// TestAbortedSendCancelsA2AJSTask: a run waiting in sessions_send on a task
// of an A2A JS SDK agent (Express handlers, streaming refused so that the
// gateway polls and the first poll shows it knows the task) is aborted;
// the gateway cancels the task in the protocol the card chose: CancelTask
// with A2A-Version 1.0 for a card listing both versions, tasks/cancel with
// 0.3 for a 0.3 card. The SDK's executor gets the cancel.
func TestAbortedSendCancelsA2AJSTask(t *testing.T) {
	for _, tt := range []struct{ mode, version, method string }{
		{"both", "1.0", "CancelTask"},
		{"v03", "0.3", "tasks/cancel"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			agent := StartA2AJSExpressAgent(t, "to-js-token", tt.mode, "--no-stream")
			ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)), fmt.Sprintf(`
  channels: { a2a: { peers: { js: { token: "from-js-token", url: %q, outboundToken: "to-js-token" } } } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } }`, agent.URL+"/a2a/v1"))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			c, err := client.Dial(ctx, client.Options{URL: ws, Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			b, _ := json.Marshal(map[string]any{"sessionKey": "a2a:js", "message": "work until canceled", "timeoutSeconds": 50})
			var out map[string]any
			if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:main", "idempotencyKey": "js-abort",
				"message": "/tool sessions_send " + string(b) + "\n/then done"}, &out); err != nil {
				t.Fatal(err)
			}
			agent.WaitEvent(ctx, t, "polled")
			if err := c.Call(ctx, "chat.abort", map[string]any{"sessionKey": "agent:main:main", "runId": "js-abort"}, &out); err != nil {
				t.Fatal(err)
			}
			ev := agent.WaitEvent(ctx, t, "canceled")
			if ev["taskId"] == "" || ev["version"] != tt.version || ev["method"] != tt.method {
				t.Fatalf("cancel event %v; want %s with A2A-Version %s", ev, tt.method, tt.version)
			}
		})
	}
}
