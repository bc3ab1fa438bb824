package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// stableUptime is how long a server must run for a crash not to count
// towards its crash streak (which lengthens the restart backoff).
const stableUptime = 30 * time.Second

// server is one configured MCP server and its connection.
//
// Lock order: server.mu only; never held across network calls.
type server struct {
	m   *Manager
	cfg settings.MCPServerSettings
	log *slog.Logger

	// mu guards the fields that follow.
	mu       sync.Mutex
	state    string
	sess     *sdk.ClientSession // nil unless ready
	pid      int
	tools    []tools.Tool // the last listed tools (kept while restarting)
	names    []string     // their MCP names
	lastErr  string
	restarts int
	attempt  int           // failed starts in a row
	nextTry  time.Time     // earliest next start after a failure
	starting chan struct{} // closed when the running start attempt ends
	ready    chan struct{} // closed when the server becomes ready (replaced on every crash)
	// cancelConn ends the live connection's context.
	cancelConn context.CancelFunc
	since      time.Time // when the live session became ready
	streak     int       // crashes in a row, each soon after its start
}

// ensureStarted starts the server if it is idle, or failed and past its
// backoff, and waits for a running start attempt.
func (s *server) ensureStarted(ctx context.Context) {
	s.mu.Lock()
	switch s.state {
	case StateIdle, StateFailed:
		if s.state == StateFailed && time.Now().Before(s.nextTry) {
			s.mu.Unlock()
			return
		}
		s.beginStartLocked()
		done := s.starting
		s.mu.Unlock()
		s.run(done)
		return
	case StateStarting:
		done := s.starting
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	}
	s.mu.Unlock()
}

// beginStartLocked moves to starting. s.mu is held.
func (s *server) beginStartLocked() {
	s.state = StateStarting
	s.starting = make(chan struct{})
	if s.ready == nil {
		s.ready = make(chan struct{})
	}
}

// run makes one start attempt and records its outcome; done is closed at
// the end.
func (s *server) run(done chan struct{}) {
	defer close(done)
	sess, pid, list, err := s.connect()
	s.mu.Lock()
	if s.state == StateStopped || s.m.ctx.Err() != nil {
		s.mu.Unlock()
		if sess != nil {
			sess.Close() // the manager closed meanwhile
		}
		return
	}
	defer s.mu.Unlock()
	if err != nil {
		s.attempt++
		s.state = StateFailed
		s.lastErr = err.Error()
		s.nextTry = time.Now().Add(s.m.cfg.Backoff(s.attempt))
		s.log.Warn("MCP server did not start", "err", err, "attempt", s.attempt)
		return
	}
	s.attempt = 0
	s.state, s.sess, s.pid, s.lastErr, s.since = StateReady, sess, pid, "", time.Now()
	s.setToolsLocked(list)
	close(s.ready)
	s.log.Info("MCP server ready", "tools", len(list), "pid", pid)
	s.m.wg.Go(func() { s.watch(sess) })
}

// connect starts the transport, initializes and lists the tools, within
// the connection timeout. The connection itself lives on the context the
// session keeps (an SSE stream is bound to it) until the session ends.
func (s *server) connect() (*sdk.ClientSession, int, []*sdk.Tool, error) {
	connCtx, cancelConn := context.WithCancel(s.m.ctx)
	timer := time.AfterFunc(s.cfg.ConnectionTimeout, cancelConn)
	fail := func(err error) (*sdk.ClientSession, int, []*sdk.Tool, error) {
		cancelConn()
		if !timer.Stop() && s.m.ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s: %w", s.cfg.ConnectionTimeout, err)
		}
		return nil, 0, nil, err
	}
	t, cmd, err := s.transport()
	if err != nil {
		return fail(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard", Version: s.m.cfg.Version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			if s.m.ctx.Err() == nil { // Close closes the sessions before it waits
				s.m.wg.Go(s.refresh)
			}
		},
	})
	sess, err := client.Connect(connCtx, t, nil)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	pid := 0
	if cmd != nil && cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	list, err := listTools(connCtx, sess)
	if err != nil {
		sess.Close()
		return fail(err)
	}
	if !timer.Stop() {
		sess.Close()
		return fail(errors.New("connection timed out"))
	}
	s.mu.Lock()
	s.cancelConn = cancelConn
	s.mu.Unlock()
	return sess, pid, list, nil
}

func listTools(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	var list []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		list = append(list, t)
	}
	return list, nil
}

// transport builds the configured transport (and the command of a stdio
// server).
func (s *server) transport() (sdk.Transport, *exec.Cmd, error) {
	c := s.cfg
	switch c.Transport {
	case "stdio":
		cmd := exec.Command(c.Command, c.Args...)
		// Like the reference SDK, a server inherits only a few harmless
		// variables, never the gateway's secrets (API keys, the gateway
		// token); what it needs goes in its env.
		cmd.Env = nil
		for _, k := range inheritedEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Dir = c.Cwd
		cmd.Stderr = &logWriter{log: s.log}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.cfg.TerminateGrace}, cmd, nil
	case "streamable-http", "sse":
		hc := &http.Client{Transport: headerTransport{h: c.Headers, next: http.DefaultTransport}}
		if c.Transport == "sse" {
			return &sdk.SSEClientTransport{Endpoint: c.URL, HTTPClient: hc}, nil, nil
		}
		return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: hc}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", c.Transport)
}

// watch waits for the connection to end; unless the manager is closing,
// that is a crash: the server is restarted after a backoff.
func (s *server) watch(sess *sdk.ClientSession) {
	err := sess.Wait()
	sess.Close() // reap the process
	s.mu.Lock()
	if s.sess == sess && s.cancelConn != nil {
		s.cancelConn()
		s.cancelConn = nil
	}
	if s.state == StateStopped || s.m.ctx.Err() != nil || s.sess != sess {
		s.mu.Unlock()
		return
	}
	// A server that keeps dying soon after it starts waits longer each time.
	if time.Since(s.since) < stableUptime {
		s.streak++
	} else {
		s.streak = 1
	}
	streak := s.streak
	s.restarts++
	s.state, s.sess, s.pid = StateRestarting, nil, 0
	s.ready = make(chan struct{})
	s.lastErr = "exited"
	if err != nil {
		s.lastErr = "exited: " + err.Error()
	}
	n := s.restarts
	s.mu.Unlock()
	s.log.Warn("MCP server exited; restarting", "err", err, "restarts", n)
	for attempt := 1; ; attempt++ {
		select {
		case <-s.m.ctx.Done():
			return
		case <-time.After(s.m.cfg.Backoff(streak + attempt - 1)):
		}
		s.mu.Lock()
		if s.state != StateRestarting && s.state != StateFailed {
			s.mu.Unlock()
			return // stopped, or a run started it meanwhile
		}
		s.beginStartLocked()
		done := s.starting
		s.mu.Unlock()
		s.run(done)
		s.mu.Lock()
		ok := s.state != StateFailed
		if !ok {
			s.state = StateRestarting // keep retrying here rather than on demand
		}
		s.mu.Unlock()
		if ok {
			return
		}
	}
}

// refresh re-lists the tools after tools/list_changed.
func (s *server) refresh() {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, s.cfg.RequestTimeout)
	defer cancel()
	list, err := listTools(ctx, sess)
	if err != nil {
		s.log.Warn("MCP tools refresh failed", "err", err)
		return
	}
	s.mu.Lock()
	if s.sess == sess {
		s.setToolsLocked(list)
	}
	s.mu.Unlock()
	s.log.Info("MCP tools refreshed", "tools", len(list))
}

// setToolsLocked wraps the listed tools that pass the server's toolFilter.
func (s *server) setToolsLocked(list []*sdk.Tool) {
	s.tools, s.names = nil, nil
	for _, t := range list {
		if len(s.cfg.IncludeTools) > 0 && !policy.GlobMatch(t.Name, s.cfg.IncludeTools) {
			continue
		}
		if policy.GlobMatch(t.Name, s.cfg.ExcludeTools) {
			continue
		}
		s.tools = append(s.tools, newTool(s, t))
		s.names = append(s.names, t.Name)
	}
}

func (s *server) toolList() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateDisabled || s.state == StateStopped {
		return nil
	}
	return slices.Clone(s.tools)
}

// session returns the live session, waiting (bounded by ctx and the
// connection timeout) while the server starts or restarts.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.ensureStarted(ctx)
	s.mu.Lock()
	sess, state, ready, lastErr := s.sess, s.state, s.ready, s.lastErr
	s.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	switch state {
	case StateDisabled:
		return nil, errors.New("disabled in the config")
	case StateStopped:
		return nil, errors.New("stopped (the gateway is shutting down)")
	case StateFailed:
		return nil, fmt.Errorf("failed to start: %s", lastErr)
	}
	t := time.NewTimer(s.cfg.ConnectionTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("not ready after %s (%s)", s.cfg.ConnectionTimeout, state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil, fmt.Errorf("not ready (%s)", s.state)
	}
	return s.sess, nil
}

// stop ends the connection for good.
func (s *server) stop() {
	s.mu.Lock()
	sess, cancelConn := s.sess, s.cancelConn
	s.state, s.sess, s.cancelConn = StateStopped, nil, nil
	s.mu.Unlock()
	if cancelConn != nil {
		defer cancelConn()
	}
	if sess != nil {
		if err := sess.Close(); err != nil {
			s.log.Debug("MCP server close", "err", err)
		}
	}
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := redactURL(s.cfg.URL)
	if s.cfg.Transport == "stdio" {
		target = strings.Join(append([]string{s.cfg.Command}, s.cfg.Args...), " ")
	}
	return ServerStatus{
		Name: s.cfg.Name, Transport: s.cfg.Transport, Target: target, State: s.state,
		Tools: slices.Clone(s.names), PID: s.pid, Restarts: s.restarts, LastError: s.lastErr,
	}
}

// inheritedEnv are the variables a stdio server inherits from the gateway
// (the reference SDK's default list, plus the locale and temp dir).
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
	"SYSTEMROOT", "APPDATA", "USERPROFILE", "TEMP", "PROGRAMFILES"}

// redactURL hides a URL's password and query (they may hold credentials).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.Redacted()
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) == 0 {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

// logWriter logs a stdio server's stderr, one record per write.
type logWriter struct{ log *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		w.log.Debug("MCP server stderr", "text", msg)
	}
	return len(p), nil
}
