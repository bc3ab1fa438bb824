package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestA2AInbound drives the real gateway's A2A channel: the card, a
// blocking SendMessage answered by the fake model, GetTask by the 0.3
// alias, another peer's wrong token, and a slash message rejected.
func TestA2AInbound(t *testing.T) {
	g := startWith(t, "", nil, "", `channels: { a2a: { peers: { alpha: { token: "${A2A_ALPHA}" } }, rateLimitPerMinute: 0 } },`, "A2A_ALPHA=alpha-secret")
	base := "http://" + strings.TrimPrefix(g.url, "ws://")
	post := func(token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/a2a/v1", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if ifs, _ := card["supportedInterfaces"].([]any); len(ifs) != 1 {
		t.Fatalf("card = %v", card)
	}

	send := func(text string) map[string]any {
		t.Helper()
		code, m := post("alpha-secret", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"ctx-1","parts":[{"text":`+string(must(json.Marshal(text)))+`}]}}}`)
		res, _ := m["result"].(map[string]any)
		task, _ := res["task"].(map[string]any)
		if code != 200 || task == nil {
			t.Fatalf("%d %v", code, m)
		}
		return task
	}
	task := send("hello from a peer")
	status := task["status"].(map[string]any)
	arts, _ := task["artifacts"].([]any)
	if status["state"] != "TASK_STATE_COMPLETED" || len(arts) != 1 || !strings.Contains(string(must(json.Marshal(arts))), "echo: hello from a peer") {
		t.Fatalf("task = %v", task)
	}
	_, got := post("alpha-secret", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+task["id"].(string)+`"}}`)
	if r, _ := got["result"].(map[string]any); r == nil || r["id"] != task["id"] {
		t.Fatalf("get = %v", got)
	}
	if code, _ := post("wrong", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"x"}}`); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	rej := send("/reset")
	if rej["status"].(map[string]any)["state"] != "TASK_STATE_REJECTED" {
		t.Fatalf("slash = %v", rej)
	}
	// The peer's turn ran in its own isolated session.
	c := g.dial(t)
	list := call(t, c, "sessions.list", map[string]any{})
	if !strings.Contains(string(must(json.Marshal(list))), "a2a:default:direct:alpha:ctx-1") {
		t.Fatalf("sessions = %v", list)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestA2ACancel cancels a stalled peer run through the real gateway: the
// task ends TASK_STATE_CANCELED and the run is aborted.
func TestA2ACancel(t *testing.T) {
	g := startWith(t, "", nil, "", `channels: { a2a: { peers: { alpha: { token: "s1" } } } },`)
	base := "http://" + strings.TrimPrefix(g.url, "ws://")
	post := func(body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/a2a/v1", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	m := post(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"returnImmediately":true},"message":{"messageId":"m1","role":"ROLE_USER","contextId":"c9","parts":[{"text":"think long\n/stall"}]}}}`)
	task := m["result"].(map[string]any)["task"].(map[string]any)
	c := post(`{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"` + task["id"].(string) + `"}}`)
	res, _ := c["result"].(map[string]any)
	if res == nil || res["status"].(map[string]any)["state"] != "TASK_STATE_CANCELED" {
		t.Fatalf("cancel = %v", c)
	}
}
