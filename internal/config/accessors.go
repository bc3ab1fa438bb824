package config

import (
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults from docs/spec/reference-behaviour.md §13 and docs/spec/gateway-protocol.md §1.
const (
	DefaultScope                  = "per-sender"
	DefaultMainKey                = "main"
	DefaultAgentID                = "main"
	DefaultMaxPingPongTurns       = 5
	DefaultVisibility             = "tree"
	DefaultSessionToolsVisibility = "spawned"
	DefaultSandboxMode            = "off"
	DefaultMaxSpawnDepth          = 1
	DefaultMaxChildrenPerAgent    = 5
	DefaultMaxConcurrent          = 8
	DefaultArchiveAfterMinutes    = 60
	DefaultRunTimeoutSeconds      = 0
	DefaultAnnounceTimeoutMs      = 60000
	DefaultAgentTimeoutSeconds    = 600
	DefaultAttachMaxTotalBytes    = 5 << 20
	DefaultAttachMaxFiles         = 50
	DefaultAttachMaxFileBytes     = 1 << 20
	DefaultModelsMode             = "merge"
	DefaultGatewayPort            = 18789
	DefaultGatewayBind            = "loopback"
	DefaultRedactSensitive        = "tools"
)

// Provider APIs.
const (
	APIOpenAICompletions = "openai-completions"
	APIAnthropicMessages = "anthropic-messages"
)

// Gateway auth modes.
const (
	AuthToken    = "token"
	AuthPassword = "password"
	AuthNone     = "none"
)

// Ranges from the reference schema, except maxChildrenPerAgent: the
// reference caps it at 20; Switchboard's durable announce path takes fan-outs
// of thousands, so it allows up to 10000.
const (
	maxPingPongTurnsMax    = 5
	maxSpawnDepthMax       = 5
	maxChildrenPerAgentMax = 10000
)

// normalizeAgentID is the session key model's agent id normaliser.
func normalizeAgentID(id string) string { return sessionkey.NormalizeAgentID(id) }

// oneOf returns norm(v) when it is one of allowed, else def.
func oneOf(v, def string, allowed ...string) string {
	v = norm(v)
	if slices.Contains(allowed, v) {
		return v
	}
	return def
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// positiveOr returns *p when it is set and positive, else def.
func positiveOr(p *int, def int) int {
	if p == nil || *p < 1 {
		return def
	}
	return *p
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Paths returns the state directory and config path this Config was
// resolved with.
func (c *Config) Paths() Paths { return c.paths }

// Scope returns session.scope: "per-sender" (default) or "global".
func (c *Config) Scope() string {
	return oneOf(c.Session.Scope, DefaultScope, "per-sender", "global")
}

// MainKey returns session.mainKey trimmed and lower-cased, or "main".
func (c *Config) MainKey() string {
	if k := norm(c.Session.MainKey); k != "" {
		return k
	}
	return DefaultMainKey
}

// DMScope returns session.dmScope, default "main".
func (c *Config) DMScope() string {
	if s := norm(c.Session.DMScope); s != "" {
		return s
	}
	return "main"
}

// SendPolicy returns a copy of session.sendPolicy, or nil when it is unset
// (every send is allowed).
func (c *Config) SendPolicy() *SendPolicy {
	sp := c.Session.SendPolicy
	if sp == nil {
		return nil
	}
	out := &SendPolicy{Default: sp.Default, Rules: make([]SendPolicyRule, len(sp.Rules))}
	for i, r := range sp.Rules {
		out.Rules[i].Action = r.Action
		if r.Match != nil {
			m := *r.Match
			out.Rules[i].Match = &m
		}
	}
	return out
}

// MaxPingPongTurns returns session.agentToAgent.maxPingPongTurns clamped
// to 0..5; unset is 5.
func (c *Config) MaxPingPongTurns() int {
	return clampInt(intOr(c.Session.AgentToAgent.MaxPingPongTurns, DefaultMaxPingPongTurns), 0, maxPingPongTurnsMax)
}

// Visibility returns tools.sessions.visibility trimmed and lower-cased:
// "self", "tree", "agent" or "all"; "tree" when missing or invalid.
func (c *Config) Visibility() string {
	return oneOf(c.Tools.Sessions.Visibility, DefaultVisibility, "self", "tree", "agent", "all")
}

// SessionToolsVisibility returns agents.defaults.sandbox.
// sessionToolsVisibility: "spawned" (default) or "all".
func (c *Config) SessionToolsVisibility() string {
	return oneOf(c.Agents.Defaults.Sandbox.SessionToolsVisibility, DefaultSessionToolsVisibility, "spawned", "all")
}

// AgentToAgentEnabled reports tools.agentToAgent.enabled (default false).
func (c *Config) AgentToAgentEnabled() bool { return boolOr(c.Tools.AgentToAgent.Enabled, false) }

// AgentToAgentAllow returns a copy of tools.agentToAgent.allow; empty
// allows every agent.
func (c *Config) AgentToAgentAllow() []string { return slices.Clone(c.Tools.AgentToAgent.Allow) }

// SubagentTools returns a copy of tools.subagents.tools; nil lists are
// unset.
func (c *Config) SubagentTools() ToolPolicy {
	t := c.Tools.Subagents.Tools
	return ToolPolicy{Allow: slices.Clone(t.Allow), AlsoAllow: slices.Clone(t.AlsoAllow), Deny: slices.Clone(t.Deny)}
}

// AttachmentLimits are the effective tools.sessions_spawn.attachments
// settings.
type AttachmentLimits struct {
	Enabled             bool
	MaxTotalBytes       int
	MaxFiles            int
	MaxFileBytes        int
	RetainOnSessionKeep bool
}

// Attachments returns the sessions_spawn attachment settings: disabled,
// 5 MiB total, 50 files, 1 MiB per file and no retention by default.
// Non-positive limits fall back to the defaults.
func (c *Config) Attachments() AttachmentLimits {
	a := c.Tools.SessionsSpawn.Attachments
	return AttachmentLimits{
		Enabled:             boolOr(a.Enabled, false),
		MaxTotalBytes:       positiveOr(a.MaxTotalBytes, DefaultAttachMaxTotalBytes),
		MaxFiles:            positiveOr(a.MaxFiles, DefaultAttachMaxFiles),
		MaxFileBytes:        positiveOr(a.MaxFileBytes, DefaultAttachMaxFileBytes),
		RetainOnSessionKeep: boolOr(a.RetainOnSessionKeep, false),
	}
}

// MaxSpawnDepth returns agents.defaults.subagents.maxSpawnDepth clamped to
// 1..5; unset is 1.
func (c *Config) MaxSpawnDepth() int {
	return clampInt(intOr(c.Agents.Defaults.Subagents.MaxSpawnDepth, DefaultMaxSpawnDepth), 1, maxSpawnDepthMax)
}

// MaxChildrenPerAgent returns agents.defaults.subagents.maxChildrenPerAgent
// clamped to 1..10000; unset is 5.
func (c *Config) MaxChildrenPerAgent() int {
	return clampInt(intOr(c.Agents.Defaults.Subagents.MaxChildrenPerAgent, DefaultMaxChildrenPerAgent), 1, maxChildrenPerAgentMax)
}

// MaxConcurrent returns agents.defaults.subagents.maxConcurrent (the
// sub-agent lane's concurrency), at least 1; unset is 8.
func (c *Config) MaxConcurrent() int {
	return max(1, intOr(c.Agents.Defaults.Subagents.MaxConcurrent, DefaultMaxConcurrent))
}

// ArchiveAfterMinutes returns agents.defaults.subagents.archiveAfterMinutes;
// unset or non-positive is 60.
func (c *Config) ArchiveAfterMinutes() int {
	return positiveOr(c.Agents.Defaults.Subagents.ArchiveAfterMinutes, DefaultArchiveAfterMinutes)
}

// RunTimeoutSeconds returns agents.defaults.subagents.runTimeoutSeconds;
// unset or negative is 0 (no timeout).
func (c *Config) RunTimeoutSeconds() int {
	return max(0, intOr(c.Agents.Defaults.Subagents.RunTimeoutSeconds, DefaultRunTimeoutSeconds))
}

// AnnounceTimeoutMs returns agents.defaults.subagents.announceTimeoutMs;
// unset or non-positive is 60000.
func (c *Config) AnnounceTimeoutMs() int {
	return positiveOr(c.Agents.Defaults.Subagents.AnnounceTimeoutMs, DefaultAnnounceTimeoutMs)
}

// AgentTimeoutSeconds returns agents.defaults.timeoutSeconds, the limit on
// one agent run; unset or non-positive is 600.
func (c *Config) AgentTimeoutSeconds() int {
	return positiveOr(c.Agents.Defaults.TimeoutSeconds, DefaultAgentTimeoutSeconds)
}

// Agent returns the agents.list entry whose normalised id equals the
// normalised id, and whether there is one.
func (c *Config) Agent(id string) (AgentEntry, bool) {
	e := c.agent(id)
	if e == nil {
		return AgentEntry{}, false
	}
	return *e, true
}

func (c *Config) agent(id string) *AgentEntry {
	id = normalizeAgentID(id)
	for i := range c.Agents.List {
		if normalizeAgentID(c.Agents.List[i].ID) == id {
			return &c.Agents.List[i]
		}
	}
	return nil
}

// AgentIDs returns the normalised ids of agents.list in file order, without
// repeats. It is empty when no agents are configured.
func (c *Config) AgentIDs() []string {
	var ids []string
	for _, a := range c.Agents.List {
		if id := normalizeAgentID(a.ID); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// DefaultAgentID returns the normalised id of the first agents.list entry
// with default:true, else of the first entry, else "main".
func (c *Config) DefaultAgentID() string {
	for _, a := range c.Agents.List {
		if a.Default {
			return normalizeAgentID(a.ID)
		}
	}
	if len(c.Agents.List) > 0 {
		return normalizeAgentID(c.Agents.List[0].ID)
	}
	return DefaultAgentID
}

// AgentWorkspace returns the workspace directory of agent id: its own
// workspace, else agents.defaults.workspace, else <stateDir>/workspace for
// the default agent and <stateDir>/workspace-<id> for the others. A leading
// "~" is expanded.
func (c *Config) AgentWorkspace(id string) string {
	id = normalizeAgentID(id)
	if a := c.agent(id); a != nil {
		if w := strings.TrimSpace(a.Workspace); w != "" {
			return filepath.Clean(expandHome(w, c.env))
		}
	}
	if w := strings.TrimSpace(c.Agents.Defaults.Workspace); w != "" {
		return filepath.Clean(expandHome(w, c.env))
	}
	if id == c.DefaultAgentID() {
		return filepath.Join(c.paths.StateDir, "workspace")
	}
	return filepath.Join(c.paths.StateDir, "workspace-"+id)
}

// AgentModel returns the model ref ("<provider>/<modelId>") of agent id: its
// own model, else agents.defaults.model.primary, else "".
func (c *Config) AgentModel(id string) string {
	if a := c.agent(id); a != nil && a.Model != nil {
		if m := strings.TrimSpace(a.Model.Primary); m != "" {
			return m
		}
	}
	if m := c.Agents.Defaults.Model; m != nil {
		return strings.TrimSpace(m.Primary)
	}
	return ""
}

// AgentModelFallbacks returns the fallback model refs of agent id: its own
// model's fallbacks when it lists them, else agents.defaults.model.fallbacks.
func (c *Config) AgentModelFallbacks(id string) []string {
	if a := c.agent(id); a != nil && a.Model != nil && a.Model.Fallbacks != nil {
		return slices.Clone(a.Model.Fallbacks)
	}
	if m := c.Agents.Defaults.Model; m != nil {
		return slices.Clone(m.Fallbacks)
	}
	return nil
}

// SubagentModel returns the model ref for sub-agents spawned under agent
// id: agents.list[id].subagents.model, else agents.defaults.subagents.model,
// else "" (the caller then uses AgentModel).
func (c *Config) SubagentModel(id string) string {
	if a := c.agent(id); a != nil && a.Subagents.Model != nil {
		if m := strings.TrimSpace(a.Subagents.Model.Primary); m != "" {
			return m
		}
	}
	if m := c.Agents.Defaults.Subagents.Model; m != nil {
		return strings.TrimSpace(m.Primary)
	}
	return ""
}

// SubagentThinking returns the thinking level for sub-agents spawned under
// agent id: agents.list[id].subagents.thinking, else
// agents.defaults.subagents.thinking, else "".
func (c *Config) SubagentThinking(id string) string {
	if a := c.agent(id); a != nil {
		if t := strings.TrimSpace(a.Subagents.Thinking); t != "" {
			return t
		}
	}
	return strings.TrimSpace(c.Agents.Defaults.Subagents.Thinking)
}

// AllowAgents returns a copy of agents.list[id].subagents.allowAgents (nil
// when unset: only the agent itself).
func (c *Config) AllowAgents(id string) []string {
	if a := c.agent(id); a != nil {
		return slices.Clone(a.Subagents.AllowAgents)
	}
	return nil
}

// SandboxMode returns the sandbox mode of agent id: agents.list[id].
// sandbox.mode, else agents.defaults.sandbox.mode, else "off". Values are
// "off", "non-main" or "all".
func (c *Config) SandboxMode(id string) string {
	valid := []string{"off", "non-main", "all"}
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.Mode) != "" {
		return oneOf(a.Sandbox.Mode, DefaultSandboxMode, valid...)
	}
	return oneOf(c.Agents.Defaults.Sandbox.Mode, DefaultSandboxMode, valid...)
}

// SandboxWorkspaceAccess returns how agent id's workspace is mounted in its
// sandbox: agents.list[id].sandbox.workspaceAccess, else
// agents.defaults.sandbox.workspaceAccess, else "none" (as the reference).
func (c *Config) SandboxWorkspaceAccess(id string) string {
	valid := []string{"none", "ro", "rw"}
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.WorkspaceAccess) != "" {
		return oneOf(a.Sandbox.WorkspaceAccess, "none", valid...)
	}
	return oneOf(c.Agents.Defaults.Sandbox.WorkspaceAccess, "none", valid...)
}

// SandboxNetwork returns agent id's sandbox network: agents.list[id].
// sandbox.network, else agents.defaults.sandbox.network, else "none".
func (c *Config) SandboxNetwork(id string) string {
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.Network) != "" {
		return oneOf(a.Sandbox.Network, "none", "none", "host")
	}
	return oneOf(c.Agents.Defaults.Sandbox.Network, "none", "none", "host")
}

// SandboxBackend returns agent id's sandbox backend: agents.list[id].
// sandbox.backend, else agents.defaults.sandbox.backend, else
// "bubblewrap" ("bwrap" is read as "bubblewrap"; an unknown value is
// returned as is, for the sandbox to refuse).
func (c *Config) SandboxBackend(id string) string {
	b := strings.TrimSpace(c.Agents.Defaults.Sandbox.Backend)
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.Backend) != "" {
		b = strings.TrimSpace(a.Sandbox.Backend)
	}
	switch strings.ToLower(b) {
	case "", "bwrap", "bubblewrap":
		return "bubblewrap"
	case "docker":
		return "docker"
	}
	return b
}

// SandboxScope returns which sessions of agent id share a sandbox:
// agents.list[id].sandbox.scope, else agents.defaults.sandbox.scope, else
// "agent" (as the reference).
func (c *Config) SandboxScope(id string) string {
	valid := []string{"agent", "session", "shared"}
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.Scope) != "" {
		return oneOf(a.Sandbox.Scope, "agent", valid...)
	}
	return oneOf(c.Agents.Defaults.Sandbox.Scope, "agent", valid...)
}

// SandboxWorkspaceRoot returns where agent id's private sandbox
// workspaces live: agents.list[id].sandbox.workspaceRoot, else
// agents.defaults.sandbox.workspaceRoot, else "" (the daemon's
// <state dir>/sandboxes). A leading "~" is left for the caller to expand.
func (c *Config) SandboxWorkspaceRoot(id string) string {
	if a := c.agent(id); a != nil && strings.TrimSpace(a.Sandbox.WorkspaceRoot) != "" {
		return strings.TrimSpace(a.Sandbox.WorkspaceRoot)
	}
	return strings.TrimSpace(c.Agents.Defaults.Sandbox.WorkspaceRoot)
}

// SandboxWorkspaceQuota returns the quota of agent id's private sandbox
// workspaces in bytes: agents.list[id].sandbox.workspaceQuota, else
// agents.defaults.sandbox.workspaceQuota, else 0 (the sandbox's default).
func (c *Config) SandboxWorkspaceQuota(id string) int64 {
	if a := c.agent(id); a != nil && a.Sandbox.WorkspaceQuota != nil {
		return int64(*a.Sandbox.WorkspaceQuota)
	}
	if q := c.Agents.Defaults.Sandbox.WorkspaceQuota; q != nil {
		return int64(*q)
	}
	return 0
}

// SandboxRoot is SandboxWorkspaceRoot made absolute: "~" expanded, and
// <state dir>/sandboxes when unset.
func (c *Config) SandboxRoot(id string) string {
	if r := c.SandboxWorkspaceRoot(id); r != "" {
		r = expandHome(r, c.env)
		if !filepath.IsAbs(r) {
			r = filepath.Join(c.paths.StateDir, r)
		}
		return filepath.Clean(r)
	}
	return filepath.Join(c.paths.StateDir, "sandboxes")
}

// Default sandbox prune rules (agents.defaults.sandbox.prune).
const (
	DefaultSandboxIdleHours  = 24
	DefaultSandboxMaxAgeDays = 7
)

// SandboxPrune returns agents.defaults.sandbox.prune: how long a sandbox
// container may sit idle and how old it may get; 0 turns a rule off.
func (c *Config) SandboxPrune() (idle, maxAge time.Duration) {
	idleH, ageD := float64(DefaultSandboxIdleHours), float64(DefaultSandboxMaxAgeDays)
	if p := c.Agents.Defaults.Sandbox.Prune; p != nil {
		if p.IdleHours != nil {
			idleH = max(*p.IdleHours, 0)
		}
		if p.MaxAgeDays != nil {
			ageD = max(*p.MaxAgeDays, 0)
		}
	}
	return time.Duration(idleH * float64(time.Hour)), time.Duration(ageD * 24 * float64(time.Hour))
}

// SandboxDocker returns agent id's Docker settings: agents.defaults.
// sandbox.docker with agents.list[id].sandbox.docker over it field by
// field (binds appended, env and ulimits merged). Under scope "shared" the
// agent's own settings are ignored, as the reference does: all sessions
// share the defaults' one container.
func (c *Config) SandboxDocker(id string) SandboxDocker {
	var out SandboxDocker
	if d := c.Agents.Defaults.Sandbox.Docker; d != nil {
		out = *d
		out.Env = maps.Clone(d.Env)
		out.Binds = slices.Clone(d.Binds)
		out.Ulimits = maps.Clone(d.Ulimits)
	}
	a := c.agent(id)
	if a == nil || a.Sandbox.Docker == nil || c.SandboxScope(id) == "shared" {
		return out
	}
	o := a.Sandbox.Docker
	overStr(&out.Image, o.Image)
	overStr(&out.ContainerPrefix, o.ContainerPrefix)
	overStr(&out.Workdir, o.Workdir)
	overStr(&out.Network, o.Network)
	overStr(&out.User, o.User)
	overStr(&out.SeccompProfile, o.SeccompProfile)
	overStr(&out.ApparmorProfile, o.ApparmorProfile)
	overStr(&out.GPUs, o.GPUs)
	overStr(&out.SetupCommand, o.SetupCommand)
	overPtr(&out.Memory, o.Memory)
	overPtr(&out.MemorySwap, o.MemorySwap)
	overPtr(&out.ReadOnlyRoot, o.ReadOnlyRoot)
	overPtr(&out.PidsLimit, o.PidsLimit)
	overPtr(&out.Cpus, o.Cpus)
	overList(&out.Tmpfs, o.Tmpfs)
	overList(&out.CapDrop, o.CapDrop)
	overList(&out.DNS, o.DNS)
	overList(&out.ExtraHosts, o.ExtraHosts)
	out.Binds = append(out.Binds, o.Binds...)
	overMap(&out.Env, o.Env)
	overMap(&out.Ulimits, o.Ulimits)
	return out
}

// SplitModelRef splits "<provider>/<model>" at the first slash, so the model
// part may contain more slashes. Without a slash the provider is "".
func SplitModelRef(ref string) (provider, model string) {
	ref = strings.TrimSpace(ref)
	p, m, ok := strings.Cut(ref, "/")
	if !ok {
		return "", ref
	}
	return strings.TrimSpace(p), strings.TrimSpace(m)
}

// ModelsMode returns models.mode: "merge" (default) or "replace".
func (c *Config) ModelsMode() string {
	return oneOf(c.Models.Mode, DefaultModelsMode, "merge", "replace")
}

// Providers returns the effective model providers by normalised id (see
// Provider). The map and its values are copies.
func (c *Config) Providers() map[string]Provider {
	out := make(map[string]Provider)
	for id := range c.Models.Providers {
		nid := norm(id)
		if _, dup := out[nid]; dup {
			continue
		}
		if p, ok := c.Provider(nid); ok {
			out[nid] = p
		}
	}
	for _, id := range []string{"openai", "anthropic"} {
		if _, ok := out[id]; ok {
			continue
		}
		if p, ok := c.Provider(id); ok {
			out[id] = p
		}
	}
	return out
}

// Provider returns the effective provider id (case-insensitive): api
// defaulted, "${ENV}" references in apiKey and headers expanded, and for
// "openai" and "anthropic" the base URL and API key filled in from the
// environment when the file leaves them out. When the file configures no
// such provider, "openai" exists if OPENAI_API_KEY is set and "anthropic"
// if ANTHROPIC_API_KEY is set, unless models.mode is "replace".
func (c *Config) Provider(id string) (Provider, bool) {
	id = norm(id)
	var p Provider
	found := false
	for k, v := range c.Models.Providers {
		if norm(k) == id && v != nil {
			p = *v
			found = true
			break
		}
	}
	if !found {
		if c.ModelsMode() == "replace" {
			return Provider{}, false
		}
		switch id {
		case "openai":
			if c.env.get(EnvOpenAIKey) == "" {
				return Provider{}, false
			}
		case "anthropic":
			if c.env.get(EnvAnthropicKey) == "" {
				return Provider{}, false
			}
		default:
			return Provider{}, false
		}
	}
	p.BaseURL = strings.TrimSpace(p.BaseURL)
	p.API = norm(p.API)
	if p.API == "" {
		p.API = APIOpenAICompletions
		if id == "anthropic" && p.BaseURL == "" {
			p.API = APIAnthropicMessages
		}
	}
	switch id {
	case "openai":
		if p.BaseURL == "" {
			p.BaseURL = c.env.get(EnvOpenAIBaseURL)
		}
		if p.BaseURL == "" {
			p.BaseURL = DefaultOpenAIBaseURL
		}
		if p.APIKey == "" {
			p.APIKey = c.env.get(EnvOpenAIKey)
		}
	case "anthropic":
		if p.BaseURL == "" {
			p.BaseURL = DefaultAnthropicBaseURL
		}
		if p.APIKey == "" {
			p.APIKey = c.env.get(EnvAnthropicKey)
		}
	}
	p.APIKey, _ = expandVars(p.APIKey, c.env)
	if p.Headers != nil {
		h := make(map[string]string, len(p.Headers))
		for k, v := range p.Headers {
			h[k], _ = expandVars(v, c.env)
		}
		p.Headers = h
	}
	p.Models = cloneModels(p.Models)
	return p, true
}

func cloneModels(ms []ModelDef) []ModelDef {
	if ms == nil {
		return nil
	}
	out := make([]ModelDef, len(ms))
	for i, m := range ms {
		m.Input = slices.Clone(m.Input)
		if m.Cost != nil {
			cost := *m.Cost
			m.Cost = &cost
		}
		if m.ContextWindow != nil {
			v := *m.ContextWindow
			m.ContextWindow = &v
		}
		if m.MaxTokens != nil {
			v := *m.MaxTokens
			m.MaxTokens = &v
		}
		if m.ContextTokens != nil {
			v := *m.ContextTokens
			m.ContextTokens = &v
		}
		out[i] = m
	}
	return out
}

// gatewayMode returns gateway.mode trimmed and lower-cased ("local",
// "remote" or "" when unset).
func (c *Config) gatewayMode() string { return norm(c.Gateway.Mode) }

// GatewayPort returns gateway.port; unset or out of range is 18789.
func (c *Config) GatewayPort() int {
	p := intOr(c.Gateway.Port, DefaultGatewayPort)
	if p < 1 || p > 65535 {
		return DefaultGatewayPort
	}
	return p
}

// GatewayBind returns the effective bind: "loopback" (default), "lan", or
// an IP address in canonical form. The reference's "auto" is treated as
// "loopback", "tailnet" and "custom" as "lan"; invalid values as
// "loopback".
func (c *Config) GatewayBind() string {
	b, _ := parseBind(c.Gateway.Bind)
	return b
}

// parseBind normalises a bind value; alias is the reference mode it was
// mapped from, or "" when b was taken as is.
func parseBind(s string) (b, alias string) {
	v := norm(s)
	switch v {
	case "", "loopback":
		return DefaultGatewayBind, ""
	case "lan":
		return "lan", ""
	case "auto":
		return "loopback", v
	case "tailnet", "custom":
		return "lan", v
	}
	if ip := net.ParseIP(v); ip != nil {
		return ip.String(), ""
	}
	return DefaultGatewayBind, "invalid"
}

// bindIsLoopback reports whether bind (as returned by GatewayBind) only
// accepts local connections.
func bindIsLoopback(bind string) bool {
	if bind == "loopback" {
		return true
	}
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback()
}

// GatewayListenAddrs returns the addresses to listen on: 127.0.0.1 and
// [::1] for loopback, every interface for lan, or the configured IP, all on
// GatewayPort.
func (c *Config) GatewayListenAddrs() []string {
	port := strconv.Itoa(c.GatewayPort())
	switch b := c.GatewayBind(); b {
	case "loopback":
		return []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
	case "lan":
		return []string{net.JoinHostPort("", port)}
	default:
		return []string{net.JoinHostPort(b, port)}
	}
}

// GatewayPublicOrigin returns gateway.publicOrigin with "${ENV}"
// references expanded and no trailing slash; "" when unset.
func (c *Config) GatewayPublicOrigin() string {
	o, _ := expandVars(strings.TrimSpace(c.Gateway.PublicOrigin), c.env)
	return strings.TrimRight(o, "/")
}

// GatewayAuth returns the effective gateway auth. SWITCHBOARD_GATEWAY_TOKEN
// and SWITCHBOARD_GATEWAY_PASSWORD override the file's token and password
// (the environment layer comes after the file); "${ENV}" references are
// expanded. When gateway.auth.mode is unset the mode is "token" if a token
// is set, else "password" if a password is set, else "none".
func (c *Config) GatewayAuth() GatewayAuth {
	a := GatewayAuth{Mode: norm(c.Gateway.Auth.Mode)}
	a.Token, _ = expandVars(c.Gateway.Auth.Token, c.env)
	a.Password, _ = expandVars(c.Gateway.Auth.Password, c.env)
	if t := c.env.get(EnvGatewayToken); t != "" {
		a.Token = t
	}
	if p := c.env.get(EnvGatewayPassword); p != "" {
		a.Password = p
	}
	if a.Mode == "" {
		switch {
		case a.Token != "":
			a.Mode = AuthToken
		case a.Password != "":
			a.Mode = AuthPassword
		default:
			a.Mode = AuthNone
		}
	}
	return a
}

// RedactSensitive returns logging.redactSensitive: "tools" (default) or
// "off".
func (c *Config) RedactSensitive() string {
	return oneOf(c.Logging.RedactSensitive, DefaultRedactSensitive, "tools", "off")
}

// RedactPatterns returns a copy of logging.redactPatterns.
func (c *Config) RedactPatterns() []string { return slices.Clone(c.Logging.RedactPatterns) }

// Default chain limits (tools.agentToAgent.maxChainHops, maxChainVisits).
const (
	DefaultMaxChainHops   = 8
	DefaultMaxChainVisits = 3
)

// ChainLimits returns tools.agentToAgent.{maxChainHops, maxChainVisits}
// with their defaults; 0 turns a limit off.
func (c *Config) ChainLimits() (maxHops, maxVisits int) {
	a := c.Tools.AgentToAgent
	return max(intOr(a.MaxChainHops, DefaultMaxChainHops), 0), max(intOr(a.MaxChainVisits, DefaultMaxChainVisits), 0)
}

// Reload modes of gateway.reload.mode.
const (
	ReloadHybrid = "hybrid"
	ReloadOff    = "off"
)

// ReloadMode returns gateway.reload.mode: ReloadOff when written "off",
// else ReloadHybrid.
func (c *Config) ReloadMode() string {
	if norm(c.Gateway.Reload.Mode) == ReloadOff {
		return ReloadOff
	}
	return ReloadHybrid
}
