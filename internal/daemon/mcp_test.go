package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/mcp"
)

const mcpTestToken = "mcp-test-token-0123456789"

// startMCPDaemon starts a gateway with two agents (main, ops), session
// visibility "all" and agent-to-agent messaging off, and a session
// agent:main:work that has one exchange. extra replaces the tools section
// and may add top-level sections.
func startMCPDaemon(t *testing.T, extra ...string) (*Daemon, string) {
	t.Helper()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key"})
	dir := t.TempDir()
	top := `tools: { sessions: { visibility: "all" } },`
	if len(extra) > 0 {
		top = strings.Join(extra, "\n")
	}
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }, { id: "ops" }] },
  %s
}`, mcpTestToken, llm.URL(), top)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir)
	t.Cleanup(func() { d.Close() })
	ctx := context.Background()
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "w1", SessionKey: "agent:main:work", AgentID: "main", Message: "/reply hello from work"}); err != nil {
		t.Fatal(err)
	}
	if _, done, err := d.Runner.Wait(ctx, "w1", 20*time.Second); err != nil || !done {
		t.Fatalf("wait w1: done=%v err=%v", done, err)
	}
	return d, "http://" + d.Addrs[0].String() + "/mcp"
}

// headerRT adds headers to every request.
type headerRT struct {
	h    http.Header
	next http.RoundTripper
}

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return rt.next.RoundTrip(r)
}

// connectMCP opens a go-sdk client session over streamable HTTP as session
// (empty: the default).
func connectMCP(t *testing.T, endpoint, session string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + mcpTestToken}}
	if session != "" {
		h.Set(mcp.SessionHeader, session)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{h, http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callJSON(t *testing.T, cs *sdk.ClientSession, name string, args any) (map[string]any, *sdk.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: text is not JSON: %q", name, text)
	}
	return out, res
}

func TestMCPHTTPRequiresGatewayToken(t *testing.T) {
	_, endpoint := startMCPDaemon(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer nope", http.StatusUnauthorized},
		{"basic", "Basic " + mcpTestToken, http.StatusUnauthorized},
		{"right", "Bearer " + mcpTestToken, http.StatusOK},
		{"garbage body", "Bearer " + mcpTestToken, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := body
			if tc.name == "garbage body" {
				b = `{"jsonrpc":"2.0","id":1,"method":` + strings.Repeat("[", 5000)
			}
			req, _ := http.NewRequest("POST", endpoint, strings.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestMCPHTTPSessionTools(t *testing.T) {
	_, endpoint := startMCPDaemon(t)
	var mu sync.Mutex
	var progress []*sdk.ProgressNotificationParams
	cs := connectMCP(t, endpoint, "", &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params)
			mu.Unlock()
		},
	})
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil {
			t.Errorf("%s has no input schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(mcp.ExposedTools))
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}

	agents, _ := callJSON(t, cs, "agents_list", map[string]any{})
	if agents["requester"] != "main" {
		t.Errorf("agents_list requester = %v, want main (the default session's agent)", agents["requester"])
	}
	list, res := callJSON(t, cs, "sessions_list", map[string]any{})
	if !strings.Contains(fmt.Sprint(list["sessions"]), "agent:main:work") || res.StructuredContent == nil {
		t.Errorf("sessions_list = %v (structured %v)", list, res.StructuredContent)
	}
	hist, _ := callJSON(t, cs, "sessions_history", map[string]any{"sessionKey": "agent:main:work"})
	if !strings.Contains(fmt.Sprint(hist["messages"]), "hello from work") {
		t.Errorf("sessions_history = %v", hist)
	}

	// sessions_send waits for the reply, reporting progress meanwhile.
	params := &sdk.CallToolParams{Name: "sessions_send", Arguments: map[string]any{
		"sessionKey": "agent:main:work", "message": "/sleep 2500ms\n/reply pong", "timeoutSeconds": 20,
	}}
	params.SetProgressToken("tok-1")
	sres, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	text := sres.Content[0].(*sdk.TextContent).Text
	if !strings.Contains(text, `"reply": "pong"`) || !strings.Contains(text, `"status": "ok"`) {
		t.Errorf("sessions_send = %s", text)
	}
	mu.Lock()
	got := slices.Clone(progress)
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("progress notifications = %d, want >= 2 over a 2.5s wait", len(got))
	}
	if got[0].ProgressToken != "tok-1" || got[0].Total != 20 || got[1].Progress <= got[0].Progress ||
		!strings.Contains(got[0].Message, "agent:main:work") {
		t.Errorf("progress = %+v, %+v", got[0], got[1])
	}

	spawn, _ := callJSON(t, cs, "sessions_spawn", map[string]any{"task": "/reply spawned", "label": "kid"})
	if spawn["status"] != "accepted" {
		t.Errorf("sessions_spawn = %v", spawn)
	}
}

// The caller header chooses the session; with mcp.serve.reach "session"
// policy is that session's.
func TestMCPHTTPCallerSessionPolicy(t *testing.T) {
	_, endpoint := startMCPDaemon(t, `tools: { sessions: { visibility: "all" } }, mcp: { serve: { reach: "session" } },`)
	cs := connectMCP(t, endpoint, "agent:ops:main", nil)
	agents, _ := callJSON(t, cs, "agents_list", map[string]any{})
	if agents["requester"] != "ops" {
		t.Errorf("agents_list requester = %v, want ops", agents["requester"])
	}
	// Agent-to-agent messaging is off: ops may not message main's session.
	out, _ := callJSON(t, cs, "sessions_send", map[string]any{"sessionKey": "agent:main:work", "message": "hi", "timeoutSeconds": 0})
	if out["status"] != "forbidden" {
		t.Errorf("cross-agent sessions_send = %v, want status forbidden", out)
	}
}

// TestMCPHTTPOperatorReach: by default an MCP host (it holds the gateway's
// token) has the operator's reach: with the default visibility (tree) and
// agent-to-agent messaging off, acting as the main session it may still
// send to another session of its agent and to another agent's session,
// and read their transcripts. mcp.serve.reach "session" takes that away.
func TestMCPHTTPOperatorReach(t *testing.T) {
	for _, tt := range []struct {
		name, config, want string
	}{
		{"default", ``, "ok"},
		{"operator", `mcp: { serve: { reach: "operator" } },`, "ok"},
		{"session", `mcp: { serve: { reach: "session" } },`, "forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, endpoint := startMCPDaemon(t, tt.config)
			ctx := context.Background()
			if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "o1", SessionKey: "agent:ops:desk", AgentID: "ops", Message: "/reply ops here"}); err != nil {
				t.Fatal(err)
			}
			if _, done, err := d.Runner.Wait(ctx, "o1", 20*time.Second); err != nil || !done {
				t.Fatalf("wait o1: done=%v err=%v", done, err)
			}
			cs := connectMCP(t, endpoint, "", nil)
			for _, target := range []string{"agent:main:work", "agent:ops:desk"} {
				out, _ := callJSON(t, cs, "sessions_send", map[string]any{"sessionKey": target, "message": "/reply seen", "timeoutSeconds": 20})
				if out["status"] != tt.want {
					t.Errorf("sessions_send to %s = %v, want status %s", target, out, tt.want)
				}
				_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: mcp.HistoryURI(target)})
				if (err == nil) != (tt.want == "ok") {
					t.Errorf("read %s: %v", target, err)
				}
			}
		})
	}
}

func TestMCPHTTPHistoryResource(t *testing.T) {
	d, endpoint := startMCPDaemon(t)
	updated := make(chan string, 16)
	cs := connectMCP(t, endpoint, "", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			select { // never blocks: a blocked handler stalls the session's Close
			case updated <- r.Params.URI:
			default:
			}
		},
	})
	ctx := context.Background()
	uri := mcp.HistoryURI("agent:main:work")
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lr.Resources, func(r *sdk.Resource) bool { return r.URI == uri }) {
		t.Errorf("resources/list has no %s: %+v", uri, lr.Resources)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "hello from work") {
		t.Fatalf("read %s = %+v", uri, rr.Contents)
	}
	// A session that does not exist (visible, well-formed) and a key that
	// is not one are both resource-not-found (-32002).
	for _, missing := range []string{mcp.HistoryURI("agent:main:ghost"), "switchboard://sessions/nope/history"} {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: missing})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != mcp.CodeResourceNotFound {
			t.Errorf("read %s: err = %v, want code %d", missing, err, mcp.CodeResourceNotFound)
		}
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "w2", SessionKey: "agent:main:work", AgentID: "main", Message: "/reply again"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %s, want %s", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated notification after the transcript grew")
	}
	// The server follows the subscribed session's stream, and only while
	// a client subscribes (no filter on every run event).
	srv, err := d.mcp.Server()
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Watched(); !slices.Equal(got, []string{uri}) {
		t.Fatalf("followed %v while subscribed, want [%s]", got, uri)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Watched(); len(got) != 0 {
		t.Fatalf("followed %v after the last unsubscribe, want none", got)
	}
	// A client that goes away without unsubscribing stops the watch too.
	gone := connectMCP(t, endpoint, "", nil)
	if err := gone.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Watched(); !slices.Equal(got, []string{uri}) {
		t.Fatalf("followed %v while subscribed, want [%s]", got, uri)
	}
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(srv.Watched()) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still following %v after its only subscriber left", srv.Watched())
		}
	}
}

// Cancelling a sessions_send wait ends the server-side call.
func TestMCPHTTPCancelSendWait(t *testing.T) {
	d, endpoint := startMCPDaemon(t)
	first := make(chan struct{}, 1)
	cs := connectMCP(t, endpoint, "", &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			select {
			case first <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &sdk.CallToolParams{Name: "sessions_send", Arguments: map[string]any{
		"sessionKey": "agent:main:work", "message": "/stall", "timeoutSeconds": 120,
	}}
	params.SetProgressToken(7)
	errc := make(chan error, 1)
	go func() { _, err := cs.CallTool(ctx, params); errc <- err }()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	if d.mcp.Inflight() != 1 {
		t.Fatalf("inflight = %d, want 1", d.mcp.Inflight())
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error")
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.mcp.Inflight() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server kept waiting after the client cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The stalled run itself is not the wait's: end it so Close is quick.
	if _, err := d.Runner.AbortSession(context.Background(), "agent:main:work"); err != nil {
		t.Fatal(err)
	}
}
