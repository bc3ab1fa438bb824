package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/interop"
)

// mcpCalls calls every exposed tool: spawn a child, then list, read,
// message (with progress) and list agents.
func mcpCalls(child string) []interop.MCPCall {
	return []interop.MCPCall{
		{Name: "agents_list"},
		{Name: "sessions_list"},
		{Name: "sessions_history", Arguments: map[string]any{"sessionKey": child}},
		{Name: "sessions_send", Arguments: map[string]any{"sessionKey": child, "message": "/sleep 1500ms\n/reply pong", "timeoutSeconds": 20}, Progress: true},
		{Name: "sessions_spawn", Arguments: map[string]any{"task": "/reply second child"}},
	}
}

// checkMCPRun checks what the reference client saw: the five tools and a
// successful answer to every call.
func checkMCPRun(t *testing.T, r interop.NodeClientResult) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("npm MCP client: %v\nstderr: %s", r.Err, r.Stderr)
	}
	var names []string
	tools, _ := r.Step("listTools")["tools"].([]any)
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	slices.Sort(names)
	if want := []string{"agents_list", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	text := func(step string) string {
		res, _ := r.Step(step)["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) == 0 || res["isError"] == true {
			t.Errorf("%s: %v", step, res)
			return ""
		}
		return content[0].(map[string]any)["text"].(string)
	}
	if s := text("call:agents_list"); !strings.Contains(s, `"requester": "main"`) {
		t.Errorf("agents_list = %s", s)
	}
	if s := text("call:sessions_history"); !strings.Contains(s, "child here") {
		t.Errorf("sessions_history = %s", s)
	}
	if s := text("call:sessions_send"); !strings.Contains(s, `"reply": "pong"`) {
		t.Errorf("sessions_send = %s", s)
	}
	if p, _ := r.Step("call:sessions_send")["progress"].([]any); len(p) == 0 {
		t.Error("sessions_send reported no progress to the npm client")
	}
	if s := text("call:sessions_spawn"); !strings.Contains(s, `"status": "accepted"`) {
		t.Errorf("sessions_spawn = %s", s)
	}
	if res, _ := r.Step("readResource")["result"].(map[string]any); !strings.Contains(fmt.Sprint(res), "child here") {
		t.Errorf("readResource = %v", res)
	}
}

// spawnChild makes a session the MCP caller may see (its own child) and
// returns its key.
func spawnChild(t *testing.T, g *gateway) string {
	t.Helper()
	c := g.dial(t)
	defer c.Close()
	var res struct {
		Details json.RawMessage `json:"details"`
	}
	ctx := t.Context()
	if err := c.Call(ctx, "tools.invoke", map[string]any{
		"tool": "sessions_spawn", "sessionKey": "main", "args": map[string]any{"task": "/reply child here", "label": "kid"},
	}, &res); err != nil {
		t.Fatal(err)
	}
	var d struct {
		ChildSessionKey string `json:"childSessionKey"`
		RunID           string `json:"runId"`
	}
	if err := json.Unmarshal(res.Details, &d); err != nil || d.ChildSessionKey == "" {
		t.Fatalf("sessions_spawn: %s (%v)", res.Details, err)
	}
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": d.RunID, "timeoutMs": 20000}, nil); err != nil {
		t.Fatal(err)
	}
	return d.ChildSessionKey
}

func TestMCPReferenceClientOverHTTP(t *testing.T) {
	g := start(t, "", nil)
	child := spawnChild(t, g)
	r := interop.MCPClient{
		URL: strings.Replace(g.url, "ws://", "http://", 1) + "/mcp", Token: token,
		Calls: mcpCalls(child), Resource: resourceURI(child), Timeout: 60 * time.Second,
	}.Run(t)
	checkMCPRun(t, r)
}

func TestMCPReferenceClientOverStdio(t *testing.T) {
	g := start(t, "", nil)
	child := spawnChild(t, g)
	r := interop.MCPClient{
		Command: []string{binPath, "--url", g.url, "--token", token, "mcp", "--session", "main"},
		Calls:   mcpCalls(child), Resource: resourceURI(child), Timeout: 60 * time.Second,
	}.Run(t)
	checkMCPRun(t, r)
}

// resourceURI is mcp.HistoryURI, spelled out as a client would build it.
func resourceURI(key string) string {
	return "switchboard://sessions/" + strings.ReplaceAll(key, ":", "%3A") + "/history"
}
