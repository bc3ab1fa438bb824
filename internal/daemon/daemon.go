// Package daemon wires Switchboard together: config, the durable store, model
// providers, the agent runner, the WebSocket gateway and the HTTP listeners,
// and runs them until the context ends. Only cmd/switchboard imports it.
package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/attachments"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/eventhooks"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/mcp"
	"github.com/switchboardhq/switchboard/internal/mcpclient"
	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/relay"
	"github.com/switchboardhq/switchboard/internal/secrets"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/subagent"
	"github.com/switchboardhq/switchboard/internal/tools/files"
	memorytools "github.com/switchboardhq/switchboard/internal/tools/memory"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
	"github.com/switchboardhq/switchboard/internal/transcript"
	"github.com/switchboardhq/switchboard/internal/webui"
)

// DBFile is the SQLite database file name inside the state dir.
const DBFile = "switchboard.db"

// EnvAnnounceExpiry overrides how long an undelivered sub-agent announce is
// retried before it becomes a dead letter (a Go duration; default 7 days).
const EnvAnnounceExpiry = "SWITCHBOARD_ANNOUNCE_EXPIRY"

func announceExpiry(env config.Env) time.Duration {
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
	Env config.Env
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
	// port's connections; zero means DefaultIdleTimeout,
	// DefaultBodyTimeout and DefaultMaxConnsPerAddr.
	IdleTimeout, BodyTimeout time.Duration
	MaxConnsPerAddr          int
}

// Daemon is a running gateway. Create with Start; stop with Close.
type Daemon struct {
	Config *config.Config
	Store  store.Store
	Runner *agent.Runner
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
	mcp    *mcp.Server
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
	logs          *logSetup // nil when Options.Logger was given
	closeOnce     sync.Once
	closeErr      error
	started       time.Time
	api           *httpFront  // /tools/invoke and the OpenAI-compatible paths
	jobs          *shell.Jobs // exec's background commands
	box           *toolbox    // the tools, and the Docker sandbox client
	mods          *models
	tracing       *tracing
}

// Start loads the config, opens the store, recovers interrupted runs and
// starts listening. The returned daemon runs until Close.
func Start(ctx context.Context, opts Options) (_ *Daemon, err error) {
	started := time.Now()
	env := opts.Env
	if env == nil {
		env = config.OSEnv
	}
	stdout := opts.Stdout
	if stdout == nil {
		stdout = os.Stdout
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}

	cfg, warnings, err := config.LoadEnv(opts.ConfigPath, env)
	if err != nil {
		early := opts.Logger
		if early == nil {
			early = slog.New(slog.NewTextHandler(stderr, nil))
		}
		for _, w := range warnings {
			early.Warn("config: " + w.String())
		}
		return nil, err
	}
	if opts.Bind != "" {
		var more []config.Warning
		if cfg, more, err = cfg.ApplyFlags(config.Flags{Bind: opts.Bind}); err != nil {
			return nil, err
		}
		warnings = append(warnings, more...)
	}
	paths := cfg.Paths()
	if err := privateDir(paths.StateDir); err != nil {
		return nil, fmt.Errorf("daemon: state dir: %w", err)
	}
	// A store that cannot be written would accept nothing: say so now.
	if err := statedir.ProbeWritable(paths.StateDir); err != nil {
		return nil, fmt.Errorf("daemon: state dir not writable: %w", err)
	}
	// One gateway per state dir: a second one would write the same
	// database. The lock file also records where this one listens.
	lock, err := statedir.Acquire(paths.StateDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	// Every configured secret value is masked in what leaves the gateway:
	// log lines, provider errors, tool results.
	masks := &maskRef{}
	masks.Set(secrets.New(cfg.SecretValues()...))
	// Logs go to the console and, unless a logger was given, to the log
	// file in the state dir (which logs.tail reads).
	log := opts.Logger
	var logs *logSetup
	if log == nil {
		if logs, err = newLogSetup(cfg.LogSettings(), opts.LogLevel, opts.LogFormat, stderr); err != nil {
			return nil, err
		}
		// Secret values are masked in every line, whatever field holds them.
		log = slog.New(newMaskingHandler(logs.logger.Handler(), masks))
		defer func() {
			if err != nil {
				logs.Close()
			}
		}()
	}
	for _, w := range warnings {
		log.Warn("config: " + w.String())
	}
	// A secret is required unless auth is explicitly off: with no mode and
	// no secret configured, the gateway uses a generated token kept in the
	// state dir (the CLI on this host reads it from there).
	generatedToken := false
	if cfg.Gateway.Auth.Mode == "" {
		if a := cfg.GatewayAuth(); a.Token == "" && a.Password == "" {
			generatedToken = true
			tok, created, err := config.LoadOrCreateGatewayToken(paths.StateDir)
			if err != nil {
				return nil, err
			}
			if cfg, _, err = cfg.ApplyFlags(config.Flags{AuthMode: config.AuthToken, Token: tok}); err != nil {
				return nil, err
			}
			if created {
				log.Info("generated a gateway token", "file", filepath.Join(paths.StateDir, config.GatewayTokenFile))
			}
		}
	}
	// The generated token is a secret like the configured ones.
	masks.Set(secrets.New(cfg.SecretValues()...))

	st, err := openStore(ctx, cfg, paths.StateDir)
	if err != nil {
		return nil, err
	}
	// Every component reaches the store through its timer (/metrics);
	// rawStore is the backend itself, for its optional interfaces.
	rawStore := st.Store
	storeTimer := metrics.NewStoreTimer()
	st.Store = timedStore{Store: rawStore, t: storeTimer}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	// The listeners are bound before any run can start: a node's id is
	// its host and port, which only this process can hold.
	lns, err := listen(cfg, opts.Port)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
		}
	}()
	// On PostgreSQL this gateway is one node of those sharing the
	// database; subs is set before the node starts adopting.
	var (
		node  *cluster.Node
		lanes agent.Lanes
		subs  *subagent.Manager
		// chans is set before any run starts (nil: no chat channel).
		chans *channelHub
	)
	if pg, ok := rawStore.(*postgres.Store); ok {
		onAdopt := func(ctx context.Context, _ []*store.Run) {
			if subs != nil {
				if err := subs.Reconcile(ctx); err != nil {
					log.Warn("sub-agent announces after an adoption failed", "err", err)
				}
			}
		}
		if node, err = newNode(cfg.StorageSettings(), pg, lns[0].Addr(), ephemeralPort(cfg, opts.Port), opts.Version, onAdopt, log); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		lanes = node
		if generatedToken {
			// A token generated in this node's state dir is this node's
			// alone: a client sent to another node would be refused.
			log.Warn("gateway token generated in this node's state dir: give every node of the cluster the same token",
				"fix", "set gateway.auth.token (or "+config.EnvGatewayToken+") to one value on every node")
		}
		defer func() {
			if err != nil {
				node.Close()
			}
		}()
	}

	// The configuration is resolved once into the components' settings.
	set := settings.Resolve(cfg)
	mods := newModels(cfg)
	// A model that cannot run fails every turn; say so now, with the fix
	// (the run's own error says the same).
	for _, c := range modelChecks(cfg) {
		if c.Status == CheckFail {
			log.Warn("models: "+c.Detail, "fix", c.Fix)
		}
	}
	alias := sessionkey.NewMainAlias(cfg.Scope(), cfg.MainKey())
	// MCP servers start lazily, on the first run that needs tools.
	mcpc := mcpclient.New(mcpclient.Config{Servers: cfg.MCPServers(), Version: opts.Version, Logger: log})
	defer func() {
		if err != nil {
			mcpc.Close()
		}
	}()
	box := &toolbox{conf: set, mcp: mcpc, log: log}
	box.pruneIdle, box.pruneMaxAge = cfg.SandboxPrune()
	appr, err := newApprovals(cfg, paths.StateDir, func(kind string) {
		if box.refused != nil {
			box.refused(kind)
		}
	})
	if err != nil {
		return nil, err
	}
	box.gate = appr.gate
	ws := &workspaces{cfg: cfg, store: st, sandboxDir: box.sandboxDir}
	tr, err := newTracing(ctx, opts.TracerProvider, env, opts.Version)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tr.close()
		}
	}()
	if tr.shutdown != nil {
		log.Info("tracing on: spans exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings)")
	}
	evHooks, err := newEventHooks(cfg, log)
	if err != nil {
		return nil, err
	}
	runner, err := agent.New(agent.Config{
		Store:     st,
		Models:    mods,
		Tools:     box.forRun,
		Preflight: box.preflight,
		Workspace: ws.forRun,
		MaskText:  maskText(masks.get()),
		RedactToolCall: func(name string, args json.RawMessage) json.RawMessage {
			if attachments.IsSpawnToolCall(name) {
				return attachments.RedactToolCallArgs(args)
			}
			return args
		},
		OnFinish: func(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message) {
			if subs != nil {
				subs.OnFinish(ctx, run, res, last)
			}
			chans.onFinish(ctx, run, res, last)
		},
		SystemPrompt: systemPrompt(cfg, st),
		Logger:       log,
		InitSession:  admission.FillRunnerSession,
		DefaultTimeout: func() time.Duration {
			if n := cfg.AgentTimeoutSeconds(); n > 0 {
				return time.Duration(n) * time.Second
			}
			return 0
		}(),
		Compaction: compactionConfig(cfg, box.workspaceWritable),
		ResetRule:  resetRule(cfg),
		Pruning:    pruningConfig(cfg),
		Queue:      set.Queue,
		Lanes:      lanes,
		RootBudget: func(agentID string) spend.Limits { return set.Agent(agentID).Budget },
		OnCompact:  compactHook(evHooks),
		Tracer:     tr.tracer,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			runner.Close()
		}
	}()
	// Every door starts work through the one admission step.
	adm, err := admission.New(admission.Config{Runner: runner, Store: st, SendRules: set.SendRules, Queue: set.Queue, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	rel, err := relay.New(relay.Config{Store: st, Runner: runner, Admit: adm, SendRules: set.SendRules, Logger: log, Tracer: tr.tracer})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	// Guardrail refusals are counted on /metrics, which is built later.
	var mets atomic.Pointer[metrics.Metrics]
	refused := func(kind string) {
		if m := mets.Load(); m != nil {
			m.Refused(kind)
		}
	}
	box.refused = refused
	remote := newA2ARemote(cfg, st, runner, set.SendRules, log)
	var remoteDep sessions.Remote
	if remote != nil {
		remoteDep = remote
	}
	sessTools := sessions.New(sessions.Deps{
		Store: st, Messenger: rel, Settings: set, Logger: log, StateDir: paths.StateDir, OnRefusal: refused,
		ExpectedWait: runner.ExpectedWait,
		Budget: func(ctx context.Context, s *store.Session) (*sessions.BudgetView, error) {
			return budgetView(ctx, runner, subs, set, s)
		},
		BudgetRefusal: func(ctx context.Context, from, to string) (string, error) {
			return sendBudgetRefusal(ctx, runner, from, to)
		},
		Remote: remoteDep,
	})
	subs, err = subagent.New(subagent.Config{
		Store: st, Runner: runner, Admit: adm, Settings: set, Models: mods, Logger: log,
		AnnounceExpiry: announceExpiry(env), OnRefusal: refused, Shared: node != nil,
		Tracer: tr.tracer,
	})
	if err != nil {
		return nil, err
	}
	// The chat channels listen for run ends before Recover resumes queued
	// runs, so a message accepted before a restart still gets its reply.
	chans, err = newChannels(set, st, runner, adm, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && chans != nil {
			chans.close()
		}
	}()
	// One dispatcher delivers every outbox item: sub-agent announces,
	// agent-to-agent flows, A2A sends and chat channel replies.
	handlers := []outbox.Handler{subs.AnnounceHandler(), rel.Handler()}
	if remote != nil {
		handlers = append(handlers, remote.handler())
	}
	if chans != nil {
		handlers = append(handlers, chans.handler())
	}
	disp, err := outbox.New(outbox.Config{Store: st, Handlers: handlers, Logger: log, Shared: node != nil})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if remote != nil {
		remote.kick = disp.Kick
	}
	rel.SetKicker(disp)
	subs.SetOutbox(disp)
	if chans != nil {
		chans.kicker = disp
	}
	defer func() {
		if err != nil {
			disp.Close()
		}
	}()
	execCfg := cfg.Exec()
	// Commands exec moves to the background live here until the process
	// tool clears them or the gateway stops (which kills the rest).
	jobs := shell.NewJobs(shell.JobsConfig{Yield: execCfg.Yield, CleanupTTL: execCfg.Cleanup})
	execTool := shell.New(shell.Config{Timeout: execCfg.Timeout, PathPrepend: execCfg.PathPrepend, MaxOutputBytes: execCfg.MaxOutputBytes, Jobs: jobs})
	builtin := append(append(sessTools.All(), subs.Tool(), execTool, shell.NewProcessTool(jobs)), files.All()...)
	if fetch := webFetchTool(cfg); fetch != nil {
		builtin = append(builtin, fetch)
	}
	// memory.search.enabled: false removes the memory tools, as in the
	// reference.
	if ms, ok := rawStore.(store.MemoryStore); ok && (cfg.Memory.Search.Enabled == nil || *cfg.Memory.Search.Enabled) {
		builtin = append(builtin, memorytools.All(memory.NewIndex(ms))...)
	}
	box.set(builtin...)
	// Approvals a crash cut get their expired results before queued runs
	// resume, so that a resumed run of the session already sees them.
	if err := appr.recoverPending(ctx, st.Store, log); err != nil {
		return nil, err
	}
	if node != nil {
		if err := node.Start(ctx, runner); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		log.Info("joined the gateway cluster", "node", node.ID(), "lease", node.Lease())
	} else if _, err := runner.Recover(ctx); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if err := subs.Start(ctx); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	defer func() {
		if err != nil {
			subs.Close()
		}
	}()

	d := &Daemon{
		jobs:      jobs,
		node:      node,
		box:       box,
		tracing:   tr,
		lock:      lock,
		readiness: &readiness{dir: paths.StateDir, ping: st.ping},
		logs:      logs,
		Config:    cfg,
		Store:     st,
		Runner:    runner,
		outbox:    disp,
		subs:      subs,
		mcpc:      mcpc,
		mods:      mods,
		log:       log.With("component", "daemon"),
		grace:     opts.ShutdownGrace,
		started:   started,
	}
	if d.grace == 0 {
		d.grace = DefaultShutdownGrace
		if v := env(EnvShutdownGrace); v != "" {
			g, err := time.ParseDuration(v)
			if err != nil || g < 0 {
				return nil, fmt.Errorf("daemon: %s=%q: want a duration such as 10s", EnvShutdownGrace, v)
			}
			d.grace = g
		}
	}
	rpcTools, err := newInvoker(cfg, st, box, ws, log, false)
	if err != nil {
		return nil, err
	}
	d.chans = chans
	var cronSvc gateway.CronService
	if cs, ok := rawStore.(store.CronStore); ok {
		sched, err := newCron(cs, st, runner, adm, alias, cfg.DefaultAgentID())
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		d.cron, cronSvc = sched, sched
	}
	var nodesFn func(context.Context) (*wire.NodesList, error)
	if node != nil {
		nodesFn = func(ctx context.Context) (*wire.NodesList, error) { return nodesView(ctx, node) }
	}
	gw, err := gateway.New(gateway.Config{
		Nodes:     nodesFn,
		EventHook: evHooks.Fire,
		Budget: func(ctx context.Context, s *store.Session) (any, error) {
			v, err := budgetView(ctx, runner, subs, set, s)
			if v == nil || err != nil {
				return nil, err // a nil *BudgetView must not become a non-nil any
			}
			return v, nil
		},
		Runner:                runner,
		Admit:                 adm,
		Cron:                  cronSvc,
		Approvals:             appr.broker,
		ApprovalsDocument:     appr.document,
		ApprovalsSet:          appr.setDocument,
		Store:                 st,
		Settings:              set,
		Logger:                log,
		Version:               opts.Version,
		StorePath:             st.name,
		StateDir:              paths.StateDir,
		LogFile:               logs.path(),
		Catalog:               mods.Catalog,
		AllowedOrigins:        allowedOrigins(cfg),
		AllowHostHeaderOrigin: cfg.Gateway.ControlUI.DangerouslyAllowHostHeaderOriginFallback,
		PublicURLs:            publicURLs(cfg),
		Now:                   opts.Now,
		Models:                mods,
		DefaultModelRef:       mods.DefaultModelRef,
		Invoker:               rpcTools,
		Subagents:             subs,
		MCPServers:            func() []wire.MCPServer { return mcpStatus(mcpc) },
		ChannelStatus:         chans.status,
		AuthRateLimit:         authRateLimit(cfg.Gateway.Auth.RateLimit),
	})
	if err != nil {
		return nil, err
	}
	d.gw = gw
	adm.SetCommands(gw)
	appr.gw.Store(gw)
	// Deliveries (and flows a restart cut) resume once the gateway is
	// there to show what they post.
	if err := disp.Start(); err != nil {
		gw.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if d.mcp, err = newMCPServer(gw, runner, box, opts.Version, cfg.MCPOperatorReach(), d); err != nil {
		gw.Close()
		return nil, err
	}
	api, err := newHTTPAPI(cfg, st, runner, adm, mods, gw, box, ws, log)
	if err != nil {
		gw.Close()
		return nil, err
	}
	d.api = api
	if d.a2a, err = newA2A(ctx, cfg, st.Store, rawStore, runner, adm, opts.Version); err != nil {
		api.Close()
		gw.Close()
		d.mcp.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	ui := webui.Handler()
	mux.Handle("GET /{$}", upgradeOr(gw, ui)) // the WebSocket protocol at "/", the browser UI for plain GETs
	mux.Handle("GET "+webui.Prefix, ui)
	mux.Handle("GET /favicon.ico", ui)
	uiConfig := webui.ConfigHandler(cmp.Or(opts.Version, gateway.DefaultVersion), cfg.GatewayAuth().Mode != "none")
	for _, p := range webui.ControlUIConfigPaths {
		mux.Handle("GET "+p, uiConfig)
	}
	api.Register(mux) // /tools/invoke and the OpenAI-compatible /v1 paths
	mux.HandleFunc("GET /healthz", d.health)
	mux.HandleFunc("GET /health", d.health)
	mux.Handle("/mcp", gw.RequireBearer(d.mcp.Handler())) // MCP, streamable HTTP
	m, stopMetrics := newMetrics(runner, gw, st, storeTimer, opts.counters)
	mets.Store(m)
	d.stopMetrics = stopMetrics
	d.retireMetrics = m.Retire
	mux.Handle("GET /metrics", gw.RequireBearer(m.Handler())) // Prometheus text format
	mux.HandleFunc("GET /readyz", d.ready)
	// The doors' own secrets are for callers from outside: loopback is
	// not exempt from their lockout.
	secretLimit := *authRateLimit(cfg.Gateway.Auth.RateLimit)
	secretLimit.ExemptLoopback = false
	if d.a2a != nil { // the A2A channel: public card, peer-token JSON-RPC
		mux.Handle("GET /.well-known/agent-card.json", d.a2a)
		mux.Handle("GET /.well-known/agent.json", d.a2a)
		mux.Handle("POST /a2a/v1", gw.LimitSecret("a2a", secretLimit, d.a2a))
	}
	if cfg.Hooks.Enabled {
		h, err := newHooks(cfg, runner, adm, st)
		if err != nil {
			stopMetrics()
			if d.a2a != nil {
				d.a2a.Close()
			}
			api.Close()
			gw.Close()
			d.mcp.Close()
			for _, ln := range lns {
				ln.Close()
			}
			return nil, fmt.Errorf("daemon: %w", err)
		}
		mux.Handle(h.Pattern(), gw.LimitSecret("hooks", gateway.DefaultHookAuthRateLimit, h))
	}
	mux.HandleFunc("GET /ready", d.ready)
	for path, h := range d.chans.webhookHandlers() { // chat channels in webhook mode (channels.telegram.webhookUrl)
		if err := mountWebhook(mux, path, gw.LimitSecret("webhook "+path, secretLimit, h)); err != nil {
			stopMetrics()
			if d.a2a != nil {
				d.a2a.Close()
			}
			api.Close()
			gw.Close()
			d.mcp.Close()
			for _, ln := range lns {
				ln.Close()
			}
			return nil, err
		}
	}
	d.srv = newHTTPServer(gw.Doors(mux), cmp.Or(opts.IdleTimeout, DefaultIdleTimeout), cmp.Or(opts.BodyTimeout, DefaultBodyTimeout))
	d.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	maxConns := cmp.Or(opts.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	loops, stop := context.WithCancel(context.Background())
	d.stop = stop
	d.wg.Go(func() { d.readinessLoop(loops) })
	if d.cron != nil {
		d.wg.Go(func() {
			if err := d.cron.Run(loops); err != nil {
				d.log.Error("cron scheduler stopped", "err", err)
			}
		})
	}
	for _, ln := range lns {
		d.Addrs = append(d.Addrs, ln.Addr())
		d.serving.Go(func() {
			if err := d.srv.Serve(newCapListener(ln, maxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http serve failed", "addr", ln.Addr().String(), "err", err)
			}
		})
	}
	if d.chans != nil {
		d.chans.start()
	}
	rec := statedir.Record{PID: os.Getpid(), URL: "ws://" + d.Addrs[0].String(), Version: opts.Version, StartedAt: started.UTC()}
	for _, a := range d.Addrs {
		rec.Addrs = append(rec.Addrs, a.String())
	}
	if werr := lock.Write(rec); werr != nil {
		d.log.Warn("cannot record the gateway's address in the state dir", "err", werr)
	}
	if evHooks != nil {
		d.wg.Go(func() {
			evHooks.Fire(loops, eventhooks.Startup, map[string]any{"url": rec.URL, "pid": rec.PID})
		})
	}
	fmt.Fprintf(stdout, "switchboard: listening on http://%s (state %s, model %s)\n",
		d.Addrs[0], paths.StateDir, mods.DefaultModelRef(cfg.DefaultAgentID()))
	if box.usesDocker() {
		box.dockerBackend() // its prune sweep runs from now; Close stops it
	}
	return d, nil
}

// listen opens the gateway's listeners. For loopback it binds 127.0.0.1 and
// ::1 on the same port (a missing IPv6 stack is tolerated).
func listen(cfg *config.Config, port *int) ([]net.Listener, error) {
	addrs := cfg.GatewayListenAddrs()
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
func ephemeralPort(cfg *config.Config, port *int) bool {
	if port != nil {
		return *port == 0
	}
	addrs := cfg.GatewayListenAddrs()
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
		d.box.closeDocker()
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
			errs = append(errs, d.node.Close())
		}
		errs = append(errs, d.tracing.close(), d.mcpc.Close(), d.Store.Close(), d.lock.Close(), d.logs.Close())
		d.mods.closeIdle()
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
func authRateLimit(rl *config.AuthRateLimit) *gateway.AuthRateLimit {
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
func allowedOrigins(cfg *config.Config) []string {
	out := slices.Clone(cfg.Gateway.ControlUI.AllowedOrigins)
	if o := cfg.GatewayPublicOrigin(); o != "" {
		out = append(out, o)
	}
	return out
}

// publicURLs are the URLs the gateway is reached at from outside; their
// hosts pass the doors' Host check.
func publicURLs(cfg *config.Config) []string {
	var out []string
	for _, u := range []string{cfg.GatewayPublicOrigin(), cfg.A2A().AdvertisedURL, cfg.Telegram().WebhookURL} {
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
