// Package daemon wires Switchboard together: config, the durable store, model
// providers, the agent runner, the WebSocket gateway and the HTTP listeners,
// and runs them until the context ends. Only cmd/switchboard imports it.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/mcpclient"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/subagent"
	"github.com/switchboardhq/switchboard/internal/toolbox"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// EnvAnnounceExpiry overrides how long an undelivered sub-agent announce is
// retried before it becomes a dead letter (a Go duration; default 7 days).
const EnvAnnounceExpiry = "SWITCHBOARD_ANNOUNCE_EXPIRY"

func announceExpiry(env settings.Env) time.Duration {
	if d, err := time.ParseDuration(env(EnvAnnounceExpiry)); err == nil && d > 0 {
		return d
	}
	return 0
}

// EnvShutdownGrace overrides DefaultShutdownGrace (a Go duration, e.g. "30s").
const EnvShutdownGrace = "SWITCHBOARD_SHUTDOWN_GRACE"

// DefaultShutdownGrace is how long running agent runs may take to finish
// after a shutdown signal before they are aborted.
const DefaultShutdownGrace = 10 * time.Second

// Options configures Serve. Zero values mean the documented defaults.
type Options struct {
	// Env is the environment; nil means the process environment.
	Env settings.Env
	// counters carry the Prometheus counters across the in-place
	// restarts of Serve (nil: counting starts at zero).
	counters *metrics.Counters
	// ConfigPath overrides SWITCHBOARD_CONFIG.
	ConfigPath string
	// Port, when non-nil, overrides gateway.port; 0 picks a free port.
	Port *int
	// Bind overrides gateway.bind.
	Bind string
	// ShutdownGrace bounds how long runs may finish on shutdown.
	ShutdownGrace time.Duration
	// Stdout receives the one-line "listening" notice; nil means os.Stdout.
	Stdout io.Writer
	// Stderr receives the console log; nil means os.Stderr.
	Stderr io.Writer
	// Logger receives logs; nil means the console (Stderr) plus the log
	// file that the "logging" config section describes.
	Logger *slog.Logger
	// LogLevel and LogFormat ("text" or "json"), when set, override the
	// configured levels and console style (serve's --log-level and
	// --log-format).
	LogLevel, LogFormat string
	// Version is reported to clients; empty means "dev".
	Version string
	// TracerProvider, when set, receives the daemon's spans (tests inject
	// one built with telemetry.NewProvider); nil means the provider the
	// OTEL_* environment asks for, or none. The caller owns it.
	TracerProvider trace.TracerProvider
	// ReloadPoll is how often Serve looks at the config file; 0 means
	// DefaultReloadPoll.
	ReloadPoll time.Duration
	// Now is the gateway's clock (failed-attempt windows and lockouts,
	// event timestamps); nil means time.Now. Tests move it on to pass a
	// lockout without sleeping.
	Now func() time.Time
	// IdleTimeout, BodyTimeout and MaxConnsPerAddr bound the gateway
	// port's connections; zero means httpserve.DefaultIdleTimeout,
	// DefaultBodyTimeout and DefaultMaxConnsPerAddr.
	IdleTimeout, BodyTimeout time.Duration
	MaxConnsPerAddr          int
}

// Daemon is a running gateway. Create with Start; stop with Close.
type Daemon struct {
	// Settings is the configuration it was started with, resolved.
	Settings *settings.Settings
	Store    store.Store
	Runner   *agent.Runner
	// cron schedules the stored cron jobs; nil when the store keeps none.
	cron *cron.Scheduler
	// Addrs are the addresses the gateway listens on.
	Addrs []net.Addr

	a2a    *a2a.Server   // nil when channels.a2a is off
	node   *cluster.Node // nil on SQLite
	chans  *channelHub   // nil when no chat channel is enabled
	log    *slog.Logger
	grace  time.Duration
	gw     *gateway.Server
	outbox *outbox.Dispatcher
	mcp    *lazyMCP
	mcpc   *mcpclient.Manager
	subs   *subagent.Manager
	srv    *http.Server
	wg     sync.WaitGroup
	// serving are the listeners' Serve loops: they end with the drain.
	serving   sync.WaitGroup
	lock      *statedir.Lock
	readiness *readiness
	stop      context.CancelFunc // ends the daemon's own loops
	// stopMetrics ends the metrics' subscription to run events.
	stopMetrics func()
	// retireMetrics hands the closed gateway's own counts to the
	// counters the next gateway of the process counts on from.
	retireMetrics func()
	logs          *logfile.Logger // nil when Options.Logger was given
	closeOnce     sync.Once
	closeErr      error
	started       time.Time
	api           *httpFront   // /tools/invoke and the OpenAI-compatible paths
	jobs          *shell.Jobs  // exec's background commands
	box           *toolbox.Box // the tools, and the Docker sandbox client
	mods          *registry.Registry
	tracing       *tracing
}

// listen opens the gateway's listeners. For loopback it binds 127.0.0.1 and
// ::1 on the same port (a missing IPv6 stack is tolerated).
func listen(set *settings.Settings, port *int) ([]net.Listener, error) {
	addrs := set.ListenAddrs()
	if port != nil {
		for i, a := range addrs {
			host, _, _ := net.SplitHostPort(a)
			addrs[i] = net.JoinHostPort(host, strconv.Itoa(*port))
		}
	}
	var lns []net.Listener
	for i, a := range addrs {
		if i > 0 && lns != nil {
			// Later listeners reuse the first one's port (matters for port 0).
			host, _, _ := net.SplitHostPort(a)
			_, p, _ := net.SplitHostPort(lns[0].Addr().String())
			a = net.JoinHostPort(host, p)
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			if i > 0 && isIPv6(a) {
				continue // no IPv6 loopback on this machine
			}
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("daemon: listen: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// ephemeralPort reports whether the gateway listens on a port the system
// chooses (port 0).
func ephemeralPort(set *settings.Settings, port *int) bool {
	if port != nil {
		return *port == 0
	}
	addrs := set.ListenAddrs()
	if len(addrs) == 0 {
		return false
	}
	_, p, _ := net.SplitHostPort(addrs[0])
	return p == "0"
}

func isIPv6(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() == nil
}

func (d *Daemon) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"ok":true,"ts":%d}`+"\n", time.Now().UnixMilli())
}

var jsonMarshal = json.Marshal

// Close drains the gateway: no new runs start, running agent runs may
// finish within the grace period (the rest are recorded as aborted) while
// connected clients stay connected, so that a client waiting on a run or
// streaming it gets its final; then it stops listening, closes the
// connections and the store. The drain's start and end are logged. A
// second call returns net.ErrClosed.
func (d *Daemon) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d.grace)
		defer cancel()
		active := len(d.Runner.ActiveRuns())
		d.log.Info("shutdown: draining", "runs", active, "grace", d.grace)
		// MCP sessions hold open event streams: end them first.
		errs := []error{d.mcp.Close()}
		if d.stopMetrics != nil {
			d.stopMetrics()
		}
		if d.a2a != nil {
			d.a2a.Close() // its runs end before the runner stops
		}
		if d.chans != nil {
			d.chans.close() // no new inbound runs; replies in flight end
		}
		d.stop()
		d.wg.Wait()
		d.jobs.Close() // background commands die with the gateway
		d.box.CloseDocker()
		// Deliveries and flows stop before the runner; what is cut short
		// stays pending for the next start.
		if err := d.outbox.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := d.subs.Close(); err != nil {
			errs = append(errs, err)
		}
		if d.node != nil {
			d.node.Leave(ctx) // no more lanes taken; runs under way end
		}
		// The runs end here: their final events reach the WebSocket
		// clients and HTTP streams, which are still connected.
		errs = append(errs, d.Runner.Shutdown(ctx))
		d.log.Info("shutdown: drained", "runs", active, "cutShort", ctx.Err() != nil,
			"took", time.Since(start).Round(time.Millisecond))
		// Then the gateway (http.Server.Shutdown does not track hijacked
		// WebSocket connections) and the listener, which lets the HTTP
		// streams of ended runs write their last bytes.
		hctx := ctx
		if ctx.Err() != nil {
			// Runs were cut short: their streams still get a moment to
			// write how they ended.
			var hcancel context.CancelFunc
			hctx, hcancel = context.WithTimeout(context.Background(), 2*time.Second)
			defer hcancel()
		}
		errs = append(errs, d.gw.Close(), d.shutdownHTTP(hctx))
		d.serving.Wait()
		if d.retireMetrics != nil {
			d.retireMetrics()
		}
		if d.node != nil {
			// The node's lanes go back: their queued runs move to the
			// other nodes.
			errs = append(errs, d.node.Close(), doctor.RemoveNodeMarkers(doctor.AgentWorkspaces(d.Settings), d.node.ID()))
		}
		errs = append(errs, d.tracing.close(), d.mcpc.Close(), d.Store.Close(), d.lock.Close(), d.logs.Close())
		d.mods.CloseIdle()
		d.closeErr = errors.Join(errs...)
	})
	if !first {
		return net.ErrClosed
	}
	return d.closeErr
}

// privateDir creates dir 0700, or tightens an existing one to 0700: it
// holds the gateway token, the database and every transcript.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// authRateLimit turns gateway.auth.rateLimit into the gateway's limiter
// settings (nil: the defaults).
func authRateLimit(rl *settings.AuthRateLimit) *gateway.AuthRateLimit {
	out := gateway.DefaultAuthRateLimit
	if rl == nil {
		return &out
	}
	if rl.MaxAttempts != nil {
		out.MaxAttempts = *rl.MaxAttempts
	}
	if rl.WindowMs != nil {
		out.Window = time.Duration(*rl.WindowMs) * time.Millisecond
	}
	if rl.LockoutMs != nil {
		out.Lockout = time.Duration(*rl.LockoutMs) * time.Millisecond
	}
	if rl.ExemptLoopback != nil {
		out.ExemptLoopback = *rl.ExemptLoopback
	}
	return &out
}

// allowedOrigins are the browser origins admitted besides private
// same-origin loads: gateway.controlUi.allowedOrigins and
// gateway.publicOrigin.
func allowedOrigins(set *settings.Settings) []string {
	out := slices.Clone(set.AllowedOrigins)
	if o := set.PublicOrigin; o != "" {
		out = append(out, o)
	}
	return out
}

// publicURLs are the URLs the gateway is reached at from outside; their
// hosts pass the doors' Host check.
func publicURLs(set *settings.Settings) []string {
	var out []string
	for _, u := range []string{set.PublicOrigin, set.A2A.AdvertisedURL, set.Telegram.WebhookURL} {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}

// upgradeOr sends WebSocket upgrades to ws and every other request to
// page: one path serves both the protocol and the browser UI, as the
// reference's gateway does.
func upgradeOr(ws, page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			ws.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	})
}

// budgetView is the sessions_list budget of s when s roots a budgeted
// session tree (its own limits, or its agent's for a root session).
func budgetView(ctx context.Context, runner *agent.Runner, subs *subagent.Manager, set *settings.Settings, s *store.Session) (*sessions.BudgetView, error) {
	if spend.FromExtra(s.Extra).IsZero() && (s.SpawnedBy != "" || set.Agent(s.AgentID).Budget.IsZero()) {
		return nil, nil
	}
	trees, err := runner.Budgets(ctx, s.Key)
	if err != nil {
		return nil, err
	}
	for _, t := range trees {
		if t.Key != s.Key {
			continue
		}
		v := &sessions.BudgetView{Limits: t.Limits, Used: sessions.BudgetUsed{Runs: t.Used.Runs, Tokens: t.Used.Tokens, Cost: t.Used.Cost}}
		if subs != nil {
			v.Used.Children = subs.ActiveDescendants(s.Key)
		}
		next := t.Used
		next.Runs++ // would another run have room?
		v.Exhausted = spend.Exhausted(t.Limits, next, time.Now())
		return v, nil
	}
	return nil, nil
}
