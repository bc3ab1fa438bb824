package daemon

import (
	"cmp"
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
	"github.com/switchboardhq/switchboard/internal/tools/web"
)

// toolbox holds every tool and decides which a run gets.
type toolbox struct {
	conf *settings.Settings
	all  atomic.Pointer[tools.Set]
	// mcp supplies the tools of the configured MCP servers (nil: none).
	mcp interface {
		Tools(ctx context.Context) []tools.Tool
	}
}

func (b *toolbox) set(ts ...tools.Tool) { b.all.Store(tools.NewSet(ts...)) }

// All returns every tool (the MCP server picks the session tools from it).
func (b *toolbox) All() *tools.Set { return b.all.Load() }

// forRun returns the tools offered to a run: those the global and the
// agent's tool selection keep (tools.profile, allow, alsoAllow, deny, and
// agents.list[].tools), and for a sub-agent further minus what the
// sub-agent tool policy denies at its depth (reference §9.4). A removed
// tool's schema never reaches the model.
func (b *toolbox) forRun(info agent.RunInfo) *tools.Set {
	all := b.all.Load()
	if b.mcp != nil {
		// MCP servers start here, on the first run that needs tools. The
		// built-in tools come last so that they win a name clash.
		if ext := b.mcp.Tools(context.Background()); len(ext) > 0 {
			all = tools.NewSet(append(ext, all.All()...)...)
		}
	}
	ag := b.conf.Agent(info.AgentID)
	global, own := b.conf.Tools, ag.Tools
	// No sandbox backend exists yet: a session its sandbox mode marks as
	// sandboxed does not get exec, rather than running commands on the
	// host it believes isolated (fail closed).
	sandboxed := policy.ChildSandboxed(ag.SandboxMode, info.SessionKey,
		sessionkey.MainKey(ag.ID, b.conf.MainKey))
	all = all.Filter(func(t tools.Tool) bool {
		if sandboxed && t.Name() == shell.ToolName {
			return false
		}
		return policy.ToolOffered(t.Name(), global, own)
	})
	depth := sessionkey.SubagentDepth(info.SessionKey)
	if info.Session != nil && info.Session.SpawnDepth > depth {
		depth = info.Session.SpawnDepth
	}
	if depth == 0 {
		return all
	}
	tp := b.conf.Subagents.Tools
	maxDepth := b.conf.Subagents.MaxSpawnDepth
	return all.Filter(func(t tools.Tool) bool {
		return policy.SubagentToolAllowed(t.Name(), depth, maxDepth, tp.Allow, tp.AlsoAllow, tp.Deny)
	})
}

// workspaces resolves the directory a run works in: its agent's workspace,
// except that a sub-agent works in the workspace of the session tree's root
// (the spec: sub-agents inherit the parent workspace). Directories are made
// on first use.
type workspaces struct {
	cfg   *config.Config
	store interface {
		GetSession(ctx context.Context, key string) (*store.Session, error)
	}
}

func (w *workspaces) forRun(info agent.RunInfo) string {
	agentID := info.AgentID
	parent := ""
	if info.Session != nil {
		parent = info.Session.SpawnedBy
	}
	// Walk up the spawn chain (bounded by the maximum depth) to the root.
	for i := 0; parent != "" && i < 8; i++ {
		agentID = sessionkey.AgentID(parent)
		s, err := w.store.GetSession(context.Background(), parent)
		if err != nil {
			break
		}
		agentID = cmp.Or(s.AgentID, agentID)
		parent = s.SpawnedBy
	}
	dir := w.cfg.AgentWorkspace(agentID)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return ""
		}
	}
	return dir
}

// webFetchTool is the web_fetch tool as tools.web.fetch configures it, or
// nil when it is disabled.
func webFetchTool(cfg *config.Config) tools.Tool {
	f := cfg.Tools.Web.Fetch
	if f.Enabled != nil && !*f.Enabled {
		return nil
	}
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	c := web.Config{
		MaxChars: deref(f.MaxChars), MaxCharsCap: deref(f.MaxCharsCap), UserAgent: f.UserAgent,
		AllowedHostnames: f.SSRFPolicy.AllowedHostnames,
	}
	if f.MaxResponseBytes != nil {
		c.MaxResponseBytes = *f.MaxResponseBytes
	}
	if f.TimeoutSeconds != nil {
		c.Timeout = time.Duration(*f.TimeoutSeconds) * time.Second
	}
	if f.MaxRedirects != nil {
		c.MaxRedirects = *f.MaxRedirects
		if c.MaxRedirects == 0 {
			c.MaxRedirects = -1 // 0 configured: follow none
		}
	}
	if p := f.SSRFPolicy.DangerouslyAllowPrivateNetwork; p != nil {
		c.AllowPrivateNetwork = *p
	}
	return web.New(c)
}
