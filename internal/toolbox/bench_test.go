package toolbox

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// BenchmarkForRunHost is the tool set of a warm turn on the host: a main
// session with exec, process and two dozen other tools.
func BenchmarkForRunHost(b *testing.B) {
	cfg, _, err := config.Parse("t.json5", []byte(`{ tools: { deny: ["browser"] } }`),
		config.MapEnv(map[string]string{"HOME": b.TempDir()}))
	if err != nil {
		b.Fatal(err)
	}
	box := &Box{conf: settings.Resolve(cfg)}
	ts := []tools.Tool{shell.New(shell.Config{}), namedTool("process"), namedTool("browser")}
	for _, n := range []string{"read", "write", "edit", "ls", "apply_patch", "web_fetch", "web_search",
		"sessions_list", "sessions_send", "sessions_spawn", "sessions_history", "agents_list", "memory_search",
		"memory_get", "cron", "message", "image", "gateway", "canvas", "nodes", "tts"} {
		ts = append(ts, namedTool(n))
	}
	box.Set(ts...)
	info := agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}
	b.ReportAllocs()
	for b.Loop() {
		if box.ForRun(b.Context(), info).Len() == 0 {
			b.Fatal("no tools")
		}
	}
}

// TestSandboxedMakesNoMainKeyOnTheHost checks that the sandbox check a
// run makes three times a turn (its tools, its preflight, its workspace)
// makes nothing for an agent whose sandbox is off, and still compares
// with the agent's main session for non-main.
func TestSandboxedMakesNoMainKeyOnTheHost(t *testing.T) {
	cfg, _, err := config.Parse("t.json5", []byte(`{ agents: { list: [{ id: "main" }, { id: "ops", sandbox: { mode: "non-main" } }] } }`),
		config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	box := &Box{conf: settings.Resolve(cfg)}
	host := box.conf.Agent("main")
	if box.sandboxed(&host, "agent:main:main") || box.sandboxed(&host, "agent:main:other") {
		t.Fatal("an agent without a sandbox runs sandboxed")
	}
	if n := testing.AllocsPerRun(50, func() { box.sandboxed(&host, "agent:main:other") }); n != 0 {
		t.Errorf("the sandbox check of a host agent made %v allocations, want 0", n)
	}
	ops := box.conf.Agent("ops")
	if box.sandboxed(&ops, "agent:ops:main") || !box.sandboxed(&ops, "agent:ops:other") {
		t.Error("non-main: the main session must run on the host and the others sandboxed")
	}
}
