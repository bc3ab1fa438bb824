// Package daemon wires Switchboard together: config, the durable store, model
// providers, the agent runner, the WebSocket gateway and the HTTP listeners,
// and runs them until the context ends. Only cmd/switchboard imports it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/channel/hub"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/gcfloor"
	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/mcp"
	"github.com/switchboardhq/switchboard/internal/mcpclient"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/readiness"
	"github.com/switchboardhq/switchboard/internal/relay"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/subagent"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/toolbox"
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
	// AdaptProcs lets the daemon move the process's GOMAXPROCS between one
	// and the runtime's default by load (package procs). The binary sets
	// it; tests leave it off, since GOMAXPROCS is the whole process's and
	// a test process may run several daemons.
	AdaptProcs bool
	// TuneGC lets the daemon pace the Go collector once it serves: a
	// heap below a floor (gcfloor.DefaultFloor, or the one
	// SWITCHBOARD_GC_FLOOR sets) is not collected (package gcfloor).
	// The binary sets it; tests leave it off, for AdaptProcs' reason.
	TuneGC bool
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
	chans  *hub.Hub      // nil when no chat channel is enabled
	log    *slog.Logger
	grace  time.Duration
	gw     *gateway.Server
	outbox *outbox.Dispatcher
	relay  *relay.Relay
	mcp    *mcp.Lazy
	mcpc   *mcpclient.Manager
	subs   *subagent.Manager
	srv    *http.Server
	wg     sync.WaitGroup
	// serving are the listeners' Serve loops: they end with the drain.
	serving   sync.WaitGroup
	lock      *statedir.Lock
	readiness *readiness.Tracker
	stop      context.CancelFunc // ends the daemon's own loops
	// stopMetrics ends the metrics' subscription to run events.
	stopMetrics func()
	// gc paces the collector (Options.TuneGC); nil when off.
	gc *gcfloor.Tuner
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
	tracing       *telemetry.Tracing
}

func (d *Daemon) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"ok":true,"ts":%d}`+"\n", time.Now().UnixMilli())
}

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
		if d.gc != nil {
			d.gc.Stop()
		}
		if d.a2a != nil {
			d.a2a.Close() // its runs end before the runner stops
		}
		if d.chans != nil {
			d.chans.Close() // no new inbound runs; replies in flight end
		}
		d.stop()
		d.wg.Wait()
		d.jobs.Close() // background commands die with the gateway
		d.box.CloseDocker()
		// Deliveries and flows stop before the runner; what is cut short
		// stays pending for the next start.
		if d.relay != nil {
			_ = d.relay.Close() // flows waiting for a run's end: the next start's
		}
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
		errs = append(errs, d.tracing.Close(), d.mcpc.Close(), d.Store.Close(), d.lock.Close(), d.logs.Close())
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
