package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
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
		req.Header.Set("Content-Type", "application/json")
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
	if ifs, _ := card["supportedInterfaces"].([]any); len(ifs) != 2 || card["url"] == nil {
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
		req.Header.Set("Content-Type", "application/json")
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

// a2aPost posts one JSON-RPC body to g's A2A endpoint with token and
// returns the decoded response.
func a2aPost(t *testing.T, g *gateway, token, body string) map[string]any {
	t.Helper()
	base := "http://" + strings.TrimPrefix(g.url, "ws://")
	req, _ := http.NewRequest(http.MethodPost, base+"/a2a/v1", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

func a2aGetTask(t *testing.T, g *gateway, token, id string) map[string]any {
	t.Helper()
	m := a2aPost(t, g, token, `{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"`+id+`"}}`)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("GetTask %s = %v", id, m)
	}
	return res
}

// TestA2ATasksSurviveRestart: a completed task is still readable after
// kill -9 and a restart on the same state dir, and a task whose run the
// kill cut becomes final (failed), never stuck working.
func TestA2ATasksSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	conf := `channels: { a2a: { peers: { alpha: { token: "s1" }, beta: { token: "s2" } } } },`
	g := startWith(t, dir, llm, "", conf)
	m := a2aPost(t, g, "s1", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"keep","parts":[{"text":"remember me"}]}}}`)
	done := m["result"].(map[string]any)["task"].(map[string]any)
	if done["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("send = %v", m)
	}
	before := llm.Count()
	m = a2aPost(t, g, "s1", `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"configuration":{"returnImmediately":true},"message":{"messageId":"m2","role":"ROLE_USER","contextId":"cut","parts":[{"text":"think long\n/stall"}]}}}`)
	cut := m["result"].(map[string]any)["task"].(map[string]any)
	if cut["status"].(map[string]any)["state"] != "TASK_STATE_WORKING" {
		t.Fatalf("stalled send = %v", m)
	}
	eventually(t, "the stalled run reaches the model", func() bool { return llm.Count() > before })
	g.kill() // SIGKILL mid-run

	g2 := startWith(t, dir, llm, "", conf)
	got := a2aGetTask(t, g2, "s1", done["id"].(string))
	if got["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" || !strings.Contains(string(must(json.Marshal(got["artifacts"]))), "echo: remember me") {
		t.Fatalf("completed task after restart = %v", got)
	}
	got = a2aGetTask(t, g2, "s1", cut["id"].(string))
	st := got["status"].(map[string]any)
	if st["state"] != "TASK_STATE_FAILED" || !strings.Contains(string(must(json.Marshal(st))), "interrupted by gateway restart") {
		t.Fatalf("cut task after restart = %v", got)
	}
	// Listing is per peer and newest first; the other peer sees nothing.
	l := a2aPost(t, g2, "s1", `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`)
	tasks, _ := l["result"].(map[string]any)["tasks"].([]any)
	if len(tasks) != 2 || tasks[0].(map[string]any)["id"] != cut["id"] {
		t.Fatalf("list after restart = %v", l)
	}
	l = a2aPost(t, g2, "s1", `{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"contextId":"keep"}}`)
	if tasks, _ := l["result"].(map[string]any)["tasks"].([]any); len(tasks) != 1 || tasks[0].(map[string]any)["id"] != done["id"] {
		t.Fatalf("list of context keep = %v", l)
	}
	if e, _ := a2aPost(t, g2, "s2", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"`+done["id"].(string)+`"}}`)["error"].(map[string]any); e == nil {
		t.Fatal("another peer read the task")
	}
}

// TestA2ASubscribeToTask follows a running task on the real gateway over
// SSE: the task, the reply's text chunks as the slow model streams them,
// the final artifact and status; a final task cannot be subscribed to.
func TestA2ASubscribeToTask(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Delay: 40 * time.Millisecond})
	g := startWith(t, "", llm, "", `channels: { a2a: { peers: { alpha: { token: "s1" } } } },`)
	m := a2aPost(t, g, "s1", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"returnImmediately":true},"message":{"messageId":"m1","role":"ROLE_USER","contextId":"sub","parts":[{"text":"one two three four five six"}]}}}`)
	task := m["result"].(map[string]any)["task"].(map[string]any)
	id := task["id"].(string)
	base := "http://" + strings.TrimPrefix(g.url, "ws://")
	req, _ := http.NewRequest(http.MethodPost, base+"/a2a/v1", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":"`+id+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer s1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev["result"].(map[string]any))
	}
	if len(events) < 3 || events[0]["task"] == nil {
		t.Fatalf("events = %v", events)
	}
	chunks := 0
	for _, ev := range events[1 : len(events)-2] {
		if a, _ := ev["artifactUpdate"].(map[string]any); a != nil && a["lastChunk"] == nil {
			chunks++
		}
	}
	last, final := events[len(events)-2]["artifactUpdate"].(map[string]any), events[len(events)-1]["statusUpdate"].(map[string]any)
	if chunks == 0 || last == nil || last["lastChunk"] != true || !strings.Contains(string(must(json.Marshal(last))), "echo: one two three four five six") ||
		final == nil || final["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("chunks %d, events = %v", chunks, events)
	}
	again := a2aPost(t, g, "s1", `{"jsonrpc":"2.0","id":3,"method":"tasks/resubscribe","params":{"id":"`+id+`"}}`)
	if e, _ := again["error"].(map[string]any); e == nil || e["code"] != float64(-32004) {
		t.Fatalf("subscribe to a final task = %v", again)
	}
}
