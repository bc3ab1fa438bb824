package interop

import (
	"errors"
	"os/exec"
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
	// Embeddings runs only the script's embeddings step (the client's
	// default encoding_format, then "float").
	Embeddings bool
	// Timeout bounds the whole script; zero means 60s.
	Timeout time.Duration
}

// Run runs the script. It skips the test when the npm cache or node is
// missing (fails it under CI=true), and otherwise reports failures in the
// result.
func (c OpenAIJSClient) Run(t testing.TB) NodeClientResult {
	t.Helper()
	cmd, err := c.command(t)
	return runOrSkip(t, cmd, err)
}

func (c OpenAIJSClient) command(t testing.TB) (*exec.Cmd, error) {
	if c.BaseURL == "" {
		return nil, errors.New("interop.OpenAIJSClient: BaseURL is required")
	}
	s, err := findNodeScript("interop.OpenAIJSClient", openaiPackage, openaiVersion, "openai_js_client.mjs")
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	args := []string{s.script, "--base-url", c.BaseURL, "--npm-cache", s.cache}
	if c.Embeddings {
		args = append(args, "--embeddings")
	}
	return s.command(t, timeout, args, "OPENCLAW_GATEWAY_TOKEN="+c.Token), nil
}
