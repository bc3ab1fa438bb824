package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The reference's own CLI (npm openclaw), installed by scripts/npm-setup.sh
// into its own prefix with the node 24 it needs.
const (
	openclawPackage = "openclaw"
	openclawVersion = "2026.9.6"
)

// OpenClawCLI runs the reference's CLI against a gateway, as an operator
// moving from OpenClaw would: OPENCLAW_GATEWAY_URL and OPENCLAW_GATEWAY_TOKEN
// name the gateway, and HOME and the CLI's state dir are private to the test
// so nothing is read from or written to the real home.
type OpenClawCLI struct {
	URL   string // ws://host:port
	Token string
	// Timeout bounds one command; zero means 60s.
	Timeout time.Duration
	// Env holds NAME=value entries set after the defaults (so they win).
	Env []string

	node, mjs, home string
}

// CLIResult is one command's outcome.
type CLIResult struct {
	Args           []string
	Stdout, Stderr string
	ExitCode       int
}

// JSON decodes Stdout (a command run with --json).
func (r CLIResult) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("openclaw %q: stdout is not a JSON object: %v\nstdout:\n%s\nstderr:\n%s", r.Args, err, r.Stdout, r.Stderr)
	}
	return v
}

// NewOpenClawCLI finds the installed CLI. It skips the test when the npm
// cache lacks it (fails the test under CI=true).
func NewOpenClawCLI(t testing.TB, url, token string) *OpenClawCLI {
	t.Helper()
	c := &OpenClawCLI{URL: url, Token: token, home: t.TempDir()}
	if err := c.locate(); errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *OpenClawCLI) locate() (err error) {
	c.node, c.mjs, err = locateOpenClaw()
	return err
}

// Run runs `openclaw args...` and returns what it printed and its exit code.
// A command that cannot be started fails the test.
func (c *OpenClawCLI) Run(t testing.TB, args ...string) CLIResult {
	t.Helper()
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, append([]string{c.mjs}, args...)...)
	cmd.Dir = c.home
	cmd.Env = append(os.Environ(),
		"HOME="+c.home,
		"OPENCLAW_STATE_DIR="+filepath.Join(c.home, "state"),
		"OPENCLAW_CONFIG_PATH="+filepath.Join(c.home, "state", "openclaw.json"),
		"OPENCLAW_GATEWAY_URL="+c.URL,
		"OPENCLAW_GATEWAY_TOKEN="+c.Token,
		"OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_NO_RESPAWN=1", "OPENCLAW_NO_AUTO_UPDATE=1",
		"OPENCLAW_SKIP_CHANNELS=1", "NO_COLOR=1", "FORCE_COLOR=0", "CI=true",
	)
	cmd.Env = append(cmd.Env, c.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := CLIResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("openclaw %q: %v\nstderr:\n%s", args, err, r.Stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("openclaw %q: no answer in %v\nstdout:\n%s\nstderr:\n%s", args, timeout, r.Stdout, r.Stderr)
	}
	return r
}

// MustRun is Run for a command that must exit 0: any other exit fails the
// test with what it printed.
func (c *OpenClawCLI) MustRun(t testing.TB, args ...string) CLIResult {
	t.Helper()
	r := c.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.ExitCode, r.Stdout, r.Stderr)
	}
	return r
}
