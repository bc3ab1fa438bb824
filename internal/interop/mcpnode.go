package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Pinned MCP packages; keep in sync with scripts/npm-setup.sh.
const (
	mcpSDKPackage        = "@modelcontextprotocol/sdk"
	mcpSDKVersion        = "1.32.2"
	mcpEverythingPackage = "@modelcontextprotocol/server-everything"
	mcpEverythingVersion = "2026.8.31"
	mcpFilesystemPackage = "@modelcontextprotocol/server-filesystem"
	mcpFilesystemVersion = "2026.8.31"
)

// MCPCall is one tool call of RunMCPClient.
type MCPCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
	// Progress asks for progress notifications (they are returned in the
	// step's "progress").
	Progress bool `json:"progress,omitempty"`
}

// MCPClient configures one run of testdata/mcp_sdk_client.mjs, the reference
// TypeScript MCP client: either URL (streamable HTTP, with Token as bearer and
// Session as the X-Switchboard-Session header) or Command (stdio).
type MCPClient struct {
	URL, Token, Session string
	Command             []string
	Calls               []MCPCall
	// Resource, when set, is read after the calls.
	Resource string
	Timeout  time.Duration
}

// Run runs the client and returns its steps (connect, listTools,
// call:<name>…, readResource, done). It skips the test when the npm cache is
// missing (fails under CI=true).
func (c MCPClient) Run(t testing.TB) NodeClientResult {
	t.Helper()
	if _, err := installedPackage(mcpSDKPackage, mcpSDKVersion); err != nil {
		skipOrFatal(t, err)
	}
	node, _, err := nodeBinary()
	if err != nil {
		skipOrFatal(t, err)
	}
	cache, err := NPMCache()
	if err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	calls, err := json.Marshal(c.Calls)
	if err != nil {
		t.Fatal(err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	args := []string{filepath.Join(root, "internal", "interop", "testdata", "mcp_sdk_client.mjs"),
		"--npm-cache", cache, "--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10), "--calls", string(calls)}
	if c.Resource != "" {
		args = append(args, "--resource", c.Resource)
	}
	switch {
	case c.URL != "":
		args = append(args, "--url", c.URL)
		if c.Session != "" {
			args = append(args, "--session", c.Session)
		}
	case len(c.Command) > 0:
		args = append(args, "--command", c.Command[0], "--")
		args = append(args, c.Command[1:]...)
	default:
		t.Fatal("interop.MCPClient: URL or Command is required")
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout+15*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MCP_BEARER_TOKEN="+c.Token)
	return runScript(cmd)
}

// MCPServerCommand returns the command line that starts a pinned reference MCP
// server over stdio: "everything" (@modelcontextprotocol/server-everything) or
// "filesystem" (@modelcontextprotocol/server-filesystem; pass the allowed
// directories as extra). It skips the test when the npm cache is missing
// (fails under CI=true).
func MCPServerCommand(t testing.TB, which string, extra ...string) []string {
	t.Helper()
	pkg, version := mcpEverythingPackage, mcpEverythingVersion
	switch which {
	case "everything":
		extra = append([]string{"stdio"}, extra...)
	case "filesystem":
		pkg, version = mcpFilesystemPackage, mcpFilesystemVersion
	default:
		t.Fatalf("interop.MCPServerCommand: unknown server %q", which)
	}
	dir, err := installedPackage(pkg, version)
	if err != nil {
		skipOrFatal(t, err)
	}
	node, _, err := nodeBinary()
	if err != nil {
		skipOrFatal(t, err)
	}
	script := filepath.Join(dir, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatal(fmt.Errorf("interop.MCPServerCommand: %w", err))
	}
	return append([]string{node, script}, extra...)
}
