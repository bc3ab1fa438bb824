// Package mcpclient owns Switchboard's MCP client side: the MCP servers
// configured under mcp.servers (stdio commands or streamable-HTTP/SSE URLs)
// are started lazily when a run first needs tools, restarted with backoff
// when they crash, refreshed on tools/list_changed and stopped on shutdown.
// Their tools become agent tools named <server>__<tool>, whose results are
// projected into the reference's tool-result shape (text and image blocks;
// details {mcpServer, mcpTool, structuredContent?, status?}).
//
// It imports the tools contract, config (the server settings), policy (tool
// filters) and the MCP Go SDK. Only the daemon imports it.
package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Server states reported by Status.
const (
	StateIdle       = "idle"       // configured, not started yet (lazy)
	StateStarting   = "starting"   // connecting
	StateReady      = "ready"      // connected, tools listed
	StateRestarting = "restarting" // exited; waiting to start again
	StateFailed     = "failed"     // the last start failed
	StateDisabled   = "disabled"   // enabled: false
	StateStopped    = "stopped"    // the manager closed
)

// Config configures a Manager.
type Config struct {
	// Servers are the configured servers (settings.Settings.MCPServers).
	Servers []settings.MCPServerSettings
	// Version is the client implementation version sent to servers.
	Version string
	// Backoff returns the wait before restart attempt n (from 1); nil means
	// 500ms doubling up to 30s.
	Backoff func(attempt int) time.Duration
	// TerminateGrace is how long a stdio server may take to exit after its
	// stdin closes before it is signalled; zero means 2s.
	TerminateGrace time.Duration
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// Manager runs the configured MCP servers. Create with New, stop with
// Close. Safe for concurrent use.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	servers []*server

	ctx    context.Context // ends at Close; parent of every server's life
	cancel context.CancelFunc
	wg     sync.WaitGroup // restart watchers

	closeOnce sync.Once
}

// New returns a manager; no server starts until Tools is first called.
func New(cfg Config) *Manager {
	if cfg.Backoff == nil {
		cfg.Backoff = defaultBackoff
	}
	if cfg.TerminateGrace <= 0 {
		cfg.TerminateGrace = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: log.With("component", "mcp-client")}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, sc := range cfg.Servers {
		s := &server{m: m, cfg: sc, state: StateIdle, log: m.log.With("server", sc.Name)}
		if !sc.Enabled {
			s.state = StateDisabled
		}
		m.servers = append(m.servers, s)
	}
	return m
}

func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Tools returns the tools of every enabled server, starting the servers
// that have not started yet (in parallel, each bounded by its connection
// timeout). A server that cannot start is logged and left out until a
// later call starts it.
func (m *Manager) Tools(ctx context.Context) []tools.Tool {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() { s.ensureStarted(ctx) })
	}
	wg.Wait()
	var out []tools.Tool
	for _, s := range m.servers {
		out = append(out, s.toolList()...)
	}
	return out
}

// ServerStatus is one server as Status reports it.
type ServerStatus struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Target    string   `json:"target"` // command line or URL
	State     string   `json:"state"`
	Tools     []string `json:"tools"`
	PID       int      `json:"pid,omitempty"`
	Restarts  int      `json:"restarts"`
	LastError string   `json:"lastError,omitempty"`
}

// Status reports every configured server, in name order.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

// Close stops every server (stdio servers get their stdin closed, then a
// signal after TerminateGrace) and waits for them. A second call returns
// an error.
func (m *Manager) Close() error {
	first := false
	m.closeOnce.Do(func() {
		first = true
		m.cancel()
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Go(s.stop)
		}
		wg.Wait()
		m.wg.Wait()
	})
	if !first {
		return errClosed
	}
	return nil
}

var errClosed = errors.New("mcpclient: manager closed")
