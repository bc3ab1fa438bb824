package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func stepNames(steps []map[string]any) []string {
	var names []string
	for _, s := range steps {
		names = append(names, fmt.Sprint(s["step"]))
	}
	return names
}

// TestNodeClientClosedPort checks that the script loads openclaw-node and fails
// cleanly, with a connect step, when nothing listens.
func TestNodeClientClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	start := time.Now()
	r := NodeClient{URL: "ws://" + addr, Token: "t", Timeout: 20 * time.Second}.Run(t)
	if r.Err == nil {
		t.Fatalf("run against a closed port succeeded: %v", r.Steps)
	}
	if got, want := stepNames(r.Steps), []string{"load", "connect"}; !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q; stderr:\n%s", got, want, r.Stderr)
	}
	if load := r.Step("load"); load["ok"] != true || load["version"] != clientVersion {
		t.Errorf("load step %v", load)
	}
	if c := r.Step("connect"); c["ok"] != false || c["error"] == "" {
		t.Errorf("connect step %v, want ok:false with an error", c)
	}
	if !strings.Contains(r.Err.Error(), "step connect") {
		t.Errorf("error %q does not name the failing step", r.Err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v to fail", d)
	}
}

// replayGateway is a fake gateway that answers openclaw-node with frames the
// reference gateway sent (testdata/frames-sample.jsonl): its challenge, hello-ok,
// chat.send answer and the run's events (runId rewritten). sessions.list,
// agent.wait and chat.history answers are made up in the reference's shape. It
// records every frame in both directions.
type replayGateway struct {
	t      *testing.T
	sample []sampleFrame

	mu     sync.Mutex // guards the fields that follow
	client [][]byte   // frames received
	server [][]byte   // frames sent
}

func (g *replayGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		g.t.Errorf("accept: %v", err)
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	send := func(frame []byte) bool {
		g.mu.Lock()
		g.server = append(g.server, frame)
		g.mu.Unlock()
		return conn.Write(ctx, websocket.MessageText, frame) == nil
	}
	res := func(id string, payload any) bool {
		b, _ := json.Marshal(map[string]any{"type": "res", "id": id, "ok": true, "payload": payload})
		return send(b)
	}
	const sampleRun = "raw-1-14626"

	if !send(g.sample[0].Frame) { // connect.challenge
		return
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		g.mu.Lock()
		g.client = append(g.client, data)
		g.mu.Unlock()
		var req struct {
			ID     string
			Method string
			Params map[string]any
		}
		if err := json.Unmarshal(data, &req); err != nil {
			g.t.Errorf("client frame %s: %v", data, err)
			return
		}
		ok := true
		switch req.Method {
		case "connect":
			var hello struct{ Payload json.RawMessage }
			json.Unmarshal(g.sample[2].Frame, &hello)
			ok = res(req.ID, hello.Payload)
		case "sessions.list":
			ok = res(req.ID, map[string]any{"ts": time.Now().UnixMilli(), "count": 0, "totalCount": 0, "hasMore": false, "sessions": []any{}})
		case "chat.send":
			key, _ := req.Params["idempotencyKey"].(string)
			ok = res(req.ID, map[string]any{"runId": key, "status": "started"})
			for _, fr := range g.sample[5:20] { // the run's chat and agent events
				if ok {
					ok = send(bytes.ReplaceAll(fr.Frame, []byte(sampleRun), []byte(key)))
				}
			}
		case "agent.wait":
			ok = res(req.ID, map[string]any{"status": "ok", "runId": req.Params["runId"], "endedAt": time.Now().UnixMilli(), "stopReason": "stop"})
		case "chat.history":
			ok = res(req.ID, map[string]any{"sessionKey": "agent:main:main", "messages": []any{
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hello from openclaw-node"}}},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "pong from fake-llm"}}},
			}})
		default:
			b, _ := json.Marshal(map[string]any{"type": "res", "id": req.ID, "ok": false,
				"error": map[string]any{"code": "INVALID_REQUEST", "message": "unknown method: " + req.Method}})
			ok = send(b)
		}
		if !ok {
			return
		}
	}
}

// TestNodeClientReplay runs the whole script against replayed reference frames, and
// checks what openclaw-node sent against the schema.
func TestNodeClientReplay(t *testing.T) {
	s := RequireSchema(t)
	home := t.TempDir()
	t.Setenv("HOME", home) // the device identity must not land in $HOME

	g := &replayGateway{t: t, sample: readSample(t)}
	srv := httptest.NewServer(g)
	defer srv.Close()

	r := NodeClient{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Token: "peer-test-token", Timeout: 30 * time.Second}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	load := r.Step("load")
	t.Logf("openclaw-node %v on node %v", load["version"], load["node"])
	want := []string{"load", "connect", "sessions.list", "chat.send", "wait", "chat.history", "done"}
	if got := stepNames(r.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if c := r.Step("connect"); c["protocol"] != 4.0 || c["hasChatSend"] != true {
		t.Errorf("connect step %v", c)
	}
	w := r.Step("wait")
	if w["text"] != "pong from fake-llm" || w["chatFinalState"] != "final" || w["chatEvents"] != 5.0 || w["agentEvents"] != 10.0 {
		t.Errorf("wait step %v", w)
	}
	key := r.Step("chat.send")["idempotencyKey"]
	if key == nil || w["runId"] != key {
		t.Errorf("chat.send idempotencyKey %v, wait runId %v", key, w["runId"])
	}
	if h, _ := r.Step("chat.history")["payload"].(map[string]any); h == nil || len(h["messages"].([]any)) != 2 {
		t.Errorf("chat.history step %v", r.Step("chat.history"))
	}
	if _, err := os.Stat(filepath.Join(home, ".openclaw")); !os.IsNotExist(err) {
		t.Errorf("openclaw-node wrote to $HOME/.openclaw (stat: %v)", err)
	}

	// Everything openclaw-node sent must match the published schema, params included.
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(s, lenient)
	g.mu.Lock()
	defer g.mu.Unlock()
	ci, si := 0, 0
	methods := map[string]bool{}
	// Replay in wire order: each request, then the server frames up to its response.
	for ci < len(g.client) {
		if err := c.Client(g.client[ci]); err != nil {
			t.Errorf("client frame %s: %v", g.client[ci], err)
		}
		var req struct{ ID, Method string }
		json.Unmarshal(g.client[ci], &req)
		methods[req.Method] = true
		ci++
		for si < len(g.server) {
			err := c.Server(g.server[si])
			var f struct{ Type, ID string }
			json.Unmarshal(g.server[si], &f)
			si++
			if err != nil {
				t.Errorf("server frame: %v", err)
			}
			if f.Type == "res" && f.ID == req.ID {
				break
			}
		}
	}
	for _, m := range []string{"connect", "sessions.list", "chat.send", "agent.wait", "chat.history"} {
		if !methods[m] {
			t.Errorf("openclaw-node never called %s", m)
		}
	}
}
