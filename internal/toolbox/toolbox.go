// Package toolbox owns which tools a run gets: every tool (built-in and
// the MCP servers'), filtered per run by the global, agent, chat-room,
// sandbox and sub-agent policies, with exec confined to the run's sandbox
// (bubblewrap or Docker), put behind exec approvals, the elevated gates
// and the untrusted-input guard; and the workspace each run works in.
// The daemon builds it and hands ForRun, Preflight and Workspaces.ForRun
// to the runner.
package toolbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
	"github.com/switchboardhq/switchboard/internal/tools/web"
)

// Box holds every tool and decides which a run gets. Create with New.
type Box struct {
	conf *settings.Settings
	all  atomic.Pointer[tools.Set]
	// refused, when set, counts a guardrail refusal (kind "untrusted").
	refused func(kind string)
	log     *slog.Logger
	// mcp supplies the tools of the configured MCP servers (nil: none).
	mcp interface {
		Tools(ctx context.Context) []tools.Tool
	}
	// gate, when set, puts exec on the gateway host behind exec approvals
	// (tools.exec.security, ask, askFallback).
	gate *approval.GateConfig

	// dockerOnce makes docker, the Docker backend shared by every
	// sandboxed session configured for it, on first use.
	dockerOnce sync.Once
	docker     *sandbox.Docker
	// pruneIdle and pruneMaxAge are agents.defaults.sandbox.prune: the
	// Docker backend's sweep removes scope containers idle or old past
	// them (0 turns a rule off).
	pruneIdle, pruneMaxAge time.Duration
	// roomTools returns a chat room's tool selection for a session key
	// (ok false: not a room with one).
	roomTools func(key string) (policy.ToolSelection, bool)

	// hostMu guards host, ForRun's host tools per agent (see hostTools).
	hostMu sync.Mutex
	host   hostCache
}

// Config configures a Box. Settings is required.
type Config struct {
	Settings *settings.Settings
	// MCP supplies the tools of the configured MCP servers (nil: none).
	MCP interface {
		Tools(ctx context.Context) []tools.Tool
	}
	// Refused, when set, counts a guardrail refusal ("untrusted").
	Refused func(kind string)
	// Gate, when set, puts exec on the gateway host behind exec approvals.
	Gate *approval.GateConfig
	// PruneIdle and PruneMaxAge are agents.defaults.sandbox.prune.
	PruneIdle, PruneMaxAge time.Duration
	// RoomTools returns a chat room's tool selection (IRC room, Telegram
	// group or topic) for a session key; nil: no room has one.
	RoomTools func(key string) (policy.ToolSelection, bool)
	Logger    *slog.Logger
}

// New returns a Box with no tools yet (see Set).
func New(c Config) *Box {
	return &Box{conf: c.Settings, mcp: c.MCP, refused: c.Refused, log: c.Logger, gate: c.Gate,
		pruneIdle: c.PruneIdle, pruneMaxAge: c.PruneMaxAge, roomTools: c.RoomTools}
}

// dockerBackend returns the shared Docker backend (DOCKER_HOST, else the
// local socket), starting its prune sweep on first use.
func (b *Box) dockerBackend() *sandbox.Docker {
	b.dockerOnce.Do(func() {
		b.docker = sandbox.NewDocker("")
		b.docker.StartPruner(b.pruneIdle, b.pruneMaxAge, 0, func(removed []string, err error) {
			if err != nil {
				b.log.Warn("sandbox prune failed", "err", err)
			}
			if len(removed) > 0 {
				b.log.Info("sandbox containers pruned", "count", len(removed), "ids", removed)
			}
		})
	})
	return b.docker
}

// CloseDocker releases the Docker client's connections, if any. Call it
// once the commands it ran are gone (after Jobs.Close).
func (b *Box) CloseDocker() {
	// Never used: an idle backend with no sweep, nothing to close.
	b.dockerOnce.Do(func() { b.docker = sandbox.NewDocker("") })
	_ = b.docker.Close()
}

// StartDocker starts the Docker backend (and its prune sweep) at once
// when an agent runs sandboxed sessions on it, so that the containers of
// a previous run are swept even before the first sandboxed command;
// CloseDocker stops it.
func (b *Box) StartDocker() {
	if b.usesDocker() {
		b.dockerBackend()
	}
}

// usesDocker reports whether an agent of the configuration runs sandboxed
// sessions on the Docker backend.
func (b *Box) usesDocker() bool {
	for _, id := range append(b.conf.AgentIDs(), b.conf.DefaultAgent) {
		ag := b.conf.Agent(id)
		if ag.SandboxMode != "off" && ag.SandboxBackend == sandbox.BackendDocker {
			return true
		}
	}
	return false
}

// dockerRunner runs exec's commands in the Docker backend.
type dockerRunner struct {
	d    *sandbox.Docker
	spec sandbox.Spec
}

var (
	_ shell.Runner  = dockerRunner{}
	_ shell.Guarder = dockerRunner{}
)

// Guard bounds what a command writes to the scope's private workspace,
// which the container binds at docker.workdir, while it runs.
func (r dockerRunner) Guard() (func(pid int, kill func()), func() string, error) {
	return r.spec.Guard()
}

func (r dockerRunner) Start(ctx context.Context, c shell.Command) (shell.Process, error) {
	ct, err := r.d.Start(ctx, r.spec, sandbox.Run(c))
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// Set replaces every tool the box holds.
func (b *Box) Set(ts ...tools.Tool) { b.all.Store(tools.NewSet(ts...)) }

// All returns every tool (the MCP server picks the session tools from it).
func (b *Box) All() *tools.Set { return b.all.Load() }

// ForRun returns the tools offered to a run: those the global and the
// agent's tool selection keep (tools.profile, allow, alsoAllow, deny, and
// agents.list[].tools), and for a sub-agent further minus what the
// sub-agent tool policy denies at its depth (docs/spec/reference-behaviour.md §9.4). A removed
// tool's schema never reaches the model.
func (b *Box) ForRun(ctx context.Context, info agent.RunInfo) *tools.Set {
	all := b.all.Load()
	var ext []tools.Tool
	if b.mcp != nil {
		// MCP servers start here, on the first run that needs tools.
		ext = b.mcp.Tools(ctx)
	}
	ag := b.conf.Agent(info.AgentID)
	sandboxed := b.sandboxed(&ag, info.SessionKey)
	depth := sessionkey.SubagentDepth(info.SessionKey)
	if info.Session != nil && info.Session.SpawnDepth > depth {
		depth = info.Session.SpawnDepth
	}
	if len(ext) == 0 && !sandboxed && depth == 0 {
		if _, inRoom := b.rooms(info.SessionKey); !inRoom {
			// The common run (no MCP tools, on the host, no room, not a
			// sub-agent): its tools before the elevated checks depend
			// only on the tool set and the agent, so they are made once.
			set, hostExec := b.hostTools(all, info.AgentID, ag)
			return b.guardElevated(set, info, ag, false, hostExec)
		}
	}
	if len(ext) > 0 {
		// The built-in tools come last so that they win a name clash.
		all = tools.NewSet(append(ext, all.All()...)...)
	}
	global, own := b.conf.Tools, ag.Tools
	all = all.Filter(func(t tools.Tool) bool {
		if sandboxed && (!sandboxKeeps(t.Name(), ag.SandboxWorkspaceAccess) || !policy.SandboxToolAllowed(t.Name(), ag.SandboxTools)) {
			return false
		}
		return policy.ToolOffered(t.Name(), global, own)
	})
	hostExec := findExec(all)                     // before the sandbox confines it: elevated's way out
	if room, ok := b.rooms(info.SessionKey); ok { // a chat room's tools (IRC room, Telegram group or topic)
		all = all.Filter(func(t tools.Tool) bool { return policy.ToolOffered(t.Name(), room, policy.ToolSelection{}) })
	}
	if sandboxed {
		all = b.sandboxTools(all, ag.SandboxSpec(info.SessionKey))
	}
	if depth > 0 {
		tp := b.conf.Subagents.Tools
		maxDepth := b.conf.Subagents.MaxSpawnDepth
		all = all.Filter(func(t tools.Tool) bool {
			return policy.SubagentToolAllowed(t.Name(), depth, maxDepth, tp.Allow, tp.AlsoAllow, tp.Deny)
		})
	}
	all = foregroundUnlessProcess(all)
	if b.gate != nil && !sandboxed {
		all = gateExec(all, b.gate)
	}
	if !sandboxed {
		// Last, so the gate stands in front of approvals and foreground
		// (which look for the exec tool itself).
		all = b.guardUntrusted(all, ag.UntrustedAllow)
	}
	return b.guardElevated(all, info, ag, sandboxed, hostExec)
}

// hostCache holds, for one tool set (the box's all), each agent's host
// tools before the elevated checks (see hostTools).
type hostCache struct {
	all     *tools.Set
	byAgent map[string]hostEntry
}

// hostEntry is one agent's host tools and the exec tool they were cut
// from (nil: none).
type hostEntry struct {
	set      *tools.Set
	hostExec *shell.Tool
}

// maxHostCache bounds hostCache.byAgent; past it the cache starts over
// (runs name their agent, and an unknown id gets the defaults).
const maxHostCache = 256

// hostTools returns the tools of a run of agent ag (id agentID) on the
// host, with no MCP tools, outside a chat room and not a sub-agent, before
// the elevated checks, and the host exec tool: what ForRun makes in that
// case from all and the settings (fixed for the box's life), made once per
// tool set and agent. Sets are never changed once made, so runs share it.
func (b *Box) hostTools(all *tools.Set, agentID string, ag settings.Agent) (*tools.Set, *shell.Tool) {
	b.hostMu.Lock()
	defer b.hostMu.Unlock()
	if b.host.all != all || len(b.host.byAgent) >= maxHostCache {
		b.host = hostCache{all: all, byAgent: map[string]hostEntry{}}
	}
	if e, ok := b.host.byAgent[agentID]; ok {
		return e.set, e.hostExec
	}
	global, own := b.conf.Tools, ag.Tools
	set := all.Filter(func(t tools.Tool) bool { return policy.ToolOffered(t.Name(), global, own) })
	hostExec := findExec(set)
	set = foregroundUnlessProcess(set)
	if b.gate != nil {
		set = gateExec(set, b.gate)
	}
	set = b.guardUntrusted(set, ag.UntrustedAllow)
	b.host.byAgent[agentID] = hostEntry{set: set, hostExec: hostExec}
	return set, hostExec
}

// rooms returns the chat room's tool selection of key, if any.
func (b *Box) rooms(key string) (policy.ToolSelection, bool) {
	if b.roomTools == nil {
		return policy.ToolSelection{}, false
	}
	return b.roomTools(key)
}

// findExec returns the host exec tool of set, or nil.
func findExec(set *tools.Set) *shell.Tool {
	for _, t := range set.All() {
		if ex, ok := t.(*shell.Tool); ok {
			return ex
		}
	}
	return nil
}

// guardElevated puts the elevated checks in front of the run's exec: a
// sandboxed run's elevated command runs on the host through hostExec
// (foreground unless the run has process, behind exec approvals), when
// the elevated gates pass.
func (b *Box) guardElevated(set *tools.Set, info agent.RunInfo, ag settings.Agent, sandboxed bool, hostExec *shell.Tool) *tools.Set {
	exec, ok := set.Get(shell.ToolName)
	if !ok {
		return set
	}
	channel, sender := sessionkey.InternalChannel, ""
	if in := info.Input; in != nil {
		channel, sender = cmp.Or(in.Channel, channel), in.To
	}
	g := &elevatedExec{inner: exec, sandboxed: sandboxed, failing: ag.ElevatedGate(channel, sender),
		channel: channel, session: info.SessionKey, level: agent.SessionElevatedLevel(info.Session)}
	if sandboxed && g.failing == "" {
		if hostExec == nil {
			g.failing = settings.ElevatedGateEnabled
		} else {
			var ht tools.Tool = hostExec
			if _, ok := set.Get(shell.ProcessToolName); !ok {
				ht = hostExec.Foreground()
			}
			if b.gate != nil {
				ht = b.gate.Wrap(ht)
			}
			if !policy.UntrustedGrant(shell.ToolName, ag.UntrustedAllow) {
				ht = untrustedGate{Tool: ht, box: b} // elevated leaves the sandbox: outside input may not
			}
			g.host = ht
		}
	}
	return set.With(g)
}

// gateExec puts the host exec tool in set behind the approval gate.
func gateExec(set *tools.Set, gate *approval.GateConfig) *tools.Set {
	out := set.All()
	changed := false
	for i, t := range out {
		if ex, ok := t.(*shell.Tool); ok {
			out[i], changed = gate.Wrap(ex), true
		}
	}
	if !changed {
		return set
	}
	return tools.NewSet(out...)
}

// foregroundUnlessProcess makes exec run every command in the foreground
// when the run is not offered the process tool (nothing could follow a
// backgrounded command), as the reference does.
func foregroundUnlessProcess(set *tools.Set) *tools.Set {
	out := set.All()
	has := false
	for _, t := range out {
		has = has || t.Name() == shell.ProcessToolName
	}
	if has {
		return set
	}
	changed := false
	for i, t := range out {
		if ex, ok := t.(*shell.Tool); ok {
			out[i], changed = ex.Foreground(), true
		}
	}
	if !changed {
		return set
	}
	return tools.NewSet(out...)
}

// sandboxed reports whether a run of agent ag in session sessionKey is
// sandboxed (policy.ChildSandboxed), making the agent's main session key
// only when the agent's sandbox mode compares with it.
func (b *Box) sandboxed(ag *settings.Agent, sessionKey string) bool {
	mainKey := ""
	if policy.SandboxReadsMainKey(ag.SandboxMode) {
		mainKey = sessionkey.MainKey(ag.ID, b.conf.MainKey)
	}
	return policy.ChildSandboxed(ag.SandboxMode, sessionKey, mainKey)
}

// WorkspaceWritable reports whether a run may write its workspace: always
// outside a sandbox, inside one unless the workspace is mounted read-only
// (with access none the run's workspace is its sandbox's own).
func (b *Box) WorkspaceWritable(info agent.RunInfo) bool {
	ag := b.conf.Agent(info.AgentID)
	if !b.sandboxed(&ag, info.SessionKey) {
		return true
	}
	return ag.SandboxWorkspaceAccess != sandbox.AccessRO
}

// SandboxDir returns the private sandbox workspace a run works in instead
// of its agent's workspace: that of its sandbox's scope when the session
// is sandboxed with workspaceAccess none (ok true; dir "" when it cannot
// be made, so that no file tool falls back to the agent's workspace).
// The directory is made on first use.
func (b *Box) SandboxDir(info agent.RunInfo) (dir string, ok bool) {
	ag := b.conf.Agent(info.AgentID)
	if !b.sandboxed(&ag, info.SessionKey) ||
		ag.SandboxWorkspaceAccess != sandbox.AccessNone {
		return "", false
	}
	dir = ag.SandboxOwnWorkspace(info.SessionKey)
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return "", true
	}
	return dir, true
}

// Preflight fails a sandboxed session's run before the model is called
// when the sandbox backend is unavailable, naming the missing piece and
// the fix: nothing of the run executes on the host.
func (b *Box) Preflight(ctx context.Context, info agent.RunInfo) error {
	ag := b.conf.Agent(info.AgentID)
	if !b.sandboxed(&ag, info.SessionKey) {
		return nil
	}
	spec := ag.SandboxSpec(info.SessionKey)
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("agent failed before reply: sandbox unavailable: %w", err)
	}
	if spec.ScopeDir != "" && spec.Normalized().WorkspaceAccess != sandbox.AccessRW {
		if err := os.MkdirAll(spec.ScopeDir, 0o700); err != nil {
			return fmt.Errorf("agent failed before reply: sandbox workspace: %w; check agents.defaults.sandbox.workspaceRoot", err)
		}
	}
	var err error
	if spec.Normalized().Backend == sandbox.BackendDocker {
		err = b.dockerBackend().Check(ctx)
	} else {
		_, err = sandbox.Check(ctx)
	}
	if err != nil {
		return fmt.Errorf("agent failed before reply: %w", err)
	}
	return nil
}

// sandboxKeeps reports whether a sandboxed session whose workspace is
// mounted per access keeps the in-process file tool name, so that the
// file tools see no more than the session's exec does: with the
// workspace read-only only read and ls; with none all of them, on the
// sandbox's private workspace (the run's workspace then).
func sandboxKeeps(name, access string) bool {
	switch name {
	case "write", "edit", "apply_patch":
		return access != sandbox.AccessRO
	}
	return true
}

// sandboxTools replaces exec in set with an exec confined by spec: under
// bubblewrap, or in a container of the Docker backend. The sandbox fails
// closed: without a working backend each command's result is an error
// naming the missing piece, and nothing runs on the host.
func (b *Box) sandboxTools(set *tools.Set, spec sandbox.Spec) *tools.Set {
	out := set.All()
	for i, t := range out {
		ex, ok := t.(*shell.Tool)
		if !ok {
			continue
		}
		if spec.Normalized().Backend == sandbox.BackendDocker {
			out[i] = ex.WithRunner(dockerRunner{d: b.dockerBackend(), spec: spec})
		} else {
			out[i] = ex.WithSandbox(spec)
		}
	}
	return tools.NewSet(out...)
}

// Workspaces resolves the directory a run works in: its agent's workspace,
// except that a sub-agent works in the workspace of the session tree's root
// (the spec: sub-agents inherit the parent workspace). Directories are made
// on first use.
type Workspaces struct {
	set   *settings.Settings
	store interface {
		GetSession(ctx context.Context, key string) (*store.Session, error)
	}
	// sandboxDir, when set, returns the private sandbox workspace that
	// replaces the run's workspace (ok false when none does).
	sandboxDir func(agent.RunInfo) (dir string, ok bool)
}

// NewWorkspaces returns the workspaces of set's agents; st finds a
// sub-agent's spawn chain, and the box's SandboxDir replaces the workspace
// of a sandboxed run with its sandbox's own.
func NewWorkspaces(set *settings.Settings, st interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
}, box *Box) *Workspaces {
	return &Workspaces{set: set, store: st, sandboxDir: box.SandboxDir}
}

// ForRun returns the directory a run's file tools work in ("" when it
// cannot be made).
func (w *Workspaces) ForRun(ctx context.Context, info agent.RunInfo) string {
	if w.sandboxDir != nil {
		if dir, ok := w.sandboxDir(info); ok {
			return dir
		}
	}
	agentID := info.AgentID
	parent := ""
	if info.Session != nil {
		parent = info.Session.SpawnedBy
	}
	// Walk up the spawn chain (bounded by the maximum depth) to the root.
	for i := 0; parent != "" && i < 8; i++ {
		agentID = sessionkey.AgentID(parent)
		s, err := w.store.GetSession(ctx, parent)
		if err != nil {
			break
		}
		agentID = cmp.Or(s.AgentID, agentID)
		parent = s.SpawnedBy
	}
	dir := w.set.Agent(agentID).Workspace
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return ""
		}
	}
	return dir
}

// WebFetchTool is the web_fetch tool as tools.web.fetch configures it, or
// nil when it is disabled.
func WebFetchTool(set *settings.Settings) tools.Tool {
	f := set.WebFetch
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

// guardUntrusted puts the host-acting tools of set the operator did not
// grant to outside input (allow: tools.untrusted.allow) behind
// untrustedGate.
func (b *Box) guardUntrusted(set *tools.Set, allow []string) *tools.Set {
	out := set.All()
	changed := false
	for i, t := range out {
		if !slices.Contains(policy.HostActingTools, t.Name()) || policy.UntrustedGrant(t.Name(), allow) {
			continue
		}
		out[i], changed = untrustedGate{Tool: t, box: b}, true
	}
	if !changed {
		return set
	}
	return tools.NewSet(out...)
}

// untrustedGate keeps a host-acting tool's name and schema and refuses
// every call whose chain of causes started outside the operator (the
// caller's Chain.Untrusted, decided once where the input came in and
// inherited by every hop since), with a refusal the model reads; the
// refusal is logged and counted.
type untrustedGate struct {
	tools.Tool
	box *Box
}

// Unwrap returns the tool it guards.
func (g untrustedGate) Unwrap() tools.Tool { return g.Tool }

func (g untrustedGate) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	c := tools.CallerFrom(ctx)
	if c.Chain.Untrusted == "" {
		return g.Tool.Call(ctx, args)
	}
	if g.box.log != nil {
		g.box.log.Warn("tool refused to a session driven from outside the operator", "tool", g.Name(), "source", c.Chain.Untrusted,
			"session", c.SessionKey, "chain", c.Chain.ID)
	}
	if g.box.refused != nil {
		g.box.refused("untrusted")
	}
	//lint:ignore ST1005 a tool result the model reads, in sentences
	return nil, fmt.Errorf("%s is not available in this session: its input comes from outside the operator (%s), "+
		"so it may not run commands or write files on the gateway host. The operator can grant it with tools.untrusted.allow, or run this agent in a sandbox.", g.Name(), c.Chain.Untrusted)
}
