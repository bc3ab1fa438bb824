package interop

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
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
