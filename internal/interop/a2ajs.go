package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync"
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
	// V03 runs testdata/a2a_js_v03_client.mjs instead: the SDK's v0.3
	// client (message/send, message/stream, tasks/get, tasks/cancel).
	V03 bool
}

// Run runs the script. It skips the test when the npm cache or node is
// missing (fails it under CI=true), and otherwise reports failures in the
// result.
func (c A2AJSClient) Run(t testing.TB) NodeClientResult {
	t.Helper()
	cmd, err := c.command(t)
	return runOrSkip(t, cmd, err)
}

func (c A2AJSClient) command(t testing.TB) (*exec.Cmd, error) {
	if c.URL == "" {
		return nil, errors.New("interop.A2AJSClient: URL is required")
	}
	script := "a2a_js_client.mjs"
	if c.V03 {
		script = "a2a_js_v03_client.mjs"
	}
	s, err := findNodeScript("interop.A2AJSClient", a2aSDKPackage, a2aSDKVersion, script)
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	args := []string{s.script, "--url", c.URL, "--npm-cache", s.cache}
	return s.command(t, timeout, args, "A2A_PEER_TOKEN="+c.Token), nil
}

// A2AJSEchoAgent is testdata/a2a_js_echo_agent.mjs running: an A2A agent
// written with the official A2A JS SDK that echoes ("js echo: <text>"),
// for Switchboard to send to as a remote peer.
type A2AJSEchoAgent struct {
	// URL is the agent's base URL; its JSON-RPC endpoint is URL+"/a2a/v1".
	URL string

	mu       sync.Mutex
	received []map[string]any
	stderr   bytes.Buffer
	// events are the agent's {"event": ...} lines, in order.
	events chan map[string]any
}

// StartA2AJSEchoAgent starts the echo agent, accepting bearer token, and
// stops it when the test ends. It skips the test when the npm cache or
// node is missing (fails it under CI=true).
func StartA2AJSEchoAgent(t testing.TB, token string) *A2AJSEchoAgent {
	t.Helper()
	return startA2AJSAgent(t, "a2a_js_echo_agent.mjs", token)
}

// StartA2AJSExpressAgent starts testdata/a2a_js_express_agent.mjs: an echo
// agent built the documented way, with the SDK's Express handlers and its
// v0.3 compatibility on. mode "both" gives it a card listing a 1.0 and a
// 0.3 JSON-RPC interface, mode "v03" one listing only 0.3. Its Received
// entries also carry the request's A2A-Version header ("version") and
// JSON-RPC method ("method"). Extra flags (--no-stream) go to the script.
func StartA2AJSExpressAgent(t testing.TB, token, mode string, flags ...string) *A2AJSEchoAgent {
	t.Helper()
	return startA2AJSAgent(t, "a2a_js_express_agent.mjs", token, append([]string{"--mode", mode}, flags...)...)
}

// WaitEvent returns the agent's next event of kind (a {"event": ...} line;
// events of other kinds before it are dropped), failing the test when ctx
// ends first.
func (a *A2AJSEchoAgent) WaitEvent(ctx context.Context, t testing.TB, kind string) map[string]any {
	t.Helper()
	for {
		select {
		case ev := <-a.events:
			if ev["kind"] == kind {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %q event from the agent: %v\nagent stderr: %s", kind, ctx.Err(), a.Stderr())
			return nil
		}
	}
}

func startA2AJSAgent(t testing.TB, script, token string, args ...string) *A2AJSEchoAgent {
	t.Helper()
	s, err := findNodeScript("interop.StartA2AJSAgent", a2aSDKPackage, a2aSDKVersion, script)
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.node, append([]string{s.script, "--npm-cache", s.cache}, args...)...)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "A2A_AGENT_TOKEN="+token)
	a := &A2AJSEchoAgent{events: make(chan map[string]any, 64)}
	cmd.Stderr = lockedBuffer{&a.mu, &a.stderr}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	listening := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct {
				Listening string         `json:"listening"`
				Received  map[string]any `json:"received"`
				Event     map[string]any `json:"event"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line.Listening != "" {
				listening <- line.Listening
			}
			if line.Event != nil {
				select {
				case a.events <- line.Event:
				default: // nobody reads them
				}
			}
			if line.Received != nil {
				a.mu.Lock()
				a.received = append(a.received, line.Received)
				a.mu.Unlock()
			}
		}
	}()
	select {
	case a.URL = <-listening:
	case <-done:
		t.Fatalf("%s exited: %s", script, a.Stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start: %s", script, a.Stderr())
	}
	return a
}

// Received returns the messages the agent has received: text, contextId,
// metadata.
func (a *A2AJSEchoAgent) Received() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.received)
}

// Stderr returns what the agent wrote to stderr.
func (a *A2AJSEchoAgent) Stderr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr.String()
}

// lockedBuffer writes to b under mu.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
