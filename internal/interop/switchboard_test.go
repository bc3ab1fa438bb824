package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

const testToken = "interop-test-token"

// startSwitchboard runs the real daemon (gateway included) on a free
// loopback port with token auth and the offline scripted model.
func startSwitchboard(t *testing.T) string {
	t.Helper()
	return startSwitchboardLogging(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// startSwitchboardLogging is startSwitchboard with the given logger; nil
// means the daemon's own set-up, which writes the state dir's log file
// (what logs.tail reads) and a console log that is discarded here.
func startSwitchboardLogging(t *testing.T, logger *slog.Logger) string {
	t.Helper()
	return startSwitchboardConfig(t, logger, "")
}

// startSwitchboardConfig is startSwitchboardLogging with extra top-level
// config members (JSON5).
func startSwitchboardConfig(t *testing.T, logger *slog.Logger, extra string) string {
	t.Helper()
	return startSwitchboardIn(t, t.TempDir(), logger, extra)
}

// startSwitchboardIn is startSwitchboardConfig with dir as the state dir.
func startSwitchboardIn(t *testing.T, dir string, logger *slog.Logger, extra string) string {
	t.Helper()
	cfg := fmt.Sprintf(`{ gateway: { auth: { mode: "token", token: %q } }, %s }`, testToken, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Stderr: io.Discard,
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return "ws://" + d.Addrs[0].String()
}

// TestOpenClawNodeAgainstSwitchboard drives Switchboard with the real
// openclaw-node client from npm: connect, sessions.list, chat.send and wait,
// chat.history.
func TestOpenClawNodeAgainstSwitchboard(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	url := startSwitchboard(t)
	r := NodeClient{URL: url, Token: testToken, Timeout: 60 * time.Second}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	want := []string{"load", "connect", "sessions.list", "chat.send", "wait", "chat.history", "done"}
	if got := stepNames(r.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q\n%s", got, want, formatSteps(r.Steps))
	}
	if c := r.Step("connect"); c["protocol"] != 4.0 || c["hasChatSend"] != true {
		t.Errorf("connect step %v", c)
	}
	w := r.Step("wait")
	if w["text"] != "echo: hello from openclaw-node" || w["chatFinalState"] != "final" {
		t.Errorf("wait step %v", w)
	}
	if key := r.Step("chat.send")["idempotencyKey"]; key == nil || w["runId"] != key {
		t.Errorf("chat.send idempotencyKey %v, wait runId %v", key, w["runId"])
	}
	h, _ := r.Step("chat.history")["payload"].(map[string]any)
	msgs, _ := h["messages"].([]any)
	if len(msgs) != 2 {
		t.Errorf("chat.history step %v", r.Step("chat.history"))
	}
}

// rawConn is a WebSocket connection that records every frame both ways.
type rawConn struct {
	t    *testing.T
	conn *websocket.Conn

	mu     sync.Mutex
	frames [][2][]byte // {dir, frame}; dir "c" client→server, "s" server→client
	events chan []byte
	res    map[string]chan []byte
}

func dialRaw(t *testing.T, url string) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(32 << 20)
	rc := &rawConn{t: t, conn: conn, events: make(chan []byte, 1024), res: map[string]chan []byte{}}
	go rc.read()
	t.Cleanup(func() { conn.CloseNow() })
	return rc
}

func (rc *rawConn) read() {
	for {
		_, data, err := rc.conn.Read(context.Background())
		if err != nil {
			close(rc.events)
			return
		}
		rc.mu.Lock()
		rc.frames = append(rc.frames, [2][]byte{[]byte("s"), data})
		var f struct{ Type, ID string }
		json.Unmarshal(data, &f)
		ch := rc.res[f.ID]
		delete(rc.res, f.ID)
		rc.mu.Unlock()
		if f.Type == "res" && ch != nil {
			ch <- data
		} else if f.Type == "event" {
			select {
			case rc.events <- data:
			default:
			}
		}
	}
}

// call sends a request and returns the response frame.
func (rc *rawConn) call(id, method string, params any) map[string]any {
	rc.t.Helper()
	req, _ := json.Marshal(map[string]any{"type": "req", "id": id, "method": method, "params": params})
	ch := make(chan []byte, 1)
	rc.mu.Lock()
	rc.res[id] = ch
	rc.frames = append(rc.frames, [2][]byte{[]byte("c"), req})
	rc.mu.Unlock()
	if err := rc.conn.Write(context.Background(), websocket.MessageText, req); err != nil {
		rc.t.Fatal(err)
	}
	select {
	case data := <-ch:
		var res map[string]any
		json.Unmarshal(data, &res)
		if res["ok"] != true {
			rc.t.Fatalf("%s failed: %s", method, data)
		}
		return res
	case <-time.After(20 * time.Second):
		rc.t.Fatalf("%s: no response", method)
		return nil
	}
}

// waitEvent waits for an event frame whose bytes contain all of subs.
func (rc *rawConn) waitEvent(subs ...string) {
	rc.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case data, ok := <-rc.events:
			if !ok {
				rc.t.Fatal("connection closed")
			}
			match := true
			for _, s := range subs {
				match = match && bytes.Contains(data, []byte(s))
			}
			if match {
				return
			}
		case <-deadline:
			rc.t.Fatalf("no event with %q", subs)
		}
	}
}

// TestEveryFrameMatchesSchema exercises the gateway's methods and checks
// every frame Switchboard sends against the published protocol schema
// (@openclaw/gateway-protocol): frames strictly, payloads leniently (the
// reference itself sends fields the schema does not list), and the params
// of every request strictly.
func TestEveryFrameMatchesSchema(t *testing.T) {
	s := RequireSchema(t)
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	url := startSwitchboard(t)
	rc := dialRaw(t, url)
	rc.waitEvent(`"connect.challenge"`)
	rc.call("c1", "connect", map[string]any{
		"minProtocol": 4, "maxProtocol": 4,
		"client": map[string]any{"id": "cli", "version": "1.0.0", "platform": "linux", "mode": "cli"},
		"role":   "operator", "scopes": []string{"operator.read", "operator.write", "operator.admin"},
		"caps": []string{}, "auth": map[string]any{"token": testToken},
	})
	rc.call("1", "health", map[string]any{})
	rc.call("1a", "sessions.messages.subscribe", map[string]any{"key": "main"})
	for i, m := range []string{"system.info", "environments.list", "node.list", "skills.status", "update.status", "tasks.list"} {
		rc.call(fmt.Sprintf("1v%d", i), m, map[string]any{})
	}
	rc.call("1m", "chat.metadata", map[string]any{"agentId": "main", "sessionKey": "agent:main:main"})
	rc.call("1t", "tasks.list", map[string]any{"sessionKey": "agent:main:main", "status": []string{"queued", "running"}, "limit": 200})
	rc.call("2", "sessions.create", map[string]any{"key": "agent:main:schema", "label": "schema-test"})
	rc.call("2m", "sessions.create", map[string]any{"agentId": "main", "message": "first turn", "idempotencyKey": "run-schema-create"})
	rc.waitEvent(`"chat"`, `"run-schema-create"`, `"state":"final"`)
	rc.call("3", "chat.send", map[string]any{"sessionKey": "main", "message": "hello schema", "idempotencyKey": "run-schema-1"})
	rc.waitEvent(`"chat"`, `"run-schema-1"`, `"state":"final"`)
	rc.call("4", "agent", map[string]any{"message": "/tool missing_tool {\"a\":1}\n/then done", "sessionKey": "agent:main:schema", "idempotencyKey": "run-schema-2"})
	rc.call("5", "agent.wait", map[string]any{"runId": "run-schema-2", "timeoutMs": 20000})
	rc.call("6", "sessions.list", map[string]any{"limit": 10})
	rc.call("7", "sessions.resolve", map[string]any{"label": "schema-test"})
	rc.call("8", "chat.history", map[string]any{"sessionKey": "agent:main:schema", "limit": 50})
	rc.call("9", "sessions.patch", map[string]any{"key": "agent:main:schema", "sendPolicy": "deny", "label": "renamed"})
	rc.call("10", "chat.inject", map[string]any{"sessionKey": "main", "message": "injected note"})
	rc.call("11", "agents.list", map[string]any{})
	rc.call("12", "chat.abort", map[string]any{"sessionKey": "main"})
	rc.call("13", "sessions.reset", map[string]any{"key": "main"})
	rc.call("14", "sessions.delete", map[string]any{"key": "agent:main:schema", "deleteTranscript": true})

	rc.mu.Lock()
	frames := append([][2][]byte(nil), rc.frames...)
	rc.mu.Unlock()
	c := NewChecker(s, lenient)
	sent := map[string]int{}
	for _, f := range frames {
		var err error
		if string(f[0]) == "c" {
			err = c.Client(f[1])
		} else {
			err = c.Server(f[1])
			var env struct{ Type, Event string }
			json.Unmarshal(f[1], &env)
			sent[env.Type+":"+env.Event]++
		}
		if err != nil {
			t.Errorf("%s frame %s:\n%v", f[0], truncate(f[1]), err)
		}
	}
	for _, want := range []string{"event:connect.challenge", "res:", "event:chat", "event:agent", "event:session.message"} {
		if sent[want] == 0 {
			t.Errorf("no %s frame was checked (saw %v)", want, sent)
		}
	}
}

func truncate(b []byte) string {
	s := string(b)
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return strings.TrimSpace(s)
}
