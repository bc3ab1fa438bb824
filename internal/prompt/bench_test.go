package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/skills"
)

// BenchmarkBuilderWarmEmptyWorkspace is a warm turn's system prompt on a
// workspace without bootstrap, memory or skill files, as bench/gateway's
// sessions have: the stats of what is missing are what it costs.
func BenchmarkBuilderWarmEmptyWorkspace(b *testing.B) {
	state := b.TempDir()
	ws := filepath.Join(state, "workspace")
	if err := os.Mkdir(ws, 0o700); err != nil {
		b.Fatal(err)
	}
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {list: [{id: "main", default: true, workspace: %q}]}}`, ws),
		config.MapEnv(map[string]string{"HOME": b.TempDir(), "SWITCHBOARD_STATE_DIR": state}))
	if err != nil {
		b.Fatal(err)
	}
	set := settings.Resolve(cfg)
	build := Builder(set, nil, &skills.Agents{Resolve: set.SkillScope})
	info := agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}
	// Warm up past the window in which a folder changed just now is not
	// trusted (fsstamp).
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		build(b.Context(), info)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if got := build(b.Context(), info); got != "" {
			b.Fatalf("prompt %q", got)
		}
	}
}
