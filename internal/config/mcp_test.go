package config

import (
	"strings"
	"testing"
	"time"
)

func TestMCPServers(t *testing.T) {
	c := mustParse(t, `{
  mcp: { servers: {
    docs: { command: "uvx", args: ["mcp-server-fetch"], env: { KEY: "${DOCS_KEY}" }, toolFilter: { include: ["search_*"], exclude: ["admin_*"] } },
    remote: { url: "https://example.com/mcp", headers: { Authorization: "Bearer ${MCP_REMOTE_TOKEN}" }, requestTimeoutMs: 20000, connectionTimeoutMs: 5000 },
    legacy: { url: "https://example.com/sse", transport: "sse", enabled: false },
  } },
  tools: { deny: ["docs__*"] },
  agents: { list: [{ id: "main" }, { id: "research", tools: { allow: ["docs__read_docs"] } }] },
}`, MapEnv(map[string]string{"DOCS_KEY": "k1", "MCP_REMOTE_TOKEN": "t1", "HOME": t.TempDir()}))
	got := c.MCPServers()
	if len(got) != 3 || got[0].Name != "docs" || got[1].Name != "legacy" || got[2].Name != "remote" {
		t.Fatalf("servers = %+v", got)
	}
	docs, legacy, remote := got[0], got[1], got[2]
	if docs.Transport != "stdio" || docs.Env["KEY"] != "k1" || !docs.Enabled || docs.IncludeTools[0] != "search_*" ||
		docs.RequestTimeout != DefaultMCPRequestTimeout || docs.ConnectionTimeout != DefaultMCPConnectionTimeout {
		t.Errorf("docs = %+v", docs)
	}
	if legacy.Transport != "sse" || legacy.Enabled {
		t.Errorf("legacy = %+v", legacy)
	}
	if remote.Transport != "streamable-http" || remote.Headers["Authorization"] != "Bearer t1" ||
		remote.RequestTimeout != 20*time.Second || remote.ConnectionTimeout != 5*time.Second {
		t.Errorf("remote = %+v", remote)
	}
	if p := c.GlobalTools(); len(p.Deny) != 1 || p.Deny[0] != "docs__*" {
		t.Errorf("global tool selection = %+v, want the deny", p)
	}
	if p := c.AgentToolSelection("research"); len(p.Allow) != 1 || len(p.Deny) != 0 {
		t.Errorf("research tool selection = %+v, want its own", p)
	}
}

func TestMCPServersInvalid(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{mcp: {servers: {x: {}}}}`, "mcp.servers.x: needs command (stdio) or url (remote)"},
		{`{mcp: {servers: {x: {command: "a", url: "http://h"}}}}`, "set either command (stdio) or url (remote), not both"},
		{`{mcp: {servers: {x: {url: "ftp://h"}}}}`, `must be an http:// or https:// URL, got "ftp://h"`},
		{`{mcp: {servers: {x: {url: "http://h", transport: "ws"}}}}`, `must be one of "streamable-http", "sse"`},
		{`{mcp: {servers: {"a__b": {command: "c"}}}}`, "server name must be letters"},
		{`{mcp: {servers: {x: {command: "c", requestTimeoutMs: 0}}}}`, "requestTimeoutMs"},
		{`{mcp: {servers: {x: {command: 3}}}}`, "must be a string"},
		{`{mcp: {serve: {reach: "everyone"}}}`, `mcp.serve.reach: must be one of "operator", "session"`},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestMCPServeReach(t *testing.T) {
	for src, want := range map[string]bool{`{}`: true, `{mcp: {serve: {reach: "operator"}}}`: true, `{mcp: {serve: {reach: "session"}}}`: false} {
		c, _, err := Parse("test.json5", []byte(src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if c.MCPOperatorReach() != want {
			t.Errorf("%s: MCPOperatorReach = %v, want %v", src, c.MCPOperatorReach(), want)
		}
	}
}
