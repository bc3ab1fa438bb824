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
