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
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/a2a/bridge"
	a2aremote "github.com/switchboardhq/switchboard/internal/a2a/remote"
	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	approvals "github.com/switchboardhq/switchboard/internal/approval/service"
	"github.com/switchboardhq/switchboard/internal/attachments"
	"github.com/switchboardhq/switchboard/internal/automation"
	"github.com/switchboardhq/switchboard/internal/avatar"
	"github.com/switchboardhq/switchboard/internal/channel/hub"
	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/eventhooks"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/gcfloor"
	"github.com/switchboardhq/switchboard/internal/httpserve"
	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/mcp"
	"github.com/switchboardhq/switchboard/internal/mcpclient"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/procs"
	"github.com/switchboardhq/switchboard/internal/prompt"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/readiness"
	"github.com/switchboardhq/switchboard/internal/relay"
	"github.com/switchboardhq/switchboard/internal/secrets"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/skills"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/stackstart"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/subagent"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/toolbox"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
	"github.com/switchboardhq/switchboard/internal/transcript"
	"github.com/switchboardhq/switchboard/internal/treebudget"
	"github.com/switchboardhq/switchboard/internal/webui"
	"github.com/switchboardhq/switchboard/internal/workers"
)

// Start loads the config, opens the store, recovers interrupted runs and
// starts listening. The returned daemon runs until Close.
func Start(ctx context.Context, opts Options) (_ *Daemon, err error) {
	w := &wiring{opts: opts, started: time.Now()}
	defer func() {
		if err != nil {
			w.rollBack()
		}
	}()
	for _, step := range []func(context.Context) error{
		w.loadConfig,  // the config, the private state dir and its lock, the logger, the gateway token
		w.openStorage, // the store behind its timer, the listeners, the cluster node on PostgreSQL
		w.newRunner,   // models, MCP client, toolbox, approvals, workspaces, tracing, event hooks, the runner
		w.newDelivery, // the outbox and what records its items: relay, sub-agents, chat channels; the built-in tools
		w.recoverRuns, // cut approvals, then the node's lanes or the runner's own, then sub-agent announces
		w.newGateway,  // the daemon, cron, the gateway; the outbox starts delivering
		w.newDoors,    // MCP, the HTTP API, A2A, metrics, hooks and webhooks on one mux
		w.serve,       // the HTTP server on every listener, the loops, the channels, the lock's record
	} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return w.d, nil
}

// wiring is what Start builds, phase by phase. A phase that opens
// something registers its undo, run newest first if a later phase fails.
type wiring struct {
	opts    Options
	started time.Time
	undo    []func()

	env            settings.Env
	gcFloor        uint64 // the collector's floor (package gcfloor); 0: not paced
	stdout         io.Writer
	paths          settings.Paths
	lock           *statedir.Lock
	log            *slog.Logger
	logs           *logfile.Logger // nil when Options.Logger was given
	generatedToken bool

	st         *storage.Opened
	rawStore   store.Store // the backend itself, for its optional interfaces
	storeTimer *metrics.StoreTimer
	lns        []net.Listener
	node       *cluster.Node // nil on SQLite
	lanes      agent.Lanes

	set     *settings.Settings
	skills  *skills.Agents
	adm     *admission.Admitter
	memory  gateway.MemoryService // nil: memory search is off
	mods    *registry.Registry
	alias   sessionkey.MainAlias
	mcpc    *mcpclient.Manager
	box     *toolbox.Box
	appr    *approvals.Approvals
	ws      *toolbox.Workspaces
	tr      *telemetry.Tracing
	evHooks *eventhooks.Dispatcher
	runner  *agent.Runner
	// mets counts guardrail refusals once /metrics is built.
	mets atomic.Pointer[metrics.Metrics]

	subs  *subagent.Manager
	chans *hub.Hub // nil: no chat channel
	disp  *outbox.Dispatcher
	rel   *relay.Relay
	jobs  *shell.Jobs

	d   *Daemon
	gw  *gateway.Server
	mux *http.ServeMux
}

// onFail registers f to run if Start fails.
func (w *wiring) onFail(f func()) { w.undo = append(w.undo, f) }

// closeOnFail registers c's Close to run if Start fails.
func (w *wiring) closeOnFail(c interface{ Close() error }) { w.onFail(func() { _ = c.Close() }) }

func (w *wiring) rollBack() {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
}

// refused counts a guardrail refusal on /metrics.
func (w *wiring) refused(kind string) {
	if m := w.mets.Load(); m != nil {
		m.Refused(kind)
	}
}

// loadConfig loads the config, claims the private state dir and sets up
// the logger; every configured secret value (and a generated gateway
// token) is masked in what leaves the gateway.
func (w *wiring) loadConfig(context.Context) error {
	opts := w.opts
	w.env = opts.Env
	if w.env == nil {
		w.env = settings.OSEnv
	}
	if opts.TuneGC && gcfloor.Enabled() {
		var err error
		if w.gcFloor, err = gcfloor.Floor(w.env); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	w.stdout = cmp.Or[io.Writer](opts.Stdout, os.Stdout)
	stderr := cmp.Or[io.Writer](opts.Stderr, os.Stderr)
	set, warnings, err := settings.Load(opts.ConfigPath, w.env)
	if err != nil {
		early := opts.Logger
		if early == nil {
			early = slog.New(slog.NewTextHandler(stderr, nil))
		}
		for _, warn := range warnings {
			early.Warn("config: " + warn.String())
		}
		return err
	}
	if opts.Bind != "" {
		var more []settings.Warning
		if set, more, err = set.WithBind(opts.Bind); err != nil {
			return err
		}
		warnings = append(warnings, more...)
	}
	w.paths = settings.Paths{StateDir: set.StateDir, ConfigPath: set.ConfigPath}
	if err := privateDir(w.paths.StateDir); err != nil {
		return fmt.Errorf("daemon: state dir: %w", err)
	}
	// A store that cannot be written would accept nothing: say so now.
	if err := statedir.ProbeWritable(w.paths.StateDir); err != nil {
		return fmt.Errorf("daemon: state dir not writable: %w", err)
	}
	// One gateway per state dir: a second one would write the same
	// database. The lock file also records where this one listens.
	if w.lock, err = statedir.Acquire(w.paths.StateDir); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	w.closeOnFail(w.lock)
	masks := &secrets.Ref{}
	masks.Set(secrets.New(set.SecretValues...))
	// Logs go to the console and, unless a logger was given, to the log
	// file in the state dir (which logs.tail reads).
	w.log = opts.Logger
	if w.log == nil {
		if w.logs, err = newLogSetup(set.Log, opts.LogLevel, opts.LogFormat, stderr); err != nil {
			return err
		}
		w.closeOnFail(w.logs)
		// Secret values are masked in every line, whatever field holds them.
		w.log = slog.New(secrets.NewLogHandler(w.logs.Handler(), masks))
	}
	for _, warn := range warnings {
		w.log.Warn("config: " + warn.String())
	}
	// A secret is required unless auth is explicitly off: with no mode and
	// no secret configured, the gateway uses a generated token kept in the
	// state dir (the CLI on this host reads it from there).
	set, generated, created, err := set.WithGeneratedToken()
	if err != nil {
		return err
	}
	w.generatedToken = generated
	if created {
		w.log.Info("generated a gateway token", "file", filepath.Join(w.paths.StateDir, settings.GatewayTokenFile))
	}
	// The generated token is a secret like the configured ones.
	masks.Set(secrets.New(set.SecretValues...))
	// The configuration is resolved once into the components' settings.
	w.set = set
	return nil
}

// openStorage opens the store (every component reaches it through its
// timer, for /metrics) and binds the listeners before any run can start:
// on PostgreSQL this gateway is one node of those sharing the database,
// and a node's id is its host and port, which only this process can hold.
func (w *wiring) openStorage(ctx context.Context) error {
	set, log := w.set, w.log
	st, err := storage.Open(ctx, w.set.Storage, w.paths.StateDir)
	if err != nil {
		return err
	}
	w.closeOnFail(st)
	w.rawStore, w.storeTimer = st.Store, metrics.NewStoreTimer()
	st.Store = w.storeTimer.Wrap(w.rawStore)
	w.st = st
	if w.lns, err = httpserve.Listen(set.ListenAddrs(), w.opts.Port); err != nil {
		return err
	}
	for _, ln := range w.lns {
		w.closeOnFail(ln)
	}
	pg, ok := w.rawStore.(*postgres.Store)
	if !ok {
		return nil
	}
	onAdopt := func(context.Context, []*store.Run) {
		if w.subs != nil {
			// Retried in the background until the store answers.
			w.subs.ReconcileSoon()
		}
	}
	// Every node marks the agents' workspaces, and checks the others'
	// marks when it starts and when a node joins.
	marked := doctor.AgentWorkspaces(w.set)
	onJoin := func(ctx context.Context, _ string) { doctor.CheckWorkspaces(ctx, w.node, marked, log) }
	if w.node, err = newNode(set.Storage, pg, w.lns[0].Addr(), httpserve.Ephemeral(set.ListenAddrs(), w.opts.Port), w.opts.Version, onAdopt, onJoin, log); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if err = doctor.WriteNodeMarkers(marked, w.node.ID()); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	w.closeOnFail(w.node)
	w.lanes = w.node
	if w.generatedToken {
		// A token generated in this node's state dir is this node's
		// alone: a client sent to another node would be refused.
		log.Warn("gateway token generated in this node's state dir: give every node of the cluster the same token",
			"fix", "set gateway.auth.token (or "+settings.EnvGatewayToken+") to one value on every node")
	}
	return nil
}

// newRunner builds the agent runner and what shapes its runs: models,
// tools (MCP servers start lazily, on the first run that needs tools),
// exec approvals, workspaces, the system prompt, tracing and event hooks.
func (w *wiring) newRunner(ctx context.Context) error {
	set, log, st := w.set, w.log, w.st
	w.skills = &skills.Agents{Resolve: set.SkillScope}
	w.mods = registry.New(w.set)
	// A model that cannot run fails every turn; say so now, with the fix
	// (the run's own error says the same).
	for _, c := range doctor.Models(w.set) {
		if c.Status == doctor.CheckFail {
			log.Warn("models: "+c.Detail, "fix", c.Fix)
		}
	}
	w.alias = sessionkey.NewMainAlias(set.Scope, set.MainKey)
	w.mcpc = mcpclient.New(mcpclient.Config{Servers: w.set.MCPServers, Version: w.opts.Version, Logger: log})
	w.closeOnFail(w.mcpc)
	var err error
	if w.appr, err = approvals.New(set, w.paths.StateDir, w.refused); err != nil {
		return err
	}
	pruneIdle, pruneMaxAge := set.SandboxPruneIdle, set.SandboxPruneMaxAge
	box := toolbox.New(toolbox.Config{Settings: w.set, MCP: w.mcpc, Logger: log, Refused: w.refused, Gate: w.appr.Gate,
		PruneIdle: pruneIdle, PruneMaxAge: pruneMaxAge,
		RoomTools: func(key string) (policy.ToolSelection, bool) { return hub.RoomTools(w.set, key) }})
	w.box, w.ws = box, toolbox.NewWorkspaces(w.set, st, box)
	if w.tr, err = telemetry.Start(ctx, w.opts.TracerProvider, w.env, w.opts.Version); err != nil {
		return err
	}
	w.onFail(func() { _ = w.tr.Close() })
	if w.tr.Exporting() {
		log.Info("tracing on: spans exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings)")
	}
	if w.evHooks, err = newEventHooks(set, log); err != nil {
		return err
	}
	w.runner, err = agent.New(agent.Config{
		Store:     st,
		Models:    w.mods,
		Tools:     box.ForRun,
		Preflight: box.Preflight,
		Workspace: w.ws.ForRun,
		MaskText:  secrets.New(set.SecretValues...).Func(),
		RedactToolCall: func(name string, args json.RawMessage) json.RawMessage {
			if attachments.IsSpawnToolCall(name) {
				return attachments.RedactToolCallArgs(args)
			}
			return args
		},
		OnFinish: func(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message) {
			if w.subs != nil {
				w.subs.OnFinish(ctx, run, res, last)
			}
			w.chans.OnFinish(ctx, run, res, last)
		},
		SystemPrompt:   prompt.Builder(w.set, st, w.skills),
		Logger:         log,
		InitSession:    admission.FillRunnerSession,
		DefaultTimeout: time.Duration(max(set.AgentTimeoutSeconds, 0)) * time.Second,
		Compaction:     compactionConfig(set, box.WorkspaceWritable),
		ResetRule:      resetRule(set),
		Pruning:        pruningConfig(set),
		Queue:          w.set.Queue,
		Lanes:          w.lanes,
		RootBudget:     func(agentID string) spend.Limits { return w.set.Agent(agentID).Budget },
		OnCompact:      compactHook(w.evHooks),
		Tracer:         w.tr.Tracer,
	})
	if err != nil {
		return err
	}
	w.closeOnFail(w.runner)
	return nil
}

// newDelivery builds the one outbox dispatcher and what carries work
// between sessions and out of the gateway — agent-to-agent flows, session
// tools, sub-agents, the chat channels — each taking the dispatcher to
// wake and registering its handler with it; then the built-in tools.
func (w *wiring) newDelivery(context.Context) error {
	log, st, set, runner := w.log, w.st, w.set, w.runner
	// One dispatcher delivers every outbox item: sub-agent announces,
	// agent-to-agent flows, A2A sends and chat channel replies; each
	// component that records items wakes it, and registers its handler.
	disp, err := outbox.New(outbox.Config{Store: st, Logger: log, Shared: w.node != nil})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	w.closeOnFail(disp)
	w.disp = disp
	// Every door starts work through the one admission step.
	adm, err := admission.New(admission.Config{Runner: runner, Store: st, SendRules: set.SendRules, Queue: set.Queue, Now: w.opts.Now,
		Guards: admission.Guards{Budgets: runner, Chain: tools.ChainLimits{MaxHops: set.Sessions.MaxChainHops, MaxVisits: set.Sessions.MaxChainVisits}}})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	w.adm = adm
	rel, err := relay.New(relay.Config{Store: st, Runner: runner, Admit: adm, SendRules: set.SendRules, Logger: log, Tracer: w.tr.Tracer, Kicker: disp})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	rel.Start()
	w.closeOnFail(rel)
	w.rel = rel
	remote := a2aremote.New(set, st, runner, set.SendRules, disp.Kick, log)
	var remoteDep sessions.Remote
	if remote != nil {
		remoteDep = remote
	}
	sessTools := sessions.New(sessions.Deps{
		Store: st, Messenger: rel, Settings: set, Logger: log, StateDir: w.paths.StateDir, OnRefusal: w.refused,
		ExpectedWait: runner.ExpectedWait,
		Budget: func(ctx context.Context, s *store.Session) (*sessions.BudgetView, error) {
			return treebudget.View(ctx, runner, w.subs, set, s)
		},
		Remote: remoteDep,
	})
	nodeID := ""
	var alive func(context.Context, string) (bool, error)
	var valid func() bool
	if w.node != nil {
		nodeID, alive, valid = w.node.ID(), nodeAlive(w.node), w.node.Valid
	}
	w.subs, err = subagent.New(subagent.Config{
		Store: st, Runner: runner, Admit: adm, Settings: set, Models: w.mods, Logger: log,
		AnnounceExpiry: announceExpiry(w.env), OnRefusal: w.refused, Shared: w.node != nil, NodeID: nodeID, NodeAlive: alive, NodeValid: valid,
		Tracer: w.tr.Tracer, Outbox: disp,
	})
	if err != nil {
		return err
	}
	// The chat channels listen for run ends before Recover resumes queued
	// runs, so a message accepted before a restart still gets its reply.
	chans, err := hub.New(set, st, runner, adm, disp, log)
	if err != nil {
		return err
	}
	if chans != nil {
		w.onFail(chans.Close)
	}
	w.chans = chans
	handlers := []outbox.Handler{w.subs.AnnounceHandler(), rel.Handler()}
	if remote != nil {
		handlers = append(handlers, remote.Handler())
	}
	if chans != nil {
		handlers = append(handlers, chans.Handler())
	}
	for _, h := range handlers {
		if err := disp.Register(h); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	// exec's background commands live in jobs until the process tool
	// clears them or the gateway stops.
	builtin := toolbox.NewBuiltin(w.set, w.rawStore, registry.MemoryEmbedder{R: w.mods}, w.skills.Env, append(sessTools.All(), w.subs.Tool())...)
	w.jobs = builtin.Jobs
	if builtin.Memory != nil {
		w.memory = *builtin.Memory
	}
	w.box.Set(builtin.Tools...)
	return nil
}

// recoverRuns resumes what a restart cut: approvals get their expired
// results before queued runs resume (so a resumed run of the session
// already sees them), then the node takes its lanes (or the runner
// recovers its own), then sub-agent announces.
func (w *wiring) recoverRuns(ctx context.Context) error {
	if err := w.appr.RecoverPending(ctx, w.st.Store, w.log); err != nil {
		return err
	}
	if w.node != nil {
		if err := w.node.Start(ctx, w.runner); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		w.log.Info("joined the gateway cluster", "node", w.node.ID(), "lease", w.node.Lease())
		doctor.CheckWorkspaces(ctx, w.node, doctor.AgentWorkspaces(w.set), w.log)
	} else if _, err := w.runner.Recover(ctx); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if err := w.subs.Start(ctx); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	w.closeOnFail(w.subs)
	return nil
}

// newGateway builds the daemon and the WebSocket gateway with cron's
// scheduler (when the store keeps cron jobs); deliveries, and flows a
// restart cut, resume once the gateway is there to show what they post.
func (w *wiring) newGateway(context.Context) error {
	set, log, st, runner := w.set, w.log, w.st, w.runner
	d := &Daemon{
		jobs: w.jobs, node: w.node, box: w.box, tracing: w.tr, lock: w.lock, logs: w.logs, mods: w.mods,
		readiness: &readiness.Tracker{Dir: w.paths.StateDir, Ping: st.Ping},
		Settings:  w.set, Store: st, Runner: runner, outbox: w.disp, relay: w.rel, subs: w.subs, mcpc: w.mcpc, chans: w.chans,
		log: log.With("component", "daemon"), grace: w.opts.ShutdownGrace, started: w.started,
	}
	if d.grace == 0 {
		d.grace = DefaultShutdownGrace
		if v := w.env(EnvShutdownGrace); v != "" {
			g, err := time.ParseDuration(v)
			if err != nil || g < 0 {
				return fmt.Errorf("daemon: %s=%q: want a duration such as 10s", EnvShutdownGrace, v)
			}
			d.grace = g
		}
	}
	w.d = d
	rpcTools, err := toolbox.NewInvoker(w.set, st, w.box, w.ws, log, false)
	if err != nil {
		return err
	}
	var cronSvc gateway.CronService
	if cs, ok := w.rawStore.(store.CronStore); ok {
		if d.cron, err = automation.NewCron(cs, st, runner, w.adm, w.alias, set.DefaultAgent); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		cronSvc = d.cron
	}
	var nodesFn func(context.Context) (*wire.NodesList, error)
	if w.node != nil {
		nodesFn = func(ctx context.Context) (*wire.NodesList, error) { return nodesView(ctx, w.node) }
	}
	mods, set, subs := w.mods, w.set, w.subs
	gw, err := gateway.New(gateway.Config{
		Skills:    w.skills,
		Memory:    w.memory,
		Nodes:     nodesFn,
		EventHook: w.evHooks.Fire,
		Budget: func(ctx context.Context, s *store.Session) (any, error) {
			v, err := treebudget.View(ctx, runner, subs, set, s)
			if v == nil || err != nil {
				return nil, err // a nil *BudgetView must not become a non-nil any
			}
			return v, nil
		},
		Runner:                runner,
		Admit:                 w.adm,
		Cron:                  cronSvc,
		Approvals:             w.appr.Broker,
		ApprovalsDocument:     w.appr.Document,
		ApprovalsSet:          w.appr.SetDocument,
		Store:                 st,
		Settings:              set,
		Logger:                log,
		Version:               w.opts.Version,
		StorePath:             st.Name,
		StateDir:              w.paths.StateDir,
		LogFile:               w.logs.Path(),
		Catalog:               func() []gateway.CatalogModel { return modelCatalog(set, mods) },
		AllowedOrigins:        gateway.AllowedOriginsOf(set),
		AllowHostHeaderOrigin: set.AllowHostHeaderOrigin,
		PublicURLs:            gateway.PublicURLsOf(set),
		Now:                   w.opts.Now,
		Models:                mods,
		DefaultModelRef:       mods.DefaultModelRef,
		Invoker:               rpcTools,
		Subagents:             subs,
		MCPServers:            func() []wire.MCPServer { return mcpStatus(w.mcpc) },
		ChannelStatus:         w.chans.Status,
		AuthRateLimit:         gateway.AuthRateLimitOf(set.AuthRateLimit),
	})
	if err != nil {
		return err
	}
	w.closeOnFail(gw)
	d.gw, w.gw = gw, gw
	w.adm.SetCommands(gw)
	w.appr.Attach(gw)
	if err := w.disp.Start(); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	return nil
}

// newDoors builds the ways in beside the WebSocket protocol and mounts
// them on one mux: the browser UI, MCP (streamable HTTP), the HTTP API
// (/tools/invoke and the OpenAI-compatible /v1 paths), health and
// readiness, /metrics, A2A, hooks and the chat channels' webhooks.
func (w *wiring) newDoors(ctx context.Context) error {
	set, d, gw, runner, opts := w.set, w.d, w.gw, w.runner, w.opts
	var err error
	d.mcp = &mcp.Lazy{Build: func() (*mcp.Server, error) {
		return newMCPServer(gw, runner, w.box, opts.Version, set.MCPOperatorReach, d)
	}}
	w.closeOnFail(d.mcp)
	if d.api, err = newHTTPAPI(w.set, w.st, runner, w.adm, w.mods, gw, w.box, w.ws, w.log); err != nil {
		return err
	}
	w.closeOnFail(d.api)
	if d.a2a, err = bridge.NewServer(ctx, set, w.st.Store, w.rawStore, runner, w.adm, opts.Version); err != nil {
		return err
	}
	if d.a2a != nil {
		w.onFail(d.a2a.Close)
	}
	mux := http.NewServeMux()
	ui := webui.Handler()
	mux.Handle("GET /{$}", httpserve.UpgradeOr(gw, ui)) // the WebSocket protocol at "/", the browser UI for plain GETs
	mux.Handle("GET "+webui.Prefix, ui)
	mux.Handle("GET /favicon.ico", ui)
	uiConfig := webui.ConfigHandler(cmp.Or(opts.Version, gateway.DefaultVersion), set.Auth.Mode != "none")
	for _, p := range webui.ControlUIConfigPaths {
		mux.Handle("GET "+p, uiConfig)
	}
	d.api.Register(mux) // /tools/invoke and the OpenAI-compatible /v1 paths
	// The Control UI's agent images (CORS for the admitted origins).
	mux.Handle("/avatar/{agent}", avatar.Handler(avatar.FromSettings(set), gw.RequireBearer))
	mux.HandleFunc("GET /healthz", d.health)
	mux.HandleFunc("GET /health", d.health)
	mux.Handle("/mcp", gw.RequireBearer(d.mcp)) // MCP, streamable HTTP, built on first use
	m, stopMetrics := metrics.Start(runner, func() (int, int64, int64, int64) {
		s := gw.Stats()
		return s.Connections, s.QueuedBytes, s.SlowConsumers, s.EventsDropped
	}, w.st, w.storeTimer, opts.counters)
	w.onFail(stopMetrics)
	w.mets.Store(m)
	d.stopMetrics, d.retireMetrics = stopMetrics, m.Retire
	mux.Handle("GET /metrics", gw.RequireBearer(m.Handler())) // Prometheus text format
	mux.HandleFunc("GET /readyz", d.readiness.Handler(w.started))
	// The doors' own secrets are for callers from outside: loopback is
	// not exempt from their lockout.
	secretLimit := *gateway.AuthRateLimitOf(set.AuthRateLimit)
	secretLimit.ExemptLoopback = false
	if d.a2a != nil { // the A2A channel: public card, peer-token JSON-RPC
		mux.Handle("GET /.well-known/agent-card.json", d.a2a)
		mux.Handle("GET /.well-known/agent.json", d.a2a)
		mux.Handle("POST /a2a/v1", gw.LimitSecret("a2a", secretLimit, d.a2a))
	}
	if set.Hooks.Enabled {
		h, err := automation.NewWebhooks(set, runner, w.adm, w.st)
		if err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		mux.Handle(h.Pattern(), gw.LimitSecret("hooks", gateway.DefaultHookAuthRateLimit, h))
	}
	mux.HandleFunc("GET /ready", d.readiness.Handler(w.started))
	for path, h := range d.chans.WebhookHandlers() { // chat channels in webhook mode (channels.telegram.webhookUrl)
		if err := httpserve.MountWebhook(mux, path, gw.LimitSecret("webhook "+path, secretLimit, h)); err != nil {
			return err
		}
	}
	w.mux = mux
	return nil
}

// serve starts the HTTP server on every listener and the daemon's own
// loops (readiness, cron, the chat channels), records where the gateway
// listens in the state dir's lock and says so on stdout.
func (w *wiring) serve(ctx context.Context) error {
	d, opts := w.d, w.opts
	d.srv = httpserve.New(w.gw.Doors(w.mux), cmp.Or(opts.IdleTimeout, httpserve.DefaultIdleTimeout), cmp.Or(opts.BodyTimeout, httpserve.DefaultBodyTimeout))
	d.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	maxConns := cmp.Or(opts.MaxConnsPerAddr, httpserve.DefaultMaxConnsPerAddr)
	loops, stop := context.WithCancel(context.Background())
	d.stop = stop
	// The loops query the store at once: their stacks grow first (stackstart).
	stackstart.Go(d.wg.Go, func() { d.readiness.Loop(loops, d.log) })
	if opts.AdaptProcs && procs.Enabled() {
		ctl := procs.New(workers.Waited, d.log)
		d.wg.Go(func() { ctl.Run(loops) })
	}
	if d.cron != nil {
		stackstart.Go(d.wg.Go, func() {
			if err := d.cron.Run(loops); err != nil {
				d.log.Error("cron scheduler stopped", "err", err)
			}
		})
	}
	for _, ln := range w.lns {
		d.Addrs = append(d.Addrs, ln.Addr())
		stackstart.Go(d.serving.Go, func() {
			if err := d.srv.Serve(httpserve.CapListener(ln, maxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http serve failed", "addr", ln.Addr().String(), "err", err)
			}
		})
	}
	if d.chans != nil {
		d.chans.Start()
	}
	rec := statedir.Record{PID: os.Getpid(), URL: "ws://" + d.Addrs[0].String(), Version: opts.Version, StartedAt: w.started.UTC()}
	for _, a := range d.Addrs {
		rec.Addrs = append(rec.Addrs, a.String())
	}
	if werr := w.lock.Write(rec); werr != nil {
		d.log.Warn("cannot record the gateway's address in the state dir", "err", werr)
	}
	if w.evHooks != nil {
		d.wg.Go(func() {
			w.evHooks.Fire(loops, eventhooks.Startup, map[string]any{"url": rec.URL, "pid": rec.PID})
		})
	}
	// Every address (loopback is 127.0.0.1 and ::1), the first as before:
	// scripts take the port from "listening on http://HOST:PORT".
	urls := make([]string, len(d.Addrs))
	for i, a := range d.Addrs {
		urls[i] = "http://" + a.String()
	}
	fmt.Fprintf(w.stdout, "switchboard: listening on %s (state %s, model %s)\n",
		strings.Join(urls, " and "), w.paths.StateDir, w.mods.DefaultModelRef(w.set.DefaultAgent))
	w.box.StartDocker() // its prune sweep runs from now; Close stops it
	if w.gcFloor > 0 {
		// Once serving: the start's garbage is collected at the runtime's
		// pace, and the memory resident when ready stays as it was.
		d.gc = gcfloor.Start(w.gcFloor)
	}
	return nil
}
