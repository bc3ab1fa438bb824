package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestHookAgentRunsInHookSession(t *testing.T) {
	g := startWith(t, "", nil, "", `hooks: { enabled: true, token: "hook-secret", allowRequestSessionKey: true, allowedSessionKeyPrefixes: ["hook:"] },`)
	c := g.dial(t)
	base := strings.Replace(g.url, "ws://", "http://", 1)
	post := func(path, tok, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	if code, _ := post("/hooks/agent", "wrong", `{"message":"x"}`); code != 401 {
		t.Fatalf("wrong token = %d", code)
	}
	code, out := post("/hooks/agent", "hook-secret", `{"message":"deploy finished","sessionKey":"hook:ci","waitForCompletion":true}`)
	comp, _ := out["completion"].(map[string]any)
	if code != 200 || out["runId"] == nil || comp["status"] != "ok" || comp["replyDisposition"] != "visible" {
		t.Fatalf("hook = %d %v", code, out)
	}
	if code, out := post("/hooks/agent", "hook-secret", `{"message":"x","sessionKey":"agent:main:main"}`); code != 400 {
		t.Fatalf("a key outside the prefixes = %d %v", code, out)
	}
	call(t, c, "agent.wait", map[string]any{"runId": out["runId"], "timeoutMs": 15000})
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": "hook:ci"})
	if !strings.Contains(toJSON(t, hist), "deploy finished") {
		t.Fatalf("hook session history = %v", hist)
	}
}
