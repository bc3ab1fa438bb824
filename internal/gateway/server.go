// Package gateway owns Switchboard's OpenClaw-compatible WebSocket protocol
// server (protocol 3 and 4): the connect handshake and shared-secret auth,
// per-connection read and write loops with bounded outbound queues, scope
// checks, the RPC methods (health, sessions.*, chat.* including the /send
// command, agent, agent.wait, agents.list, tools.invoke, subagents.*,
// announces.*, logs.tail, and the operator methods status, system-presence,
// last-heartbeat, usage.status, usage.cost, sessions.usage, models.list and
// config.get), Inject for posting into a session, and the chat, agent,
// presence, tick and shutdown events built from the agent runner's event
// stream and the set of connected clients. Frame and
// method types live in gateway/wire.
//
// The gateway reaches the runner and the store through the small Runner and
// Store interfaces declared here. Only the daemon imports this package; it
// mounts Server as the handler of "/" on the gateway port.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/stackstart"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/workers"
)

// Runner is what the gateway needs from the agent runner. Implementations
// are safe for concurrent use; *agent.Runner is the one the daemon passes.
type Runner interface {
	// Wait waits up to timeout (negative: no limit) for the run to end; the
	// run need not exist yet. done is false when the wait ended first.
	Wait(ctx context.Context, runID string, timeout time.Duration) (run *store.Run, done bool, err error)
	// Abort stops one run and reports whether it was live.
	Abort(ctx context.Context, runID string) (bool, error)
	// AbortSession aborts every live run of a session and returns their ids.
	AbortSession(ctx context.Context, sessionKey string) ([]string, error)
	// AbortQueued cancels the session's queued runs; AbortActive aborts its
	// running run ("" when none).
	AbortQueued(ctx context.Context, sessionKey string) ([]string, error)
	AbortActive(ctx context.Context, sessionKey string) (string, error)
	// PendingInputs lists the session's queued input, then up to limit
	// inputs cancelled before they ran.
	PendingInputs(ctx context.Context, sessionKey string, limit int) ([]agent.PendingInput, error)
	// Post puts a message into a session without a model turn, at most
	// once per idempotency key; agent.ErrNoSession when it does not exist.
	Post(ctx context.Context, p agent.Post) (messageID string, err error)
	// Subscribe registers fn for every run event; fn must not block.
	Subscribe(fn func(agent.Event)) (unsubscribe func())
	// AddInterest says which events of runs on other nodes are wanted.
	AddInterest(wants agent.Interest) (remove func())
	// WantRemote asks other nodes for the events of a session's runs
	// (agent.WantAll: every session's) until release.
	WantRemote(sessionKey string) (release func())
	// Watch streams one run's events after afterSeq, ending with its end
	// (exactly once, from the store when no event carried it).
	Watch(ctx context.Context, runID string, afterSeq int64) iter.Seq2[agent.Event, error]
	WatchSession(ctx context.Context, sessionKey string, afterSeq int64) iter.Seq2[agent.Event, error]
	// CompactRun summarises the session's older history as run runID on
	// its lane (or, with MaxLines, keeps only the last entries in the
	// model's view) and returns once it ended.
	CompactRun(ctx context.Context, runID, sessionKey string, o agent.CompactInput) (*agent.CompactResult, error)
	// ContextReport estimates what the session's next turn sends.
	ContextReport(ctx context.Context, sessionKey string) (*agent.ContextReport, error)
	// EndCommand records runID as a run that ended ok: a chat command
	// answered without a model turn acknowledged it.
	EndCommand(ctx context.Context, runID, sessionKey, agentID string) error
}

// Store is the part of store.Store the gateway uses. Implementations are
// safe for concurrent use and wrap store.ErrNotFound and store.ErrConflict
// as store.Store documents.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	SessionsByID(ctx context.Context, id string) ([]*store.Session, error)
	ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error)
	CountSessions(ctx context.Context, opts store.ListOptions) (int64, error)
	UsageByDay(ctx context.Context, from, to time.Time, zoneOffset time.Duration) ([]store.UsageDay, error)
	RunsUsage(ctx context.Context, f store.RunUsageFilter) ([]store.RunUsage, error)
	CreateSession(ctx context.Context, s *store.Session) error
	UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error)
	DeleteSession(ctx context.Context, key string, deleteTranscript bool) error
	AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
	CountMessages(ctx context.Context, sessionID string) (int64, error)
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error)
}

var _ Store = store.Store(nil)

// Defaults used when Config leaves a field zero.
const (
	DefaultTickInterval      = wire.DefaultTickIntervalMs * time.Millisecond
	DefaultHandshakeTimeout  = 10 * time.Second
	DefaultHealthInterval    = 60 * time.Second
	DefaultChatDeltaInterval = 100 * time.Millisecond
	DefaultPongTimeout       = 25 * time.Second
	DefaultMaxInflight       = 1024
	DefaultMaxQueuedBytes    = 256 << 20
	DefaultVersion           = "dev"
)

// Config configures a Server. Runner, Store and Settings are required;
// every other zero value means the documented default.
type Config struct {
	Runner Runner
	Store  Store
	// Admit is the admission step every message to a session goes
	// through (required).
	Admit Admitter
	// Settings is the configuration, resolved once.
	Settings *settings.Settings

	// Logger receives logs (never secrets); nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns connection ids and generated keys; nil means UUIDs.
	NewID func() string
	// Version is hello-ok server.version; empty means "dev".
	Version string

	// Skills answers skills.status; nil lists no skills.
	Skills SkillsSource
	// Memory answers memory.*; nil answers them UNAVAILABLE.
	Memory MemoryService

	// Cron serves the cron.* methods; nil answers them UNAVAILABLE.
	Cron CronService
	// Approvals serves the exec.approval.* methods; nil answers them
	// UNAVAILABLE.
	Approvals Approvals
	// ApprovalsDocument answers exec.approvals.get; nil answers it
	// UNAVAILABLE.
	ApprovalsDocument func() (*wire.ExecApprovalsGetResult, error)
	// ApprovalsSet answers exec.approvals.set: it replaces the document
	// if baseHash matches (approval.ErrBaseHashRequired, ErrChanged,
	// *InvalidDocumentError otherwise) and returns the new one; nil
	// answers it unavailable.
	ApprovalsSet func(file json.RawMessage, baseHash string) (*wire.ExecApprovalsGetResult, error)

	// StorePath is reported as "path" by the sessions methods (the
	// reference reports its store file).
	StorePath string
	// StateDir is where sessions.export writes transcripts
	// (<StateDir>/agents/<agentId>/sessions/<sessionId>.jsonl); empty
	// disables it.
	StateDir string
	// Catalog lists the models models.list reports; nil means none.
	Catalog func() []CatalogModel
	// LogFile is the log file logs.tail reads; empty makes logs.tail
	// answer UNAVAILABLE.
	LogFile string
	// Models, when set, checks sessions.patch model refs ("invalid model:
	// <ref>" when it cannot resolve them).
	Models agent.ModelResolver
	// MCPServers reports the configured MCP servers for mcp.list; nil
	// means none.
	MCPServers func() []wire.MCPServer
	// ChannelStatus reports the chat channel connectors for
	// channels.status; nil means none.
	ChannelStatus func() []wire.ChannelStatus
	// Invoker runs tools.invoke; nil makes it answer UNAVAILABLE.
	Invoker ToolInvoker
	// Subagents serves subagents.list/kill and announces.list/redeliver;
	// nil makes them answer UNAVAILABLE "sub-agents are not enabled".
	Subagents Subagents
	// DefaultModelRef returns the "<provider>/<model>" an agent runs with
	// when nothing overrides it. It fills sessions.list defaults and
	// hello-ok sessionDefaults.modelConfigured; nil means the configured
	// agent model only.
	DefaultModelRef func(agentID string) string

	// TickInterval is the tick event period and policy.tickIntervalMs;
	// zero means 30s. WebSocket pings use the same period.
	TickInterval time.Duration
	// HealthInterval is how often every connection gets a health event
	// (the health method's snapshot); each also gets one right after
	// hello-ok. Zero means 60s.
	HealthInterval time.Duration
	// HandshakeTimeout bounds the time from accept to a successful
	// connect; zero means 10s.
	HandshakeTimeout time.Duration
	// PongTimeout bounds the wait for a ping's pong; zero means 25s.
	PongTimeout time.Duration
	// MaxPayload is policy.maxPayload, the inbound frame limit after
	// hello-ok; zero means 25 MiB.
	MaxPayload int64
	// MaxBufferedBytes is policy.maxBufferedBytes: a connection with more
	// unsent bytes is dropped as a slow consumer; zero means 50 MiB.
	MaxBufferedBytes int64
	// MaxQueuedBytes bounds the bytes queued for all connections together;
	// past it, a connection with more than slowShare bytes of backlog is
	// dropped as a slow consumer, so that clients that read keep their
	// connection and memory stays bounded. Zero means 256 MiB.
	MaxQueuedBytes int64
	// MaxInflight bounds the concurrent requests of one connection; zero
	// means 1024.
	MaxInflight int
	// ChatDeltaInterval throttles chat delta events per run (agent events
	// are never throttled); zero means 100ms, negative sends every delta.
	// Text held back is always sent before the run's next chat event.
	ChatDeltaInterval time.Duration
	// AuthRateLimit limits failed authentication attempts per client; nil
	// means DefaultAuthRateLimit, and zero counts and durations in it mean
	// the default's.
	AuthRateLimit *AuthRateLimit
	// AllowedOrigins admits browser origins besides private same-origin
	// loads (gateway.controlUi.allowedOrigins); "*" admits every origin.
	AllowedOrigins []string
	// AllowHostHeaderOrigin admits a browser origin that matches the Host
	// header even for a public name
	// (gateway.controlUi.dangerouslyAllowHostHeaderOriginFallback), and
	// then every Host header.
	AllowHostHeaderOrigin bool
	// PublicURLs are the URLs the gateway is reached at from outside
	// (gateway.publicOrigin, channels.a2a.advertisedUrl, a chat channel's
	// webhook URL): their hosts pass the Host check of every door.
	PublicURLs []string
	// EventHook, when set, is told of session commands (/new, /reset:
	// "command:new", "command:reset") and awaited.
	EventHook func(ctx context.Context, event string, data map[string]any)
	// Budget, when set, returns the budget of the session tree rooted at
	// a session, for its sessions.list row (nil: none).
	Budget func(ctx context.Context, s *store.Session) (any, error)
	// Nodes, when set, lists the gateway nodes sharing the database
	// (nodes.list, and health's "nodes"); nil: this gateway alone.
	Nodes func(ctx context.Context) (*wire.NodesList, error)
}

// Server is the WebSocket protocol server. Create with New, mount as an
// http.Handler, stop with Close. Safe for concurrent use.
type Server struct {
	cfg          Config
	conf         *settings.Settings
	log          *slog.Logger
	now          func() time.Time
	newID        func() string
	alias        sessionkey.MainAlias
	defaultAgent string
	started      time.Time
	instanceID   string // this gateway's system-presence instanceId
	origins      originPolicy
	hosts        hostPolicy
	authLimit    *authLimiter
	labels       labels // a label's check and write, one at a time (labels.go)

	presenceVersion atomic.Int64 // stateVersion.presence
	feed            feed         // the run events of the plain connections
	queuedTotal     atomic.Int64 // bytes queued on every connection
	slowDropped     atomic.Int64 // connections closed as slow consumers
	eventsDropped   atomic.Int64 // frames never delivered (see Stats)

	methods     map[string]*method
	methodNames []string

	// wakes maps the run id of a wake's turn to when it was asked for;
	// lastHeartbeat is the event of the last one that ended (wake.go).
	wakes         sync.Map
	lastHeartbeat atomic.Pointer[json.RawMessage]

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the tick loop and every connection
	unsub  func()
	// calls runs the requests of every connection (see conn.dispatch).
	calls *workers.Pool
	// sessionChanges feeds sessionsChangedLoop (see sessionsChanged).
	sessionChanges chan sessionChange
	// timings are the chat.sends of operator UIs followed for
	// chat.send_timing, by run id.
	timings sync.Map

	closeOnce sync.Once

	// mu guards the fields that follow. Lock order: Server.mu before
	// conn.mu; runStream.mu before conn.mu. Never held across I/O.
	mu      sync.Mutex
	closing bool
	conns   map[*conn]struct{}

	// connList is a copy-on-write snapshot of conns for broadcasts.
	connList atomic.Pointer[[]*conn]
	// subs lists the connections that may receive a session's events.
	subs subIndex

	// runsMu guards runs.
	runsMu sync.Mutex
	runs   map[string]*runStream
	// liveRuns is len(runs), for the writers (see yieldWhileQueued).
	liveRuns atomic.Int64
}

// New validates cfg, subscribes to the runner's events and starts the tick
// loop.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Runner == nil:
		return nil, errors.New("gateway.New: Runner is required")
	case cfg.Admit == nil:
		return nil, errors.New("gateway.New: Admit is required")
	case cfg.Store == nil:
		return nil, errors.New("gateway.New: Store is required")
	case cfg.Settings == nil:
		return nil, errors.New("gateway.New: Settings is required")
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = DefaultHealthInterval
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.PongTimeout <= 0 {
		cfg.PongTimeout = DefaultPongTimeout
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = wire.DefaultMaxPayload
	}
	if cfg.MaxQueuedBytes <= 0 {
		cfg.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if cfg.MaxBufferedBytes <= 0 {
		cfg.MaxBufferedBytes = wire.DefaultMaxBufferedBytes
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.ChatDeltaInterval == 0 {
		cfg.ChatDeltaInterval = DefaultChatDeltaInterval
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	s := &Server{
		cfg:          cfg,
		conf:         cfg.Settings,
		log:          cfg.Logger,
		now:          cfg.Now,
		newID:        cfg.NewID,
		alias:        sessionkey.NewMainAlias(cfg.Settings.Scope, cfg.Settings.MainKey),
		defaultAgent: cfg.Settings.DefaultAgent,
		conns:        make(map[*conn]struct{}),
		calls:        workers.New(maxIdleCallWorkers),
		runs:         make(map[string]*runStream),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "gateway")
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = uuid.NewString
	}
	s.instanceID = s.newID()
	s.feed.s = s
	s.origins = newOriginPolicy(cfg.AllowedOrigins, cfg.AllowHostHeaderOrigin)
	s.hosts = newHostPolicy(cfg.AllowedOrigins, cfg.PublicURLs, cfg.AllowHostHeaderOrigin)
	arl := DefaultAuthRateLimit
	if cfg.AuthRateLimit != nil {
		arl = *cfg.AuthRateLimit
	}
	s.authLimit = newAuthLimiter(arl, s.now, s.log)
	s.started = s.now()
	s.registerMethods()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.connList.Store(&[]*conn{})
	s.sessionChanges = make(chan sessionChange, sessionChangesQueue)
	s.unsub = s.follow(cfg.Runner)
	stackstart.Go(s.wg.Go, s.tickLoop)
	s.wg.Go(s.budgetLoop)
	stackstart.Go(s.wg.Go, s.sessionsChangedLoop)
	s.wg.Go(s.healthLoop)
	return s, nil
}

// Methods returns the names of the implemented methods, as hello-ok
// features.methods lists them.
func (s *Server) Methods() []string { return append([]string(nil), s.methodNames...) }

// Events returns the names of the events the server emits, as hello-ok
// features.events lists them.
func (s *Server) Events() []string {
	return []string{wire.EventConnectChallenge, wire.EventAgent, wire.EventChat, wire.EventPresence, wire.EventTick, wire.EventShutdown,
		wire.EventExecApprovalRequested, wire.EventExecApprovalResolved, wire.EventSessionsChanged, wire.EventSessionMessage, wire.EventHealth, wire.EventModelsSnapshot, wire.EventChatSendTiming, wire.EventRunsWatch, wire.EventSessionsWatch}
}

// ServeHTTP accepts a WebSocket connection and serves the protocol on it
// until either side closes it. Requests that are not WebSocket upgrades get
// 426 Upgrade Required; after Close, 503.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this endpoint speaks the gateway WebSocket protocol", http.StatusUpgradeRequired)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		http.Error(w, "gateway shutting down", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	// Browsers are held to the Host and origin policies (DNS rebinding,
	// cross-site pages); the WebSocket library's own same-host check is
	// then moot.
	if status, reason := s.browserRefusal(r); status != 0 {
		s.log.Warn("websocket refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "host", r.Host, "reason", reason)
		http.Error(w, reason, status)
		return
	}
	cw := &sockWriter{ResponseWriter: w}
	ws, err := websocket.Accept(cw, r, &websocket.AcceptOptions{
		CompressionMode:    websocket.CompressionDisabled,
		InsecureSkipVerify: true, // checked above
	})
	if err != nil {
		s.log.Debug("websocket accept failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	c := newConn(s, ws, r.RemoteAddr, local)
	c.origin = r.Header.Get("Origin")
	c.sock = cw.conn
	if !s.addConn(c) {
		ws.Close(websocket.StatusServiceRestart, "gateway shutting down")
		return
	}
	defer s.removeConn(c)
	c.serve()
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func (s *Server) addConn(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	s.publishConnsLocked()
	return true
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	_, had := s.conns[c]
	delete(s.conns, c)
	s.publishConnsLocked()
	closing := s.closing
	s.mu.Unlock()
	c.mu.Lock()
	wasReady := c.ready
	keys := make([]string, 0, len(c.subs))
	for k := range c.subs {
		keys = append(keys, k)
	}
	s.subs.remove(c, keys)
	s.feed.leave(c)
	c.mu.Unlock()
	if had && wasReady && !closing && !ephemeralClient(c.client.Mode) {
		s.broadcastPresence() // the client left
	}
}

func (s *Server) publishConnsLocked() {
	list := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.connList.Store(&list)
}

// broadcast sends an event to every connection past its handshake. With
// dropIfSlow, connections whose queue is full skip it instead of being
// disconnected.
func (s *Server) broadcast(event string, payload json.RawMessage, dropIfSlow bool) {
	s.fanOut(event, payload, dropIfSlow, nil)
}

// fanOut queues an event on every connection that want accepts (every one
// when want is nil). The frame's head and payload are encoded once and
// shared by the connections; each adds its own seq as it writes.
func (s *Server) fanOut(event string, payload json.RawMessage, dropIfSlow bool, want func(*conn) bool) {
	s.fanOutTo(event, payload, dropIfSlow, *s.connList.Load(), nil, want)
}

// fanOutTo is fanOut over the connections of first and then of second,
// which hold no connection twice.
func (s *Server) fanOutTo(event string, payload json.RawMessage, dropIfSlow bool, first, second []*conn, want func(*conn) bool) {
	if len(first)+len(second) == 0 {
		return
	}
	frames := [1]outFrame{{raw: eventHead(event, payload != nil), body: payload}}
	s.fanOutFrames(frames[:], "", dropIfSlow, first, second, want)
}

// fanOutSession queues event frames (heads and payloads set) of session
// key, in order, on every connection that receives that session's events
// (on every connection for key "", as broadcast).
func (s *Server) fanOutSession(key string, frames []outFrame, dropIfSlow bool) {
	if key == "" {
		s.fanOutFrames(frames, "", dropIfSlow, *s.connList.Load(), nil, nil)
		return
	}
	all, scoped := s.subs.forKey(key)
	if !dropIfSlow && len(all) >= feedMin {
		s.fanOutFeed(frames, key, scoped)
		return
	}
	s.fanOutFrames(frames, key, dropIfSlow, all, scoped, nil)
}

// fanOutFeed is fanOutSession to the plain connections through the feed,
// and to the session-scoped ones of scoped that subscribed to key each on
// its own. The feed's followers, at least feedMin, and the others receive
// one block if no payload is shared.
func (s *Server) fanOutFeed(frames []outFrame, key string, scoped []*conn) {
	var blk *eventBlock
	if !s.shareLarge(frames) {
		blk = newBlock(frames)
	}
	s.feed.appendFrames(blk, frames)
	var one [1]outFrame
	s.queuedTotal.Add(queueEach(scoped, blockOr(blk, frames, &one), key, false, nil))
	s.releaseShared(frames)
}

// blockOr is what a connection queues of a fan-out: blk as one frame (in
// one, the caller's), or frames when there is no block.
func blockOr(blk *eventBlock, frames []outFrame, one *[1]outFrame) []outFrame {
	if blk == nil {
		return frames
	}
	one[0] = outFrame{blk: blk}
	return one[:]
}

// queueEach queues frames on the connections of l that want accepts
// (every one when want is nil), see conn.queueEvents, and returns what
// they add to the gateway's outbound total: the caller adds it once for
// all (see queueLocked).
func queueEach(l []*conn, frames []outFrame, key string, dropIfSlow bool, want func(*conn) bool) int64 {
	var queued int64
	for _, c := range l {
		if want == nil || want(c) {
			queued += c.queueEvents(frames, key, dropIfSlow)
		}
	}
	return queued
}

// shareLarge makes the payloads of frames of sharedMin bytes or more
// shared, each holding a reference for the caller (releaseShared), and
// reports whether there was one.
func (s *Server) shareLarge(frames []outFrame) bool {
	shared := false
	for i := range frames {
		if f := &frames[i]; len(f.body) >= sharedMin {
			// Counted once in the budget for every connection.
			f.body, f.shared = nil, s.newShared(f.body)
			shared = true
		}
	}
	return shared
}

// releaseShared drops the caller's references that shareLarge took.
func (s *Server) releaseShared(frames []outFrame) {
	for _, f := range frames {
		if f.shared != nil {
			f.shared.release()
		}
	}
}

// fanOutFrames queues event frames, in order, on the connections of first
// and then of second that want accepts (every one when want is nil) and
// that receive session key's events (see conn.queueEvents). Each
// connection takes them under one lock and is woken once. It changes the
// frames: a payload of sharedMin bytes or more becomes shared. Frames
// that reach more than one connection and share no payload go as one
// block (see eventBlock): one queue entry per connection instead of one
// per frame (at 100 plain clients a warm turn's five fan-outs queued
// nine frames on each connection).
func (s *Server) fanOutFrames(frames []outFrame, key string, dropIfSlow bool, first, second []*conn, want func(*conn) bool) {
	if len(first)+len(second) == 0 {
		return
	}
	var blk *eventBlock
	if len(first)+len(second) > 1 {
		if s.shareLarge(frames) {
			defer s.releaseShared(frames)
		} else {
			// Encoded once, queued as one frame on each connection.
			blk = newBlock(frames)
		}
	}
	var one [1]outFrame
	queue := blockOr(blk, frames, &one)
	s.queuedTotal.Add(queueEach(first, queue, key, dropIfSlow, want) + queueEach(second, queue, key, dropIfSlow, want))
}

// healthLoop sends every connection the health snapshot each
// HealthInterval, as the reference refreshes its own.
func (s *Server) healthLoop() {
	t := time.NewTicker(s.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if len(*s.connList.Load()) == 0 {
				continue
			}
			if b, ok := s.healthEvent(); ok {
				s.broadcast(wire.EventHealth, b, true)
			}
		}
	}
}

// healthEvent is the payload of a health event: the health method's
// answer. ok is false when it cannot be read (the store failed).
func (s *Server) healthEvent() (json.RawMessage, bool) {
	h, err := s.fullHealth(s.ctx)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Debug("health event: reading the snapshot", "err", err)
		}
		return nil, false
	}
	b, err := json.Marshal(h)
	return b, err == nil
}

// budgetLoop drops stalled connections while the outbound budget is spent:
// a connection that never reads may receive nothing more that would have
// noticed it.
func (s *Server) budgetLoop() {
	t := time.NewTicker(stallAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.feed.trim()
		if s.queuedTotal.Load() <= s.cfg.MaxQueuedBytes {
			continue
		}
		for _, c := range *s.connList.Load() {
			c.mu.Lock()
			if c.stalled() {
				c.dropSlowLocked()
			}
			c.mu.Unlock()
		}
	}
}

func (s *Server) tickLoop() {
	t := time.NewTicker(s.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			b, _ := json.Marshal(wire.Tick{TS: s.now().UnixMilli()})
			s.broadcast(wire.EventTick, b, true)
		}
	}
}

// Close sends every connection a shutdown event, closes it with 1012
// (service restart), and waits for every goroutine the server started,
// including the connections' handlers. New connections are refused. A
// second call returns net.ErrClosed.
func (s *Server) Close() error {
	first := false
	s.closeOnce.Do(func() { first = true })
	if !first {
		return net.ErrClosed
	}
	s.mu.Lock()
	s.closing = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.unsub()
	payload, _ := json.Marshal(wire.Shutdown{Reason: "gateway stopping"})
	for _, c := range conns {
		c.sendEvent(wire.EventShutdown, payload, false)
		c.closeAfterFlush(websocket.StatusServiceRestart, "gateway stopping")
	}
	s.cancel()
	s.wg.Wait()
	s.calls.Close()
	return nil
}

// maxIdleCallWorkers bounds the goroutines kept to run requests on: about
// the requests in flight at once under load (one per busy client).
const maxIdleCallWorkers = 64

// Stats are the gateway's live counters, for metrics.
type Stats struct {
	// Connections is the number of open WebSocket connections.
	Connections int
	// QueuedBytes is what waits to be written to them. The feed's
	// entries count until the feed forgets them (within trimEvery
	// appends, or a quarter of a second, after the last connection
	// wrote them).
	QueuedBytes int64
	// SlowConsumers counts connections closed for not reading.
	SlowConsumers int64
	// EventsDropped counts event frames never delivered: droppable ones
	// (ticks, presence) a backed-up connection skipped, and the frames
	// still queued on connections closed as slow consumers.
	EventsDropped int64
}

// Stats returns the gateway's live counters.
func (s *Server) Stats() Stats {
	n := 0
	if l := s.connList.Load(); l != nil {
		n = len(*l)
	}
	return Stats{Connections: n, QueuedBytes: s.queuedTotal.Load(), SlowConsumers: s.slowDropped.Load(), EventsDropped: s.eventsDropped.Load()}
}
