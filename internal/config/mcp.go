package config

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// MCP is the "mcp" section: MCP servers whose tools agents get (the
// reference's mcp.servers keys).
type MCP struct {
	Servers map[string]MCPServer `json:"servers,omitempty"`
	// Serve is "mcp.serve": the gateway's own MCP server (/mcp and
	// `switchboard mcp`).
	Serve MCPServe `json:"serve,omitzero"`
}

// MCPServe is "mcp.serve".
type MCPServe struct {
	// Reach is what an MCP host, authenticated with the gateway's token or
	// password, reaches with the session tools: "operator" (default) is
	// the operator's reach, every session of every agent (send policies
	// still apply); "session" is only what the session it acts as may
	// reach (tools.sessions.visibility, tools.agentToAgent).
	Reach string `json:"reach,omitempty"`
}

// MCP reach values.
const (
	MCPReachOperator = "operator"
	MCPReachSession  = "session"
)

// MCPOperatorReach reports whether MCP hosts get the operator's reach
// (mcp.serve.reach, default "operator").
func (c *Config) MCPOperatorReach() bool {
	return norm(c.MCP.Serve.Reach) != MCPReachSession
}

// MCPServer is "mcp.servers.<name>": a stdio server (command, args, env,
// cwd) or a remote one (url, transport, headers).
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	// Transport is "streamable-http" (default for url) or "sse"; Type
	// "http" is the reference CLI's alias of streamable-http.
	Transport string            `json:"transport,omitempty"`
	Type      string            `json:"type,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Enabled false keeps the definition but offers none of its tools.
	Enabled             *bool          `json:"enabled,omitempty"`
	RequestTimeoutMs    *int           `json:"requestTimeoutMs,omitempty"`
	ConnectionTimeoutMs *int           `json:"connectionTimeoutMs,omitempty"`
	ToolFilter          *MCPToolFilter `json:"toolFilter,omitempty"`
}

// MCPToolFilter is "mcp.servers.<name>.toolFilter": exact MCP tool names or
// simple "*" globs.
type MCPToolFilter struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// Default MCP client timeouts.
const (
	DefaultMCPRequestTimeout    = 60 * time.Second
	DefaultMCPConnectionTimeout = 30 * time.Second
)

// MCPServerSettings is one configured MCP server with defaults applied and
// "${ENV}" references in env, headers and url expanded.
type MCPServerSettings struct {
	Name                       string
	Command                    string
	Args                       []string
	Env                        map[string]string
	Cwd                        string
	URL                        string
	Transport                  string // "stdio", "streamable-http" or "sse"
	Headers                    map[string]string
	Enabled                    bool
	RequestTimeout             time.Duration
	ConnectionTimeout          time.Duration
	IncludeTools, ExcludeTools []string
}

// MCPServers returns the configured MCP servers sorted by name.
func (c *Config) MCPServers() []MCPServerSettings {
	var out []MCPServerSettings
	for _, name := range slices.Sorted(maps.Keys(c.MCP.Servers)) {
		s := c.MCP.Servers[name]
		e := MCPServerSettings{
			Name: name, Command: strings.TrimSpace(s.Command), Args: slices.Clone(s.Args), Cwd: s.Cwd,
			Enabled: s.Enabled == nil || *s.Enabled, RequestTimeout: DefaultMCPRequestTimeout,
			ConnectionTimeout: DefaultMCPConnectionTimeout, Transport: mcpTransport(s),
		}
		e.URL, _ = expandVars(strings.TrimSpace(s.URL), c.env)
		e.Env = c.expandMap(s.Env)
		e.Headers = c.expandMap(s.Headers)
		if s.RequestTimeoutMs != nil && *s.RequestTimeoutMs > 0 {
			e.RequestTimeout = time.Duration(*s.RequestTimeoutMs) * time.Millisecond
		}
		if s.ConnectionTimeoutMs != nil && *s.ConnectionTimeoutMs > 0 {
			e.ConnectionTimeout = time.Duration(*s.ConnectionTimeoutMs) * time.Millisecond
		}
		if f := s.ToolFilter; f != nil {
			e.IncludeTools, e.ExcludeTools = slices.Clone(f.Include), slices.Clone(f.Exclude)
		}
		out = append(out, e)
	}
	return out
}

func (c *Config) expandMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = expandVars(v, c.env)
	}
	return out
}

func mcpTransport(s MCPServer) string {
	if strings.TrimSpace(s.URL) == "" {
		return "stdio"
	}
	switch t := norm(s.Transport); {
	case t == "sse":
		return "sse"
	case t == "" && norm(s.Type) == "sse":
		return "sse"
	}
	return "streamable-http"
}

// mcp checks the "mcp" section.
func (k *checker) mcp() {
	k.enum(path("mcp", "serve", "reach"), k.c.MCP.Serve.Reach, MCPReachOperator, MCPReachSession)
	for _, name := range slices.Sorted(maps.Keys(k.c.MCP.Servers)) {
		s := k.c.MCP.Servers[name]
		p := path("mcp", "servers", name)
		if !validMCPServerName(name) {
			k.fail(p, "server name must be letters, digits, '_' or '-' (it prefixes tool names as <server>__<tool>)")
		}
		hasCmd, hasURL := strings.TrimSpace(s.Command) != "", strings.TrimSpace(s.URL) != ""
		switch {
		case hasCmd && hasURL:
			k.fail(p, "set either command (stdio) or url (remote), not both")
		case !hasCmd && !hasURL:
			k.fail(p, "needs command (stdio) or url (remote)")
		case hasURL:
			if u, err := url.Parse(strings.TrimSpace(s.URL)); err != nil || (u.Scheme != "http" && u.Scheme != "https" && !strings.Contains(s.URL, "${")) {
				k.fail(p.key("url"), "must be an http:// or https:// URL, got %q", s.URL)
			}
		}
		k.enum(p.key("transport"), s.Transport, "streamable-http", "sse")
		k.enum(p.key("type"), s.Type, "http", "sse", "stdio", "streamable-http")
		k.intMin(p.key("requestTimeoutMs"), s.RequestTimeoutMs, 1)
		k.intMin(p.key("connectionTimeoutMs"), s.ConnectionTimeoutMs, 1)
	}
}

func validMCPServerName(n string) bool {
	if n == "" || len(n) > 48 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return !strings.Contains(n, "__")
}
