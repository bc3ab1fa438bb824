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

// OpenAIJSClient runs testdata/openai_js_client.mjs: the official OpenAI JS
// client (npm openai, pinned) against a gateway's OpenAI-compatible HTTP
// API, one JSON step per line (see the script).
type OpenAIJSClient struct {
	// BaseURL is the API base, e.g. http://127.0.0.1:PORT/v1.
	BaseURL string
	Token   string
	// Timeout bounds the whole script; zero means 60s.
	Timeout time.Duration
}

// Run runs the script. It skips the test when the npm cache or node is
// missing (fails it under CI=true), and otherwise reports failures in the
// result.
func (c OpenAIJSClient) Run(t testing.TB) NodeClientResult {
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

func (c OpenAIJSClient) command(t testing.TB) (*exec.Cmd, error) {
	if c.BaseURL == "" {
		return nil, errors.New("interop.OpenAIJSClient: BaseURL is required")
	}
	if _, err := installedPackage(openaiPackage, openaiVersion); err != nil {
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
	script := filepath.Join(root, "internal", "interop", "testdata", "openai_js_client.mjs")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("interop.OpenAIJSClient: %w", err)
	}
	node, _, err := nodeBinary()
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, script, "--base-url", c.BaseURL, "--npm-cache", cache)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OPENCLAW_GATEWAY_TOKEN="+c.Token)
	return cmd, nil
}
