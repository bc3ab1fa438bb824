// Package a2a is Switchboard's A2A channel server: the public agent card,
// the JSON-RPC endpoint at /a2a/v1 with per-peer bearer tokens and rate
// limits, and the task life cycle (blocking or immediate sends, reply
// timeout, slash-command rejection). It runs agent turns through a Runner
// and keeps tasks in a Tasks store, both interfaces its caller supplies.
package a2a

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// Runner runs agent turns. The server uses the task id as the run id, so a
// restart can ask how the run of a task it cut ended.
type Runner interface {
	// Run runs one turn and returns the reply text, calling onText (when
	// not nil) with each increment of the assistant's text as it streams.
	// It must stop when ctx is done.
	Run(ctx context.Context, turn Turn, onText func(delta string)) (string, error)
	// Outcome reports how run runID ended: ok with its reply when it
	// completed, not ok when it failed, was cut or never ran. A run still
	// queued is stopped first.
	Outcome(ctx context.Context, runID string) (reply string, ok bool, err error)
}

// Turn is one peer message to run.
type Turn struct {
	// RunID is the task id.
	RunID, SessionKey, Text string
	// ChainID and ChainHops are the chain of causes the message continues,
	// from its metadata (wire.ChainOf) when the peer is a gateway that
	// sends them; ChainID "" when it does not.
	ChainID   string
	ChainHops int
}

// Tasks keeps tasks durably. Get returns nil, nil when the peer has no such
// task.
type Tasks interface {
	Put(ctx context.Context, peer string, t wire.Task) error
	Get(ctx context.Context, peer, id string) (*wire.Task, error)
	// List returns up to limit of peer's tasks, newest first, optionally
	// of one context.
	List(ctx context.Context, peer, contextID string, limit int) ([]wire.Task, error)
	// Open returns the tasks of any peer not yet in a terminal state.
	Open(ctx context.Context) ([]PeerTask, error)
}

// PeerTask is a task with the peer that owns it.
type PeerTask struct {
	Peer string
	Task wire.Task
}

// DefaultListSize and MaxListSize bound one ListTasks answer.
const (
	DefaultListSize = 50
	MaxListSize     = 100
)

// InterruptedReason is the status message of a task whose run a crash or
// restart cut.
const InterruptedReason = "A2A task interrupted by gateway restart"

// Peer is one configured peer: its name and the token it presents.
type Peer struct {
	Name  string
	Token string
}

// Config is what the server needs from channels.a2a.
type Config struct {
	// AdvertisedURL is the base of the card's interface URL; empty means
	// the local address each card request came in on.
	AdvertisedURL      string
	ReplyTimeout       time.Duration
	RateLimitPerMinute int
	Agents             []string // exposed agent ids; the first one answers
	Peers              []Peer
	Version            string
}

// SlashRejection is the reason a slash message is rejected with.
const SlashRejection = "A2A peers cannot execute slash commands. Send a task in plain text; only users can issue commands."

// Server serves the A2A channel. Close stops its runs.
type Server struct {
	cfg    Config
	run    Runner
	tasks  Tasks
	now    func() time.Time
	digest map[[32]byte]string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	hits map[string][]time.Time
	// running holds the cancel of each live run by (peer, task id).
	running map[[2]string]context.CancelFunc
	// deltas holds the streamed reply text of each live run, for
	// subscribers; wake holds a channel closed at the next change of a
	// task (a stored state or a delta).
	deltas map[[2]string][]string
	wake   map[[2]string]chan struct{}
}

// New builds a Server. It fails when a peer has no token.
func New(cfg Config, run Runner, tasks Tasks) (*Server, error) {
	s := &Server{cfg: cfg, run: run, tasks: tasks, now: time.Now, digest: map[[32]byte]string{},
		hits: map[string][]time.Time{}, running: map[[2]string]context.CancelFunc{},
		deltas: map[[2]string][]string{}, wake: map[[2]string]chan struct{}{}}
	for _, p := range cfg.Peers {
		if p.Token == "" {
			return nil, fmt.Errorf("a2a: peer %q has no token", p.Name)
		}
		s.digest[sha256.Sum256([]byte(p.Token))] = p.Name
	}
	if len(cfg.Agents) == 0 {
		s.cfg.Agents = []string{"main"}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Recover makes final every task a crash or restart left unfinished:
// completed with the reply when its run ended ok, failed otherwise. Call it
// once, before serving.
func (s *Server) Recover(ctx context.Context) (int, error) {
	n := 0
	for { // Open may answer a page at a time; each pass makes its page final
		open, err := s.tasks.Open(ctx)
		if err != nil {
			return n, fmt.Errorf("a2a: recover: %w", err)
		}
		if len(open) == 0 {
			return n, nil
		}
		for _, pt := range open {
			t := pt.Task
			reply, ok, err := s.run.Outcome(ctx, t.ID)
			if err != nil {
				return n, fmt.Errorf("a2a: recover task %s: %w", t.ID, err)
			}
			if ok {
				s.complete(&t, reply)
			} else {
				t.Status = s.status(t, wire.StateFailed, InterruptedReason)
			}
			if err := s.save(ctx, pt.Peer, t); err != nil {
				return n, fmt.Errorf("a2a: recover task %s: %w", t.ID, err)
			}
			n++
		}
	}
}

// Close cancels the runs still going and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// SessionKey is the isolated session of one (peer, contextId) pair, the key
// the reference derives for a direct peer with dmScope
// per-account-channel-peer.
func SessionKey(agent, peer, contextID string) string {
	return strings.ToLower(fmt.Sprintf("agent:%s:a2a:default:direct:%s:%s", agent, peer, contextID))
}

// ServeHTTP routes the card and the JSON-RPC endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/.well-known/agent-card.json" || r.URL.Path == "/.well-known/agent.json"):
		writeJSON(w, http.StatusOK, s.card(r))
	case r.Method == http.MethodPost && r.URL.Path == "/a2a/v1":
		s.serveRPC(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not found"})
	}
}

// card is the agent card. Its interface URL is built from configuration
// (Config.AdvertisedURL), else from the address the request came in on,
// never from the request's Host header, which the caller chooses.
func (s *Server) card(r *http.Request) wire.AgentCard {
	base := s.cfg.AdvertisedURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		host := "localhost"
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
		base = scheme + "://" + host
	}
	// One endpoint speaks both versions (a request by a 0.3 method name is
	// answered in 0.3 form): the card lists it for each, in its 1.0 form
	// and, for 0.3 clients, in its 0.3 form.
	endpoint := strings.TrimRight(base, "/") + "/a2a/v1"
	c := wire.AgentCard{
		Name:        s.cfg.Agents[0],
		Description: "Switchboard agent gateway using the Agent2Agent protocol.",
		SupportedInterfaces: []wire.AgentInterface{
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: wire.Version10},
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: wire.Version03},
		},
		URL: endpoint, PreferredTransport: "JSONRPC", ProtocolVersion: wire.Version03,
		Version:            s.cfg.Version,
		Capabilities:       wire.Capabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	}
	for _, a := range s.cfg.Agents {
		c.Skills = append(c.Skills, wire.Skill{ID: a, Name: a, Description: "Switchboard agent " + a + ".", Tags: []string{"switchboard"}})
	}
	return c
}

// peer returns the peer whose token the request bears ("" for none). The
// digests compare in constant time.
func (s *Server) peer(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
		return ""
	}
	got := sha256.Sum256([]byte(tok))
	name := ""
	for d, n := range s.digest {
		if subtle.ConstantTimeCompare(got[:], d[:]) == 1 {
			name = n
		}
	}
	return name
}

func (s *Server) limited(peer string) bool {
	max := s.cfg.RateLimitPerMinute
	if max <= 0 {
		return false
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.hits[peer][:0]
	for _, t := range s.hits[peer] {
		if now.Sub(t) < time.Minute {
			kept = append(kept, t)
		}
	}
	if len(kept) >= max {
		s.hits[peer] = kept
		return true
	}
	s.hits[peer] = append(kept, now)
	return false
}

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	peer := s.peer(r)
	if peer == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized; configure channels.a2a.peers with a matching Bearer token"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "Request body exceeds the 1 MiB limit"})
			return
		}
		writeJSON(w, http.StatusOK, wire.Fail(nil, wire.Errorf(wire.CodeServerError, "Request body could not be read")))
		return
	}
	b, err := wire.DecodeBody(body)
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		writeJSON(w, http.StatusOK, wire.Fail(nil, we))
		return
	case errors.Is(err, wire.ErrEmptyBatch):
		writeJSON(w, http.StatusOK, wire.Fail(nil, wire.Errorf(wire.CodeInvalidRequest, "Invalid JSON-RPC request")))
		return
	case errors.Is(err, wire.ErrBatchTooLarge):
		msg := err.Error()
		if s.limited(peer) {
			msg = "Peer is rate limited"
		}
		writeJSON(w, http.StatusOK, wire.Fail(nil, wire.Errorf(wire.CodeServerError, "%s", msg)))
		return
	}
	if !b.Batch {
		if req, rerr := wire.DecodeRequest(b.Entries[0]); rerr == nil && req.HasID {
			switch req.Method {
			case wire.MethodSendStreamingMessage:
				s.stream(w, r, peer, req)
				return
			case wire.MethodSubscribeToTask:
				s.subscribe(w, r, peer, req)
				return
			}
		}
	}
	out := make([]*wire.Response, len(b.Entries))
	var wg sync.WaitGroup
	for i, e := range b.Entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = s.handle(r.Context(), peer, e)
		}()
	}
	wg.Wait()
	var resps []*wire.Response
	for _, o := range out {
		if o != nil {
			resps = append(resps, o)
		}
	}
	switch {
	case len(resps) == 0:
		w.WriteHeader(http.StatusOK)
	case b.Batch:
		writeBounded(w, resps)
	default:
		writeBounded(w, resps[0])
	}
}

// handle answers one entry; nil for a notification.
func (s *Server) handle(ctx context.Context, peer string, raw json.RawMessage) *wire.Response {
	req, rerr := wire.DecodeRequest(raw)
	notification := rerr == nil && !req.HasID
	reply := func(r wire.Response) *wire.Response {
		if notification {
			return nil
		}
		return &r
	}
	if s.limited(peer) {
		return reply(wire.Fail(req.ID, wire.Errorf(wire.CodeServerError, "Peer is rate limited")))
	}
	if rerr != nil {
		return reply(wire.Fail(req.ID, rerr))
	}
	result, err := s.call(ctx, peer, req)
	if err != nil {
		var we *wire.Error
		if !errors.As(err, &we) {
			we = wire.Errorf(wire.CodeServerError, "A2A request could not be processed")
		}
		return reply(wire.Fail(req.ID, we))
	}
	if wire.IsV03Name(req.Name) {
		result = wire.ToV03Result(result)
	}
	return reply(wire.Result(req.ID, result))
}

func (s *Server) call(ctx context.Context, peer string, req wire.Request) (any, error) {
	switch req.Method {
	case wire.MethodSendMessage:
		p, err := wire.DecodeSend(req.Params)
		if err != nil {
			return nil, err
		}
		return s.send(ctx, peer, p)
	case wire.MethodGetTask:
		p, err := wire.DecodeTask(req.Params)
		if err != nil {
			return nil, err
		}
		t, gerr := s.tasks.Get(ctx, peer, p.ID)
		if gerr != nil {
			return nil, fmt.Errorf("a2a: get task %s: %w", p.ID, gerr)
		}
		if t == nil {
			return nil, wire.Errorf(wire.CodeTaskNotFound, "Task not found")
		}
		return t, nil
	case wire.MethodCancelTask:
		p, err := wire.DecodeTask(req.Params)
		if err != nil {
			return nil, err
		}
		return s.cancelTask(ctx, peer, p.ID)
	case wire.MethodListTasks:
		var p wire.ListParams
		if len(req.Params) > 0 && json.Unmarshal(req.Params, &p) != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "Invalid ListTasks params")
		}
		size := p.PageSize
		switch {
		case size < 0:
			return nil, wire.Errorf(wire.CodeInvalidParams, "Invalid ListTasks params: pageSize must not be negative")
		case size == 0:
			size = DefaultListSize
		case size > MaxListSize:
			size = MaxListSize
		}
		ts, err := s.tasks.List(ctx, peer, p.ContextID, size)
		if err != nil {
			return nil, fmt.Errorf("a2a: list tasks: %w", err)
		}
		if ts == nil {
			ts = []wire.Task{}
		}
		return wire.ListResult{Tasks: ts, PageSize: len(ts), TotalSize: len(ts)}, nil
	}
	return nil, wire.Errorf(wire.CodeUnsupportedOp, "Unsupported operation: %s", req.Name)
}

// send answers SendMessage: it admits the message as a task, waits for the
// task's final state unless the caller asked to return at once, and
// answers with the task as stored then.
func (s *Server) send(ctx context.Context, peer string, p wire.SendParams) (*wire.SendResult, error) {
	t, done, err := s.admit(ctx, peer, p)
	if err != nil {
		return nil, err
	}
	if done != nil && !p.Immediate() {
		timer := time.NewTimer(s.cfg.ReplyTimeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	cur, err := s.tasks.Get(context.WithoutCancel(ctx), peer, t.ID)
	if err != nil || cur == nil {
		return &wire.SendResult{Task: &t}, nil
	}
	return &wire.SendResult{Task: cur}, nil
}

// admit stores the message's task and starts its run. It returns the task
// as first stored (working, or rejected for a slash command) and a channel
// that closes when the run's final state is stored (nil when no run
// started).
func (s *Server) admit(ctx context.Context, peer string, p wire.SendParams) (wire.Task, <-chan struct{}, error) {
	text := wire.MessageText(p.Message.Parts)
	if text == "" {
		return wire.Task{}, nil, wire.Errorf(wire.CodeInvalidParams, "Message must contain at least one usable text part")
	}
	contextID := p.Message.ContextID
	if contextID == "" {
		contextID = "ctx-" + uuid.NewString()
	}
	t := wire.Task{ID: uuid.NewString(), ContextID: contextID}
	t.Status = s.status(t, wire.StateWorking, "")
	if strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), "/") {
		t.Status = s.status(t, wire.StateRejected, SlashRejection)
		if err := s.save(ctx, peer, t); err != nil {
			return wire.Task{}, nil, fmt.Errorf("a2a: store task: %w", err)
		}
		return t, nil, nil
	}
	if err := s.save(ctx, peer, t); err != nil {
		return wire.Task{}, nil, fmt.Errorf("a2a: store task: %w", err)
	}
	turn := Turn{RunID: t.ID, Text: text}
	if id, hops, ok := wire.ChainOf(p.Message.Metadata); ok {
		turn.ChainID, turn.ChainHops = id, hops
	}
	return t, s.startRun(peer, t, turn), nil
}

// startRun runs the task's turn in the background; the channel closes
// when its final state is stored.
func (s *Server) startRun(peer string, t wire.Task, turn Turn) <-chan struct{} {
	done := make(chan struct{})
	runCtx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.running[[2]string{peer, t.ID}] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer func() {
			s.mu.Lock()
			delete(s.running, [2]string{peer, t.ID})
			s.mu.Unlock()
			cancel()
		}()
		s.execute(runCtx, peer, t, turn)
	}()
	return done
}

// cancelTask aborts a live run and waits for its final state; a finished
// task cannot be canceled.
func (s *Server) cancelTask(ctx context.Context, peer, id string) (*wire.Task, error) {
	t, err := s.tasks.Get(ctx, peer, id)
	if err != nil {
		return nil, fmt.Errorf("a2a: get task %s: %w", id, err)
	}
	if t == nil {
		return nil, wire.Errorf(wire.CodeTaskNotFound, "Task not found")
	}
	if wire.Terminal(t.Status.State) {
		return nil, wire.Errorf(wire.CodeTaskNotCancel, "Task cannot be canceled: it is %s", t.Status.State)
	}
	s.mu.Lock()
	cancel := s.running[[2]string{peer, id}]
	s.mu.Unlock()
	if cancel == nil {
		return nil, wire.Errorf(wire.CodeTaskNotCancel, "Task cannot be canceled: its run is not live")
	}
	cancel()
	for i := 0; i < 500; i++ { // the run's goroutine writes the final state
		if t, err = s.tasks.Get(ctx, peer, id); err == nil && t != nil && wire.Terminal(t.Status.State) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return t, nil
}

// execute runs the turn and stores the outcome as the task's final state.
func (s *Server) execute(ctx context.Context, peer string, t wire.Task, turn Turn) {
	turn.SessionKey = SessionKey(s.cfg.Agents[0], peer, t.ContextID)
	k := [2]string{peer, t.ID}
	reply, err := s.run.Run(ctx, turn, func(delta string) {
		if delta == "" {
			return
		}
		s.mu.Lock()
		s.deltas[k] = append(s.deltas[k], delta)
		s.mu.Unlock()
		s.notify(k)
	})
	defer func() {
		s.mu.Lock()
		delete(s.deltas, k)
		s.mu.Unlock()
	}()
	switch {
	case err != nil && s.ctx.Err() != nil:
		t.Status = s.status(t, wire.StateCanceled, "gateway shutting down")
	case err != nil && ctx.Err() != nil:
		t.Status = s.status(t, wire.StateCanceled, "canceled by the peer")
	case err != nil:
		t.Status = s.status(t, wire.StateFailed, "A2A reply failed: "+err.Error())
	default:
		s.complete(&t, reply)
	}
	// The final write must land even when the server is closing.
	_ = s.save(context.Background(), peer, t)
}

// save stores t and wakes the task's subscribers.
func (s *Server) save(ctx context.Context, peer string, t wire.Task) error {
	err := s.tasks.Put(ctx, peer, t)
	s.notify([2]string{peer, t.ID})
	return err
}

// notify wakes the waiters on task k.
func (s *Server) notify(k [2]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.wake[k]; ch != nil {
		close(ch)
		delete(s.wake, k)
	}
}

// waiter returns a channel closed at task k's next change.
func (s *Server) waiter(k [2]string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.wake[k]
	if ch == nil {
		ch = make(chan struct{})
		s.wake[k] = ch
	}
	return ch
}

// complete marks t completed with reply as its artifact.
func (s *Server) complete(t *wire.Task, reply string) {
	t.Status = s.status(*t, wire.StateCompleted, "")
	t.Artifacts = []wire.Artifact{{ArtifactID: "reply", Name: "reply", Parts: []wire.Part{wire.TextPart(wire.CapText(reply))}}}
}

// status is task t's status in state; a non-empty msg becomes the agent's
// status message, which names the task and its context.
func (s *Server) status(t wire.Task, state, msg string) wire.TaskStatus {
	st := wire.TaskStatus{State: state, Timestamp: s.now().UTC().Format(time.RFC3339Nano)}
	if msg != "" {
		st.Message = &wire.Message{MessageID: uuid.NewString(), ContextID: t.ContextID, TaskID: t.ID,
			Role: wire.RoleAgent, Parts: []wire.Part{wire.TextPart(msg)}}
	}
	return st
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding failed"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeBounded writes a JSON-RPC response, replacing it with an error when
// it would exceed the response limit.
func writeBounded(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil || len(b) > wire.MaxResponseBytes {
		writeJSON(w, http.StatusOK, wire.Fail(nil, wire.Errorf(wire.CodeServerError, "A2A response exceeds the 1 MiB limit")))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// stream answers SendStreamingMessage with server-sent events: the task,
// then the reply as an artifact and the final status. A client that goes
// away does not stop the run; the task stays readable with GetTask.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, peer string, req wire.Request) {
	if s.limited(peer) {
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, wire.Errorf(wire.CodeServerError, "Peer is rate limited")))
		return
	}
	p, perr := wire.DecodeSend(req.Params)
	if perr != nil {
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, perr))
		return
	}
	// The stream starts from the task as admitted, not as it is by now: a
	// run that ends before the first event still streams its reply as an
	// artifact update and its final status, the shape every client reads.
	t, _, err := s.admit(r.Context(), peer, p)
	if err != nil {
		var we *wire.Error
		if !errors.As(err, &we) {
			we = wire.Errorf(wire.CodeServerError, "A2A request could not be processed")
		}
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, we))
		return
	}
	s.follow(w, r, peer, req, &t)
}

// subscribe answers SubscribeToTask (0.3: tasks/resubscribe) with
// server-sent events for a task still running: the task, its status
// updates and reply chunks, the final artifact and status. An unknown task
// is TaskNotFound; a task already final cannot be subscribed to
// (UnsupportedOperation), as the A2A specification says.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, peer string, req wire.Request) {
	if s.limited(peer) {
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, wire.Errorf(wire.CodeServerError, "Peer is rate limited")))
		return
	}
	p, perr := wire.DecodeTask(req.Params)
	if perr != nil {
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, perr))
		return
	}
	t, err := s.tasks.Get(r.Context(), peer, p.ID)
	switch {
	case err != nil:
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, wire.Errorf(wire.CodeServerError, "A2A request could not be processed")))
		return
	case t == nil:
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, wire.Errorf(wire.CodeTaskNotFound, "Task not found")))
		return
	case wire.Terminal(t.Status.State):
		writeJSON(w, http.StatusOK, wire.Fail(req.ID, wire.Errorf(wire.CodeUnsupportedOp,
			"Task is in a terminal state (%s) and cannot be subscribed to", t.Status.State)))
		return
	}
	s.follow(w, r, peer, req, t)
}

// follow streams task t as server-sent events until it is final: the task,
// a status update for each state change, the reply's text chunks as they
// come (appended to the "reply" artifact), then the final artifacts
// (replacing the chunks, lastChunk) and the final status. A client that
// goes away does not stop the run. A request by a 0.3 method name gets the
// events in 0.3 form.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, peer string, req wire.Request, t *wire.Task) {
	id, v03 := req.ID, wire.IsV03Name(req.Name)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fl, _ := w.(http.Flusher)
	emit := func(ev wire.StreamResponse) bool {
		var res any = ev
		if v03 {
			res = wire.ToV03Result(ev)
		}
		b, err := json.Marshal(wire.Result(id, res))
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if !emit(wire.StreamResponse{Task: t}) || wire.Terminal(t.Status.State) {
		return
	}
	k := [2]string{peer, t.ID}
	state, sent := t.Status.State, 0
	for {
		wake := s.waiter(k) // taken before reading, so no change is missed
		s.mu.Lock()
		fresh := append([]string(nil), s.deltas[k][min(sent, len(s.deltas[k])):]...)
		s.mu.Unlock()
		for _, d := range fresh {
			chunk := wire.Artifact{ArtifactID: "reply", Name: "reply", Parts: []wire.Part{wire.TextPart(d)}}
			if !emit(wire.StreamResponse{ArtifactUpdate: &wire.ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: chunk, Append: sent > 0}}) {
				return
			}
			sent++
		}
		cur, err := s.tasks.Get(context.WithoutCancel(r.Context()), peer, t.ID)
		if err != nil || cur == nil {
			return
		}
		t = cur
		if wire.Terminal(t.Status.State) {
			break
		}
		if t.Status.State != state {
			state = t.Status.State
			if !emit(wire.StreamResponse{StatusUpdate: &wire.StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}}) {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-wake:
		case <-time.After(time.Second): // a change another gateway stored
		}
	}
	for _, a := range t.Artifacts {
		if !emit(wire.StreamResponse{ArtifactUpdate: &wire.ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}}) {
			return
		}
	}
	emit(wire.StreamResponse{StatusUpdate: &wire.StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}})
}
