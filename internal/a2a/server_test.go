package a2a

import (
	"bufio"
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

	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// echo replies "echo: <text>"; block makes it wait until released or ctx ends.
type echo struct {
	mu    sync.Mutex
	keys  []string
	block chan struct{}
	fail  error
	// outcomes answers Outcome by run id: the reply, or a missing entry
	// for a run that did not end ok.
	outcomes map[string]string
	// deltas are streamed before the run blocks.
	deltas []string
}

func (e *echo) Outcome(_ context.Context, runID string) (string, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.outcomes[runID]
	return r, ok, nil
}

func (e *echo) Run(ctx context.Context, turn Turn, onText func(string)) (string, error) {
	key, text := turn.SessionKey, turn.Text
	e.mu.Lock()
	e.keys = append(e.keys, key)
	e.mu.Unlock()
	if onText != nil {
		for _, d := range e.deltas {
			onText(d)
		}
	}
	if e.block != nil {
		select {
		case <-e.block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if e.fail != nil {
		return "", e.fail
	}
	return "echo: " + text, nil
}

func start(t *testing.T, cfg Config, run Runner) (*httptest.Server, *Server) {
	t.Helper()
	if cfg.ReplyTimeout == 0 {
		cfg.ReplyTimeout = 5 * time.Second
	}
	if cfg.Peers == nil {
		cfg.Peers = []Peer{{Name: "alpha", Token: "tok-a"}, {Name: "beta", Token: "tok-b"}}
	}
	s, err := New(cfg, run, NewMemTasks())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs, s
}

func post(t *testing.T, hs *httptest.Server, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type rpcResp struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

func decode(t *testing.T, s string) rpcResp {
	t.Helper()
	var r rpcResp
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return r
}

func sendBody(text, extra string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"c1","parts":[{"text":` +
		mustJSON(text) + `}]}` + extra + `}}`
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestCard(t *testing.T) {
	hs, _ := start(t, Config{Agents: []string{"main", "ops"}, AdvertisedURL: "https://gw.example/", Version: "1.2"}, &echo{})
	for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		resp, err := hs.Client().Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var c wire.AgentCard
		_ = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if c.SupportedInterfaces[0].URL != "https://gw.example/a2a/v1" || len(c.Skills) != 2 || c.SupportedInterfaces[0].ProtocolVersion != "1.0" ||
			!c.Capabilities.Streaming || c.Capabilities.PushNotifications {
			t.Fatalf("card = %+v", c)
		}
		// The same endpoint for 0.3 clients, in both card forms.
		if len(c.SupportedInterfaces) != 2 || c.SupportedInterfaces[1] != (wire.AgentInterface{URL: "https://gw.example/a2a/v1", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}) ||
			c.URL != "https://gw.example/a2a/v1" || c.PreferredTransport != "JSONRPC" || c.ProtocolVersion != "0.3" {
			t.Fatalf("card's 0.3 interface = %+v", c)
		}
	}
}

func TestSendAndGet(t *testing.T) {
	run := &echo{}
	hs, _ := start(t, Config{}, run)
	code, body := post(t, hs, "tok-a", sendBody("hello", ""))
	r := decode(t, body)
	var res wire.SendResult
	_ = json.Unmarshal(r.Result, &res)
	if code != 200 || res.Task == nil || res.Task.Status.State != wire.StateCompleted ||
		*res.Task.Artifacts[0].Parts[0].Text != "echo: hello" || res.Task.ContextID != "c1" {
		t.Fatalf("%d %s", code, body)
	}
	if run.keys[0] != "agent:main:a2a:default:direct:alpha:c1" {
		t.Fatalf("session key %q", run.keys[0])
	}
	// 0.3 alias reads it back; another peer cannot.
	get := `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"` + res.Task.ID + `"}}`
	if r := decode(t, func() string { _, b := post(t, hs, "tok-a", get); return b }()); r.Error != nil {
		t.Fatalf("get: %+v", r.Error)
	}
	if _, b := post(t, hs, "tok-b", get); decode(t, b).Error.Code != wire.CodeTaskNotFound {
		t.Fatalf("other peer read the task: %s", b)
	}
}

func TestImmediateAndTimeout(t *testing.T) {
	run := &echo{block: make(chan struct{})}
	hs, _ := start(t, Config{ReplyTimeout: 50 * time.Millisecond}, run)
	for _, extra := range []string{`,"configuration":{"returnImmediately":true}`, ``} {
		_, body := post(t, hs, "tok-a", sendBody("wait", extra))
		var res wire.SendResult
		_ = json.Unmarshal(decode(t, body).Result, &res)
		if res.Task == nil || res.Task.Status.State != wire.StateWorking {
			t.Fatalf("%s: %s", extra, body)
		}
	}
	close(run.block)
}

func TestFailedRun(t *testing.T) {
	hs, _ := start(t, Config{}, &echo{fail: errors.New("model down")})
	_, body := post(t, hs, "tok-a", sendBody("hi", ""))
	var res wire.SendResult
	_ = json.Unmarshal(decode(t, body).Result, &res)
	if res.Task.Status.State != wire.StateFailed {
		t.Fatalf("%s", body)
	}
}

func TestRejections(t *testing.T) {
	run := &echo{}
	hs, _ := start(t, Config{RateLimitPerMinute: 0}, run)
	cases := []struct {
		name, token, body string
		status, code      int
		contains          string
	}{
		{"no token", "", sendBody("x", ""), 401, 0, "Unauthorized"},
		{"wrong token", "nope", sendBody("x", ""), 401, 0, "Unauthorized"},
		{"parse", "tok-a", `{`, 200, wire.CodeParseError, ""},
		{"empty batch", "tok-a", `[]`, 200, wire.CodeInvalidRequest, ""},
		{"unknown method", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"Nope"}`, 200, wire.CodeMethodNotFound, ""},
		{"unsupported", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{}}`, 200, wire.CodeUnsupportedOp, ""},
		{"push config", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t"}}`, 200, wire.CodeUnsupportedOp, ""},
		{"push config list", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"id":"t"}}`, 200, wire.CodeUnsupportedOp, ""},
		{"extended card", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, 200, wire.CodeUnsupportedOp, ""},
		{"no text", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"user","parts":[{"url":"x"}]}}}`, 200, wire.CodeInvalidParams, ""},
		{"unknown task", "tok-a", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, 200, wire.CodeTaskNotFound, ""},
		{"slash", "tok-a", sendBody("/reset", ""), 200, 0, wire.StateRejected},
		{"oversize", "tok-a", sendBody(strings.Repeat("a", wire.MaxRequestBytes), ""), 413, 0, "1 MiB"},
		{"batch too large", "tok-a", "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}},`, 31), ",") + "]", 200, wire.CodeServerError, "30 request limit"},
		{"notification", "tok-a", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, 200, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, hs, c.token, c.body)
			if status != c.status || !strings.Contains(body, c.contains) {
				t.Fatalf("%d %s", status, body)
			}
			if c.code != 0 {
				if r := decode(t, body); r.Error == nil || r.Error.Code != c.code {
					t.Fatalf("%s", body)
				}
			}
		})
	}
	if len(run.keys) != 0 {
		t.Fatalf("runs started by rejected input: %v", run.keys)
	}
}

func TestBatch(t *testing.T) {
	hs, _ := start(t, Config{}, &echo{})
	_, body := post(t, hs, "tok-a", "["+sendBody("a", "")+`,{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"x"}},{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}]`)
	var rs []rpcResp
	if err := json.Unmarshal([]byte(body), &rs); err != nil || len(rs) != 2 || rs[1].Error.Code != wire.CodeTaskNotFound {
		t.Fatalf("%s", body)
	}
}

func TestRateLimit(t *testing.T) {
	run := &echo{}
	hs, _ := start(t, Config{RateLimitPerMinute: 2}, run)
	get := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`
	for i := 0; i < 2; i++ {
		if _, b := post(t, hs, "tok-a", get); decode(t, b).Error.Code != wire.CodeTaskNotFound {
			t.Fatal(b)
		}
	}
	status, b := post(t, hs, "tok-a", get)
	if r := decode(t, b); status != 200 || r.Error.Code != wire.CodeServerError || r.Error.Message != "Peer is rate limited" {
		t.Fatalf("%d %s", status, b)
	}
	if _, b := post(t, hs, "tok-b", get); decode(t, b).Error.Code != wire.CodeTaskNotFound {
		t.Fatal("limit is per peer:", b)
	}
}

func TestCloseCancelsRuns(t *testing.T) {
	run := &echo{block: make(chan struct{})}
	tasks := NewMemTasks()
	s, err := New(Config{ReplyTimeout: time.Second, Peers: []Peer{{Name: "alpha", Token: "t"}}}, run, tasks)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	_, body := post(t, hs, "t", sendBody("x", `,"configuration":{"returnImmediately":true}`))
	var res wire.SendResult
	_ = json.Unmarshal(decode(t, body).Result, &res)
	s.Close()
	got, _ := tasks.Get(context.Background(), "alpha", res.Task.ID)
	if got.Status.State != wire.StateCanceled {
		t.Fatalf("after close: %+v", got.Status)
	}
}

func TestNewRejectsEmptyToken(t *testing.T) {
	if _, err := New(Config{Peers: []Peer{{Name: "x"}}}, &echo{}, NewMemTasks()); err == nil {
		t.Fatal("want error")
	}
}

func TestCancelAndList(t *testing.T) {
	run := &echo{block: make(chan struct{})}
	hs, _ := start(t, Config{}, run)
	_, body := post(t, hs, "tok-a", sendBody("long", `,"configuration":{"returnImmediately":true}`))
	var res wire.SendResult
	_ = json.Unmarshal(decode(t, body).Result, &res)
	cancel := `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"` + res.Task.ID + `"}}`
	if _, b := post(t, hs, "tok-b", cancel); decode(t, b).Error.Code != wire.CodeTaskNotFound {
		t.Fatalf("other peer canceled: %s", b)
	}
	_, b := post(t, hs, "tok-a", cancel)
	var task wire.Task
	_ = json.Unmarshal(decode(t, b).Result, &task)
	if m := task.Status.Message; task.Status.State != wire.StateCanceled || m == nil || m.ContextID != "c1" || m.TaskID != res.Task.ID {
		t.Fatalf("cancel: %s", b)
	}
	if _, b := post(t, hs, "tok-a", cancel); decode(t, b).Error.Code != wire.CodeTaskNotCancel {
		t.Fatalf("second cancel: %s", b)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}`
	var lr wire.ListResult
	_, b = post(t, hs, "tok-a", list)
	_ = json.Unmarshal(decode(t, b).Result, &lr)
	if len(lr.Tasks) != 1 || lr.Tasks[0].ID != res.Task.ID {
		t.Fatalf("list a: %s", b)
	}
	_, b = post(t, hs, "tok-b", list)
	_ = json.Unmarshal(decode(t, b).Result, &lr)
	if len(lr.Tasks) != 0 {
		t.Fatalf("list b: %s", b)
	}
}

// streamSend posts text as peer alpha's SendStreamingMessage and returns
// the response, whose body the test's cleanup closes.
func streamSend(t *testing.T, hs *httptest.Server, text string) *http.Response {
	t.Helper()
	body := strings.Replace(sendBody(text, ""), `"SendMessage"`, `"SendStreamingMessage"`, 1)
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamingSend(t *testing.T) {
	// The run waits until the first event is read, so the stream starts
	// with the working task however the goroutines are scheduled.
	run := &echo{block: make(chan struct{})}
	hs, _ := start(t, Config{}, run)
	resp := streamSend(t, hs, "stream me")
	sc := bufio.NewScanner(resp.Body)
	first := readEvents(t, sc, 1)
	if first[0].Task == nil || first[0].Task.Status.State != wire.StateWorking {
		t.Fatalf("first event = %+v", first[0])
	}
	close(run.block)
	events := readEvents(t, sc, 2)
	if resp.StatusCode != 200 || events[0].ArtifactUpdate == nil ||
		*events[0].ArtifactUpdate.Artifact.Parts[0].Text != "echo: stream me" ||
		events[1].StatusUpdate == nil || events[1].StatusUpdate.Status.State != wire.StateCompleted {
		t.Fatalf("%d %+v", resp.StatusCode, events)
	}
}

// finalFirst is a task store whose reads wait until some task is final:
// every read of a streamed send then sees a run that already ended.
type finalFirst struct {
	Tasks
	once  sync.Once
	final chan struct{}
}

func (f *finalFirst) Put(ctx context.Context, peer string, t wire.Task) error {
	err := f.Tasks.Put(ctx, peer, t)
	if wire.Terminal(t.Status.State) {
		f.once.Do(func() { close(f.final) })
	}
	return err
}

func (f *finalFirst) Get(ctx context.Context, peer, id string) (*wire.Task, error) {
	<-f.final
	return f.Tasks.Get(ctx, peer, id)
}

// TestStreamOfRunEndedFirst: a streamed send whose run ends before the
// stream's first event still streams the working task, the reply as an
// artifact update and the final status, the shape clients read the
// reply from.
func TestStreamOfRunEndedFirst(t *testing.T) {
	tasks := &finalFirst{Tasks: NewMemTasks(), final: make(chan struct{})}
	s, err := New(Config{ReplyTimeout: 5 * time.Second, Peers: []Peer{{Name: "alpha", Token: "tok-a"}}}, &echo{}, tasks)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	events := readEvents(t, bufio.NewScanner(streamSend(t, hs, "quick").Body), 3)
	if events[0].Task == nil || events[0].Task.Status.State != wire.StateWorking {
		t.Fatalf("first event = %+v", events[0])
	}
	if a := events[1].ArtifactUpdate; a == nil || !a.LastChunk || *a.Artifact.Parts[0].Text != "echo: quick" {
		t.Fatalf("second event = %+v", events[1])
	}
	if st := events[2].StatusUpdate; st == nil || st.Status.State != wire.StateCompleted {
		t.Fatalf("third event = %+v", events[2])
	}
}

// TestRecover: tasks a crash left working become final on start, completed
// with the run's reply when it ended ok, failed otherwise; final tasks stay.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	tasks := NewMemTasks()
	working := wire.TaskStatus{State: wire.StateWorking, Timestamp: "2026-01-01T00:00:00Z"}
	_ = tasks.Put(ctx, "alpha", wire.Task{ID: "ok-run", ContextID: "c", Status: working})
	_ = tasks.Put(ctx, "beta", wire.Task{ID: "cut-run", ContextID: "c", Status: working})
	done := wire.Task{ID: "done", ContextID: "c", Status: wire.TaskStatus{State: wire.StateCanceled, Timestamp: "2026-01-01T00:00:00Z"}}
	_ = tasks.Put(ctx, "alpha", done)
	run := &echo{outcomes: map[string]string{"ok-run": "the reply"}}
	s, err := New(Config{Peers: []Peer{{Name: "alpha", Token: "t"}}}, run, tasks)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.Recover(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	ok, _ := tasks.Get(ctx, "alpha", "ok-run")
	if ok.Status.State != wire.StateCompleted || len(ok.Artifacts) != 1 || *ok.Artifacts[0].Parts[0].Text != "the reply" {
		t.Fatalf("ok-run = %+v", ok)
	}
	cut, _ := tasks.Get(ctx, "beta", "cut-run")
	if cut.Status.State != wire.StateFailed || wire.MessageText(cut.Status.Message.Parts) != InterruptedReason {
		t.Fatalf("cut-run = %+v", cut)
	}
	if got, _ := tasks.Get(ctx, "alpha", "done"); got.Status != done.Status {
		t.Fatalf("final task changed: %+v", got)
	}
	if open, _ := tasks.Open(ctx); len(open) != 0 {
		t.Fatalf("still open: %+v", open)
	}
}

func TestListPageSize(t *testing.T) {
	hs, _ := start(t, Config{}, &echo{})
	for range 3 {
		post(t, hs, "tok-a", sendBody("x", ""))
	}
	var lr wire.ListResult
	_, b := post(t, hs, "tok-a", `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"pageSize":2}}`)
	_ = json.Unmarshal(decode(t, b).Result, &lr)
	if len(lr.Tasks) != 2 {
		t.Fatalf("pageSize 2: %s", b)
	}
	_, b = post(t, hs, "tok-a", `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":-1}}`)
	if decode(t, b).Error == nil || decode(t, b).Error.Code != wire.CodeInvalidParams {
		t.Fatalf("pageSize -1: %s", b)
	}
}

// readEvents reads n SSE events from sc.
func readEvents(t *testing.T, sc *bufio.Scanner, n int) []wire.StreamResponse {
	t.Helper()
	var out []wire.StreamResponse
	for len(out) < n && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r struct {
			Result wire.StreamResponse `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Result)
	}
	if len(out) != n {
		t.Fatalf("got %d events, want %d: %v", len(out), n, sc.Err())
	}
	return out
}

// TestSubscribeToTask follows a running task over SSE:
// the task, the reply's chunks, then the final artifact and status.
func TestSubscribeToTask(t *testing.T) {
	run := &echo{block: make(chan struct{}), deltas: []string{"ec", "ho"}}
	hs, _ := start(t, Config{}, run)
	_, body := post(t, hs, "tok-a", sendBody("sub", `,"configuration":{"returnImmediately":true}`))
	var res wire.SendResult
	_ = json.Unmarshal(decode(t, body).Result, &res)
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"`+res.Task.ID+`"}}`))
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	first := readEvents(t, sc, 3)
	if first[0].Task == nil || first[0].Task.Status.State != wire.StateWorking ||
		first[1].ArtifactUpdate == nil || *first[1].ArtifactUpdate.Artifact.Parts[0].Text != "ec" || first[1].ArtifactUpdate.Append ||
		first[2].ArtifactUpdate == nil || *first[2].ArtifactUpdate.Artifact.Parts[0].Text != "ho" || !first[2].ArtifactUpdate.Append {
		t.Fatalf("first events = %+v", first)
	}
	close(run.block)
	rest := readEvents(t, sc, 2)
	if a := rest[0].ArtifactUpdate; a == nil || !a.LastChunk || a.Append || *a.Artifact.Parts[0].Text != "echo: sub" {
		t.Fatalf("final artifact = %+v", rest[0])
	}
	if st := rest[1].StatusUpdate; st == nil || st.Status.State != wire.StateCompleted {
		t.Fatalf("final status = %+v", rest[1])
	}
	for sc.Scan() {
		if sc.Text() != "" {
			t.Fatalf("event after the final status: %q", sc.Text())
		}
	}
}

func TestSubscribeErrors(t *testing.T) {
	hs, _ := start(t, Config{}, &echo{})
	_, body := post(t, hs, "tok-a", sendBody("done", ""))
	var res wire.SendResult
	_ = json.Unmarshal(decode(t, body).Result, &res)
	sub := func(token, id string) *wire.Error {
		_, b := post(t, hs, token, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"`+id+`"}}`)
		return decode(t, b).Error
	}
	if e := sub("tok-a", res.Task.ID); e == nil || e.Code != wire.CodeUnsupportedOp {
		t.Fatalf("final task: %+v", e)
	}
	if e := sub("tok-a", "nope"); e == nil || e.Code != wire.CodeTaskNotFound {
		t.Fatalf("unknown task: %+v", e)
	}
	if e := sub("tok-b", res.Task.ID); e == nil || e.Code != wire.CodeTaskNotFound {
		t.Fatalf("other peer's task: %+v", e)
	}
	if e := sub("tok-a", ""); e == nil || e.Code != wire.CodeInvalidParams {
		t.Fatalf("no id: %+v", e)
	}
}

// TestV03Client: a client speaking protocol 0.3 (method names with a
// slash, parts and results with a kind) is answered in 0.3 form: the send
// result is the task itself with kind "task" and 0.3 state names, tasks/get
// and tasks/cancel answer tasks, message/stream sends 0.3 events, and a
// rejection's status message names the task and its context.
func TestV03Client(t *testing.T) {
	run := &echo{}
	hs, _ := start(t, Config{}, run)
	send := func(method, text string, extra string) string {
		t.Helper()
		_, b := post(t, hs, "tok-a", `{"jsonrpc":"2.0","id":"s","method":"`+method+`","params":{"message":{"kind":"message","messageId":"m1","role":"user","contextId":"c3",`+
			`"parts":[{"kind":"text","text":`+mustJSON(text)+`}]}`+extra+`}}`)
		return b
	}
	type v03 struct {
		Kind, ID, ContextID string
		Status              struct {
			State   string
			Message *wire.V03Message
		}
		Artifacts []wire.V03Artifact
	}
	var task v03
	b := send("message/send", "hi in 0.3", "")
	if err := json.Unmarshal(decode(t, b).Result, &task); err != nil || task.Kind != "task" || task.Status.State != "completed" ||
		task.ContextID != "c3" || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Kind != "text" ||
		*task.Artifacts[0].Parts[0].Text != "echo: hi in 0.3" {
		t.Fatalf("message/send: %s", b)
	}
	if !strings.Contains(b, `"kind":"text"`) || strings.Contains(b, "TASK_STATE") {
		t.Fatalf("message/send not in 0.3 form: %s", b)
	}
	_, b = post(t, hs, "tok-a", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+task.ID+`"}}`)
	var got v03
	if err := json.Unmarshal(decode(t, b).Result, &got); err != nil || got.Kind != "task" || got.ID != task.ID || got.Status.State != "completed" {
		t.Fatalf("tasks/get: %s", b)
	}
	var rej v03
	b = send("message/send", "/reset", "")
	if err := json.Unmarshal(decode(t, b).Result, &rej); err != nil || rej.Status.State != "rejected" || rej.Status.Message == nil ||
		rej.Status.Message.Kind != "message" || rej.Status.Message.Role != "agent" ||
		rej.Status.Message.ContextID != "c3" || rej.Status.Message.TaskID != rej.ID {
		t.Fatalf("rejection: %s", b)
	}

	run.block = make(chan struct{})
	b = send("message/send", "long", `,"configuration":{"blocking":false}`)
	var working v03
	if err := json.Unmarshal(decode(t, b).Result, &working); err != nil || working.Status.State != "working" {
		t.Fatalf("non-blocking send: %s", b)
	}
	_, b = post(t, hs, "tok-a", `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"`+working.ID+`"}}`)
	var canceled v03
	if err := json.Unmarshal(decode(t, b).Result, &canceled); err != nil || canceled.Kind != "task" || canceled.Status.State != "canceled" ||
		canceled.Status.Message == nil || canceled.Status.Message.ContextID != "c3" || canceled.Status.Message.TaskID != working.ID {
		t.Fatalf("tasks/cancel: %s", b)
	}

	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1", strings.NewReader(
		`{"jsonrpc":"2.0","id":"st","method":"message/stream","params":{"message":{"kind":"message","messageId":"m2","role":"user","contextId":"c3","parts":[{"kind":"text","text":"streamed"}]}}}`))
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var kinds []string
	next := func() map[string]any {
		t.Helper()
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r struct{ Result map[string]any }
				if err := json.Unmarshal([]byte(data), &r); err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, fmt.Sprint(r.Result["kind"]))
				return r.Result
			}
		}
		t.Fatalf("stream ended after %v: %v", kinds, sc.Err())
		return nil
	}
	if first := next(); first["kind"] != "task" || first["status"].(map[string]any)["state"] != "working" {
		t.Fatalf("first stream event %v", first)
	}
	close(run.block)
	art, final := next(), next()
	if art["kind"] != "artifact-update" || !strings.Contains(mustJSON(art), `"kind":"text","text":"echo: streamed"`) ||
		final["kind"] != "status-update" || final["final"] != true || final["status"].(map[string]any)["state"] != "completed" {
		t.Fatalf("stream events %v then %v", art, final)
	}
}
