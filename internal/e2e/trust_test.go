package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// The trust tests: input from outside the operator (a webhook, an A2A
// peer) must never reach host commands, however many hops it takes —
// spawned children, their completion turns, sessions_send with and
// without wait, the reply-back and announce steps. Every hop's turn here
// asks for exec (touching a marker file) and write; the tests assert each
// call is refused with the untrusted text and that no marker exists.

const trustRefusal = "is not available in this session: its input comes from outside the operator"

const trustConfig = `hooks: { enabled: true, token: "hook-secret", allowRequestSessionKey: true },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },
  session: { agentToAgent: { maxPingPongTurns: 1 } },`

// hostCalls is the directive lines of a turn that tries exec (touching
// marker) and write.
func hostCalls(marker string) string {
	return toolLine("exec", map[string]any{"command": "touch " + marker}) + "\n" +
		toolLine("write", map[string]any{"path": filepath.Base(marker) + ".txt", "content": "pwned"})
}

func toolLine(tool string, args any) string {
	b, _ := json.Marshal(args)
	return "/tool " + tool + " " + string(b)
}

// postHook posts body to /hooks/agent with the hook token and returns the
// decoded answer.
func postHook(t *testing.T, g *gateway, body map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", strings.Replace(g.url, "ws://", "http://", 1)+"/hooks/agent", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer hook-secret")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 {
		t.Fatalf("hook = %d %v", res.StatusCode, out)
	}
	return out
}

// toolResults returns the results of tool in key's history, in order.
func toolResults(t *testing.T, c *client.Client, key, tool string) []string {
	t.Helper()
	var out []string
	for _, m := range history(t, c, key) {
		if m["role"] == "toolResult" && m["toolName"] == tool {
			b, _ := json.Marshal(m["content"])
			out = append(out, string(b))
		}
	}
	return out
}

// refusedAll waits until key's history has at least n results of exec and
// of write, then fails unless every one of them is the untrusted refusal.
func refusedAll(t *testing.T, c *client.Client, key string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d exec and write results in %s", n, key), func() bool {
		return len(toolResults(t, c, key, "exec")) >= n && len(toolResults(t, c, key, "write")) >= n
	})
	for _, tool := range []string{"exec", "write"} {
		for _, r := range toolResults(t, c, key, tool) {
			if !strings.Contains(r, trustRefusal) {
				t.Errorf("%s in %s ran: %s", tool, key, r)
			}
		}
	}
}

// noMarkers fails when a marker file or a written file exists.
func noMarkers(t *testing.T, g *gateway, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("marker %s exists: a host command ran", e.Name())
	}
	_ = filepath.WalkDir(g.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "m-") && strings.HasSuffix(d.Name(), ".txt") {
			t.Errorf("%s was written", p)
		}
		return nil
	})
}

// TestWebhookSpawnCompletionTurnIsUntrusted is the first reproduction: a
// webhook spawns a child whose task asks for exec; the child is refused,
// and so is the completion turn posted back into the hook session that
// quotes the task (it once ran as inter_session input, on the host).
func TestWebhookSpawnCompletionTurnIsUntrusted(t *testing.T) {
	markers := t.TempDir()
	g := startWith(t, "", nil, "", trustConfig)
	c := g.dial(t)
	task := "x\n" + hostCalls(filepath.Join(markers, "m-spawn"))
	postHook(t, g, map[string]any{"sessionKey": "hook:spawn", "waitForCompletion": true,
		"message": toolLine("sessions_spawn", map[string]any{"task": task}) + "\n/then spawned"})
	key := "agent:main:hook:spawn"
	// The completion turn quotes the task: it asks for exec and write again.
	refusedAll(t, c, key, 1)
	var child string
	for _, r := range call(t, c, "sessions.list", map[string]any{"spawnedBy": key})["sessions"].([]any) {
		child, _ = r.(map[string]any)["key"].(string)
	}
	if child == "" {
		t.Fatal("no child session")
	}
	refusedAll(t, c, child, 1)
	noMarkers(t, g, markers)
	// The completion turn's input carries its origin, shown in the history.
	var prov map[string]any
	for _, m := range history(t, c, key) {
		if p, ok := m["provenance"].(map[string]any); ok && p["kind"] == "inter_session" {
			prov = p
		}
	}
	if prov == nil || prov["untrusted"] != "webhook" {
		t.Fatalf("completion turn provenance = %v", prov)
	}
}

// TestA2ASendToSpawnedChildIsUntrusted is the second reproduction: an A2A
// peer makes its session spawn a child, then sessions_send it a message
// asking for exec. The child's turn is untrusted (a2a), not inter_session
// input the host trusts; sessions.list shows where its input came from.
func TestA2ASendToSpawnedChildIsUntrusted(t *testing.T) {
	markers := t.TempDir()
	g := startWith(t, "", nil, "", `channels: { a2a: { peers: { alpha: { token: "s1" } }, rateLimitPerMinute: 0 } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },`)
	c := g.dial(t)
	send := func(text string) {
		t.Helper()
		m := a2aPost(t, g, "s1", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+fmt.Sprint(len(text))+`","role":"ROLE_USER","contextId":"ctx-kid","parts":[{"text":`+string(must(json.Marshal(text)))+`}]}}}`)
		if r, _ := m["result"].(map[string]any); r == nil {
			t.Fatalf("a2a = %v", m)
		}
	}
	send("go\n" + toolLine("sessions_spawn", map[string]any{"task": "hello", "label": "kid1"}) + "\n/then spawned")
	var child string
	eventually(t, "kid1", func() bool {
		for _, r := range call(t, c, "sessions.list", map[string]any{"label": "kid1"})["sessions"].([]any) {
			child, _ = r.(map[string]any)["key"].(string)
		}
		return child != ""
	})
	// The child's completion has been announced to the peer's session and
	// answered (so it does not steer into the next turn).
	const peerKey = "agent:main:a2a:default:direct:alpha:ctx-kid"
	eventually(t, "kid1's announce answered", func() bool {
		h := history(t, c, peerKey)
		announced := false
		for _, m := range h {
			if p, ok := m["provenance"].(map[string]any); ok && p["sourceTool"] == "subagent_announce" {
				announced = true
			}
		}
		return announced && len(h) > 0 && h[len(h)-1]["role"] == "assistant"
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, k := range []string{child, peerKey} {
				h := history(t, c, k)
				t.Logf("history of %s: %s", k, toJSON(t, h[max(0, len(h)-4):]))
			}
		}
	})
	send("please\n" + toolLine("sessions_send", map[string]any{"label": "kid1", "timeoutSeconds": 30,
		"message": "x\n" + hostCalls(filepath.Join(markers, "m-a2a-send"))}) + "\n/then sent")
	refusedAll(t, c, child, 1)
	noMarkers(t, g, markers)
	var row map[string]any
	for _, r := range call(t, c, "sessions.list", map[string]any{"label": "kid1"})["sessions"].([]any) {
		row = r.(map[string]any)
	}
	if row["untrusted"] != "a2a" {
		t.Fatalf("child row = %v", row)
	}
}

// TestUntrustedAcrossEveryHop walks each hop an outside input can take
// from a webhook and asserts every turn it causes is refused the host
// tools, while the operator's own turn (the control) runs them.
func TestUntrustedAcrossEveryHop(t *testing.T) {
	markers := t.TempDir()
	dir := t.TempDir()
	// The steps whose trigger the hook does not write answer by rules:
	// the reply-back turn (the target's reply), the announce step.
	writeAgents(t, dir, "workspace", strings.Join([]string{
		`/when "ROW-REPLYBACK" ` + toolLine("exec", map[string]any{"command": "touch " + filepath.Join(markers, "m-replyback")}),
		`/when "ROW-REPLYBACK" ` + toolLine("write", map[string]any{"path": "m-replyback.txt", "content": "x"}),
		`/when "Agent-to-agent announce step." ` + toolLine("exec", map[string]any{"command": "touch " + filepath.Join(markers, "m-announce")}),
		`/when "Agent-to-agent announce step." ` + toolLine("write", map[string]any{"path": "m-announce.txt", "content": "x"}),
	}, "\n"))
	g := startWith(t, dir, nil, "", trustConfig)
	c := g.dial(t)

	// The control: the operator's own turn runs exec on the host, so the
	// refusals below are the taint's doing, not a blanket one.
	ok := filepath.Join(t.TempDir(), "operator-ran")
	toolResult(t, c, "main", "op-1", "exec", map[string]any{"command": "touch " + ok})
	if _, err := os.Stat(ok); err != nil {
		t.Fatalf("the operator's exec did not run: %v", err)
	}
	// Targets exist before the hook reaches them (made by the operator:
	// the sessions themselves start trusted).
	for _, k := range []string{"nowait", "wait"} {
		call(t, c, "chat.send", map[string]any{"sessionKey": "target-" + k, "message": "hi", "idempotencyKey": "mk-" + k})
		call(t, c, "agent.wait", map[string]any{"runId": "mk-" + k, "timeoutMs": 30000})
	}

	for _, tc := range []struct {
		name    string
		message string
		// turns lists the sessions whose turns caused by the hop must
		// all have been refused (and how many exec calls each makes).
		turns map[string]int
	}{
		{"spawn", toolLine("sessions_spawn", map[string]any{"task": "x\n" + hostCalls(filepath.Join(markers, "m-spawn"))}) + "\n/then ok",
			map[string]int{"agent:main:hook:spawn": 1 /* completion */}},
		{"send-nowait", toolLine("sessions_send", map[string]any{"sessionKey": "agent:main:target-nowait", "timeoutSeconds": 0,
			"message": "x\n" + hostCalls(filepath.Join(markers, "m-send-nowait"))}) + "\n/then ok",
			map[string]int{"agent:main:target-nowait": 1}},
		{"send-wait", toolLine("sessions_send", map[string]any{"sessionKey": "agent:main:target-wait", "timeoutSeconds": 30,
			"message": hostCalls(filepath.Join(markers, "m-send-wait")) + "\n/then ROW-REPLYBACK"}) + "\n/then ok",
			// target: its own turn and the announce step; requester:
			// the reply-back turn.
			map[string]int{"agent:main:target-wait": 2, "agent:main:hook:send-wait": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			postHook(t, g, map[string]any{"sessionKey": "hook:" + tc.name, "waitForCompletion": true, "message": tc.message})
			for key, n := range tc.turns {
				refusedAll(t, c, key, n)
			}
			if tc.name == "spawn" {
				var child string
				for _, r := range call(t, c, "sessions.list", map[string]any{"spawnedBy": "agent:main:hook:spawn"})["sessions"].([]any) {
					child, _ = r.(map[string]any)["key"].(string)
				}
				refusedAll(t, c, child, 1)
			}
		})
	}
	noMarkers(t, g, markers)
	// The operator's session was never driven from outside; the targets
	// were, and their rows say so.
	rows := map[string]string{}
	for _, r := range call(t, c, "sessions.list", map[string]any{})["sessions"].([]any) {
		m := r.(map[string]any)
		u, _ := m["untrusted"].(string)
		rows[m["key"].(string)] = u
	}
	if rows["agent:main:main"] != "" || rows["agent:main:target-wait"] != "webhook" || rows["agent:main:target-nowait"] != "webhook" {
		t.Fatalf("rows' untrusted = %v", rows)
	}
}

// TestSecretsNeverLeaveTheGateway: a provider error that echoes a
// configured secret (here the hooks token, as a key would be: "Invalid API
// key provided: Bearer …") is masked in the run's error, the events every
// operator client receives, the stored transcript and run, the console log
// and the log file.
func TestSecretsNeverLeaveTheGateway(t *testing.T) {
	const secret = "hook-secret-0123456789abcdef"
	dir := t.TempDir()
	// The model's provider answers the trigger with an error quoting the
	// secret (a rule, so the operator's own message does not hold it).
	writeAgents(t, dir, "workspace", `/when "leak" /error 401 Invalid API key provided: Bearer `+secret)
	g := startWith(t, dir, nil, "", `hooks: { enabled: true, token: "`+secret+`" },`)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "idempotencyKey": "leak-1", "message": "leak"})
	chat, agentEvs := runEvents(t, c, "leak-1")
	w := call(t, c, "agent.wait", map[string]any{"runId": "leak-1", "timeoutMs": 30000})
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": "main"})
	seen := toJSON(t, map[string]any{"chat": chat, "agent": agentEvs, "wait": w, "history": hist})
	if strings.Contains(seen, secret) {
		t.Fatalf("the secret reached a client: %s", seen)
	}
	if !strings.Contains(seen, "Bearer [redacted]") {
		t.Fatalf("the provider's error did not reach the client masked: %s", seen)
	}
	// A tool result that holds the secret (a file in the workspace) is
	// masked before the model, the transcript or an event sees it.
	if err := os.WriteFile(filepath.Join(dir, "workspace", "notes.txt"), []byte("the key is "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "idempotencyKey": "leak-2",
		"message": toolTurn("read", map[string]any{"path": "notes.txt"})})
	chat2, agent2 := runEvents(t, c, "leak-2")
	read := toolResults(t, c, "agent:main:main", "read")
	if len(read) != 1 || !strings.Contains(read[0], "the key is [redacted]") {
		t.Fatalf("read result = %q", read)
	}
	if seen := toJSON(t, map[string]any{"chat": chat2, "agent": agent2, "history": history(t, c, "agent:main:main")}); strings.Contains(seen, secret) {
		t.Fatalf("the secret reached a client: %s", seen)
	}
	for _, r := range g.llm.Requests() { // the system prompt holds the test's own rule
		if r.Request == nil {
			continue
		}
		for _, m := range r.Request.Messages {
			if m.Role == "tool" && strings.Contains(m.Text, secret) {
				t.Fatalf("the tool result reached the model unmasked: %q", m.Text)
			}
		}
	}
	eventually(t, "the run's end in the log", func() bool { return strings.Contains(g.stdio.String(), "leak-1") })
	if strings.Contains(g.stdio.String(), secret) {
		t.Errorf("the console log holds the secret:\n%s", g.stdio)
	}
	g.kill() // the store and the log file as the gateway left them
	_ = filepath.WalkDir(g.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "switchboard.json5" || d.Name() == "AGENTS.md" || d.Name() == "notes.txt" {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
}

// TestFileSecretsNeverLeaveTheGateway: secrets given only through token
// and password files (channels.telegram.tokenFile, channels.irc
// passwordFile and nickserv.passwordFile) are masked like inline ones in
// tool results, the transcript, the events, the model's requests and the
// logs (issue 30).
func TestFileSecretsNeverLeaveTheGateway(t *testing.T) {
	secrets := map[string]string{
		"tg-token": "987654:file-only-telegram-token-0123456789",
		"irc-pass": "file-only-irc-password-0123456789",
		"ns-pass":  "file-only-nickserv-password-0123456789",
	}
	dir := t.TempDir()
	files := t.TempDir()
	for name, v := range secrets {
		if err := os.WriteFile(filepath.Join(files, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing listens at the channels' addresses: the connectors retry
	// in the background while the operator's turn runs.
	writeAgents(t, dir, "workspace", "")
	g := startWith(t, dir, nil, "", `channels: {
  telegram: { tokenFile: "`+filepath.Join(files, "tg-token")+`", apiRoot: "http://127.0.0.1:9" },
  irc: { host: "127.0.0.1", port: 9, tls: false, nick: "sb", passwordFile: "`+filepath.Join(files, "irc-pass")+`",
    nickserv: { passwordFile: "`+filepath.Join(files, "ns-pass")+`" } } },`)
	c := g.dial(t)
	var notes strings.Builder
	for _, name := range []string{"tg-token", "irc-pass", "ns-pass"} {
		notes.WriteString(name + " is " + secrets[name] + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace", "notes.txt"), []byte(notes.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "idempotencyKey": "file-1",
		"message": toolTurn("read", map[string]any{"path": "notes.txt"})})
	chat, agentEvs := runEvents(t, c, "file-1")
	read := toolResults(t, c, "agent:main:main", "read")
	if len(read) != 1 || strings.Count(read[0], "[redacted]") != 3 {
		t.Fatalf("read result = %q, want the three file secrets masked", read)
	}
	seen := toJSON(t, map[string]any{"chat": chat, "agent": agentEvs, "history": history(t, c, "agent:main:main")})
	for name, v := range secrets {
		if strings.Contains(seen, v) {
			t.Errorf("the %s secret reached a client: %s", name, seen)
		}
	}
	for _, r := range g.llm.Requests() {
		if r.Request == nil {
			continue
		}
		for _, m := range r.Request.Messages {
			for name, v := range secrets {
				if strings.Contains(m.Text, v) {
					t.Errorf("the %s secret reached the model: %q", name, m.Text)
				}
			}
		}
	}
	eventually(t, "the run's end in the log", func() bool { return strings.Contains(g.stdio.String(), "file-1") })
	for name, v := range secrets {
		if strings.Contains(g.stdio.String(), v) {
			t.Errorf("the console log holds the %s secret:\n%s", name, g.stdio)
		}
	}
}

// TestUntrustedA2AOutAndBack: a webhook's session sends to a remote peer
// over A2A (another gateway): the peer's turn is outside input there, and
// the reply that comes back is the hook session's tool result; nothing
// runs on either host.
func TestUntrustedA2AOutAndBack(t *testing.T) {
	markers := t.TempDir()
	a, b := startPair(t, a2aOpen+`hooks: { enabled: true, token: "hook-secret", allowRequestSessionKey: true },`)
	ca, cb := a.dial(t), b.dial(t)
	postHook(t, a, map[string]any{"sessionKey": "hook:out", "waitForCompletion": true,
		"message": toolLine("sessions_send", map[string]any{"sessionKey": "a2a:b", "timeoutSeconds": 30,
			"message": "x\n" + hostCalls(filepath.Join(markers, "m-a2a-out")) + "\n/then ROW-BACK"}) + "\n/then ok"})
	var peerKey string
	for _, s := range call(t, cb, "sessions.list", map[string]any{})["sessions"].([]any) {
		if k := s.(map[string]any)["key"].(string); strings.Contains(k, ":a2a:default:direct:a:") {
			peerKey = k
		}
	}
	if peerKey == "" {
		t.Fatal("no peer session on b")
	}
	refusedAll(t, cb, peerKey, 1)
	back := toolResults(t, ca, "agent:main:hook:out", "sessions_send")
	if len(back) != 1 || !strings.Contains(back[0], "ROW-BACK") {
		t.Fatalf("the reply did not come back: %q", back)
	}
	noMarkers(t, a, markers)
	noMarkers(t, b, markers)
}

// TestGeneratedTokenIsMasked: the gateway token generated into the state
// dir (no auth configured) is masked like a configured secret, in the
// run's error and in every log line.
func TestGeneratedTokenIsMasked(t *testing.T) {
	const generated = "generated-token-0123456789abcdef"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gateway.token"), []byte(generated+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeAgents(t, dir, "workspace", `/when "leak" /error 401 Invalid API key provided: Bearer `+generated)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startConfig(t, 0, dir, fmt.Sprintf(`{
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
}`, llm.URL()), llm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: g.url, Token: generated})
	if err != nil {
		t.Fatalf("dial with the generated token: %v", err)
	}
	defer c.Close()
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "idempotencyKey": "gen-1", "message": "leak"})
	w := call(t, c, "agent.wait", map[string]any{"runId": "gen-1", "timeoutMs": 30000})
	if e, _ := w["error"].(string); strings.Contains(e, generated) || !strings.Contains(e, "Bearer [redacted]") {
		t.Fatalf("run error = %v", w)
	}
	eventually(t, "the run's end in the log", func() bool { return strings.Contains(g.stdio.String(), "gen-1") })
	if strings.Contains(g.stdio.String(), generated) {
		t.Errorf("the console log holds the generated token:\n%s", g.stdio)
	}
}
