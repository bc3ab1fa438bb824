package toolinvoke

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// recTool records the arguments and caller of each call.
type recTool struct {
	name   string
	schema string
	err    error
	panics bool
	args   json.RawMessage
	caller tools.Caller
}

func (t *recTool) Name() string        { return t.name }
func (t *recTool) Description() string { return "test tool" }
func (t *recTool) Schema() json.RawMessage {
	if t.schema == "" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return json.RawMessage(t.schema)
}
func (t *recTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	if t.panics {
		panic("boom")
	}
	t.args, t.caller = args, tools.CallerFrom(ctx)
	if t.err != nil {
		return nil, t.err
	}
	return tools.JSONResult(map[string]string{"ran": t.name}), nil
}

func newInvoker(t *testing.T, http bool, allow, deny []string, ts ...tools.Tool) (*Invoker, *[]string) {
	t.Helper()
	var asked []string
	iv, err := New(Config{
		Tools: func(_ context.Context, agentID, key string) *tools.Set {
			asked = append(asked, agentID+" "+key)
			if agentID == "restricted" {
				return tools.NewSet() // its policy offers nothing
			}
			return tools.NewSet(ts...)
		},
		Workspace:    func(_ context.Context, agentID string) string { return "/ws/" + agentID },
		DefaultAgent: "main",
		KnownAgent:   func(id string) bool { return id == "ops" || id == "restricted" },
		HTTP:         http, Allow: allow, Deny: deny,
	})
	if err != nil {
		t.Fatal(err)
	}
	return iv, &asked
}

func TestInvokeStatuses(t *testing.T) {
	list := &recTool{name: "sessions_list"}
	send := &recTool{name: "sessions_send"}
	bad := &recTool{name: "bad_args", err: tools.InputErrorf("sessionKey required")}
	broken := &recTool{name: "broken", err: errors.New("disk on fire at /secret/path")}
	panicky := &recTool{name: "panicky", panics: true}
	all := []tools.Tool{list, send, bad, broken, panicky}
	tests := []struct {
		name        string
		http        bool
		allow, deny []string
		req         Request
		status      int
		typ, msg    string
	}{
		{"ok", true, nil, nil, Request{Tool: "sessions_list"}, 200, "", ""},
		{"no name", true, nil, nil, Request{Tool: "  "}, 400, TypeInvalidRequest, "tools.invoke requires name"},
		{"unknown tool", true, nil, nil, Request{Tool: "nope"}, 404, TypeNotFound, "Tool not available: nope"},
		{"http deny list", true, nil, nil, Request{Tool: "sessions_send"}, 404, TypeNotFound, "Tool not available: sessions_send"},
		{"http allow re-enables", true, []string{"sessions_send"}, nil, Request{Tool: "sessions_send"}, 200, "", ""},
		{"http deny extra", true, nil, []string{"sessions_list"}, Request{Tool: "sessions_list"}, 404, TypeNotFound, "Tool not available: sessions_list"},
		{"rpc has no http deny list", false, nil, nil, Request{Tool: "sessions_send"}, 200, "", ""},
		{"agent policy", true, nil, nil, Request{Tool: "sessions_list", AgentID: "restricted"}, 404, TypeNotFound, "Tool not available: sessions_list"},
		{"unknown agent", true, nil, nil, Request{Tool: "sessions_list", AgentID: "ghost"}, 400, TypeInvalidRequest, `Unknown agent id "ghost"`},
		{"unknown key agent", true, nil, nil, Request{Tool: "sessions_list", SessionKey: "agent:ghost:main"}, 400, TypeInvalidRequest, `Unknown agent id "ghost"`},
		{"agent conflict", true, nil, nil, Request{Tool: "sessions_list", SessionKey: "agent:main:main", AgentID: "ops"}, 400, TypeInvalidRequest, `agent "ops" does not match session key agent "main"`},
		{"input error", true, nil, nil, Request{Tool: "bad_args"}, 400, TypeToolError, "sessionKey required"},
		{"execution error sanitised", true, nil, nil, Request{Tool: "broken"}, 500, TypeToolError, "tool execution failed"},
		{"panic sanitised", true, nil, nil, Request{Tool: "panicky"}, 500, TypeToolError, "tool execution failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iv, _ := newInvoker(t, tt.http, tt.allow, tt.deny, all...)
			o := iv.Invoke(context.Background(), tt.req)
			if o.Status != tt.status {
				t.Fatalf("status = %d, want %d (%+v)", o.Status, tt.status, o.Err)
			}
			if tt.status == http.StatusOK {
				if !o.OK() || o.Result == nil {
					t.Fatalf("outcome = %+v", o)
				}
				return
			}
			if o.OK() || o.Err.Type != tt.typ || o.Err.Message != tt.msg {
				t.Errorf("error = %+v, want %s %q", o.Err, tt.typ, tt.msg)
			}
		})
	}
}

func TestInvokeResolvesSessionAndCaller(t *testing.T) {
	tests := []struct {
		name            string
		global          bool
		req             Request
		wantAgent, want string
	}{
		{"default main", false, Request{}, "main", "agent:main:main"},
		{"main alias", false, Request{SessionKey: "MAIN"}, "main", "agent:main:main"},
		{"agent main", false, Request{AgentID: "ops"}, "ops", "agent:ops:main"},
		{"agent custom key", false, Request{AgentID: "ops", SessionKey: "work"}, "ops", "agent:ops:work"},
		{"full key", false, Request{SessionKey: "agent:ops:discord:group:x"}, "ops", "agent:ops:discord:group:x"},
		{"global scope", true, Request{}, "main", "global"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := &recTool{name: "sessions_list"}
			iv, asked := newInvoker(t, true, nil, nil, tool)
			iv.cfg.GlobalScope = tt.global
			tt.req.Tool = "sessions_list"
			tt.req.Channel = " Slack "
			o := iv.Invoke(context.Background(), tt.req)
			if !o.OK() {
				t.Fatalf("outcome = %+v", o.Err)
			}
			if o.SessionKey != tt.want || o.AgentID != tt.wantAgent {
				t.Errorf("target = %s %s, want %s %s", o.AgentID, o.SessionKey, tt.wantAgent, tt.want)
			}
			c := tool.caller
			if c.SessionKey != tt.want || c.AgentID != tt.wantAgent || c.Channel != "slack" || c.Workspace != "/ws/"+tt.wantAgent {
				t.Errorf("caller = %+v", c)
			}
			if !slices.Equal(*asked, []string{tt.wantAgent + " " + tt.want}) {
				t.Errorf("tool sets asked for %q", *asked)
			}
		})
	}
}

func TestInvokeArgs(t *testing.T) {
	withAction := `{"type":"object","properties":{"action":{"type":"string"}}}`
	tests := []struct {
		name, schema, action, args, want string
	}{
		{"no args", "", "", "", `{}`},
		{"array args", "", "", `[1,2]`, `{}`},
		{"null args", "", "", `null`, `{}`},
		{"kept", "", "", `{"limit":2}`, `{"limit":2}`},
		{"action merged", withAction, "json", `{"limit":2}`, `{"action":"json","limit":2}`},
		{"action not in schema", "", "json", `{"limit":2}`, `{"limit":2}`},
		{"args action wins", withAction, "json", `{"action":"list"}`, `{"action":"list"}`},
		{"blank action", withAction, "  ", `{}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := &recTool{name: "x", schema: tt.schema}
			iv, _ := newInvoker(t, false, nil, nil, tool)
			o := iv.Invoke(context.Background(), Request{Tool: "x", Action: tt.action, Args: json.RawMessage(tt.args)})
			if !o.OK() {
				t.Fatalf("outcome = %+v", o.Err)
			}
			if string(tool.args) != tt.want {
				t.Errorf("args = %s, want %s", tool.args, tt.want)
			}
		})
	}
}

func TestNewRequiresTools(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New accepted a config without Tools")
	}
}

func FuzzMergeAction(f *testing.F) {
	f.Add(`{"properties":{"action":{}}}`, "json", `{"a":1}`)
	f.Add(`{}`, "", `{}`)
	f.Add(`[]`, "x", `{"action":null}`)
	f.Fuzz(func(t *testing.T, schema, action, args string) {
		if !json.Valid([]byte(args)) {
			return
		}
		out := MergeAction(json.RawMessage(schema), action, json.RawMessage(args))
		if !json.Valid(out) {
			t.Fatalf("MergeAction produced invalid JSON %q", out)
		}
	})
}
