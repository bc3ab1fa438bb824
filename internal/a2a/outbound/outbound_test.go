package outbound_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// runner is the remote gateway's agent: it echoes, fails on "fail", and
// blocks on "slow" until released or canceled.
type runner struct {
	mu      sync.Mutex
	keys    []string
	release chan struct{}
	// started, when set, receives the text of each "slow" run as it
	// starts blocking.
	started chan string
}

func (r *runner) Run(ctx context.Context, turn a2a.Turn, _ func(string)) (string, error) {
	key, text := turn.SessionKey, turn.Text
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	switch {
	case strings.Contains(text, "fail"):
		return "", errors.New("model down")
	case strings.Contains(text, "slow"):
		if r.started != nil {
			r.started <- text
		}
		select {
		case <-r.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "echo: " + text, nil
}

func (r *runner) Outcome(context.Context, string) (string, bool, error) { return "", false, nil }

func (r *runner) sessionKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// remote starts a real A2A server whose peer "gw" presents token "tok".
func remote(t *testing.T) (*runner, string) {
	t.Helper()
	run := &runner{release: make(chan struct{})}
	s, err := a2a.New(a2a.Config{ReplyTimeout: 5 * time.Second, Peers: []a2a.Peer{{Name: "gw", Token: "tok"}}},
		run, &memTasks{m: map[string]wire.Task{}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { close(run.release); hs.Close(); s.Close() })
	return run, hs.URL + "/a2a/v1"
}

func TestSend(t *testing.T) {
	_, url := remote(t)
	c := outbound.New([]outbound.Peer{{Name: "b", URL: url, Token: "tok"}}, nil)
	ctx := context.Background()
	tests := []struct {
		name, text string
		wait       time.Duration
		state      string
		reply      string
	}{
		{"completed", "hello", 5 * time.Second, wire.StateCompleted, "echo: hello"},
		{"wait ends while working", "slow", 200 * time.Millisecond, wire.StateWorking, ""},
		{"no wait", "slow again", 0, wire.StateWorking, ""},
		{"failed", "fail please", 5 * time.Second, wire.StateFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, err := c.Send(ctx, outbound.Request{Peer: "b", SourceKey: "agent:main:main", Text: tt.text, Wait: tt.wait})
			if err != nil {
				t.Fatal(err)
			}
			if task.ID == "" || task.Status.State != tt.state {
				t.Fatalf("task = %+v, want state %s", task, tt.state)
			}
			if tt.reply != "" && (len(task.Artifacts) == 0 || wire.MessageText(task.Artifacts[0].Parts) != tt.reply) {
				t.Fatalf("artifacts = %+v, want %q", task.Artifacts, tt.reply)
			}
			if tt.state == wire.StateFailed && (task.Status.Message == nil || !strings.Contains(wire.MessageText(task.Status.Message.Parts), "model down")) {
				t.Fatalf("status = %+v", task.Status)
			}
		})
	}
}

func TestSendErrors(t *testing.T) {
	_, url := remote(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c := outbound.New([]outbound.Peer{
		{Name: "wrongtoken", URL: url, Token: "nope"},
		{Name: "notoken", URL: url},
		{Name: "down", URL: deadURL},
		{Name: "nourl"},
	}, nil)
	for _, tt := range []struct{ peer, want string }{
		{"wrongtoken", "HTTP 401"},
		{"notoken", "HTTP 401"},
		{"down", "connect"},
		{"nourl", outbound.ErrUnknownPeer.Error()},
		{"nobody", outbound.ErrUnknownPeer.Error()},
	} {
		t.Run(tt.peer, func(t *testing.T) {
			task, err := c.Send(context.Background(), outbound.Request{Peer: tt.peer, SourceKey: "k", Text: "hi", Wait: time.Second})
			if err == nil || task != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Send = %+v, %v; want error with %q", task, err, tt.want)
			}
			if got := outbound.Transient(err); got != (tt.peer == "down") {
				t.Fatalf("Transient(%v) = %v", err, got)
			}
		})
	}
	if c.Has("nourl") || c.Has("nobody") || !c.Has("down") {
		t.Fatal("Has")
	}
}

func TestContextPerSender(t *testing.T) {
	run, url := remote(t)
	c := outbound.New([]outbound.Peer{{Name: "b", URL: url, Token: "tok"}, {Name: "c", URL: url, Token: "tok"}}, nil)
	var ctxs []string
	for _, r := range []outbound.Request{
		{Peer: "b", SourceKey: "agent:main:one", Text: "1"},
		{Peer: "b", SourceKey: "agent:main:one", Text: "2"},
		{Peer: "b", SourceKey: "agent:main:two", Text: "3"},
		{Peer: "c", SourceKey: "agent:main:one", Text: "4"},
	} {
		r.Wait = 5 * time.Second
		task, err := c.Send(context.Background(), r)
		if err != nil || task.Status.State != wire.StateCompleted {
			t.Fatalf("Send(%+v) = %+v, %v", r, task, err)
		}
		if task.ContextID != outbound.ContextID(r.Peer, r.SourceKey) {
			t.Fatalf("contextId %q, want %q", task.ContextID, outbound.ContextID(r.Peer, r.SourceKey))
		}
		ctxs = append(ctxs, task.ContextID)
	}
	if ctxs[0] != ctxs[1] || ctxs[0] == ctxs[2] || ctxs[0] == ctxs[3] || ctxs[2] == ctxs[3] {
		t.Fatalf("contextIds %v: want one per (peer, sender)", ctxs)
	}
	if strings.Contains(ctxs[0], "agent") {
		t.Fatalf("contextId %q reveals the sender key", ctxs[0])
	}
	// The remote runs the first sender's turns in one session.
	keys := run.sessionKeys()
	if keys[0] != keys[1] || keys[0] == keys[2] {
		t.Fatalf("remote session keys %v", keys)
	}
}

func TestSendMetadata(t *testing.T) {
	var got wire.SendParams
	var methods []string
	hs := httptest.NewServer(rpcOnly(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			Params wire.SendParams `json:"params"`
		}
		if err := jsonDecode(r, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got, methods = req.Params, append(methods, req.Method)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"r","role":"ROLE_AGENT","parts":[{"text":"hi back"}]}}}`))
	}))
	defer hs.Close()
	c := outbound.New([]outbound.Peer{{Name: "b", URL: hs.URL}}, nil)
	task, err := c.Send(context.Background(), outbound.Request{Peer: "b", SourceKey: "k", Text: "hi",
		Metadata: map[string]any{"switchboard.chainId": "c1"}, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// A peer answering with a message and no task counts as completed;
	// one that answers the streaming method as SendMessage took the
	// message, which is not sent again.
	if task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "hi back" {
		t.Fatalf("task = %+v", task)
	}
	if got.Message.Metadata["switchboard.chainId"] != "c1" || strings.Join(methods, ",") != "SendStreamingMessage" {
		t.Fatalf("methods %q, params = %+v", methods, got)
	}
	// Without a wait the message is sent with returnImmediately.
	if _, err := c.Send(context.Background(), outbound.Request{Peer: "b", SourceKey: "k", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if methods[1] != "SendMessage" || got.Configuration == nil || !got.Configuration.ReturnImmediately {
		t.Fatalf("methods %q, params = %+v", methods, got)
	}
}

// refPeer answers SendMessage with a working task and GetTask with it
// completed. SendStreamingMessage depends on mode: "refuse" answers -32004
// as the reference's A2A channel does, "empty" answers "{}" as an A2A JS
// SDK handler behind a plain JSON writer does, "close" sends the task and
// ends the stream early.
func refPeer(t *testing.T, mode string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var methods []string
	hs := httptest.NewServer(rpcOnly(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = jsonDecode(r, &req)
		mu.Lock()
		methods = append(methods, req.Method)
		mu.Unlock()
		task := `{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`
		switch req.Method {
		case "SendStreamingMessage":
			switch mode {
			case "close":
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\n" + `data: "result":{"task":` + task + "}}\n\n"))
			case "empty":
				_, _ = w.Write([]byte(`{}`))
			default:
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Unsupported operation"}}`))
			}
		case "SendMessage":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task":` + task + `}}`))
		case "GetTask":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},` +
				`"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}]}}`))
		}
	}))
	t.Cleanup(hs.Close)
	return hs, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), methods...) }
}

// TestSendWithoutStreaming: a peer that refuses SendStreamingMessage gets
// SendMessage and GetTask, and is not asked to stream again; a peer that
// ends its stream before the task is final is polled.
func TestSendWithoutStreaming(t *testing.T) {
	for _, tt := range []struct {
		mode   string
		first  string
		second string
	}{
		{"refuse", "SendStreamingMessage,SendMessage,GetTask", "SendMessage,GetTask"},
		{"empty", "SendStreamingMessage,SendMessage,GetTask", "SendMessage,GetTask"},
		{"close", "SendStreamingMessage,GetTask", "SendStreamingMessage,GetTask"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			hs, methods := refPeer(t, tt.mode)
			c := outbound.New([]outbound.Peer{{Name: "ref", URL: hs.URL}}, nil)
			for i, want := range []string{tt.first, tt.second} {
				n := len(methods())
				task, err := c.Send(context.Background(), outbound.Request{Peer: "ref", SourceKey: "k", Text: "hi", Wait: 5 * time.Second})
				if err != nil || task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "done" {
					t.Fatalf("send %d = %+v, %v", i+1, task, err)
				}
				if got := strings.Join(methods()[n:], ","); got != want {
					t.Fatalf("send %d: methods %s, want %s", i+1, got, want)
				}
			}
		})
	}
}

// TestStreamOutlivesClientTimeout: a stream lasts as long as the caller's
// wait, past the HTTP client's per-request timeout.
func TestStreamOutlivesClientTimeout(t *testing.T) {
	hs := httptest.NewServer(rpcOnly(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = jsonDecode(r, &req)
		if req.Method != "SendStreamingMessage" {
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n"))
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = w.Write([]byte(`data: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t1","contextId":"c","artifact":{"artifactId":"reply","parts":[{"text":"late"}]},"lastChunk":true}}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n"))
	}))
	defer hs.Close()
	c := outbound.New([]outbound.Peer{{Name: "b", URL: hs.URL}}, &http.Client{Timeout: 100 * time.Millisecond})
	task, err := c.Send(context.Background(), outbound.Request{Peer: "b", SourceKey: "k", Text: "hi", Wait: 5 * time.Second})
	if err != nil || task.ID != "t1" || task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "late" {
		t.Fatalf("Send = %+v, %v", task, err)
	}
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// memTasks is the remote server's task store.
type memTasks struct {
	mu sync.Mutex
	m  map[string]wire.Task
}

func (m *memTasks) Put(_ context.Context, peer string, t wire.Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[peer+"\x00"+t.ID] = t
	return nil
}

func (m *memTasks) Get(_ context.Context, peer, id string) (*wire.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.m[peer+"\x00"+id]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

func (m *memTasks) List(context.Context, string, string, int) ([]wire.Task, error) { return nil, nil }

func (m *memTasks) Open(context.Context) ([]a2a.PeerTask, error) { return nil, nil }

// rpcOnly serves h for POSTs (JSON-RPC) and 404 for the rest (a peer
// without an agent card).
func rpcOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	})
}

// TestProtocolFromCard: the client reads the peer's card and speaks the
// version it declares (1.0 when it lists both, or when there is no card),
// names it in the A2A-Version header, and with a 0.3 peer uses the 0.3
// method names, parts with kinds and 0.3 results, streamed and polled.
func TestProtocolFromCard(t *testing.T) {
	v10 := `{"url":"%[1]s","protocolBinding":"JSONRPC","protocolVersion":"1.0"}`
	v03 := `{"url":"%[1]s","protocolBinding":"JSONRPC","protocolVersion":"0.3"}`
	for _, tt := range []struct {
		name, card, want string
	}{
		{"1.0 card", `{"name":"p","supportedInterfaces":[` + v10 + `]}`, wire.Version10},
		{"both", `{"name":"p","supportedInterfaces":[` + v03 + `,` + v10 + `]}`, wire.Version10},
		{"0.3 in 1.0 form", `{"name":"p","supportedInterfaces":[` + v03 + `]}`, wire.Version03},
		{"0.3 card", `{"name":"p","url":"%[1]s","preferredTransport":"JSONRPC","protocolVersion":"0.3.0"}`, wire.Version03},
		{"no card", "", wire.Version10},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				var mu sync.Mutex
				var seen []string
				var hs *httptest.Server
				hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet {
						if r.URL.Path != "/.well-known/agent-card.json" || tt.card == "" {
							http.NotFound(w, r)
							return
						}
						fmt.Fprintf(w, tt.card, hs.URL+"/rpc")
						return
					}
					var req struct {
						Method string         `json:"method"`
						Params map[string]any `json:"params"`
					}
					_ = jsonDecode(r, &req)
					mu.Lock()
					seen = append(seen, r.Header.Get("A2A-Version")+" "+req.Method)
					mu.Unlock()
					v03 := r.Header.Get("A2A-Version") == "0.3"
					if msg, _ := req.Params["message"].(map[string]any); msg != nil {
						part := msg["parts"].([]any)[0].(map[string]any)
						if v03 != (part["kind"] == "text" && msg["role"] == "user" && msg["kind"] == "message") {
							t.Errorf("message %v in the wrong form for 0.3=%v", msg, v03)
						}
					}
					task := `{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`
					done := `{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}]}`
					if v03 {
						task = `{"kind":"task","id":"t1","contextId":"c","status":{"state":"working"}}`
						done = `{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"done"}]}]}`
					}
					switch req.Method {
					case "SendStreamingMessage", "message/stream":
						if !stream {
							_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`))
							return
						}
						w.Header().Set("Content-Type", "text/event-stream")
						art := `{"artifactUpdate":{"taskId":"t1","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"done"}]}}}`
						st := `{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`
						if v03 {
							art = `{"kind":"artifact-update","taskId":"t1","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"done"}]}}`
							st = `{"kind":"status-update","taskId":"t1","contextId":"c","status":{"state":"completed"},"final":true}`
						}
						if !v03 {
							task = `{"task":` + task + `}`
						}
						for _, ev := range []string{task, art, st} {
							fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}\n\n", ev)
						}
					case "SendMessage", "message/send":
						if !v03 {
							task = `{"task":` + task + `}`
						}
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, task)
					case "GetTask", "tasks/get":
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, done)
					default:
						_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`))
					}
				}))
				defer hs.Close()
				c := outbound.New([]outbound.Peer{{Name: "p", URL: hs.URL + "/rpc"}}, nil)
				task, err := c.Send(context.Background(), outbound.Request{Peer: "p", SourceKey: "k", Text: "hi", Wait: 5 * time.Second})
				if err != nil || task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "done" {
					t.Fatalf("send = %+v, %v", task, err)
				}
				names := "SendStreamingMessage"
				if !stream { // refused: sent again without streaming, then polled
					names = "SendStreamingMessage,SendMessage,GetTask"
				}
				if tt.want == wire.Version03 {
					names = strings.NewReplacer("SendStreamingMessage", "message/stream", "SendMessage", "message/send", "GetTask", "tasks/get").Replace(names)
				}
				var want []string
				for _, n := range strings.Split(names, ",") {
					want = append(want, tt.want+" "+n)
				}
				mu.Lock()
				defer mu.Unlock()
				if strings.Join(seen, ",") != strings.Join(want, ",") {
					t.Fatalf("requests %q, want %q", seen, want)
				}
			})
		}
	}
}

// recorder serves an A2A server's JSON-RPC at any POST path but
// "/configured", and notes each POST as "<path> <A2A-Version> <method>".
type recorder struct {
	mu   sync.Mutex
	seen []string
	card func() string // the card served at the well-known path ("" none)
	srv  http.Handler
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if card := rec.card(); r.URL.Path == "/.well-known/agent-card.json" && card != "" {
			_, _ = w.Write([]byte(card))
			return
		}
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	rec.mu.Lock()
	rec.seen = append(rec.seen, r.URL.Path+" "+r.Header.Get("A2A-Version")+" "+req.Method)
	rec.mu.Unlock()
	if r.URL.Path == "/configured" {
		http.NotFound(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/a2a/v1"
	r2.Body = io.NopCloser(bytes.NewReader(body))
	rec.srv.ServeHTTP(w, r2)
}

func (rec *recorder) requests() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.seen...)
}

// a2aServer is a real A2A server (peer "gw", token "tok") running run.
func a2aServer(t *testing.T, run *runner) *a2a.Server {
	t.Helper()
	s, err := a2a.New(a2a.Config{ReplyTimeout: 30 * time.Second, Peers: []a2a.Peer{{Name: "gw", Token: "tok"}}},
		run, &memTasks{m: map[string]wire.Task{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestInterfaceURLFromCard: requests go to the URL the card declares for
// the interface the client chose (absolute, or relative to the configured
// URL), not to the configured URL the card was read from; a card naming
// a non-http(s) interface URL is refused and nothing is sent.
func TestInterfaceURLFromCard(t *testing.T) {
	for _, tt := range []struct {
		name, card string
		want       []string // "front"/"back" + path + version + method
		err        string
	}{
		{"absolute 1.0", `{"name":"p","supportedInterfaces":[{"url":"{back}/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			[]string{"back /rpc 1.0 SendStreamingMessage"}, ""},
		{"relative", `{"name":"p","supportedInterfaces":[{"url":"/elsewhere/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			[]string{"front /elsewhere/rpc 1.0 SendStreamingMessage"}, ""},
		{"relative to the configured path", `{"name":"p","supportedInterfaces":[{"url":"v2","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			[]string{"front /v2 1.0 SendStreamingMessage"}, ""},
		{"0.3 additional interface", `{"name":"p","url":"{back}/grpc","preferredTransport":"GRPC","protocolVersion":"0.3.0","additionalInterfaces":[{"url":"{back}/jsonrpc","transport":"JSONRPC"}]}`,
			[]string{"back /jsonrpc 0.3 message/stream"}, ""},
		{"interface without url", `{"name":"p","supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			[]string{"front /configured 1.0 SendStreamingMessage"}, "HTTP 404"},
		{"not http", `{"name":"p","supportedInterfaces":[{"url":"file:///etc/passwd","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			nil, `interface url "file:///etc/passwd" is not an http(s) url`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := &runner{release: make(chan struct{})}
			defer close(run.release)
			s := a2aServer(t, run)
			var backURL string
			front := &recorder{srv: s, card: func() string { return strings.ReplaceAll(tt.card, "{back}", backURL) }}
			back := &recorder{srv: s, card: func() string { return "" }}
			fs, bs := httptest.NewServer(front), httptest.NewServer(back)
			defer fs.Close()
			defer bs.Close()
			backURL = bs.URL
			c := outbound.New([]outbound.Peer{{Name: "p", URL: fs.URL + "/configured", Token: "tok"}}, nil)
			task, err := c.Send(context.Background(), outbound.Request{Peer: "p", SourceKey: "k", Text: "hi", Wait: 10 * time.Second})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Send = %+v, %v; want error %q", task, err, tt.err)
				}
			} else if err != nil || task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "echo: hi" {
				t.Fatalf("Send = %+v, %v", task, err)
			}
			var got []string
			for _, r := range front.requests() {
				got = append(got, "front "+r)
			}
			for _, r := range back.requests() {
				got = append(got, "back "+r)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("requests %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAbortCancelsTheRemoteTask: when the sender's wait is aborted (its
// context ends) while the peer's task is still working, the client sends
// CancelTask (tasks/cancel to a 0.3 peer) for that task before returning,
// streamed or polled; the peer's run is stopped and its task canceled.
func TestAbortCancelsTheRemoteTask(t *testing.T) {
	for _, tt := range []struct {
		name, card string
		stream     bool
		want       []string
	}{
		{"1.0 stream", "", true, []string{"/rpc 1.0 SendStreamingMessage", "/rpc 1.0 CancelTask"}},
		{"0.3 stream", `{"name":"p","url":"/rpc","protocolVersion":"0.3.0"}`, true, []string{"/rpc 0.3 message/stream", "/rpc 0.3 tasks/cancel"}},
		{"0.3 polled", `{"name":"p","url":"/rpc","protocolVersion":"0.3.0","capabilities":{"streaming":false}}`, false, []string{"/rpc 0.3 message/send", "/rpc 0.3 tasks/cancel"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := &runner{release: make(chan struct{}), started: make(chan string, 1)}
			defer close(run.release)
			s := a2aServer(t, run)
			rec := &recorder{srv: s, card: func() string { return tt.card }}
			var h http.Handler = rec
			if !tt.stream { // a peer refusing streams, as the reference does
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						body, _ := io.ReadAll(r.Body)
						if bytes.Contains(body, []byte(`"message/stream"`)) {
							_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`))
							return
						}
						r.Body = io.NopCloser(bytes.NewReader(body))
					}
					rec.ServeHTTP(w, r)
				})
			}
			hs := httptest.NewServer(h)
			defer hs.Close()
			seen := make(chan struct{})
			c := outbound.New([]outbound.Peer{{Name: "p", URL: hs.URL + "/rpc", Token: "tok"}}, &http.Client{Transport: taskSeen{once: new(sync.Once), seen: seen}})
			ctx, abort := context.WithCancel(context.Background())
			type result struct {
				task *wire.Task
				err  error
			}
			done := make(chan result, 1)
			go func() {
				task, err := c.Send(ctx, outbound.Request{Peer: "p", SourceKey: "k", Text: "slow", Wait: time.Minute})
				done <- result{task, err}
			}()
			<-run.started
			<-seen // the client has read the task's id
			abort()
			r := <-done
			if !errors.Is(r.err, context.Canceled) || r.task == nil || r.task.Status.State != wire.StateCanceled {
				t.Fatalf("aborted Send = %+v, %v; want the canceled task and context.Canceled", r.task, r.err)
			}
			if got := rec.requests(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("requests %q, want %q", got, tt.want)
			}
		})
	}
}

// taskSeen is a transport that closes seen once a POST's response has
// handed the client data naming a task id.
type taskSeen struct {
	once *sync.Once
	seen chan struct{}
}

func (ts taskSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		resp.Body = &seenBody{ReadCloser: resp.Body, ts: ts}
	}
	return resp, err
}

type seenBody struct {
	io.ReadCloser
	ts taskSeen
}

func (b *seenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if bytes.Contains(p[:n], []byte(`"id":"`)) {
		b.ts.once.Do(func() { close(b.ts.seen) })
	}
	return n, err
}

// TestWaitOutlastsAFlakyPeer: a GetTask poll that meets a 503 or a
// connection the peer drops mid-request is tried again; the wait ends
// with the task's final state, not the transport error.
func TestWaitOutlastsAFlakyPeer(t *testing.T) {
	var mu sync.Mutex
	polls := 0
	hs := httptest.NewServer(rpcOnly(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = jsonDecode(r, &req)
		switch req.Method {
		case "SendStreamingMessage":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Unsupported operation"}}`))
		case "SendMessage":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`))
		case "GetTask":
			mu.Lock()
			polls++
			n := polls
			mu.Unlock()
			switch n {
			case 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			case 3:
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`))
			default:
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},` +
					`"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}]}}`))
			}
		}
	}))
	t.Cleanup(hs.Close)
	c := outbound.New([]outbound.Peer{{Name: "flaky", URL: hs.URL}}, nil)
	task, err := c.Send(context.Background(), outbound.Request{Peer: "flaky", SourceKey: "k", Text: "hi", Wait: time.Minute})
	if err != nil || task.Status.State != wire.StateCompleted || wire.MessageText(task.Artifacts[0].Parts) != "done" {
		t.Fatalf("send = %+v, %v", task, err)
	}
}

// TestWaitGivesUpOnADeadPeer: a peer that fails every poll ends the wait
// with its transport error after a few polls, not at the wait's end.
func TestWaitGivesUpOnADeadPeer(t *testing.T) {
	hs := httptest.NewServer(rpcOnly(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = jsonDecode(r, &req)
		switch req.Method {
		case "SendMessage":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`))
		case "GetTask":
			w.WriteHeader(http.StatusBadGateway)
		default:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Unsupported operation"}}`))
		}
	}))
	t.Cleanup(hs.Close)
	c := outbound.New([]outbound.Peer{{Name: "dead", URL: hs.URL}}, nil)
	_, err := c.Send(context.Background(), outbound.Request{Peer: "dead", SourceKey: "k", Text: "hi", Wait: time.Hour})
	if err == nil || !outbound.Transient(err) || !strings.Contains(err.Error(), "HTTP 502") {
		t.Fatalf("send err = %v, want the peer's HTTP 502", err)
	}
}
