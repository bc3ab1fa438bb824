package config

import (
	"slices"
	"time"
)

// ToolsExec is "tools.exec".
type ToolsExec struct {
	// TimeoutSeconds is nil when unset (1800); 0 disables the limit.
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
	// PathPrepend lists directories put in front of PATH for exec.
	PathPrepend []string `json:"pathPrepend,omitempty"`
	// MaxOutputBytes caps the output exec returns (head and tail kept);
	// nil when unset (200000).
	MaxOutputBytes *int `json:"maxOutputBytes,omitempty"`
	// BackgroundMs is how long exec waits before moving a running command
	// to the background (nil: 10000).
	BackgroundMs *int `json:"backgroundMs,omitempty"`
	// CleanupMs is how long a finished background command is kept for the
	// process tool (nil: 1800000).
	CleanupMs *int `json:"cleanupMs,omitempty"`
	// Security, Ask, AskFallback, SafeBins and SafeEnv are the exec
	// approval policy (see ExecApprovalPolicy).
	Security    string   `json:"security,omitempty"`
	Ask         string   `json:"ask,omitempty"`
	AskFallback string   `json:"askFallback,omitempty"`
	SafeBins    []string `json:"safeBins,omitempty"`
	SafeEnv     []string `json:"safeEnv,omitempty"`
	// ApprovalTimeoutSeconds is how long an exec approval waits for an
	// operator's decision before askFallback applies (nil: 1800).
	ApprovalTimeoutSeconds *int `json:"approvalTimeoutSeconds,omitempty"`
}

// ExecApprovalPolicy is the exec approval policy of tools.exec and
// agents.list[].tools.exec (reference semantics; "" is unset).
type ExecApprovalPolicy struct {
	// Security is deny, allowlist or full.
	Security string `json:"security,omitempty"`
	// Ask is off, on-miss or always.
	Ask string `json:"ask,omitempty"`
	// AskFallback is deny, allowlist or full.
	AskFallback string `json:"askFallback,omitempty"`
	// SafeBins are stdin-only binaries that satisfy the allowlist (nil:
	// the reference's defaults).
	SafeBins []string `json:"safeBins,omitempty"`
	// SafeEnv are the variables a command line may assign before its
	// commands in allowlist mode (nil: LANG, LC_ALL, TZ, NO_COLOR,
	// COLUMNS, LINES); PATH, LD_*, DYLD_*, BASH_ENV, ENV, IFS and the
	// like are refused whatever it lists.
	SafeEnv []string `json:"safeEnv,omitempty"`
}

// ExecApprovals returns agent id's exec approval policy: the agent's
// agents.list[].tools.exec values over tools.exec's, as written.
func (c *Config) ExecApprovals(id string) ExecApprovalPolicy {
	g := c.Tools.Exec
	p := ExecApprovalPolicy{Security: g.Security, Ask: g.Ask, AskFallback: g.AskFallback, SafeBins: slices.Clone(g.SafeBins), SafeEnv: slices.Clone(g.SafeEnv)}
	if e := c.agent(id); e != nil && e.Tools != nil && e.Tools.Exec != nil {
		a := e.Tools.Exec
		p.Security = cmpOr(norm(a.Security), norm(p.Security))
		p.Ask = cmpOr(norm(a.Ask), norm(p.Ask))
		p.AskFallback = cmpOr(norm(a.AskFallback), norm(p.AskFallback))
		if a.SafeBins != nil {
			p.SafeBins = slices.Clone(a.SafeBins)
		}
		if a.SafeEnv != nil {
			p.SafeEnv = slices.Clone(a.SafeEnv)
		}
	}
	p.Security, p.Ask, p.AskFallback = norm(p.Security), norm(p.Ask), norm(p.AskFallback)
	return p
}

// ExecApprovalTimeout is tools.exec.approvalTimeoutSeconds with its
// default.
func (c *Config) ExecApprovalTimeout() time.Duration {
	return time.Duration(positiveOr(c.Tools.Exec.ApprovalTimeoutSeconds, 1800)) * time.Second
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// AgentTools is "agents.list[].tools": the agent's own tool selection,
// layered on the global one.
type AgentTools struct {
	Profile   string   `json:"profile,omitempty"`
	Allow     []string `json:"allow,omitempty"`
	AlsoAllow []string `json:"alsoAllow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
	// Untrusted widens tools.untrusted.allow for this agent.
	Untrusted ToolsUntrusted `json:"untrusted,omitzero"`
	// Exec overrides tools.exec's approval policy for this agent.
	Exec *ExecApprovalPolicy `json:"exec,omitempty"`
	// Sandbox.Tools replaces tools.sandbox.tools list by list for this
	// agent's sandboxed sessions.
	Sandbox ToolsSandbox `json:"sandbox,omitzero"`
	// Elevated further restricts tools.elevated for this agent: both
	// gates must be on, and a sender must be on both allowlists.
	Elevated ToolsElevated `json:"elevated,omitzero"`
}

// ToolsSandbox is "tools.sandbox" (and agents.list[].tools.sandbox).
type ToolsSandbox struct {
	Tools SandboxToolPolicy `json:"tools,omitzero"`
}

// SandboxToolPolicy is "tools.sandbox.tools": which tools sandboxed
// sessions keep, on top of the other tool policy layers. A nil list is
// unset (the reference's defaults apply); an empty allow list allows
// every tool.
type SandboxToolPolicy struct {
	Allow     []string `json:"allow,omitempty"`
	AlsoAllow []string `json:"alsoAllow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
}

// ToolsElevated is "tools.elevated": whether a sandboxed session's exec
// may run on the gateway host (exec elevated: true), and for which
// senders, by channel. Enabled unset is on; nobody is allowed until
// AllowFrom names them.
type ToolsElevated struct {
	Enabled *bool `json:"enabled,omitempty"`
	// AllowFrom lists, by channel ("webchat", "telegram", "irc", …),
	// the senders allowed; "*" allows every sender of that channel.
	AllowFrom map[string][]string `json:"allowFrom,omitempty"`
}

// SandboxToolPolicy returns tools.sandbox.tools for agent id with the
// agent's own lists in place of the global ones where it sets them.
func (c *Config) SandboxToolPolicy(id string) SandboxToolPolicy {
	out := c.Tools.Sandbox.Tools
	if e := c.agent(id); e != nil && e.Tools != nil {
		a := e.Tools.Sandbox.Tools
		overList(&out.Allow, a.Allow)
		overList(&out.AlsoAllow, a.AlsoAllow)
		overList(&out.Deny, a.Deny)
	}
	return out
}

// Elevated returns the elevated gates of agent id: enabled unless
// tools.elevated.enabled or the agent's own gate is false (as the
// reference: the allowlists are what grant it); the global and the
// agent's allowlists (nil when the agent has none).
func (c *Config) Elevated(id string) (enabled bool, global, agent map[string][]string) {
	enabled = c.Tools.Elevated.Enabled == nil || *c.Tools.Elevated.Enabled
	global = c.Tools.Elevated.AllowFrom
	if e := c.agent(id); e != nil && e.Tools != nil {
		if g := e.Tools.Elevated.Enabled; g != nil && !*g {
			enabled = false
		}
		agent = e.Tools.Elevated.AllowFrom
	}
	return enabled, global, agent
}

// UntrustedAllow returns what sessions of agent id driven from outside
// the operator may still use on the host: tools.untrusted.allow plus the
// agent's own.
func (c *Config) UntrustedAllow(id string) []string {
	out := slices.Clone(c.Tools.Untrusted.Allow)
	if e := c.agent(id); e != nil && e.Tools != nil {
		out = append(out, e.Tools.Untrusted.Allow...)
	}
	return out
}

// Defaults of tools.exec.
const (
	DefaultExecTimeoutSeconds = 1800
	DefaultExecMaxOutputBytes = 200_000
	DefaultExecBackgroundMs   = 10_000
	DefaultExecCleanupMs      = 1_800_000
)

// ToolSelection is a scope's {profile, allow, alsoAllow, deny} as written
// (nil slices are unset).
type ToolSelection struct {
	// Profile is the profile as written ("" when unset).
	Profile string
	// Allow, AlsoAllow and Deny are the lists as written.
	Allow, AlsoAllow, Deny []string
}

// GlobalTools returns tools.{profile, allow, alsoAllow, deny}.
func (c *Config) GlobalTools() ToolSelection {
	t := c.Tools
	return ToolSelection{Profile: t.Profile, Allow: slices.Clone(t.Allow), AlsoAllow: slices.Clone(t.AlsoAllow), Deny: slices.Clone(t.Deny)}
}

// AgentToolSelection returns agents.list[].tools of the agent with id; the
// zero value when the agent has none.
func (c *Config) AgentToolSelection(id string) ToolSelection {
	e := c.agent(id)
	if e == nil || e.Tools == nil {
		return ToolSelection{}
	}
	t := e.Tools
	return ToolSelection{Profile: t.Profile, Allow: slices.Clone(t.Allow), AlsoAllow: slices.Clone(t.AlsoAllow), Deny: slices.Clone(t.Deny)}
}

// ExecSettings are the effective tools.exec values.
type ExecSettings struct {
	// Timeout is the default command limit; negative means none.
	Timeout        time.Duration
	PathPrepend    []string
	MaxOutputBytes int
	// Yield and Cleanup are backgroundMs and cleanupMs.
	Yield, Cleanup time.Duration
}

// Exec returns tools.exec with defaults applied.
func (c *Config) Exec() ExecSettings {
	e := c.Tools.Exec
	secs := intOr(e.TimeoutSeconds, DefaultExecTimeoutSeconds)
	timeout := time.Duration(secs) * time.Second
	if secs == 0 {
		timeout = -1
	}
	return ExecSettings{
		Timeout:        timeout,
		PathPrepend:    slices.Clone(e.PathPrepend),
		MaxOutputBytes: positiveOr(e.MaxOutputBytes, DefaultExecMaxOutputBytes),
		Yield:          time.Duration(positiveOr(e.BackgroundMs, DefaultExecBackgroundMs)) * time.Millisecond,
		Cleanup:        time.Duration(positiveOr(e.CleanupMs, DefaultExecCleanupMs)) * time.Millisecond,
	}
}

// toolProfiles are the valid profile values.
var toolProfiles = []string{"minimal", "coding", "messaging", "full"}

// toolSelection checks one scope's profile and allow/alsoAllow, with the
// reference's message for a scope that sets both lists.
func (k *checker) toolSelection(p keyPath, profile string, allow, alsoAllow []string, who string) {
	k.enum(p.key("profile"), profile, toolProfiles...)
	if allow != nil && alsoAllow != nil {
		k.fail(p.key("alsoAllow"), "%s cannot set both allow and alsoAllow in the same scope (merge alsoAllow into allow, or remove allow and use profile + alsoAllow)", who)
	}
}

// toolsExec checks tools.exec.
func (k *checker) toolsExec() {
	p := path("tools", "exec")
	e := k.c.Tools.Exec
	k.intRange(p.key("timeoutSeconds"), e.TimeoutSeconds, 0, 7*24*3600)
	k.intMin(p.key("maxOutputBytes"), e.MaxOutputBytes, 1000)
	// The reference clamps these to 10 ms–2 min and 1 min–3 h.
	k.intRange(p.key("backgroundMs"), e.BackgroundMs, 10, 120_000)
	k.intRange(p.key("cleanupMs"), e.CleanupMs, 60_000, 3*3600_000)
	k.intRange(p.key("approvalTimeoutSeconds"), e.ApprovalTimeoutSeconds, 1, 7*24*3600)
	k.execApprovals(p, ExecApprovalPolicy{Security: e.Security, Ask: e.Ask, AskFallback: e.AskFallback})
}

// execApprovals checks one scope's exec approval policy.
func (k *checker) execApprovals(p keyPath, e ExecApprovalPolicy) {
	k.enum(p.key("security"), e.Security, "deny", "allowlist", "full")
	k.enum(p.key("ask"), e.Ask, "off", "on-miss", "always")
	k.enum(p.key("askFallback"), e.AskFallback, "deny", "allowlist", "full")
}
