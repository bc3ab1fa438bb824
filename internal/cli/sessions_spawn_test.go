package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestDecodeSpawn(t *testing.T) {
	for _, tt := range []struct {
		name    string
		res     wire.ToolsInvokeResult
		wantKey string
		wantErr string
	}{
		{name: "accepted", res: wire.ToolsInvokeResult{Details: json.RawMessage(
			`{"status":"accepted","childSessionKey":"agent:main:subagent:x","runId":"r1","mode":"run"}`)},
			wantKey: "agent:main:subagent:x"},
		{name: "forbidden", res: wire.ToolsInvokeResult{Details: json.RawMessage(
			`{"status":"forbidden","error":"sessions_spawn is not allowed at this depth"}`)},
			wantErr: "sessions_spawn forbidden: sessions_spawn is not allowed at this depth"},
		{name: "tool error", res: wire.ToolsInvokeResult{IsError: true, Details: json.RawMessage(
			`{"status":"error","tool":"sessions_spawn","error":"task required"}`)},
			wantErr: "sessions_spawn error: task required"},
		{name: "text only", res: wire.ToolsInvokeResult{IsError: true, Details: json.RawMessage(`{}`),
			Content: []wire.TextBlock{{Type: "text", Text: "it broke"}}},
			wantErr: "sessions_spawn -: it broke"},
		{name: "accepted without ids", res: wire.ToolsInvokeResult{Details: json.RawMessage(`{"status":"accepted"}`)},
			wantErr: "sessions_spawn: accepted without a child session and run id"},
		{name: "not run", res: wire.ToolsInvokeResult{Error: &wire.ToolsInvokeError{Code: "validation_error", Message: `Unknown agent id "ghost"`}},
			wantErr: `sessions_spawn: Unknown agent id "ghost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeSpawn(&tt.res)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || d.ChildSessionKey != tt.wantKey {
				t.Errorf("decodeSpawn = %+v, %v", d, err)
			}
		})
	}
}

func TestLastAssistantText(t *testing.T) {
	msgs := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"task"}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"the child's answer"}],"__openclaw":{"runId":"r1"}}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"toolCall","name":"x"}],"__openclaw":{"runId":"r1"}}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"a later run"}],"__openclaw":{"runId":"r2"}}`),
		json.RawMessage(`{"role":"toolResult","content":"tool text"}`),
	}
	if got := lastAssistantText(msgs, "r1"); got != "the child's answer" {
		t.Errorf("run r1 = %q", got)
	}
	if got := lastAssistantText(msgs, "r9"); got != "a later run" {
		t.Errorf("unknown run = %q", got)
	}
	if got := lastAssistantText(msgs[:1], "r1"); got != "" {
		t.Errorf("no assistant = %q", got)
	}
}

func TestIndentRest(t *testing.T) {
	if got, want := indentRest("one\ntwo\n\nthree"), "one\n  two\n\n  three"; got != want {
		t.Errorf("indentRest = %q, want %q", got, want)
	}
}

func TestPrefixWriter(t *testing.T) {
	var w chunkWriter
	p := &prefixWriter{w: &w, prefix: "child k: "}
	p.Write(nil)
	p.Write([]byte("one "))
	p.Write([]byte("two"))
	if got := strings.Join(w.chunks, ""); got != "child k: one two" {
		t.Errorf("written %q", got)
	}
}

var spawnHeader = regexp.MustCompile(`^Child session: (agent:main:subagent:\S+)\nRun ID:        (\S+)\n`)

func TestSessionsSpawn(t *testing.T) {
	g := startGateway(t, "")

	t.Run("follow", func(t *testing.T) {
		// --wait is the default, and taken as sessions send takes it.
		out := g.mustRun("sessions", "spawn", "say hi\n/reply hello from\n/reply the child", "--label", "greeter", "--wait")
		m := spawnHeader.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("stdout lacks the spawn header:\n%s", out)
		}
		key, runID := m[1], m[2]
		rest := out[len(m[0]):]
		want := regexp.MustCompile(`^child ` + regexp.QuoteMeta(key) + `: hello from\nthe child\nStatus: ok \(\S+\)\nResult: hello from\n  the child\n$`)
		if !want.MatchString(rest) {
			t.Errorf("stdout after the header:\n%s", rest)
		}
		var list wire.SubagentsListResult
		if err := json.Unmarshal([]byte(g.mustRun("subagents", "list", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range list.Subagents {
			if s.ChildRunID == runID {
				found = s.ChildSessionKey == key && s.Label == "greeter" && s.RequesterKey == "agent:main:main"
			}
		}
		if !found {
			t.Errorf("spawned run %s not listed as expected: %+v", runID, list.Subagents)
		}
	})

	t.Run("arguments", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"main", "summarise"}, `spawn takes one argument, the task; the requester session is --session (default main): switchboard sessions spawn --session main "summarise"`},
			{nil, `spawn takes one argument, the task ("-" reads it from stdin); got 0`},
			{[]string{"a", "b", "c"}, `spawn takes one argument, the task ("-" reads it from stdin); got 3`},
			{[]string{"task", "--wait", "--no-wait"}, `if any flags in the group [wait no-wait] are set none of the others can be; [no-wait wait] were all set`},
		} {
			if r := g.run(append([]string{"sessions", "spawn"}, tt.args...)...); r.errText() != tt.want {
				t.Errorf("spawn %q: err %q, want %q", tt.args, r.errText(), tt.want)
			}
		}
	})

	t.Run("child fails", func(t *testing.T) {
		r := g.run("sessions", "spawn", "fail\n/reply partial\n/error 500 boom")
		m := spawnHeader.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("stdout lacks the spawn header:\n%s", r.stdout)
		}
		if want := "child run " + m[2] + " failed: "; !strings.HasPrefix(r.errText(), want) || !strings.Contains(r.errText(), "boom") {
			t.Errorf("err = %q, want %q…boom", r.errText(), want)
		}
		if rest := r.stdout[len(m[0]):]; !strings.HasPrefix(rest, "child "+m[1]+": partial\nStatus: error") {
			t.Errorf("stdout after the header:\n%s", rest)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := g.mustRun("sessions", "spawn", "j\n/reply json child", "--json")
		m := decodeJSON(t, out)
		spawn, _ := m["spawn"].(map[string]any)
		status, _ := m["status"].(map[string]any)
		if spawn["status"] != "accepted" || status["status"] != "ok" || status["runId"] != spawn["runId"] || m["result"] != "json child" {
			t.Errorf("spawn --json = %s", out)
		}
	})

	t.Run("no wait", func(t *testing.T) {
		out := g.mustRun("sessions", "spawn", "later\n/reply eventually", "--no-wait")
		if !spawnHeader.MatchString(out) || strings.Count(out, "\n") != 2 {
			t.Errorf("spawn --no-wait = %q", out)
		}
		m := decodeJSON(t, g.mustRun("sessions", "spawn", "later\n/reply eventually", "--no-wait", "--json"))
		if details, _ := m["details"].(map[string]any); m["ok"] != true || m["tool"] != "sessions_spawn" || details["status"] != "accepted" {
			t.Errorf("spawn --no-wait --json = %v", m)
		}
	})

	t.Run("refused", func(t *testing.T) {
		r := g.run("sessions", "spawn", "x", "--agent", "ops")
		if want := "sessions_spawn forbidden: agentId is not allowed for sessions_spawn (allowed: none)"; r.errText() != want {
			t.Errorf("err = %q, want %q", r.errText(), want)
		}
		if r := g.run("sessions", "spawn", " "); r.errText() != "task is empty" {
			t.Errorf("empty task: %v", r.err)
		}
	})
}
