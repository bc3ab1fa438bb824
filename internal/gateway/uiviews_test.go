package gateway

import (
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// TestUIViewMethods: the read-only methods behind the reference Control
// UI's chat header, Systems page and task drawer answer in the
// reference's shapes.
func TestUIViewMethods(t *testing.T) {
	fake := &fakeSubagents{infos: []subagent.Info{
		{Record: subagent.Record{ChildRunID: "run-2", ChildSessionKey: "agent:main:subagent:c2", AgentID: "main",
			RequesterKey: "agent:main:main", Task: "count the files\nin the workspace", CreatedAt: 2000},
			RunStatus: "running", StartedAt: 2001},
		{Record: subagent.Record{ChildRunID: "run-1", ChildSessionKey: "agent:main:subagent:c1", AgentID: "main",
			RequesterKey: "agent:main:main", Task: "say hi", Label: "greeter", CreatedAt: 1000},
			RunStatus: "ok", StartedAt: 1001, EndedAt: 1500, AnnounceStatus: "dead"},
	}}
	stateDir := t.TempDir()
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.Subagents, c.StateDir = fake, stateDir }})
	c := e.operator()

	t.Run("chat.metadata", func(t *testing.T) {
		var res wire.ChatMetadataResult
		c.ok(wire.MethodChatMetadata, map[string]any{"agentId": "main", "sessionKey": "agent:main:main"}, &res)
		var names []string
		for _, cmd := range res.Commands {
			names = append(names, cmd.Name)
			if cmd.TextAliases[0] != "/"+cmd.Name || cmd.Source != "native" {
				t.Errorf("command %+v", cmd)
			}
		}
		if diff := cmp.Diff([]string{"new", "reset", "name", "stop", "compact", "context", "status", "tasks", "whoami", "help", "model", "models", "think", "send", "queue", "elevated"}, names); diff != "" {
			t.Errorf("commands (-want +got):\n%s", diff)
		}
		var list struct{ Models []map[string]any }
		c.ok(wire.MethodModelsList, nil, &list)
		if diff := cmp.Diff(list.Models, res.Models); diff != "" {
			t.Errorf("chat.metadata models differ from models.list (-list +metadata):\n%s", diff)
		}
		res2 := c.call(wire.MethodChatMetadata, map[string]any{"agentId": "nobody"})
		if res2.OK || res2.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("chat.metadata of an unknown agent = %+v", res2)
		}
	})

	t.Run("system.info", func(t *testing.T) {
		var res wire.SystemInfoResult
		c.ok(wire.MethodSystemInfo, map[string]any{}, &res)
		if res.PID != os.Getpid() || res.CPUCount != runtime.NumCPU() || res.NodeVersion != runtime.Version() ||
			res.Platform == "" || res.Arch == "" || res.UptimeMs < 0 || res.UtilityModel.Status != "unavailable" {
			t.Errorf("system.info = %+v", res)
		}
		if runtime.GOOS == "linux" && (res.MemoryTotalBytes <= 0 || len(res.LoadAverage) != 3 || res.Release == "") {
			t.Errorf("system.info on Linux lacks /proc facts: %+v", res)
		}
		if runtime.GOOS != "windows" && (res.DiskPath != stateDir || res.DiskTotalBytes <= 0 || res.DiskAvailableBytes > res.DiskTotalBytes) {
			t.Errorf("system.info disk of %s: %+v", stateDir, res)
		}
		if r := c.call(wire.MethodSystemInfo, map[string]any{"x": 1}); r.OK {
			t.Error("system.info took an unknown param")
		}
	})

	t.Run("environments.list", func(t *testing.T) {
		var res wire.EnvironmentsListResult
		c.ok(wire.MethodEnvironmentsList, map[string]any{"includeDesktopSetup": true}, &res)
		if len(res.Environments) != 1 || res.Environments[0].ID != "gateway" || res.Environments[0].Status != "available" || !res.Environments[0].SessionHost {
			t.Errorf("environments.list = %+v", res)
		}
	})

	t.Run("node.list", func(t *testing.T) {
		var res map[string]any
		c.ok(wire.MethodNodeList, map[string]any{}, &res)
		if nodes, ok := res["nodes"].([]any); !ok || len(nodes) != 0 || res["ts"] == nil {
			t.Errorf("node.list = %v, want no nodes and a ts", res)
		}
	})

	t.Run("skills.status", func(t *testing.T) {
		var res map[string]any
		c.ok(wire.MethodSkillsStatus, map[string]any{"agentId": "main"}, &res)
		if skills, ok := res["skills"].([]any); !ok || len(skills) != 0 || res["agentId"] != "main" {
			t.Errorf("skills.status = %v", res)
		}
	})

	t.Run("update.status", func(t *testing.T) {
		var res map[string]any
		c.ok(wire.MethodUpdateStatus, map[string]any{}, &res)
		if diff := cmp.Diff(map[string]any{"sentinel": nil, "updateAvailable": nil}, res); diff != "" {
			t.Errorf("update.status (-want +got):\n%s", diff)
		}
		reader := e.connect(wire.ScopeRead)
		if r := reader.call(wire.MethodUpdateStatus, map[string]any{}); r.OK || r.Error.Code != wire.CodeForbidden {
			t.Errorf("update.status with operator.read = %+v, want the admin scope asked for", r)
		}
	})

	t.Run("tasks.list", func(t *testing.T) {
		running := wire.Task{ID: "run-2", Kind: "subagent", Runtime: "subagent", Status: "running", Title: "count the files",
			AgentID: "main", SessionKey: "agent:main:main", OwnerKey: "agent:main:main", ChildSessionKey: "agent:main:subagent:c2",
			RunID: "run-2", CreatedAt: 2000, StartedAt: 2001, Prompt: "count the files\nin the workspace"}
		done := wire.Task{ID: "run-1", Kind: "subagent", Runtime: "subagent", Status: "completed", Title: "greeter",
			AgentID: "main", SessionKey: "agent:main:main", OwnerKey: "agent:main:main", ChildSessionKey: "agent:main:subagent:c1",
			RunID: "run-1", CreatedAt: 1000, StartedAt: 1001, EndedAt: 1500, DeliveryStatus: "failed", Prompt: "say hi"}
		for _, tc := range []struct {
			name   string
			params map[string]any
			want   []wire.Task
			calls  []string
		}{
			{"all", map[string]any{}, []wire.Task{running, done}, []string{`List("", false)`}},
			{"active, as the UI asks", map[string]any{"sessionKey": "main", "agentId": "main", "status": []string{"queued", "running"}, "limit": 200},
				[]wire.Task{running}, []string{`List("agent:main:main", true)`}},
			{"ended, as the UI asks", map[string]any{"sessionKey": "agent:main:main", "status": []string{"completed", "failed", "timed_out", "cancelled"}, "sortBy": "endedAt", "limit": 100},
				[]wire.Task{done}, []string{`List("agent:main:main", false)`}},
			{"one status", map[string]any{"status": "completed"}, []wire.Task{done}, []string{`List("", false)`}},
			{"limit", map[string]any{"limit": 1}, []wire.Task{running}, []string{`List("", false)`}},
			{"another agent", map[string]any{"agentId": "ops"}, []wire.Task{}, []string{`List("", false)`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var res wire.TasksListResult
				c.ok(wire.MethodTasksList, tc.params, &res)
				if diff := cmp.Diff(tc.want, res.Tasks); diff != "" {
					t.Errorf("tasks (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.calls, fake.takeCalls()); diff != "" {
					t.Errorf("registry calls (-want +got):\n%s", diff)
				}
			})
		}
		if r := c.call(wire.MethodTasksList, map[string]any{"status": "sleeping"}); r.OK || r.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("tasks.list with an unknown status = %+v", r)
		}
		fake.takeCalls()
	})

	// What Switchboard has no notion of answers empty, in the
	// reference's shape, and its params are checked as the reference
	// checks them.
	for _, tc := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"progressCard.get", map[string]any{"sessionKey": "main"}, `{"card":null}`},
		{"sessions.companion.state", map[string]any{"sessionKey": "main"}, `{"exchanges":[]}`},
		{"sessions.observer.visibility", map[string]any{"visible": true}, `{"ok":true}`},
		{"question.list", map[string]any{}, `{"questions":[]}`},
		{"sessions.branches.list", map[string]any{"sessionKey": "main"}, `{"branches":[]}`},
		{"node.pair.list", map[string]any{}, `{"pending":[],"paired":[]}`},
		{"device.pair.list", map[string]any{}, `{"pending":[],"paired":[]}`},
		{"plugin.approval.list", map[string]any{}, `[]`},
		{"openclaw.approval.list", map[string]any{}, `[]`},
		{"exec.approval.grants.list", map[string]any{"limit": 50}, `{"grants":[]}`},
		{"approval.history", map[string]any{"limit": 50}, `{"items":[]}`},
		{"artifacts.list", map[string]any{"sessionKey": "main"}, `{"artifacts":[]}`},
		{"skills.search", map[string]any{"query": "x"}, `{"results":[]}`},
		{"plugins.list", map[string]any{}, `{"plugins":[],"diagnostics":[],"mutationAllowed":false}`},
		{"channels.pairing.list", map[string]any{"channel": "telegram"},
			`{"accounts":[],"requests":[],"commandOwnerConfigured":false,"limits":{"pendingPerAccount":0,"ttlMs":0}}`},
		{"skills.library.list", map[string]any{"scope": "all"},
			`{"entries":[],"profileId":null,"multipleProfiles":false,"defaultTarget":"unavailable","canManageWorkspace":false,"defaultSelectionLimit":64}`},
	} {
		r := c.call(tc.method, tc.params)
		if !r.OK || string(r.Payload) != tc.want {
			t.Errorf("%s = %+v %s, want %s", tc.method, r.Error, r.Payload, tc.want)
		}
	}
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"sessions.branches.list", map[string]any{}},
		{"sessions.observer.visibility", map[string]any{}},
		{"approval.history", map[string]any{"kind": "nope"}},
		{"skills.library.list", map[string]any{"scope": "everyone"}},
		{"question.list", map[string]any{"extra": 1}},
	} {
		if r := c.call(tc.method, tc.params); r.OK || r.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("%s %v = %+v, want INVALID_REQUEST", tc.method, tc.params, r)
		}
	}
}
