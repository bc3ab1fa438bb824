package config

import (
	"encoding/json"
	"strings"
)

// Config is the whole gateway configuration: the openclaw.json key tree as
// read from the file, plus the environment and paths it was resolved with.
// Fields hold what the file says (nil or empty when unset); use the accessor
// methods for effective values with defaults applied. A Config is not
// modified after Parse or Load returns it and is then safe for concurrent
// reads.
type Config struct {
	Session Session `json:"session,omitzero"`
	Tools   Tools   `json:"tools,omitzero"`
	Agents  Agents  `json:"agents,omitzero"`
	Models  Models  `json:"models,omitzero"`
	Gateway Gateway `json:"gateway,omitzero"`
	Logging Logging `json:"logging,omitzero"`
	// Messages is the "messages" section.
	Messages Messages `json:"messages,omitzero"`
	// Storage is the "storage" section (Switchboard's own).
	Storage Storage `json:"storage,omitzero"`
	// MCP is the "mcp" section (MCP servers whose tools agents get).
	MCP MCP `json:"mcp,omitzero"`
	// Memory is the "memory" section; Switchboard reads the embedding
	// provider of memory.search (for /v1/embeddings).
	Memory Memory `json:"memory,omitzero"`
	// Channels is the "channels" section (channels.a2a and channels.irc).
	Channels Channels `json:"channels,omitzero"`
	// Hooks is the "hooks" section (webhook ingress).
	Hooks Hooks `json:"hooks,omitzero"`
	// Skills is the "skills" section: where skills load from and
	// per-skill settings.
	Skills Skills `json:"skills,omitzero"`

	file  string     // source name for messages
	src   *sourceMap // key positions; nil for a Config built in code
	env   Env        // never nil after Parse
	paths Paths
	// origins maps a key path to where its value came from when that was
	// not the file (e.g. "flags").
	origins map[string]string
}

// Memory is the "memory" section.
type Memory struct {
	Search MemorySearch `json:"search,omitzero"`
}

// MemorySearch is memory.search: which embedding provider and model serve
// the agents (default provider "openai", model DefaultEmbeddingModel).
type MemorySearch struct {
	Enabled  *bool  `json:"enabled,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// OutputDimensionality is the vector size asked for; 0 leaves it to
	// the model.
	OutputDimensionality int `json:"outputDimensionality,omitempty"`
}

// DefaultEmbeddingModel is memory.search.model's default for the openai
// provider.
const DefaultEmbeddingModel = "text-embedding-3-small"

// EmbeddingRef returns the embedding provider and model of memory.search,
// with the reference's defaults ("openai", and DefaultEmbeddingModel for
// it; "auto" is the legacy spelling of "openai").
func (c *Config) EmbeddingRef() (providerID, model string) {
	ms := c.Memory.Search
	providerID = strings.ToLower(strings.TrimSpace(ms.Provider))
	if providerID == "" || providerID == "auto" {
		providerID = "openai"
	}
	model = strings.TrimSpace(ms.Model)
	if model == "" && providerID == "openai" {
		model = DefaultEmbeddingModel
	}
	return providerID, model
}

// Session is the "session" section.
type Session struct {
	// Scope is "per-sender" (default) or "global".
	Scope string `json:"scope,omitempty"`
	// MainKey is the main-session suffix (default "main").
	MainKey string `json:"mainKey,omitempty"`
	// DMScope is how channel direct messages map to sessions: "main"
	// (default), "per-peer", "per-channel-peer" or
	// "per-account-channel-peer".
	DMScope string `json:"dmScope,omitempty"`
	// SendPolicy is nil when unset, which allows every send.
	SendPolicy   *SendPolicy         `json:"sendPolicy,omitempty"`
	AgentToAgent SessionAgentToAgent `json:"agentToAgent,omitzero"`
	// Reset, ResetByType and ResetByChannel are the automatic resets;
	// see Config.ResetRule.
	Reset          *SessionReset           `json:"reset,omitempty"`
	ResetByType    map[string]SessionReset `json:"resetByType,omitempty"`
	ResetByChannel map[string]SessionReset `json:"resetByChannel,omitempty"`
}

// SendPolicy is "session.sendPolicy" (docs/spec/reference-behaviour.md §8).
type SendPolicy struct {
	// Default is "allow" or "deny"; empty means allow.
	Default string           `json:"default,omitempty"`
	Rules   []SendPolicyRule `json:"rules,omitempty"`
}

// SendPolicyRule is one entry of "session.sendPolicy.rules".
type SendPolicyRule struct {
	// Action is "allow" or "deny"; empty means allow.
	Action string `json:"action,omitempty"`
	// Match is nil when absent, which matches every session.
	Match *SendPolicyMatch `json:"match,omitempty"`
}

// SendPolicyMatch holds the optional facts a SendPolicyRule matches on;
// empty fields are absent.
type SendPolicyMatch struct {
	Channel string `json:"channel,omitempty"`
	// ChatType is "direct", "group", "channel" or the legacy "dm".
	ChatType     string `json:"chatType,omitempty"`
	KeyPrefix    string `json:"keyPrefix,omitempty"`
	RawKeyPrefix string `json:"rawKeyPrefix,omitempty"`
}

// SessionAgentToAgent is "session.agentToAgent".
type SessionAgentToAgent struct {
	// MaxPingPongTurns is nil when unset (5); 0 disables ping-pong.
	MaxPingPongTurns *int `json:"maxPingPongTurns,omitempty"`
}

// Tools is the "tools" section.
type Tools struct {
	// Profile, Allow, AlsoAllow and Deny select the tools a run gets
	// (see policy.ToolOffered); nil slices are unset.
	Profile       string             `json:"profile,omitempty"`
	Allow         []string           `json:"allow,omitempty"`
	AlsoAllow     []string           `json:"alsoAllow,omitempty"`
	Deny          []string           `json:"deny,omitempty"`
	Exec          ToolsExec          `json:"exec,omitzero"`
	Sessions      ToolsSessions      `json:"sessions,omitzero"`
	AgentToAgent  ToolsAgentToAgent  `json:"agentToAgent,omitzero"`
	Subagents     ToolsSubagents     `json:"subagents,omitzero"`
	SessionsSpawn ToolsSessionsSpawn `json:"sessions_spawn,omitzero"`
	Web           ToolsWeb           `json:"web,omitzero"`
	// Untrusted is "tools.untrusted": what sessions driven from outside
	// the operator may use on the host (Switchboard's key).
	Untrusted ToolsUntrusted `json:"untrusted,omitzero"`
	// Sandbox is "tools.sandbox": the tool policy of sandboxed sessions.
	Sandbox ToolsSandbox `json:"sandbox,omitzero"`
	// Elevated is "tools.elevated": exec on the host from a sandbox.
	Elevated ToolsElevated `json:"elevated,omitzero"`
}

// ToolsUntrusted is "tools.untrusted" (and agents.list[].tools.untrusted):
// sessions whose input comes from outside the operator — webhooks, A2A
// peers, chat rooms — get no exec, process or file writes on the host
// unless Allow names them (tool names or groups; "*" allows all). A
// sandboxed session keeps them: they run in the sandbox.
type ToolsUntrusted struct {
	Allow []string `json:"allow,omitempty"`
}

// ToolsWeb is "tools.web".
type ToolsWeb struct {
	Fetch ToolsWebFetch `json:"fetch,omitzero"`
}

// ToolsWebFetch is "tools.web.fetch" (the web_fetch tool). Provider,
// CacheTTLMinutes, Readability, UseTrustedEnvProxy and Headers are the
// reference's and accepted; Switchboard fetches directly, uncached, with
// its own extractor.
type ToolsWebFetch struct {
	Enabled            *bool             `json:"enabled,omitempty"`
	Provider           string            `json:"provider,omitempty"`
	MaxChars           *int              `json:"maxChars,omitempty"`
	MaxCharsCap        *int              `json:"maxCharsCap,omitempty"`
	MaxResponseBytes   *int64            `json:"maxResponseBytes,omitempty"`
	TimeoutSeconds     *int              `json:"timeoutSeconds,omitempty"`
	CacheTTLMinutes    *int              `json:"cacheTtlMinutes,omitempty"`
	MaxRedirects       *int              `json:"maxRedirects,omitempty"`
	UseTrustedEnvProxy *bool             `json:"useTrustedEnvProxy,omitempty"`
	Readability        *bool             `json:"readability,omitempty"`
	UserAgent          string            `json:"userAgent,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	SSRFPolicy         struct {
		DangerouslyAllowPrivateNetwork *bool    `json:"dangerouslyAllowPrivateNetwork,omitempty"`
		AllowedHostnames               []string `json:"allowedHostnames,omitempty"`
		AllowRfc2544BenchmarkRange     *bool    `json:"allowRfc2544BenchmarkRange,omitempty"`
		AllowIpv6UniqueLocalRange      *bool    `json:"allowIpv6UniqueLocalRange,omitempty"`
	} `json:"ssrfPolicy,omitzero"`
}

// ToolsSessions is "tools.sessions".
type ToolsSessions struct {
	// Visibility is "self", "tree" (default), "agent" or "all".
	Visibility string `json:"visibility,omitempty"`
}

// ToolsAgentToAgent is "tools.agentToAgent" (docs/spec/reference-behaviour.md §3.4).
type ToolsAgentToAgent struct {
	Enabled *bool `json:"enabled,omitempty"`
	// Allow lists agent-id patterns; empty allows every agent.
	Allow []string `json:"allow,omitempty"`
	// MaxChainHops and MaxChainVisits bound a chain of agent-to-agent
	// messages and spawns (Switchboard's; see config.ChainLimits).
	MaxChainHops   *int `json:"maxChainHops,omitempty"`
	MaxChainVisits *int `json:"maxChainVisits,omitempty"`
}

// ToolsSubagents is "tools.subagents".
type ToolsSubagents struct {
	Tools ToolPolicy `json:"tools,omitzero"`
}

// ToolPolicy is an allow/deny list of tool names (docs/spec/reference-behaviour.md §9.4). A nil
// slice is unset.
type ToolPolicy struct {
	Allow     []string `json:"allow,omitempty"`
	AlsoAllow []string `json:"alsoAllow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
}

// ToolsSessionsSpawn is "tools.sessions_spawn".
type ToolsSessionsSpawn struct {
	Attachments AttachmentsConfig `json:"attachments,omitzero"`
}

// AttachmentsConfig is "tools.sessions_spawn.attachments" as written; see
// Config.Attachments for the effective limits.
type AttachmentsConfig struct {
	Enabled             *bool `json:"enabled,omitempty"`
	MaxTotalBytes       *int  `json:"maxTotalBytes,omitempty"`
	MaxFiles            *int  `json:"maxFiles,omitempty"`
	MaxFileBytes        *int  `json:"maxFileBytes,omitempty"`
	RetainOnSessionKeep *bool `json:"retainOnSessionKeep,omitempty"`
}

// Agents is the "agents" section.
type Agents struct {
	Defaults AgentDefaults `json:"defaults,omitzero"`
	List     []AgentEntry  `json:"list,omitempty"`
}

// AgentDefaults is "agents.defaults".
type AgentDefaults struct {
	// Model is nil when unset.
	Model *ModelRef `json:"model,omitempty"`
	// Workspace may start with "~/".
	Workspace string           `json:"workspace,omitempty"`
	Subagents SubagentDefaults `json:"subagents,omitzero"`
	Sandbox   SandboxDefaults  `json:"sandbox,omitzero"`
	// TimeoutSeconds bounds one agent run; nil when unset (600).
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
	// Compaction is "agents.defaults.compaction"; see Config.Compaction.
	Compaction CompactionConfig `json:"compaction,omitzero"`
	// ContextPruning is "agents.defaults.contextPruning"; see
	// Config.ContextPruning.
	ContextPruning ContextPruningConfig `json:"contextPruning,omitzero"`
	// Budget is "agents.defaults.budget": see Budget.
	Budget Budget `json:"budget,omitzero"`
	// Skills is the agents' skill allowlist: nil leaves them unrestricted,
	// empty gives them none.
	Skills []string `json:"skills,omitempty"`
	// BootstrapMaxChars bounds each workspace file in the system prompt
	// (default 20,000); BootstrapTotalMaxChars all of them (default
	// 60,000). Nil or 0 keeps the default.
	BootstrapMaxChars      *int `json:"bootstrapMaxChars,omitempty"`
	BootstrapTotalMaxChars *int `json:"bootstrapTotalMaxChars,omitempty"`
}

// SubagentDefaults is "agents.defaults.subagents". Nil pointers are unset.
type SubagentDefaults struct {
	MaxSpawnDepth       *int      `json:"maxSpawnDepth,omitempty"`
	MaxChildrenPerAgent *int      `json:"maxChildrenPerAgent,omitempty"`
	MaxConcurrent       *int      `json:"maxConcurrent,omitempty"`
	ArchiveAfterMinutes *int      `json:"archiveAfterMinutes,omitempty"`
	RunTimeoutSeconds   *int      `json:"runTimeoutSeconds,omitempty"`
	AnnounceTimeoutMs   *int      `json:"announceTimeoutMs,omitempty"`
	Model               *ModelRef `json:"model,omitempty"`
	Thinking            string    `json:"thinking,omitempty"`
}

// SandboxDefaults is "agents.defaults.sandbox".
type SandboxDefaults struct {
	// Mode is "off" (default), "non-main" or "all".
	Mode string `json:"mode,omitempty"`
	// SessionToolsVisibility is "spawned" (default) or "all".
	SessionToolsVisibility string `json:"sessionToolsVisibility,omitempty"`
	// WorkspaceAccess is "none" (default), "ro" or "rw": how the agent
	// workspace is mounted in the sandbox.
	WorkspaceAccess string `json:"workspaceAccess,omitempty"`
	// Network is "none" (default) or "host" (Switchboard's bubblewrap
	// backend; the reference's sandbox.docker.network).
	Network string `json:"network,omitempty"`
	// Backend is "bubblewrap" (default; "bwrap" too) or "docker".
	Backend string `json:"backend,omitempty"`
	// Scope is "agent" (default), "session" or "shared": which sessions
	// share one sandbox (container and private workspace).
	Scope string `json:"scope,omitempty"`
	// WorkspaceRoot is where the private sandbox workspaces of
	// workspaceAccess none and ro live, one per scope ("" means
	// <state dir>/sandboxes; "~" is the home directory).
	WorkspaceRoot string `json:"workspaceRoot,omitempty"`
	// WorkspaceQuota bounds what the regular files of each private
	// sandbox workspace (workspaceAccess none and ro) hold, in bytes or
	// a size string ("1gb", the default): a command does not start over
	// it and is stopped when it writes past it.
	WorkspaceQuota *ByteSize `json:"workspaceQuota,omitempty"`
	// Docker configures the docker backend (the reference's keys).
	Docker *SandboxDocker `json:"docker,omitempty"`
	// Prune removes idle and old sandbox containers.
	Prune *SandboxPrune `json:"prune,omitempty"`
}

// SandboxPrune is "agents.defaults.sandbox.prune": sandbox containers idle
// longer than IdleHours (default 24) or older than MaxAgeDays (default 7)
// are removed; 0 turns a rule off.
type SandboxPrune struct {
	IdleHours  *float64 `json:"idleHours,omitempty"`
	MaxAgeDays *float64 `json:"maxAgeDays,omitempty"`
}

// SandboxDocker is "agents.defaults.sandbox.docker" and
// "agents.list[].sandbox.docker": the Docker backend's container settings.
// An agent's fields override the defaults' one by one; binds and env merge.
type SandboxDocker struct {
	Image           string   `json:"image,omitempty"`
	ContainerPrefix string   `json:"containerPrefix,omitempty"`
	Workdir         string   `json:"workdir,omitempty"`
	ReadOnlyRoot    *bool    `json:"readOnlyRoot,omitempty"`
	Tmpfs           []string `json:"tmpfs,omitempty"`
	// Network is the container's network: "none" (default), "bridge" or
	// a custom network; "host" and "container:<id>" are refused.
	Network string            `json:"network,omitempty"`
	User    string            `json:"user,omitempty"`
	CapDrop []string          `json:"capDrop,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// PidsLimit bounds the container's processes (default 256).
	PidsLimit *int `json:"pidsLimit,omitempty"`
	// Memory and MemorySwap are sizes: "1g", "512m" or a byte count.
	// MemorySwap may also be -1 (unlimited swap).
	Memory     *ByteSize `json:"memory,omitempty"`
	MemorySwap *SwapSize `json:"memorySwap,omitempty"`
	Cpus       *float64  `json:"cpus,omitempty"`
	// GPUs is Docker's --gpus value: "all", a count, "device=<ids>".
	GPUs string `json:"gpus,omitempty"`
	// Ulimits are rlimits by name: a number (soft and hard) or
	// {soft, hard}.
	Ulimits map[string]Ulimit `json:"ulimits,omitempty"`
	// SetupCommand runs once, with sh -lc, after a sandbox container is
	// created.
	SetupCommand string `json:"setupCommand,omitempty"`
	// Binds are extra "host:container[:ro|rw]" mounts.
	Binds           []string `json:"binds,omitempty"`
	DNS             []string `json:"dns,omitempty"`
	ExtraHosts      []string `json:"extraHosts,omitempty"`
	SeccompProfile  string   `json:"seccompProfile,omitempty"`
	ApparmorProfile string   `json:"apparmorProfile,omitempty"`
}

// AgentEntry is one element of "agents.list".
type AgentEntry struct {
	// ID is as written; compare ids with NormalizeAgentID.
	ID        string         `json:"id"`
	Name      string         `json:"name,omitempty"`
	Default   bool           `json:"default,omitempty"`
	Model     *ModelRef      `json:"model,omitempty"`
	Workspace string         `json:"workspace,omitempty"`
	Subagents AgentSubagents `json:"subagents,omitzero"`
	Sandbox   AgentSandbox   `json:"sandbox,omitzero"`
	// Tools is nil when the agent has no tool selection of its own.
	Tools *AgentTools `json:"tools,omitempty"`
	// Budget overrides agents.defaults.budget field by field.
	Budget Budget `json:"budget,omitzero"`
	// Skills replaces agents.defaults.skills for this agent when set
	// (empty: no skills).
	Skills []string `json:"skills,omitempty"`
	// Identity is how the agent shows itself (the Control UI's name,
	// emoji and avatar image).
	Identity AgentIdentity `json:"identity,omitzero"`
}

// AgentIdentity is "agents.list[].identity". Avatar is a workspace-relative
// (or absolute, inside the workspace) image path, an http(s) URL or a
// data: image URI; fields of the workspace's IDENTITY.md fill what is
// unset here.
type AgentIdentity struct {
	Name   string `json:"name,omitempty"`
	Theme  string `json:"theme,omitempty"`
	Emoji  string `json:"emoji,omitempty"`
	Avatar string `json:"avatar,omitempty"`
}

// AgentSubagents is "agents.list[].subagents".
type AgentSubagents struct {
	// AllowAgents lists agent ids this agent may spawn; "*" allows any.
	AllowAgents []string  `json:"allowAgents,omitempty"`
	Model       *ModelRef `json:"model,omitempty"`
	Thinking    string    `json:"thinking,omitempty"`
}

// AgentSandbox is "agents.list[].sandbox".
type AgentSandbox struct {
	// Mode overrides agents.defaults.sandbox.mode when set.
	Mode string `json:"mode,omitempty"`
	// WorkspaceAccess overrides agents.defaults.sandbox.workspaceAccess.
	WorkspaceAccess string `json:"workspaceAccess,omitempty"`
	// Network overrides agents.defaults.sandbox.network.
	Network string `json:"network,omitempty"`
	// Backend overrides agents.defaults.sandbox.backend.
	Backend string `json:"backend,omitempty"`
	// Scope overrides agents.defaults.sandbox.scope.
	Scope string `json:"scope,omitempty"`
	// WorkspaceRoot overrides agents.defaults.sandbox.workspaceRoot.
	WorkspaceRoot string `json:"workspaceRoot,omitempty"`
	// WorkspaceQuota overrides agents.defaults.sandbox.workspaceQuota.
	WorkspaceQuota *ByteSize `json:"workspaceQuota,omitempty"`
	// Docker overrides agents.defaults.sandbox.docker field by field
	// (ignored under scope "shared", whose one container is the
	// defaults').
	Docker *SandboxDocker `json:"docker,omitempty"`
}

// ModelRef is a model selection. The file may write it as a plain
// "<provider>/<model>" string (Primary only) or as {primary, fallbacks}.
type ModelRef struct {
	Primary   string   `json:"primary,omitempty"`
	Fallbacks []string `json:"fallbacks,omitempty"`
}

// MarshalJSON writes r as a plain string when it has no fallbacks.
func (r ModelRef) MarshalJSON() ([]byte, error) {
	if len(r.Fallbacks) == 0 {
		return json.Marshal(r.Primary)
	}
	type plain ModelRef
	return json.Marshal(plain(r))
}

// Models is the "models" section.
type Models struct {
	// Mode is "merge" (default) or "replace".
	Mode      string               `json:"mode,omitempty"`
	Providers map[string]*Provider `json:"providers,omitempty"`
}

// Provider is "models.providers.<id>".
type Provider struct {
	BaseURL string `json:"baseUrl,omitempty"`
	// APIKey may be "${ENV_NAME}"; Config.Provider returns it expanded.
	APIKey string `json:"apiKey,omitempty"`
	// API is "openai-completions" or "anthropic-messages".
	API     string            `json:"api,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Models  []ModelDef        `json:"models,omitempty"`
}

// ModelDef is one model of a provider catalogue.
type ModelDef struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Reasoning bool   `json:"reasoning,omitempty"`
	// Input lists modalities such as "text" and "image".
	Input         []string   `json:"input,omitempty"`
	Cost          *ModelCost `json:"cost,omitempty"`
	ContextWindow *int       `json:"contextWindow,omitempty"`
	// ContextTokens, when set, is the window runs budget against instead
	// of ContextWindow.
	ContextTokens *int `json:"contextTokens,omitempty"`
	MaxTokens     *int `json:"maxTokens,omitempty"`
}

// ModelCost is a model's price per million tokens.
type ModelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Gateway is the "gateway" section.
type Gateway struct {
	// Mode is "local" or "remote".
	Mode string `json:"mode,omitempty"`
	// Port is nil when unset (18789).
	Port *int `json:"port,omitempty"`
	// Bind is "loopback" (default), "lan" or an IP address; the
	// reference's "auto", "tailnet" and "custom" are accepted with a
	// warning.
	Bind      string           `json:"bind,omitempty"`
	Auth      GatewayAuth      `json:"auth,omitzero"`
	ControlUI GatewayControlUI `json:"controlUi,omitzero"`
	// HTTP is "gateway.http": the OpenAI-compatible endpoints.
	HTTP GatewayHTTP `json:"http,omitzero"`
	// Tools is "gateway.tools": adjustments to the default deny list of
	// POST /tools/invoke.
	Tools GatewayTools `json:"tools,omitzero"`
	// Reload is "gateway.reload": what serve does when the config file
	// changes.
	Reload GatewayReload `json:"reload,omitzero"`
	// PublicOrigin is the externally reachable origin of the gateway
	// ("https://gateway.example.com", no path) when it sits behind a
	// reverse proxy: its host is admitted by every HTTP door's Host check,
	// its origin by the browser origin check, and the A2A agent card
	// advertises it when channels.a2a.advertisedUrl is unset.
	PublicOrigin string `json:"publicOrigin,omitempty"`
}

// GatewayReload is "gateway.reload". Mode is "hybrid" (default: a valid
// edit is applied by restarting the gateway in place once its running
// runs end) or "off" (edits are validated and logged, applied at the next
// start). The reference's retired "hot" and "restart" mean "hybrid".
type GatewayReload struct {
	Mode string `json:"mode,omitempty"`
}

// GatewayHTTP is "gateway.http".
type GatewayHTTP struct {
	Endpoints GatewayHTTPEndpoints `json:"endpoints,omitzero"`
}

// GatewayHTTPEndpoints is "gateway.http.endpoints". Both are off unless
// enabled is written true.
type GatewayHTTPEndpoints struct {
	ChatCompletions HTTPEndpoint `json:"chatCompletions,omitzero"`
	Responses       HTTPEndpoint `json:"responses,omitzero"`
}

// HTTPEndpoint is one optional HTTP endpoint; Enabled is nil when unset
// (off).
type HTTPEndpoint struct {
	Enabled *bool `json:"enabled,omitempty"`
	// Images is chatCompletions.images: what image_url parts may carry.
	Images *HTTPImages `json:"images,omitempty"`
}

// HTTPImages is gateway.http.endpoints.chatCompletions.images. Switchboard
// takes inline (data: URL) images only; AllowURL and the URL fetch limits
// are accepted for the reference's configs, and a URL-sourced part is
// refused whatever they say.
type HTTPImages struct {
	AllowURL     *bool    `json:"allowUrl,omitempty"`
	URLAllowlist []string `json:"urlAllowlist,omitempty"`
	AllowedMimes []string `json:"allowedMimes,omitempty"`
	MaxBytes     *int     `json:"maxBytes,omitempty"`
	MaxRedirects *int     `json:"maxRedirects,omitempty"`
	TimeoutMs    *int     `json:"timeoutMs,omitempty"`
}

// GatewayTools is "gateway.tools": Deny adds tools to the default HTTP deny
// list of /tools/invoke, Allow takes tools off it.
type GatewayTools struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// GatewayControlUI is "gateway.controlUi": which browser origins may open
// the gateway's WebSocket.
type GatewayControlUI struct {
	// AllowedOrigins lists browser origins ("https://ui.example.com")
	// admitted besides private same-origin loads.
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// DangerouslyAllowHostHeaderOriginFallback admits any browser origin
	// that matches the request's Host header, public names included, which
	// DNS rebinding can exploit.
	DangerouslyAllowHostHeaderOriginFallback bool `json:"dangerouslyAllowHostHeaderOriginFallback,omitempty"`
}

// GatewayAuth is "gateway.auth"; see Config.GatewayAuth for the effective
// values.
type GatewayAuth struct {
	// Mode is "token", "password" or "none".
	Mode     string `json:"mode,omitempty"`
	Token    string `json:"token,omitempty"`
	Password string `json:"password,omitempty"`
	// RateLimit limits failed authentication attempts per client address.
	RateLimit *AuthRateLimit `json:"rateLimit,omitempty"`
}

// AuthRateLimit is "gateway.auth.rateLimit" (defaults: 10 failures per
// 60000 ms, then 300000 ms locked out; loopback exempt).
type AuthRateLimit struct {
	MaxAttempts    *int  `json:"maxAttempts,omitempty"`
	WindowMs       *int  `json:"windowMs,omitempty"`
	LockoutMs      *int  `json:"lockoutMs,omitempty"`
	ExemptLoopback *bool `json:"exemptLoopback,omitempty"`
}

// Logging is the "logging" section.
type Logging struct {
	// Level is the log file's level: silent, fatal, error, warn, info
	// (default), debug or trace.
	Level string `json:"level,omitempty"`
	// File overrides the log file path (default <stateDir>/logs/switchboard.log).
	File string `json:"file,omitempty"`
	// ConsoleLevel is the console's level (default: Level).
	ConsoleLevel string `json:"consoleLevel,omitempty"`
	// ConsoleStyle is "pretty" (text, the default) or "json".
	ConsoleStyle string `json:"consoleStyle,omitempty"`
	// MaxFileBytes rotates the log file before it passes this size (default
	// 100 MB); five numbered archives are kept.
	MaxFileBytes *int `json:"maxFileBytes,omitempty"`
	// RedactSensitive is "tools" (default) or "off".
	RedactSensitive string `json:"redactSensitive,omitempty"`
	// RedactPatterns are extra regular expressions to redact.
	RedactPatterns []string `json:"redactPatterns,omitempty"`
}

// Messages is the "messages" section (only the keys Switchboard acts on).
type Messages struct {
	Queue MessagesQueue `json:"queue,omitzero"`
}

// MessagesQueue is "messages.queue": what a message does when its session
// is busy. See Config.QueueConfig for the effective values.
type MessagesQueue struct {
	// Mode is steer (default), followup, collect or interrupt, or an
	// alias the reference accepts.
	Mode string `json:"mode,omitempty"`
	// Cap is the most queued messages per session (default 20).
	Cap *int `json:"cap,omitempty"`
	// Drop is summarize (default), old or new.
	Drop string `json:"drop,omitempty"`
	// ByChannel sets the mode per channel.
	ByChannel map[string]string `json:"byChannel,omitempty"`
	// DebounceMsByChannel sets the quiet window per channel (default 500).
	DebounceMsByChannel map[string]int `json:"debounceMsByChannel,omitempty"`
}

// norm trims and lower-cases an enum-like value.
func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
