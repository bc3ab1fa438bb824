package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// TestOpenClawA2APeers runs the reference gateway itself (npm openclaw,
// its A2A channel on, its model offline) and Switchboard as each other's
// A2A peers: a Switchboard agent's sessions_send to "a2a:ref" is answered
// by the reference's agent, and the reference's outbound message to
// "a2a:sb" (its gateway's send method, which its A2A channel delivers)
// reaches a Switchboard agent, whose reply is the task's artifact for the
// reference to read; so does the reference agent's message tool.
func TestOpenClawA2APeers(t *testing.T) {
	const sbToRef, refToSB = "sb-to-ref-token", "ref-to-sb-token"
	ref := NewOpenClawGateway(t)
	ws := startSwitchboardConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)), fmt.Sprintf(`
  channels: { a2a: { rateLimitPerMinute: 0, peers: { ref: { token: %q, url: %q, outboundToken: %q } } } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } }`, refToSB, ref.URL+"/a2a/v1", sbToRef))
	sbURL := "http" + strings.TrimPrefix(ws, "ws")
	ref.Start(t, map[string]any{"enabled": true, "rateLimitPerMinute": 0, "peers": map[string]any{
		"sb": map[string]any{"token": sbToRef, "url": sbURL + "/a2a/v1", "outboundToken": refToSB}}})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: ws, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	t.Run("SwitchboardToReference", func(t *testing.T) {
		// The reference's own state lock can refuse a message while its
		// background work (started with the gateway) holds it longer than
		// its busy timeout, which a loaded machine makes likely; that
		// refusal is the reference's, not the exchange under test, and the
		// message is sent again (a new run) a few times.
		var r map[string]any
		for attempt := 1; ; attempt++ {
			r = sessionsSend(ctx, t, c, "agent:main:main", fmt.Sprintf("to-ref-%d", attempt),
				map[string]any{"sessionKey": "a2a:ref", "message": "hello «from switchboard»", "timeoutSeconds": 90})
			if e, _ := r["error"].(string); attempt == 3 || !strings.Contains(e, referenceLockBusy) {
				break
			}
			t.Logf("attempt %d: the reference's state lock was busy: %v", attempt, r)
		}
		if r["status"] != "ok" || r["reply"] != "reference heard «from switchboard»" {
			t.Fatalf("sessions_send to the reference = %v\nreference output:\n%s", r, ref.Output())
		}
		if !slices.ContainsFunc(ref.ModelInputs(), func(s string) bool { return strings.Contains(s, "hello «from switchboard»") }) {
			t.Errorf("the reference's model never saw the message; it saw %q", ref.ModelInputs())
		}
	})

	t.Run("ReferenceToSwitchboard", func(t *testing.T) {
		cli := NewOpenClawCLI(t, ref.WSURL(), ref.Token)
		cli.Timeout = 90 * time.Second
		params, _ := json.Marshal(map[string]any{"to": "a2a:sb", "channel": "a2a", "message": "hello from the reference",
			"idempotencyKey": "ref-send-1"})
		out := cli.Run(t, "gateway", "call", "send", "--params", string(params), "--json")
		if out.ExitCode != 0 {
			t.Fatalf("openclaw gateway call send: exit %d\nstdout:\n%s\nstderr:\n%s\nreference output:\n%s",
				out.ExitCode, out.Stdout, out.Stderr, ref.Output())
		}
		// The reference's send result names the task Switchboard made.
		taskID, _ := out.JSON(t)["messageId"].(string)
		if taskID == "" {
			t.Fatalf("send result without messageId: %s", out.Stdout)
		}
		var task struct {
			ContextID string `json:"contextId"`
			Status    struct{ State string }
			Artifacts []struct{ Parts []struct{ Text string } }
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			a2aCall(t, sbURL, refToSB, "GetTask", map[string]any{"id": taskID}, &task)
			if task.Status.State != "TASK_STATE_WORKING" && task.Status.State != "TASK_STATE_SUBMITTED" || time.Now().After(deadline) {
				break
			}
		}
		if task.Status.State != "TASK_STATE_COMPLETED" || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 ||
			task.Artifacts[0].Parts[0].Text != "echo: hello from the reference" {
			t.Fatalf("Switchboard's task for the reference's message: %+v", task)
		}
		// The peer's (peer, contextId) session got the turn, not main.
		key := "agent:main:a2a:default:direct:ref:" + task.ContextID
		var hist struct{ Messages []map[string]any }
		if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 10}, &hist); err != nil {
			t.Fatal(err)
		}
		if len(hist.Messages) != 2 || hist.Messages[1]["role"] != "assistant" {
			t.Fatalf("history of %s: %v", key, hist.Messages)
		}
	})

	t.Run("ReferenceAgentToSwitchboard", func(t *testing.T) {
		// The reference's agent sends with its message tool, which its A2A
		// channel delivers the same way.
		cli := NewOpenClawCLI(t, ref.WSURL(), ref.Token)
		cli.Timeout = 120 * time.Second
		tool, _ := json.Marshal(map[string]any{"action": "send", "channel": "a2a", "target": "a2a:sb", "message": "from the reference agent"})
		params, _ := json.Marshal(map[string]any{"sessionKey": "main", "message": "TOOL:message " + string(tool), "idempotencyKey": "ref-agent-1"})
		for _, args := range [][]string{
			{"gateway", "call", "chat.send", "--params", string(params), "--json"},
			{"gateway", "call", "agent.wait", "--params", `{"runId":"ref-agent-1","timeoutMs":90000}`, "--json"},
		} {
			if out := cli.Run(t, args...); out.ExitCode != 0 || args[2] == "agent.wait" && out.JSON(t)["status"] != "ok" {
				t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s\nreference output:\n%s",
					args, out.ExitCode, out.Stdout, out.Stderr, ref.Output())
			}
		}
		// The reference keeps one context per peer: "ctx-oc-<peer>".
		key := "agent:main:a2a:default:direct:ref:ctx-oc-sb"
		var got []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var hist struct{ Messages []map[string]any }
			if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 20}, &hist); err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, m := range hist.Messages {
				b, _ := json.Marshal(m["content"])
				got = append(got, fmt.Sprint(m["role"], ": ", string(b)))
			}
			if n := len(got); n >= 2 && strings.Contains(got[n-2], "from the reference agent") && strings.Contains(got[n-1], "echo: from the reference agent") {
				return
			}
		}
		t.Fatalf("history of %s: %q\nthe reference's model saw %q", key, got, ref.ModelInputs())
	})
}

// referenceLockBusy is what the reference answers when another of its
// processes holds its state database's lifecycle lock.
const referenceLockBusy = "another OpenClaw process owns"

// sessionsSend has the session key's agent call sessions_send with args
// (through the scripted model's /tool line), waits for the run and
// returns the tool result's details.
func sessionsSend(ctx context.Context, t *testing.T, c *client.Client, key, runID string, args map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(args)
	var out map[string]any
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "idempotencyKey": runID,
		"message": "/tool sessions_send " + string(b) + "\n/then done"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 120000}, &out); err != nil || out["status"] != "ok" {
		t.Fatalf("agent.wait %s = %v, %v", runID, out, err)
	}
	var hist struct{ Messages []map[string]any }
	if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 1000}, &hist); err != nil {
		t.Fatal(err)
	}
	for i := len(hist.Messages) - 1; i >= 0; i-- {
		if m := hist.Messages[i]; m["role"] == "toolResult" && m["toolName"] == "sessions_send" {
			d, _ := m["details"].(map[string]any)
			return d
		}
	}
	t.Fatalf("no sessions_send result in %s", key)
	return nil
}

// a2aCall makes one A2A JSON-RPC call to the gateway at base as the peer
// with token and decodes its result into out; a JSON-RPC error fails the
// test.
func a2aCall(t *testing.T, base, token, method string, params, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/a2a/v1", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: HTTP %d: %v", method, resp.StatusCode, err)
	}
	if r.Error != nil {
		t.Fatalf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		t.Fatalf("%s: result: %v", method, err)
	}
}
