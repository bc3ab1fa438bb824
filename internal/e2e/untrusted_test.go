package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestUntrustedSessionsGetNoHostTools: a webhook's run (input from outside
// the operator) that asks for exec gets a refusal it can read, nothing
// runs, and the refusal is counted; with tools.untrusted.allow the
// operator grants it.
func TestUntrustedSessionsGetNoHostTools(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		refused     bool
	}{
		{"refused", ``, true},
		{"granted", `tools: { untrusted: { allow: ["exec"] } },`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startWith(t, "", nil, "", tc.extra+` hooks: { enabled: true, token: "hook-secret", allowRequestSessionKey: true },`)
			c := g.dial(t)
			base := strings.Replace(g.url, "ws://", "http://", 1)
			body, _ := json.Marshal(map[string]any{"sessionKey": "hook:x", "waitForCompletion": true,
				"message": toolTurn("exec", map[string]any{"command": "echo ran-on-host"})})
			req, _ := http.NewRequest("POST", base+"/hooks/agent", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer hook-secret")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("hook = %d", res.StatusCode)
			}
			var result string
			for _, m := range history(t, c, "agent:main:hook:x") {
				if m["role"] == "toolResult" && m["toolName"] == "exec" {
					b, _ := json.Marshal(m["content"])
					result = string(b)
				}
			}
			switch {
			case tc.refused && (!strings.Contains(result, "exec is not available in this session") || strings.Contains(result, "ran-on-host")):
				t.Fatalf("exec result = %s", result)
			case !tc.refused && !strings.Contains(result, "ran-on-host"):
				t.Fatalf("granted exec result = %s", result)
			}
			want := `switchboard_guardrail_refusals_total{kind="untrusted"} 1`
			if !tc.refused {
				want = `switchboard_guardrail_refusals_total{kind="untrusted"} 0`
			}
			if m := scrape(t, g); !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		})
	}
}
