package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testToken = "test-token-123"

// scriptedModels resolves every agent to the offline scripted model.
type scriptedModels struct{ p provider.Provider }

func (m scriptedModels) ResolveModel(agentID, ref string) (agent.Model, error) {
	if ref != "" && !strings.HasPrefix(ref, scripted.ProviderName+"/") {
		return agent.Model{}, fmt.Errorf("unknown model %q", ref)
	}
	return agent.Model{Provider: m.p, ProviderID: scripted.ProviderName, ModelID: scripted.ModelID, API: "scripted"}, nil
}

// env is a running gateway over a real sqlite store and agent runner,
// served by httptest on 127.0.0.1:0.
type env struct {
	t      testing.TB
	gw     *Server
	srv    *httptest.Server
	url    string
	store  *sqlite.Store
	runner *agent.Runner
	conf   *config.Config
	// gate holds the model's calls while a test keeps a run in flight.
	gate *modelGate
}

type envOptions struct {
	// config is the JSON5 config; empty means token auth with testToken.
	config string
	// gateway adjusts the gateway config before New.
	gateway func(*Config)
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	dir := t.TempDir()
	src := o.config
	if src == "" {
		src = `{gateway: {auth: {mode: "token", token: "` + testToken + `"}}}`
	}
	conf, _, err := config.Parse("test.json5", []byte(src), config.MapEnv(map[string]string{config.EnvStateDir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "switchboard.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gate := &modelGate{}
	models := scriptedModels{gatedModel{scripted.New(scripted.Options{}), gate}}
	runner, err := agent.New(agent.Config{
		Store:  st,
		Models: models,
		InitSession: func(s *store.Session, in *agent.Input) {
			s.Kind = string(sessionkey.RowKindOf(s.Key))
			s.ChatType = string(sessionkey.ChatTypeOf(s.Key))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	set := settings.Resolve(conf)
	adm, err := admission.New(admission.Config{Runner: runner, Store: st, SendRules: set.SendRules, Queue: set.Queue})
	if err != nil {
		t.Fatal(err)
	}
	gcfg := Config{
		Runner:            runner,
		Admit:             adm,
		Store:             st,
		Settings:          set,
		Version:           "test",
		StorePath:         filepath.Join(dir, "switchboard.db"),
		Models:            models,
		DefaultModelRef:   func(string) string { return scripted.Model },
		ChatDeltaInterval: -1,
	}
	if o.gateway != nil {
		o.gateway(&gcfg)
	}
	gw, err := New(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	adm.SetCommands(gw)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { gw.Close() })
	return &env{t: t, gw: gw, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), store: st, runner: runner, conf: conf, gate: gate}
}

// modelGate holds model calls while it is shut, so that a test keeps a run
// in flight for as long as it needs without a timed /sleep.
type modelGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil while open; closed to let the held calls go
}

// hold shuts the gate: model calls wait until release is called.
func (g *modelGate) hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.shut = ch
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.shut == ch {
			g.shut = nil
		}
		close(ch)
	}
}

// pass waits until the gate is open or ctx is done.
func (g *modelGate) pass(ctx context.Context) error {
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedModel is a provider whose calls pass a modelGate first.
type gatedModel struct {
	p    provider.Provider
	gate *modelGate
}

func (m gatedModel) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		if err := m.gate.pass(ctx); err != nil {
			yield(nil, err)
			return
		}
		for ev, err := range m.p.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// client is a test WebSocket client speaking the protocol.
type client struct {
	t  testing.TB
	ws *websocket.Conn

	events chan *wire.Frame
	done   chan struct{} // closed when the reader ends

	mu      sync.Mutex
	nextID  int
	waiters map[string]chan *wire.Frame
	readErr error
	log     []*wire.Frame // every frame received, in order

	// wait bounds how long a call waits for its response (default 10s);
	// tests moving tens of megabytes under -race on a loaded machine raise
	// it.
	wait time.Duration
}

// with returns a copy of e whose clients report to t (for subtests).
func (e *env) with(t testing.TB) *env {
	c := *e
	c.t = t
	return &c
}

// dial opens a connection without the handshake.
func (e *env) dial() *client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.url, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	c := &client{t: e.t, ws: ws, events: make(chan *wire.Frame, 100000), done: make(chan struct{}), waiters: make(map[string]chan *wire.Frame)}
	go c.readLoop()
	e.t.Cleanup(c.close)
	return c
}

// connect dials and completes the handshake with the given scopes.
func (e *env) connect(scopes ...string) *client {
	e.t.Helper()
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	res := c.call(wire.MethodConnect, connectParams(testToken, scopes...))
	if !res.OK {
		e.t.Fatalf("connect failed: %+v", res.Error)
	}
	return c
}

// operator connects with read, write and admin scopes.
func (e *env) operator() *client {
	return e.connect(wire.ScopeRead, wire.ScopeWrite, wire.ScopeAdmin)
}

func connectParams(token string, scopes ...string) map[string]any {
	if scopes == nil {
		scopes = []string{}
	}
	return map[string]any{
		"minProtocol": 4, "maxProtocol": 4,
		"client": map[string]any{"id": "cli", "version": "test", "platform": "linux", "mode": "cli"},
		"role":   "operator", "scopes": scopes, "caps": []string{},
		"auth": map[string]any{"token": token},
	}
}

func (c *client) readLoop() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		f, err := wire.Decode(data)
		if err != nil {
			c.t.Errorf("server sent an invalid frame: %v: %s", err, data)
			continue
		}
		c.mu.Lock()
		c.log = append(c.log, f)
		c.mu.Unlock()
		switch f.Type {
		case wire.FrameResponse:
			c.mu.Lock()
			ch := c.waiters[f.ID]
			c.mu.Unlock()
			if ch == nil {
				c.t.Errorf("response for unknown id %q", f.ID)
				continue
			}
			select {
			case ch <- f:
			default:
				c.t.Errorf("too many responses for id %q", f.ID)
			}
		case wire.FrameEvent:
			c.events <- f
		default:
			c.t.Errorf("unexpected frame type %q", f.Type)
		}
	}
}

func (c *client) close() {
	c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
}

// sendRaw writes one text frame.
func (c *client) sendRaw(data string) {
	c.t.Helper()
	if err := c.write(data); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) write(data string) error {
	// Five seconds, plus one per MiB: a 20 MB frame under -race is slow.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second+time.Duration(len(data)>>20)*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, []byte(data))
}

// start sends a request and returns the channel its responses arrive on.
func (c *client) start(method string, params any) (string, <-chan *wire.Frame) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID) + ":" + method
	ch := make(chan *wire.Frame, 4)
	c.waiters[id] = ch
	c.mu.Unlock()
	f := &wire.Frame{Type: wire.FrameRequest, ID: id, Method: method}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			c.t.Fatal(err)
		}
		f.Params = b
	}
	b, _ := f.AppendJSON(nil)
	c.sendRaw(string(b))
	return id, ch
}

// call sends a request and waits for its response.
func (c *client) call(method string, params any) *wire.Frame {
	c.t.Helper()
	_, ch := c.start(method, params)
	return c.await(ch)
}

func (c *client) await(ch <-chan *wire.Frame) *wire.Frame {
	c.t.Helper()
	select {
	case f := <-ch:
		return f
	case <-c.done:
		select { // the response may have come just before the close
		case f := <-ch:
			return f
		default:
		}
		c.t.Fatalf("connection closed while waiting for a response: %v", c.err())
	case <-time.After(cmp.Or(c.wait, 10*time.Second)):
		c.t.Fatal("timed out waiting for a response")
	}
	return nil
}

// ok calls method and decodes the payload of a successful response into v.
func (c *client) ok(method string, params, v any) {
	c.t.Helper()
	f := c.call(method, params)
	if !f.OK {
		c.t.Fatalf("%s failed: %s", method, f.Error)
	}
	if v != nil {
		if err := json.Unmarshal(f.Payload, v); err != nil {
			c.t.Fatalf("%s payload %s: %v", method, f.Payload, err)
		}
	}
}

// fail calls method and returns the error of a failed response.
func (c *client) fail(method string, params any) *wire.Error {
	c.t.Helper()
	f := c.call(method, params)
	if f.OK {
		c.t.Fatalf("%s succeeded, want an error: %s", method, f.Payload)
	}
	return f.Error
}

// received returns every frame received so far, in order.
func (c *client) received() []*wire.Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*wire.Frame(nil), c.log...)
}

func (c *client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// nextEvent returns the next event of any name.
func (c *client) nextEvent(timeout time.Duration) *wire.Frame {
	c.t.Helper()
	select {
	case f := <-c.events:
		return f
	case <-time.After(timeout):
		c.t.Fatal("timed out waiting for an event")
	}
	return nil
}

// expectEvent skips events until one named name arrives.
func (c *client) expectEvent(name string) *wire.Frame {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-c.events:
			if f.Event == name {
				return f
			}
		case <-deadline:
			c.t.Fatalf("timed out waiting for event %q", name)
		}
	}
}

// runEvents collects the chat and agent events of a run until its chat
// event in a terminal state.
func (c *client) runEvents(runID string) []*wire.Frame {
	c.t.Helper()
	return c.runEventsWithin(runID, 10*time.Second)
}

// runEventsWithin is runEvents with its own time limit.
func (c *client) runEventsWithin(runID string, limit time.Duration) []*wire.Frame {
	c.t.Helper()
	var out []*wire.Frame
	deadline := time.After(limit)
	for {
		select {
		case f := <-c.events:
			if f.Event != wire.EventChat && f.Event != wire.EventAgent {
				continue
			}
			var p struct {
				RunID string `json:"runId"`
				State string `json:"state"`
			}
			json.Unmarshal(f.Payload, &p)
			if p.RunID != runID {
				continue
			}
			out = append(out, f)
			if f.Event == wire.EventChat && p.State != wire.ChatStateDelta {
				return out
			}
		case <-deadline:
			c.t.Fatalf("timed out waiting for the end of run %q (got %d events)", runID, len(out))
		}
	}
}

// closed waits for the server to close the connection and returns the
// close status and reason.
func (c *client) closed() (websocket.StatusCode, string) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatal("connection not closed")
	}
	var ce websocket.CloseError
	if errors.As(c.err(), &ce) {
		return ce.Code, ce.Reason
	}
	return -1, ""
}

// payload decodes an event or response payload into a map.
func payload(t testing.TB, f *wire.Frame) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(f.Payload, &m); err != nil {
		t.Fatalf("payload %s: %v", f.Payload, err)
	}
	return m
}

func details(t testing.TB, e *wire.Error) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Details, &m); err != nil {
		t.Fatalf("details %s: %v", e.Details, err)
	}
	return m
}
