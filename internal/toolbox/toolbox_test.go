package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sandbox/dockertest"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// namedTool is a tool that only has a name (forRun only filters).
type namedTool string

func (n namedTool) Name() string          { return string(n) }
func (namedTool) Description() string     { return "" }
func (namedTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (namedTool) Call(context.Context, json.RawMessage) (*tools.Result, error) {
	return tools.JSONResult(map[string]any{}), nil
}

// builtinTool marks a built-in tool, to tell it from an MCP tool of the
// same name.
type builtinTool struct{ namedTool }

type mcpSource []tools.Tool

func (m mcpSource) Tools(context.Context) []tools.Tool { return m }

// forRun applies the agent's allow/deny and the sub-agent tool policy to
// MCP tools like to built-in ones; a built-in tool wins a name clash.
func TestToolboxForRunFiltersMCPTools(t *testing.T) {
	cfg, _, err := config.Parse("t.json5", []byte(`{
  tools: { deny: ["fs__write*"], subagents: { tools: { deny: ["docs__*"] } } },
  agents: { list: [{ id: "main" }, { id: "research", tools: { allow: ["docs__*"] } }] },
}`), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	b := &Box{conf: settings.Resolve(cfg), mcp: mcpSource{namedTool("docs__search"), namedTool("fs__write_file"), namedTool("fs__read_file"), namedTool("sessions_list")}}
	b.Set(builtinTool{"sessions_list"}, builtinTool{"agents_list"})
	names := func(info agent.RunInfo) []string {
		var out []string
		for _, t := range b.ForRun(t.Context(), info).All() {
			out = append(out, t.Name())
		}
		return out
	}
	for _, tc := range []struct {
		name string
		info agent.RunInfo
		want []string
	}{
		{"main", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"},
			[]string{"agents_list", "docs__search", "fs__read_file", "sessions_list"}},
		{"research allows docs only", agent.RunInfo{AgentID: "research", SessionKey: "agent:research:main"},
			[]string{"docs__search"}},
		{"sub-agent policy", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:subagent:x", Session: &store.Session{SpawnDepth: 1}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(tc.info)
			if tc.want == nil {
				if slices.Contains(got, "docs__search") || slices.Contains(got, "fs__write_file") || !slices.Contains(got, "fs__read_file") {
					t.Errorf("sub-agent tools = %v", got)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
		})
	}
	// The built-in sessions_list wins over the MCP tool of the same name.
	if tl, _ := b.ForRun(t.Context(), agent.RunInfo{AgentID: "main"}).Get("sessions_list"); tl != (builtinTool{"sessions_list"}) {
		t.Errorf("sessions_list = %#v, want the built-in one", tl)
	}
}

// sandboxKeeps gives a sandboxed session only the file tools its
// workspace mount allows (with none they work on the sandbox's private
// workspace).
func TestSandboxKeeps(t *testing.T) {
	tests := []struct {
		name, access string
		want         bool
	}{
		{"read", "none", true}, {"ls", "none", true}, {"write", "none", true}, {"apply_patch", "none", true}, {"exec", "none", true},
		{"read", "ro", true}, {"ls", "ro", true}, {"write", "ro", false}, {"edit", "ro", false}, {"apply_patch", "ro", false},
		{"write", "rw", true}, {"edit", "rw", true}, {"apply_patch", "rw", true}, {"sessions_list", "none", true},
	}
	for _, tt := range tests {
		if got := sandboxKeeps(tt.name, tt.access); got != tt.want {
			t.Errorf("sandboxKeeps(%q, %q) = %v, want %v", tt.name, tt.access, got, tt.want)
		}
	}
}

// A session sandboxed on the docker backend runs exec in a container of
// the configured daemon, and fails closed before the model is called when
// that daemon cannot be reached.
func TestToolboxDockerSandbox(t *testing.T) {
	eng := dockertest.New(t, "team/sbx:1")
	eng.Run = func(e *dockertest.Exec) int {
		fmt.Fprintf(e.Stdout, "in %s as %s\n", e.WorkingDir, e.Cmd[len(e.Cmd)-1])
		return 0
	}
	t.Setenv("DOCKER_HOST", eng.Host)
	ws := t.TempDir()
	cfg, _, err := config.Parse("t.json5", []byte(`{
  agents: { defaults: { sandbox: { mode: "all", backend: "docker", workspaceAccess: "rw", docker: { image: "team/sbx:1" } } },
    list: [{ id: "main" }] },
}`), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	b := &Box{conf: settings.Resolve(cfg)}
	t.Cleanup(func() { _ = b.dockerBackend().Close() })
	b.Set(shell.New(shell.Config{}))
	info := agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}
	if err := b.Preflight(context.Background(), info); err != nil {
		t.Fatalf("preflight: %v", err)
	}
	ex, ok := b.ForRun(t.Context(), info).Get("exec")
	if !ok {
		t.Fatal("no exec")
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{AgentID: "main", SessionKey: info.SessionKey, Workspace: ws})
	res, err := ex.Call(ctx, json.RawMessage(`{"command":"id -u"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "in /workspace as id -u\n" {
		t.Errorf("exec = %q", res.Text)
	}
	if got := eng.Created(); len(got) != 1 || got[0].Config.Image != "team/sbx:1" || got[0].HostConfig.NetworkMode != "none" {
		t.Errorf("created %+v", got)
	}

	down := &Box{conf: settings.Resolve(cfg)}
	down.docker = sandbox.NewDocker("unix://" + filepath.Join(t.TempDir(), "none.sock"))
	down.dockerOnce.Do(func() {})
	err = down.Preflight(context.Background(), info)
	if err == nil || !strings.Contains(err.Error(), "agent failed before reply: sandbox unavailable: Docker daemon unreachable") {
		t.Errorf("preflight without a daemon = %v", err)
	}
}

// A host run's tools are made once per tool set and agent: the next run
// of the agent gets the same set, another agent its own, and a new tool
// set (Set) is seen by the next run.
func TestToolboxForRunReusesHostTools(t *testing.T) {
	cfg, _, err := config.Parse("t.json5", []byte(`{
  tools: { deny: ["fs__write*"] },
  agents: { list: [{ id: "main" }, { id: "research", tools: { allow: ["docs__*"] } }] },
}`), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	b := &Box{conf: settings.Resolve(cfg)}
	b.Set(namedTool("docs__search"), namedTool("fs__write_file"), namedTool("sessions_list"))
	names := func(s *tools.Set) []string {
		var out []string
		for _, t := range s.All() {
			out = append(out, t.Name())
		}
		return out
	}
	main := agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}
	first := b.ForRun(t.Context(), main)
	if got := names(first); !slices.Equal(got, []string{"docs__search", "sessions_list"}) {
		t.Fatalf("main tools = %v", got)
	}
	if again := b.ForRun(t.Context(), main); again != first {
		t.Errorf("the next run of main made its tools again")
	}
	research := b.ForRun(t.Context(), agent.RunInfo{AgentID: "research", SessionKey: "agent:research:main"})
	if got := names(research); !slices.Equal(got, []string{"docs__search"}) {
		t.Errorf("research tools = %v, want [docs__search]", got)
	}
	b.Set(namedTool("docs__search"), namedTool("agents_list"))
	if got := names(b.ForRun(t.Context(), main)); !slices.Equal(got, []string{"agents_list", "docs__search"}) {
		t.Errorf("main tools after Set = %v, want [agents_list docs__search]", got)
	}
}
