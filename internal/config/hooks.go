package config

// Hooks is the "hooks" section: the webhook ingress on the gateway port,
// with the reference's keys (gateway/config-hooks.md).
type Hooks struct {
	// Enabled turns the ingress on (default off).
	Enabled bool `json:"enabled,omitempty"`
	// Token is the shared secret every hook request must carry.
	Token string `json:"token,omitempty"`
	// Path is the base path (default "/hooks").
	Path string `json:"path,omitempty"`
	// MaxBodyBytes bounds a request body (default 256 KiB).
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// DefaultSessionKey is the logical key of agent runs that name none
	// (else a fresh hook:<uuid>).
	DefaultSessionKey string `json:"defaultSessionKey,omitempty"`
	// AllowRequestSessionKey lets requests (and payload-derived mapping
	// keys) choose the session key.
	AllowRequestSessionKey bool `json:"allowRequestSessionKey,omitempty"`
	// AllowedSessionKeyPrefixes restricts explicit and default keys
	// (case-insensitive prefixes; empty: unrestricted).
	AllowedSessionKeyPrefixes []string `json:"allowedSessionKeyPrefixes,omitempty"`
	// AllowedAgentIDs restricts the agents hooks may run (empty: any
	// configured agent).
	AllowedAgentIDs []string `json:"allowedAgentIds,omitempty"`
	// Mappings turn POST <path>/<name> payloads into agent or wake
	// actions; the first match wins.
	Mappings []HookMapping `json:"mappings,omitempty"`
	// Presets names built-in mappings ("gmail"); accepted, none are built
	// in yet.
	Presets []string `json:"presets,omitempty"`
	// Internal is hooks.internal: commands run on lifecycle events.
	Internal HooksInternal `json:"internal,omitzero"`
}

// HooksInternal is "hooks.internal": event hooks. The reference's
// handlers are JavaScript modules; Switchboard's are shell commands
// (entries.<name>.command) run on the events they name.
type HooksInternal struct {
	// Enabled turns them on (default: on when any entry is configured).
	Enabled *bool `json:"enabled,omitempty"`
	// Entries are the hooks by name.
	Entries map[string]InternalHook `json:"entries,omitempty"`
}

// InternalHook is one hooks.internal.entries.<name>.
type InternalHook struct {
	// Enabled (nil: true) turns the hook on.
	Enabled *bool `json:"enabled,omitempty"`
	// Events it runs on ("session:compact:before", "command:new", a whole
	// family such as "session").
	Events []string `json:"events,omitempty"`
	// Command runs with /bin/sh -c, the event JSON on stdin.
	Command string `json:"command,omitempty"`
	// TimeoutSeconds bounds one run (default 10).
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
	// Env adds variables to the command's environment.
	Env map[string]string `json:"env,omitempty"`
}

// HookMapping is one hooks.mappings entry.
type HookMapping struct {
	ID    string          `json:"id,omitempty"`
	Match HookMappingWhen `json:"match,omitzero"`
	// Action is "agent" (default) or "wake".
	Action string `json:"action,omitempty"`
	// WakeMode is "now" (default) or "next-heartbeat".
	WakeMode string `json:"wakeMode,omitempty"`
	Name     string `json:"name,omitempty"`
	AgentID  string `json:"agentId,omitempty"`
	// SessionKey is a static or templated logical key.
	SessionKey string `json:"sessionKey,omitempty"`
	// SessionMode is "isolated" (default) or "persistent".
	SessionMode     string `json:"sessionMode,omitempty"`
	MessageTemplate string `json:"messageTemplate,omitempty"`
	TextTemplate    string `json:"textTemplate,omitempty"`
	// Deliver is the announcement policy (nil: true).
	Deliver *bool  `json:"deliver,omitempty"`
	Channel string `json:"channel,omitempty"`
	To      string `json:"to,omitempty"`
	Model   string `json:"model,omitempty"`
	// Thinking is a templated thinking level.
	Thinking       string `json:"thinking,omitempty"`
	TimeoutSeconds *int   `json:"timeoutSeconds,omitempty"`
}

// HookMappingWhen is a mapping's match: both given predicates must pass.
type HookMappingWhen struct {
	// Path is the subpath after hooks.path ("gmail" for /hooks/gmail).
	Path string `json:"path,omitempty"`
	// Source is matched exactly against the payload's "source".
	Source string `json:"source,omitempty"`
}

// hooks checks the hooks section.
func (k *checker) hooks() {
	h := k.c.Hooks
	p := path("hooks")
	for name, e := range h.Internal.Entries {
		ep := p.key("internal").key("entries").key(name)
		k.intRange(ep.key("timeoutSeconds"), e.TimeoutSeconds, 1, 600)
		if e.Enabled == nil || *e.Enabled {
			if e.Command == "" {
				k.fail(ep.key("command"), "an enabled event hook needs a command")
			}
			if len(e.Events) == 0 {
				k.fail(ep.key("events"), "an enabled event hook needs at least one event")
			}
		}
	}
	for i, m := range h.Mappings {
		mp := p.key("mappings").index(i)
		k.enum(mp.key("action"), m.Action, "agent", "wake")
		k.enum(mp.key("wakeMode"), m.WakeMode, "now", "next-heartbeat")
		k.enum(mp.key("sessionMode"), m.SessionMode, "isolated", "persistent")
		k.intMin(mp.key("timeoutSeconds"), m.TimeoutSeconds, 1)
		if m.SessionMode == "persistent" && m.SessionKey == "" && h.DefaultSessionKey == "" {
			k.fail(mp.key("sessionKey"), "a persistent mapping needs a sessionKey (or hooks.defaultSessionKey)")
		}
	}
}
