package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A2AJSClient runs testdata/a2a_js_client.mjs: the official A2A JS SDK
// (npm @a2a-js/sdk, pinned) against a gateway's A2A endpoint, one JSON
// step per line (see the script).
type A2AJSClient struct {
	// URL is the gateway's base URL (http://127.0.0.1:PORT): the card is
	// read from its /.well-known path.
	URL string
	// Token is the peer's bearer token.
	Token string
	// Timeout bounds the whole script; zero means 90s.
	Timeout time.Duration
}

// Run runs the script. It skips the test when the npm cache or node is
// missing (fails it under CI=true), and otherwise reports failures in the
// result.
func (c A2AJSClient) Run(t testing.TB) NodeClientResult {
	t.Helper()
	cmd, err := c.command(t)
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return runScript(cmd)
}

func (c A2AJSClient) command(t testing.TB) (*exec.Cmd, error) {
	if c.URL == "" {
		return nil, errors.New("interop.A2AJSClient: URL is required")
	}
	if _, err := installedPackage(a2aSDKPackage, a2aSDKVersion); err != nil {
		return nil, err
	}
	cache, err := NPMCache()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "internal", "interop", "testdata", "a2a_js_client.mjs")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("interop.A2AJSClient: %w", err)
	}
	node, _, err := nodeBinary()
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, script, "--url", c.URL, "--npm-cache", cache)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "A2A_PEER_TOKEN="+c.Token)
	return cmd, nil
}
