// Package settings resolves a loaded configuration, once, into the typed
// settings the run-time components take: the gateway, the session tools,
// the relay and the sub-agent manager read these values, never the
// configuration file's structure. It is also the one place where
// configuration values become policy values (send rules, queue settings,
// visibility), which keeps package config a leaf. Config and settings are
// one layer: settings is the only package that reads a *config.Config
// (Load is the loader of serve, its config watcher and the commands), and
// it passes on the configuration names the components need (layer.go).
//
// A Settings is immutable once resolved. Reloading the configuration means
// resolving a new Settings and swapping it in; nothing holds on to parts of
// the old one.
package settings

import (
	"cmp"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/spend"
)

// Settings is a configuration resolved for the run-time components.
type Settings struct {
	// Scope and MainKey are session.scope and session.mainKey.
	Scope, MainKey string
	// DefaultAgent is the default agent's normalised id.
	DefaultAgent string
	// StateDir is the state directory, ConfigPath the config file.
	StateDir, ConfigPath string
	// SendRules is session.sendPolicy in the policy's form; nil when unset
	// (every send is allowed).
	SendRules *policy.SendPolicyConfig
	// Queue is messages.queue.
	Queue policy.QueueConfig
	// Auth is gateway.auth.
	Auth config.GatewayAuth
	// Tools is tools.{profile, allow, alsoAllow, deny}, the global tool
	// selection.
	Tools policy.ToolSelection

	Sessions  Sessions
	Subagents Subagents
	// DMScope is session.dmScope: how channel DMs map to sessions.
	DMScope string
	// IRC is channels.irc.
	IRC config.IRCSettings
	// Telegram is channels.telegram.
	Telegram config.TelegramSettings
	// HTTP is gateway.http.endpoints: the OpenAI-compatible front doors.
	HTTP HTTP
	// GatewayPort is gateway.port as written (0: unset).
	GatewayPort int
	// BootstrapMaxChars and BootstrapTotalMaxChars are
	// agents.defaults.bootstrap{,Total}MaxChars, the budgets of the
	// workspace files in the system prompt (0: the defaults).
	BootstrapMaxChars, BootstrapTotalMaxChars int
	// Storage is storage resolved (backend, URL, pool).
	Storage StorageSettings
	// MCPServers are mcp.servers resolved, in name order.
	MCPServers []MCPServerSettings
	// SecretValues are every configured secret (gateway, providers,
	// channels, token files): masked in logs and provider errors.
	SecretValues []string
	// MemorySearch is memory.search.
	MemorySearch MemorySearch
	// WebFetch is tools.web.fetch.
	WebFetch WebFetch
	// GatewayToolsAllow and GatewayToolsDeny are gateway.tools.{allow,
	// deny}: changes to the default deny list of /tools/invoke.
	GatewayToolsAllow, GatewayToolsDeny []string
	// RemotePeers are the channels.a2a peers with an outbound url (when
	// the channel is enabled): sessions_send reaches them as
	// "a2a:<peer>". Sorted.
	RemotePeers []string

	Serve

	entries  []Entry          // agents.list in file order
	agentIDs []string         // configured, file order, no repeats
	agents   map[string]Agent // by normalised id: configured and default
	provider map[string]bool  // configured model providers, by normalised id
	cfg      *config.Config   // for the lookups by argument (layer.go), agents not configured, config.get
	listen   []string         // gateway listen addresses, host:port
	scopes   *skillScopes     // SkillScope's, by agent id (nil: not cached)
}

// HTTP is what gateway.http.endpoints enables.
type HTTP struct {
	// ChatCompletions and Responses enable /v1/chat/completions and
	// /v1/responses.
	ChatCompletions, Responses bool
	// ImageMaxBytes and ImageMimes bound chat completions' image inputs
	// (no mimes: the default set).
	ImageMaxBytes int
	ImageMimes    []string
}

// Serve is what serve's own wiring reads: the gateway's listeners and
// origins, logging, reload, hooks, channels' A2A side, exec, compaction
// and the runner's defaults.
type Serve struct {
	// PublicOrigin is gateway.publicOrigin.
	PublicOrigin string
	// AllowedOrigins is gateway.controlUi.allowedOrigins and
	// AllowHostHeaderOrigin its dangerouslyAllowHostHeaderOriginFallback.
	AllowedOrigins        []string
	AllowHostHeaderOrigin bool
	// AuthRateLimit is gateway.auth.rateLimit (nil: the defaults).
	AuthRateLimit *AuthRateLimit
	// ReloadMode is gateway.reload.mode.
	ReloadMode string
	// Log is logging resolved.
	Log LogSettings
	// A2A is channels.a2a resolved.
	A2A A2ASettings
	// Hooks is hooks: webhooks and hooks.internal.
	Hooks Hooks
	// Exec is tools.exec resolved; ExecApprovalTimeout how long an exec
	// approval waits.
	Exec                ExecSettings
	ExecApprovalTimeout time.Duration
	// MCPOperatorReach is mcp.serve's operator reach.
	MCPOperatorReach bool
	// SandboxPruneIdle and SandboxPruneMaxAge are
	// agents.defaults.sandbox.prune.
	SandboxPruneIdle, SandboxPruneMaxAge time.Duration
	// AgentTimeoutSeconds is agents.defaults.timeoutSeconds.
	AgentTimeoutSeconds int
	// Compaction is agents.defaults.compaction resolved, ContextPruning
	// agents.defaults.contextPruning.
	Compaction     Compaction
	ContextPruning ContextPruning
	// ResetConfigured says whether session.reset, resetByType or
	// resetByChannel is set (ResetRule answers for a session).
	ResetConfigured bool
}

// Sessions are the session tools' settings.
type Sessions struct {
	// Visibility is tools.sessions.visibility.
	Visibility policy.Visibility
	// VisibilityClamp is agents.defaults.sandbox.sessionToolsVisibility
	// ("spawned" or "all").
	VisibilityClamp string
	// A2A is tools.agentToAgent.
	A2A policy.A2A
	// MaxPingPongTurns is session.agentToAgent.maxPingPongTurns, 0..5.
	MaxPingPongTurns int
	// MaxChainHops and MaxChainVisits are tools.agentToAgent's chain
	// limits (0: off).
	MaxChainHops, MaxChainVisits int
	// RedactMode and RedactPatterns are logging.redactSensitive and
	// logging.redactPatterns.
	RedactMode     string
	RedactPatterns []string
	// Secrets are the configured secret values (gateway token and
	// password, provider API keys) that must never come back out of a
	// transcript.
	Secrets []string
}

// Subagents are the sub-agent manager's settings (agents.defaults.subagents,
// tools.subagents and tools.sessions_spawn).
type Subagents struct {
	MaxSpawnDepth       int
	MaxChildrenPerAgent int
	MaxConcurrent       int
	ArchiveAfterMinutes int
	RunTimeoutSeconds   int
	AnnounceTimeoutMs   int
	Attachments         config.AttachmentLimits
	// Tools is tools.subagents.tools, the sub-agent tool policy.
	Tools config.ToolPolicy
}

// Agent is one agent's effective settings.
type Agent struct {
	ID   string // normalised
	Name string
	// Avatar and Emoji are its identity.avatar and identity.emoji.
	Avatar, Emoji string
	// Configured reports whether agents.list names it.
	Configured bool
	Workspace  string
	// Model is the model ref, "" when none is configured.
	Model          string
	ModelFallbacks []string
	// SubagentModel and SubagentThinking apply to sub-agents it spawns.
	SubagentModel    string
	SubagentThinking string
	// AllowAgents lists the agents it may spawn (nil: only itself).
	AllowAgents []string
	// SandboxMode is "off", "non-main" or "all".
	SandboxMode string
	// SandboxWorkspaceAccess is "none", "ro" or "rw".
	SandboxWorkspaceAccess string
	// SandboxNetwork is "none" or "host".
	SandboxNetwork string
	// SandboxBackend is "bubblewrap" or "docker" (an unknown value is
	// kept for the sandbox to refuse).
	SandboxBackend string
	// SandboxDocker is the agent's merged sandbox.docker settings.
	SandboxDocker config.SandboxDocker
	// SandboxScope is "agent", "session" or "shared".
	SandboxScope string
	// SandboxTools is tools.sandbox.tools with the agent's lists over the
	// global ones: what its sandboxed sessions keep.
	SandboxTools policy.SandboxToolPolicy
	// Elevated says whether its sandboxed sessions' exec may run on the
	// host (tools.elevated and the agent's own gate), for the senders of
	// both allowlists by channel.
	Elevated                      bool
	ElevatedFrom, ElevatedFromOwn map[string][]string
	// SandboxWorkspaceRoot is where the private sandbox workspaces live
	// (absolute; <state dir>/sandboxes by default).
	SandboxWorkspaceRoot string
	// SandboxWorkspaceQuota is the quota of those workspaces in bytes (0:
	// the sandbox's default).
	SandboxWorkspaceQuota int64
	// Tools is agents.list[].tools, the agent's own tool selection (zero
	// when it has none).
	Tools policy.ToolSelection
	// Budget is the spending limits of a session tree rooted at one of its
	// sessions (zero: none).
	Budget spend.Limits
	// UntrustedAllow is what its sessions driven from outside the operator
	// may still use on the host (tools.untrusted.allow and its own).
	UntrustedAllow []string
}

// Entry is one agents.list entry as written: id normalised, name trimmed.
type Entry struct{ ID, Name string }

// Resolve resolves cfg.
func Resolve(cfg *config.Config) *Settings {
	auth := cfg.GatewayAuth()
	maxHops, maxVisits := cfg.ChainLimits()
	s := &Settings{
		Scope: cfg.Scope(), MainKey: cfg.MainKey(), DefaultAgent: sessionkey.NormalizeAgentID(cfg.DefaultAgentID()),
		StateDir: cfg.Paths().StateDir, ConfigPath: cfg.Paths().ConfigPath, SendRules: SendRules(cfg), Queue: Queue(cfg), Auth: auth,
		Tools: toolSelection(cfg.GlobalTools()),
		Sessions: Sessions{
			Visibility:       policy.ParseVisibility(cfg.Visibility()),
			VisibilityClamp:  cfg.SessionToolsVisibility(),
			A2A:              policy.A2A{Enabled: cfg.AgentToAgentEnabled(), Allow: cfg.AgentToAgentAllow()},
			MaxPingPongTurns: cfg.MaxPingPongTurns(),
			MaxChainHops:     maxHops,
			MaxChainVisits:   maxVisits,
			RedactMode:       cfg.RedactSensitive(),
			RedactPatterns:   cfg.RedactPatterns(),
			Secrets:          secrets(cfg, auth),
		},
		Subagents: Subagents{
			MaxSpawnDepth: cfg.MaxSpawnDepth(), MaxChildrenPerAgent: cfg.MaxChildrenPerAgent(),
			MaxConcurrent: cfg.MaxConcurrent(), ArchiveAfterMinutes: cfg.ArchiveAfterMinutes(),
			RunTimeoutSeconds: cfg.RunTimeoutSeconds(), AnnounceTimeoutMs: cfg.AnnounceTimeoutMs(),
			Attachments: cfg.Attachments(), Tools: cfg.SubagentTools(),
		},
		DMScope:  cfg.DMScope(),
		IRC:      cfg.IRC(),
		Telegram: cfg.Telegram(),
		agentIDs: cfg.AgentIDs(),
		agents:   map[string]Agent{},
		cfg:      cfg,

		HTTP:              httpOf(cfg),
		WebFetch:          cfg.Tools.Web.Fetch,
		SecretValues:      cfg.SecretValues(),
		Storage:           cfg.StorageSettings(),
		MCPServers:        cfg.MCPServers(),
		listen:            cfg.GatewayListenAddrs(),
		MemorySearch:      cfg.Memory.Search,
		GatewayToolsAllow: cfg.GatewayToolsAllow(), GatewayToolsDeny: cfg.GatewayToolsDeny(),
		scopes: &skillScopes{},
	}
	s.Serve = Serve{
		PublicOrigin:   cfg.GatewayPublicOrigin(),
		AllowedOrigins: slices.Clone(cfg.Gateway.ControlUI.AllowedOrigins), AllowHostHeaderOrigin: cfg.Gateway.ControlUI.DangerouslyAllowHostHeaderOriginFallback,
		AuthRateLimit: cfg.Gateway.Auth.RateLimit, ReloadMode: cfg.ReloadMode(), Log: cfg.LogSettings(),
		A2A: cfg.A2A(), Hooks: cfg.Hooks, Exec: cfg.Exec(), ExecApprovalTimeout: cfg.ExecApprovalTimeout(),
		MCPOperatorReach: cfg.MCPOperatorReach(), AgentTimeoutSeconds: cfg.AgentTimeoutSeconds(),
		Compaction: cfg.Compaction(), ContextPruning: cfg.ContextPruning(),
		ResetConfigured: cfg.Session.Reset != nil || len(cfg.Session.ResetByType) > 0 || len(cfg.Session.ResetByChannel) > 0,
	}
	s.SandboxPruneIdle, s.SandboxPruneMaxAge = cfg.SandboxPrune()
	if p := cfg.Gateway.Port; p != nil {
		s.GatewayPort = *p
	}
	if p := cfg.Agents.Defaults.BootstrapMaxChars; p != nil {
		s.BootstrapMaxChars = *p
	}
	if p := cfg.Agents.Defaults.BootstrapTotalMaxChars; p != nil {
		s.BootstrapTotalMaxChars = *p
	}
	if a := cfg.A2A(); a.Enabled {
		for _, p := range a.Peers {
			if p.URL != "" {
				s.RemotePeers = append(s.RemotePeers, p.Name)
			}
		}
		slices.Sort(s.RemotePeers)
	}
	s.provider = map[string]bool{}
	for id := range cfg.Providers() {
		s.provider[id] = true
	}
	for _, e := range cfg.Agents.List {
		s.entries = append(s.entries, Entry{ID: sessionkey.NormalizeAgentID(e.ID), Name: strings.TrimSpace(e.Name)})
	}
	for _, id := range append(slices.Clone(s.agentIDs), s.DefaultAgent) {
		s.agents[id] = agentOf(cfg, id)
	}
	return s
}

func httpOf(cfg *config.Config) HTTP {
	h := HTTP{ChatCompletions: cfg.ChatCompletionsEnabled(), Responses: cfg.ResponsesEnabled()}
	h.ImageMaxBytes, h.ImageMimes = cfg.ChatImageLimits()
	return h
}

func agentOf(cfg *config.Config, id string) Agent {
	id = sessionkey.NormalizeAgentID(id)
	a := Agent{
		ID: id, Workspace: cfg.AgentWorkspace(id), Model: cfg.AgentModel(id), ModelFallbacks: cfg.AgentModelFallbacks(id),
		SubagentModel: cfg.SubagentModel(id), SubagentThinking: cfg.SubagentThinking(id),
		AllowAgents: cfg.AllowAgents(id), SandboxMode: cfg.SandboxMode(id),
		SandboxWorkspaceAccess: cfg.SandboxWorkspaceAccess(id), SandboxNetwork: cfg.SandboxNetwork(id),
		SandboxBackend: cfg.SandboxBackend(id), SandboxDocker: cfg.SandboxDocker(id),
		SandboxScope: cfg.SandboxScope(id), SandboxWorkspaceRoot: cfg.SandboxRoot(id), SandboxWorkspaceQuota: cfg.SandboxWorkspaceQuota(id),
		SandboxTools:   policy.SandboxToolPolicy(cfg.SandboxToolPolicy(id)),
		Tools:          toolSelection(cfg.AgentToolSelection(id)),
		Budget:         budgetOf(cfg.BudgetOf(id)),
		UntrustedAllow: cfg.UntrustedAllow(id),
	}
	if e, ok := cfg.Agent(id); ok {
		a.Configured, a.Name = true, strings.TrimSpace(e.Name)
		a.Avatar, a.Emoji = e.Identity.Avatar, e.Identity.Emoji
	}
	a.Elevated, a.ElevatedFrom, a.ElevatedFromOwn = cfg.Elevated(id)
	return a
}

// Entries returns agents.list as written, in file order.
func (s *Settings) Entries() []Entry { return slices.Clone(s.entries) }

// AgentIDs returns the configured agents' ids in file order (empty when
// none are configured).
func (s *Settings) AgentIDs() []string { return slices.Clone(s.agentIDs) }

// Agent returns agent id's settings. An agent that is not configured gets
// the defaults (resolved from the same configuration).
func (s *Settings) Agent(id string) Agent {
	id = sessionkey.NormalizeAgentID(id)
	if a, ok := s.agents[id]; ok {
		return a
	}
	return agentOf(s.cfg, id)
}

// ListenAddrs returns the addresses (host:port) the gateway listens on.
func (s *Settings) ListenAddrs() []string { return slices.Clone(s.listen) }

// HasProvider reports whether a model provider with the id is configured
// (ids are compared case-insensitively).
func (s *Settings) HasProvider(id string) bool {
	return s.provider[strings.ToLower(strings.TrimSpace(id))]
}

// Known reports whether id is the default agent or a configured one.
func (s *Settings) Known(id string) bool {
	_, ok := s.agents[sessionkey.NormalizeAgentID(id)]
	return ok
}

// SendRules returns session.sendPolicy in the policy's form, nil when
// unset.
func SendRules(cfg *config.Config) *policy.SendPolicyConfig {
	sp := cfg.SendPolicy()
	if sp == nil {
		return nil
	}
	out := &policy.SendPolicyConfig{Default: sp.Default}
	for _, r := range sp.Rules {
		rule := policy.SendRule{Action: r.Action}
		if r.Match != nil {
			rule.Match = policy.SendMatch{Channel: r.Match.Channel, ChatType: r.Match.ChatType,
				KeyPrefix: r.Match.KeyPrefix, RawKeyPrefix: r.Match.RawKeyPrefix}
		}
		out.Rules = append(out.Rules, rule)
	}
	return out
}

// Queue returns messages.queue in the policy's form.
func Queue(cfg *config.Config) policy.QueueConfig {
	q := cfg.Messages.Queue
	return policy.QueueConfig{
		Mode: q.Mode, Cap: q.Cap, Drop: q.Drop,
		ByChannel: maps.Clone(q.ByChannel), DebounceMsByChannel: maps.Clone(q.DebounceMsByChannel),
	}
}

// toolSelection converts a configured tool selection to the policy's form.
func toolSelection(s config.ToolSelection) policy.ToolSelection {
	return policy.ToolSelection{Profile: s.Profile, Allow: s.Allow, AlsoAllow: s.AlsoAllow, Deny: s.Deny}
}

// secrets lists the configured secret values.
func secrets(cfg *config.Config, auth config.GatewayAuth) []string {
	irc := cfg.IRC()
	tg := cfg.Telegram()
	out := []string{auth.Token, auth.Password, irc.Password, irc.NickServPassword, tg.BotToken, tg.WebhookSecret}
	providers := cfg.Providers()
	for _, id := range slices.Sorted(maps.Keys(providers)) {
		out = append(out, providers[id].APIKey)
	}
	return slices.DeleteFunc(out, func(v string) bool { return v == "" })
}

// budgetOf converts a configured budget to limits (unset fields: none).
func budgetOf(b config.Budget) spend.Limits {
	var l spend.Limits
	if b.MaxRuns != nil {
		l.Runs = int64(*b.MaxRuns)
	}
	if b.MaxTokens != nil {
		l.Tokens = int64(*b.MaxTokens)
	}
	if b.MaxCost != nil {
		l.Cost = *b.MaxCost
	}
	if b.MaxWallTimeSeconds != nil {
		l.WallTimeSeconds = int64(*b.MaxWallTimeSeconds)
	}
	if b.MaxConcurrentChildren != nil {
		l.ConcurrentChildren = *b.MaxConcurrentChildren
	}
	return l
}

// SandboxOwnWorkspace is the private workspace of the sandbox a
// sandboxed session sessionKey of the agent works in instead of the
// agent's workspace: its scope's, when workspaceAccess is none; else "".
func (a Agent) SandboxOwnWorkspace(sessionKey string) string {
	if a.SandboxWorkspaceAccess != sandbox.AccessNone {
		return ""
	}
	return a.SandboxSpec(sessionKey).ScopeDir
}

// SandboxSpec is the sandbox of the agent's session sessionKey: its
// backend, workspace access, network, scope (the sandbox it shares, and
// that sandbox's private workspace under the workspace root) and Docker
// settings. An empty sessionKey leaves the scope key and workspace unset.
func (a Agent) SandboxSpec(sessionKey string) sandbox.Spec {
	d := a.SandboxDocker
	spec := sandbox.Spec{
		Backend: a.SandboxBackend, WorkspaceAccess: a.SandboxWorkspaceAccess, Network: a.SandboxNetwork,
		Scope: a.SandboxScope, Limits: sandbox.Limits{WorkspaceBytes: a.SandboxWorkspaceQuota},
		Docker: sandbox.DockerSpec{
			Image: d.Image, ContainerPrefix: d.ContainerPrefix, Workdir: d.Workdir, ReadOnlyRoot: d.ReadOnlyRoot,
			Tmpfs: d.Tmpfs, Network: d.Network, User: d.User, CapDrop: d.CapDrop, Env: d.Env,
			Binds: d.Binds, DNS: d.DNS, ExtraHosts: d.ExtraHosts,
			SeccompProfile: d.SeccompProfile, ApparmorProfile: d.ApparmorProfile,
			SetupCommand: d.SetupCommand, GPUs: d.GPUs,
		},
	}
	if sessionKey != "" {
		spec.ScopeKey = sandbox.KeyFor(spec.Normalized().Scope, a.ID, sessionKey)
		if a.SandboxWorkspaceRoot != "" {
			spec.ScopeDir = filepath.Join(a.SandboxWorkspaceRoot, sandbox.DirName(spec.Normalized().Scope, spec.ScopeKey))
		}
	}
	for name, u := range d.Ulimits {
		if spec.Docker.Ulimits == nil {
			spec.Docker.Ulimits = map[string]sandbox.Ulimit{}
		}
		spec.Docker.Ulimits[name] = sandbox.Ulimit{Soft: u.Soft, Hard: u.Hard}
	}
	if d.PidsLimit != nil {
		spec.Docker.PidsLimit = int64(*d.PidsLimit)
		if spec.Docker.PidsLimit == 0 {
			spec.Docker.PidsLimit = -1 // 0 configured: unlimited, as Docker reads it
		}
	}
	if d.Memory != nil {
		spec.Docker.Memory = strconv.FormatInt(int64(*d.Memory), 10)
	}
	if d.MemorySwap != nil {
		spec.Docker.MemorySwap = strconv.FormatInt(int64(*d.MemorySwap), 10)
	}
	if d.Cpus != nil {
		spec.Docker.CPUs = *d.Cpus
	}
	return spec
}

// Elevated gates, as the reference names them in its refusals.
const (
	ElevatedGateEnabled   = "enabled (tools.elevated.enabled / agents.entries.*.tools.elevated.enabled)"
	ElevatedGateAllowFrom = "allowFrom (tools.elevated.allowFrom.<provider> / agents.entries.*.tools.elevated.allowFrom.<provider>)"
)

// ElevatedGate says whether a message from sender on channel may use
// exec's elevated escape (tools.elevated): "" when it may, else the
// failing gate. The gates are tools.elevated.enabled and the agent's own
// (unset means on), then the sender on tools.elevated.allowFrom.<channel>
// and, when the agent has one, on its own list. A sender is the chat a
// message came from (the direct peer); "*" allows every sender of the
// channel. Operator clients are channel "webchat" ("" is read as it).
func (a Agent) ElevatedGate(channel, sender string) string {
	if !a.Elevated {
		return ElevatedGateEnabled
	}
	channel = cmp.Or(channel, sessionkey.InternalChannel)
	if !senderAllowed(a.ElevatedFrom[channel], sender) ||
		a.ElevatedFromOwn != nil && !senderAllowed(a.ElevatedFromOwn[channel], sender) {
		return ElevatedGateAllowFrom
	}
	return ""
}

// senderAllowed reports whether sender is on allow ("*" matches anyone;
// entries compare case-insensitively).
func senderAllowed(allow []string, sender string) bool {
	sender = strings.ToLower(strings.TrimSpace(sender))
	return slices.ContainsFunc(allow, func(a string) bool {
		a = strings.ToLower(strings.TrimSpace(a))
		return a == "*" || a != "" && a == sender
	})
}
