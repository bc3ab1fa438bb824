package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/mcp"
	"github.com/switchboardhq/switchboard/internal/relay"
)

// sendBlocked is the reference's refusal of a message the session's send
// policy blocks.
const sendBlocked = "send blocked by session policy"

// door is one way into the gateway, driven through its real protocol:
// send hands it text and returns what the door answered (the reply the
// sender reads, or the door's refusal), key is the session it reaches.
type door struct {
	name string
	// commands: the door's sender may run commands (the operator, an
	// allowlisted direct-message sender); other doors' text reaches the
	// model as it is.
	commands bool
	key      func() string
	send     func(t *testing.T, text string) string
}

// startDoors starts a gateway with every door open (Telegram with an
// allowlisted sender, A2A with peer alpha, hooks, the HTTP API, the
// session tools, cron, the MCP server), extra added to its config, and
// returns the doors.
func startDoors(t *testing.T, extra string) (*gateway, *client.Client, []door) {
	t.Helper()
	const bot = "987654:fake-bot-token"
	fake := tgfake.Start(t, bot)
	cfg := fmt.Sprintf(`channels: { telegram: { botToken: %q, apiRoot: %q, dmPolicy: "allowlist", allowFrom: ["tg:7"] },
    a2a: { peers: { alpha: { token: "alpha-secret" } }, rateLimitPerMinute: 0 } },
  hooks: { enabled: true, token: "hook-secret", allowRequestSessionKey: true },
  gateway: { auth: { mode: "token", token: %q }, http: { endpoints: { chatCompletions: { enabled: true } } } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  %s`, bot, fake.URL(), token, extra)
	g := startWith(t, "", nil, "", cfg)
	c := g.dial(t)
	base := strings.Replace(g.url, "ws://", "http://", 1)
	ctx := context.Background()
	n := 0
	next := func(p string) string { n++; return fmt.Sprintf("%s-%d", p, n) }
	// The cron door: one job, its message set before each forced run.
	job := call(t, c, "cron.add", map[string]any{
		"name":     "door",
		"schedule": map[string]any{"kind": "at", "at": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)},
		"payload":  map[string]any{"kind": "agentTurn", "message": "unused"},
	})
	jobID, _ := job["id"].(string)
	// The MCP door: the session tools through the gateway's MCP server, as
	// the session mcp-requester.
	mcpc := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	ms, err := mcpc.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{
		Transport: headerRT{http.Header{"Authorization": {"Bearer " + token}, mcp.SessionHeader: {"mcp-requester"}}, http.DefaultTransport},
	}}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { ms.Close() })

	doors := []door{
		{name: "websocket", commands: true, key: fixed("agent:main:ws-door"), send: func(t *testing.T, text string) string {
			id := next("ws")
			var res map[string]any
			if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "ws-door", "message": text, "idempotencyKey": id}, &res); err != nil {
				return err.Error()
			}
			if res["status"] == "started" {
				call(t, c, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000})
			}
			return lastAssistant(t, c, "agent:main:ws-door")
		}},
		{name: "http", commands: true, key: fixed("agent:main:http-door"), send: func(t *testing.T, text string) string {
			body, _ := json.Marshal(map[string]any{"model": "openclaw", "messages": []map[string]any{{"role": "user", "content": text}}})
			code, out := httpJSON(t, base+"/v1/chat/completions", "Bearer "+token, string(body), "X-Openclaw-Session-Key", "http-door")
			if e, ok := out["error"].(map[string]any); ok {
				return fmt.Sprint(e["message"])
			}
			choices, _ := out["choices"].([]any)
			if code != 200 || len(choices) != 1 {
				t.Fatalf("chat completion = %d %v", code, out)
			}
			return fmt.Sprint(choices[0].(map[string]any)["message"].(map[string]any)["content"])
		}},
		{name: "telegram", commands: true, key: fixed("agent:main:main"), send: func(t *testing.T, text string) string {
			// The log is read before the push: the refusal may be logged
			// before this goroutine looks again.
			before, logs := len(fake.Sent()), g.stdio.String()
			fake.Push(tgfake.DM(7, "Ann", text))
			if strings.Contains(text, "denied") {
				eventually(t, "the refusal logged", func() bool {
					return strings.Count(g.stdio.String(), "refused by the send policy") > strings.Count(logs, "refused by the send policy")
				})
				if len(fake.Sent()) != before {
					t.Fatalf("a refused message was answered: %v", fake.Sent()[before:])
				}
				return sendBlocked
			}
			return fake.WaitSent(t, before+1, 30*time.Second)[before].Text
		}},
		{name: "a2a", key: func() string { return findSession(t, c, "a2a:default:direct:alpha:ctx-door") }, send: func(t *testing.T, text string) string {
			m := a2aPost(t, g, "alpha-secret", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+next("m")+
				`","role":"ROLE_USER","contextId":"ctx-door","parts":[{"text":`+string(must(json.Marshal(text)))+`}]}}}`)
			res, _ := m["result"].(map[string]any)
			task, _ := res["task"].(map[string]any)
			if task == nil {
				t.Fatalf("SendMessage = %v", m)
			}
			if arts, _ := task["artifacts"].([]any); len(arts) > 0 {
				parts := arts[0].(map[string]any)["parts"].([]any)
				return fmt.Sprint(parts[0].(map[string]any)["text"])
			}
			return string(must(json.Marshal(task["status"])))
		}},
		{name: "hooks", key: fixed("agent:main:hook:door"), send: func(t *testing.T, text string) string {
			body, _ := json.Marshal(map[string]any{"message": text, "sessionKey": "hook:door", "waitForCompletion": true})
			code, out := httpJSON(t, base+"/hooks/agent", "Bearer hook-secret", string(body))
			if code != 200 {
				return fmt.Sprint(out["error"])
			}
			return lastAssistant(t, c, "agent:main:hook:door")
		}},
		{name: "sessions_send", key: fixed("agent:main:send-door"), send: func(t *testing.T, text string) string {
			d := toolResult(t, c, "send-requester", next("req"), "sessions_send",
				map[string]any{"sessionKey": "agent:main:send-door", "message": text, "timeoutSeconds": 30})
			if d["status"] != "ok" {
				return fmt.Sprint(d["error"])
			}
			announced(t, c, d["runId"])
			return fmt.Sprint(d["reply"])
		}},
		{name: "cron", key: func() string { return "agent:main:cron:" + jobID }, send: func(t *testing.T, text string) string {
			call(t, c, "cron.update", map[string]any{"id": jobID, "patch": map[string]any{"payload": map[string]any{"kind": "agentTurn", "message": text}}})
			var run map[string]any
			if err := c.Call(ctx, "cron.run", map[string]any{"id": jobID, "mode": "force"}, &run); err != nil {
				return err.Error()
			}
			call(t, c, "agent.wait", map[string]any{"runId": run["runId"], "timeoutMs": 30000})
			return lastAssistant(t, c, "agent:main:cron:"+jobID)
		}},
		{name: "mcp", key: fixed("agent:main:mcp-door"), send: func(t *testing.T, text string) string {
			res, err := ms.CallTool(ctx, &sdk.CallToolParams{Name: "sessions_send",
				Arguments: map[string]any{"sessionKey": "agent:main:mcp-door", "message": text, "timeoutSeconds": 30}})
			if err != nil || len(res.Content) == 0 {
				t.Fatalf("MCP sessions_send = %v, %v", res, err)
			}
			var d map[string]any
			if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &d); err != nil {
				t.Fatalf("MCP sessions_send: %v", err)
			}
			if d["status"] != "ok" {
				return fmt.Sprint(d["error"])
			}
			announced(t, c, d["runId"])
			return fmt.Sprint(d["reply"])
		}},
	}
	return g, c, doors
}

// announced waits for the announce step that follows a sessions_send's
// reply (runId the send's run): the relay starts it after the reply, so
// without the wait it may still run, or wait on the target's lane, when
// the door's next message arrives.
func announced(t *testing.T, c *client.Client, runID any) {
	t.Helper()
	call(t, c, "agent.wait", map[string]any{"runId": relay.StepRunID(fmt.Sprint(runID), "announce"), "timeoutMs": 30000})
}

// TestOneAdmissionForEveryDoor: one rule, decided in admission, answers
// the same from every door. /queue collect, /compact and /new are carried
// out for the operator (WebSocket, HTTP) and an allowlisted Telegram
// sender, with the same reply text; from A2A peers, webhooks and
// sessions_send, cron and MCP's sessions_send they are text for the model (A2A peers' slash messages are
// rejected by the A2A door with the reference's text). A session whose send
// policy denies refuses every door with the reference's text (Telegram
// sends nothing back: the policy forbids sending to that chat).
func TestOneAdmissionForEveryDoor(t *testing.T) {
	g, c, doors := startDoors(t, "")
	// What the operator's WebSocket answers is the reference for the
	// doors that run commands.
	answers := map[string]string{}
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			if got := d.send(t, "hello"); got != "echo: hello" {
				t.Fatalf("hello = %q", got)
			}
			key := d.key()
			for _, cmd := range []string{"/queue collect", "/compact", "/new"} {
				// /compact's summary call reaches the model; no turn does.
				before, _ := modelRequests(g.llm)
				got := d.send(t, cmd)
				switch {
				case d.name == "a2a":
					if !strings.Contains(got, "A2A peers cannot execute slash commands") {
						t.Errorf("%s = %q, want the A2A door's rejection", cmd, got)
					}
				case !d.commands:
					if got != "echo: "+cmd {
						t.Errorf("%s = %q, want the model's answer to the text", cmd, got)
					}
				default:
					if after, _ := modelRequests(g.llm); len(after) != len(before) {
						t.Errorf("%s reached the model as a turn", cmd)
					}
					if want, ok := answers[cmd]; ok && got != want {
						t.Errorf("%s = %q, the operator's WebSocket answered %q", cmd, got, want)
					}
					answers[cmd] = got
				}
			}
			// The operator reads the session's queue settings: collect only
			// where the command ran.
			call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": "/queue", "idempotencyKey": "show-" + d.name})
			if shown := lastAssistant(t, c, key); strings.Contains(shown, "mode=collect") != d.commands {
				t.Errorf("queue settings of %s after /queue collect: %q", key, shown)
			}
			call(t, c, "sessions.patch", map[string]any{"key": key, "sendPolicy": "deny"})
			if got := d.send(t, "denied message"); !strings.Contains(got, sendBlocked) {
				t.Errorf("a message to a denied session = %q, want %q", got, sendBlocked)
			}
		})
	}
	for cmd, want := range map[string]string{"/queue collect": "collect", "/compact": "ompact", "/new": "New session started"} {
		if !strings.Contains(answers[cmd], want) {
			t.Errorf("%s answered %q", cmd, answers[cmd])
		}
	}
}

// TestQueueCapBoundsEveryDoor: with messages.queue.cap 1 and drop "new",
// a busy session with one message waiting refuses the next from every door
// with the reference's text (before, only the WebSocket set a cap).
func TestQueueCapBoundsEveryDoor(t *testing.T) {
	g, c, doors := startDoors(t, `messages: { queue: { mode: "followup", cap: 1, drop: "new" } },`)
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			if got := d.send(t, "hello"); got != "echo: hello" {
				t.Fatalf("hello = %q", got)
			}
			key := d.key()
			before := g.llm.Count()
			call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": "/stall", "idempotencyKey": "stall-" + d.name})
			eventually(t, "the stalled turn at the model", func() bool { return g.llm.Count() > before })
			call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": "waiting", "idempotencyKey": "wait-" + d.name})
			if got := d.send(t, "over the cap"); !strings.Contains(got, `queue full: the session already has 1 queued messages (messages.queue.drop is \"new\")`) &&
				!strings.Contains(got, `queue full: the session already has 1 queued messages (messages.queue.drop is "new")`) {
				t.Errorf("a message over the cap = %q", got)
			}
			call(t, c, "chat.abort", map[string]any{"sessionKey": key})
		})
	}
}

func fixed(key string) func() string { return func() string { return key } }

// headerRT adds headers to every request.
type headerRT struct {
	h    http.Header
	next http.RoundTripper
}

// RoundTrip sends a copy of r with the headers added.
func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return rt.next.RoundTrip(r)
}

// httpJSON posts body with the authorization and headers (name, value
// pairs) and returns the status and decoded answer.
func httpJSON(t *testing.T, url, auth, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := (&http.Client{Timeout: time.Minute}).Do(req) // a door that never answers fails the test
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// lastAssistant is the text of key's last assistant message.
func lastAssistant(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	msgs := history(t, c, key)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "assistant" {
			s := texts(msgs[i : i+1])[0]
			return strings.TrimPrefix(s, "assistant: ")
		}
	}
	t.Fatalf("no assistant message in %s", key)
	return ""
}

// findSession is the key of the session whose key ends with suffix.
func findSession(t *testing.T, c *client.Client, suffix string) string {
	t.Helper()
	list := call(t, c, "sessions.list", map[string]any{})
	for _, r := range list["sessions"].([]any) {
		if k, _ := r.(map[string]any)["key"].(string); strings.HasSuffix(k, suffix) {
			return k
		}
	}
	t.Fatalf("no session ending %s", suffix)
	return ""
}
