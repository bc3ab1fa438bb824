package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// NodeClient configures one run of testdata/openclaw_node_client.mjs, which uses
// openclaw-node to connect to a gateway, call sessions.list, chat.send (with an
// idempotencyKey), wait for the run (agent.wait plus its chat/agent events) and
// call chat.history.
//
// Each step prints one JSON object: {"step": name, "ok": bool, ...}. The steps, in
// order: "load" {client, version, node}; "connect" {protocol, server, methods (count),
// hasChatSend, auth}; "sessions.list" {payload}; "chat.send" {idempotencyKey,
// payload}; "wait" {runId, agentWait (the agent.wait payload), chatEvents,
// agentEvents (counts for the run), chatFinalState ("final", "error", "aborted" or
// null), text (the final chat message's text)}; "chat.history" {payload}; "done".
// The first failing step has "ok": false and "error", and ends the run.
type NodeClient struct {
	URL          string        // gateway WebSocket URL, e.g. "ws://127.0.0.1:18789"
	Token        string        // shared gateway token; may be empty
	SessionKey   string        // default "main"
	Message      string        // default "hello from openclaw-node"
	Timeout      time.Duration // whole run; default 60s
	HistoryLimit int           // chat.history limit; default 20
}

// NodeClientResult is what a run of the script produced.
type NodeClientResult struct {
	Steps  []map[string]any // parsed stdout lines
	Stderr string
	Err    error // nil when the script exited 0 and every stdout line was JSON
}

// Step returns the first step named name, or nil.
func (r NodeClientResult) Step(name string) map[string]any {
	for _, s := range r.Steps {
		if s["step"] == name {
			return s
		}
	}
	return nil
}

// RunNodeClient runs openclaw-node against the gateway at gatewayURL and returns
// its steps (see [NodeClient]). A failed run fails the test, logging the steps and
// the script's stderr. Without the npm cache the test is skipped (failed under
// CI=true).
func RunNodeClient(t testing.TB, gatewayURL, token string) []map[string]any {
	t.Helper()
	r := NodeClient{URL: gatewayURL, Token: token}.Run(t)
	if r.Err != nil {
		t.Fatalf("openclaw-node client: %v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	return r.Steps
}

// Run runs the script. It skips the test when the npm cache or node is missing
// (fails it under CI=true), and otherwise reports failures in the result.
func (c NodeClient) Run(t testing.TB) NodeClientResult {
	t.Helper()
	cmd, err := c.command(t)
	return runOrSkip(t, cmd, err)
}

// command builds the node command; the returned error wraps errNoCache when the
// npm set-up is missing.
func (c NodeClient) command(t testing.TB) (*exec.Cmd, error) {
	if c.URL == "" {
		return nil, errors.New("interop.NodeClient: URL is required")
	}
	s, err := findNodeScript("interop.NodeClient", clientPackage, clientVersion, "openclaw_node_client.mjs")
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	args := append(s.flags, s.script,
		"--url", c.URL,
		"--timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10),
		"--identity-dir", t.TempDir(),
		"--npm-cache", s.cache,
	)
	if c.SessionKey != "" {
		args = append(args, "--session", c.SessionKey)
	}
	if c.Message != "" {
		args = append(args, "--message", c.Message)
	}
	if c.HistoryLimit > 0 {
		args = append(args, "--history-limit", strconv.Itoa(c.HistoryLimit))
	}
	// The script enforces timeout itself; the context is a backstop.
	return s.command(t, timeout+15*time.Second, args, "OPENCLAW_GATEWAY_TOKEN="+c.Token), nil
}

func runScript(cmd *exec.Cmd) NodeClientResult {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	r := NodeClientResult{Stderr: stderr.String()}
	var parseErrs []error
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var step map[string]any
		if err := json.Unmarshal(line, &step); err != nil {
			parseErrs = append(parseErrs, fmt.Errorf("stdout line %q: %w", line, err))
			continue
		}
		r.Steps = append(r.Steps, step)
	}
	if err := sc.Err(); err != nil {
		parseErrs = append(parseErrs, err)
	}
	if runErr != nil {
		runErr = fmt.Errorf("%s: %w", cmd.Path, runErr)
		if last := lastStep(r.Steps); last != nil && last["ok"] == false {
			runErr = fmt.Errorf("step %v: %v (%w)", last["step"], last["error"], runErr)
		}
	}
	r.Err = errors.Join(append([]error{runErr}, parseErrs...)...)
	return r
}

func lastStep(steps []map[string]any) map[string]any {
	if len(steps) == 0 {
		return nil
	}
	return steps[len(steps)-1]
}

func formatSteps(steps []map[string]any) string {
	var b bytes.Buffer
	for _, s := range steps {
		line, _ := json.Marshal(s)
		if len(line) > 2000 {
			line = append(line[:2000], "…"...)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
