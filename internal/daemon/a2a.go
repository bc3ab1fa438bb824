package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// a2aRuns is what the A2A channel reads of past runs: a run and the
// transcript entries it wrote.
type a2aRuns interface {
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
}

// a2aRunner runs an A2A peer's turn through admission and returns the
// final assistant text.
type a2aRunner struct {
	runner *agent.Runner
	adm    *admission.Admitter
	runs   a2aRuns
	agent  string
}

// Outcome implements a2a.Runner: a run that ended ok answers with its last
// assistant text from the transcript; a run still queued after the
// restart is aborted (its task is reported failed, so the reply must not
// land later).
func (r *a2aRunner) Outcome(ctx context.Context, runID string) (string, bool, error) {
	run, err := r.runs.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("a2a outcome: %w", err)
	}
	switch run.Status {
	case store.RunOK:
	case store.RunQueued, store.RunRunning:
		if _, err := r.runner.Abort(ctx, runID); err != nil {
			return "", false, fmt.Errorf("a2a outcome: abort %s: %w", runID, err)
		}
		return "", false, nil
	default:
		return "", false, nil
	}
	if run.SessionID == "" {
		return "", true, nil
	}
	msgs, err := r.runs.History(ctx, run.SessionID, store.HistoryOptions{RunID: runID})
	if err != nil {
		return "", false, fmt.Errorf("a2a outcome: history of %s: %w", runID, err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].Entry.Message; msgs[i].Role == "assistant" && m != nil {
			return m.Text(), true, nil
		}
	}
	return "", true, nil
}

// Run submits the turn's text to its session and waits for the run's end;
// when ctx ends first the run is aborted. A turn with a chain (from another
// Switchboard gateway) continues it one hop further, so the loop guard
// stops a ring of agents spanning gateways.
func (r *a2aRunner) Run(ctx context.Context, turn a2a.Turn, onText func(string)) (string, error) {
	id, key, text := turn.RunID, turn.SessionKey, turn.Text
	if id == "" {
		id = uuid.NewString()
	}
	ended := make(chan agent.Event, 1)
	unsub := r.runner.Subscribe(func(ev agent.Event) {
		if ev.RunID == id && ev.Stream == agent.StreamAssistant && onText != nil {
			onText(ev.Delta)
		}
		if ev.RunID == id && ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil {
			select {
			case ended <- ev:
			default:
			}
		}
	})
	defer unsub()
	in := agent.Input{RunID: id, SessionKey: key, AgentID: r.agent, Message: text, Channel: "a2a",
		Provenance: &agent.Provenance{Kind: "a2a", SourceChannel: "a2a"}}
	if turn.ChainID != "" {
		in.Chain = &tools.Chain{ID: turn.ChainID, Hops: turn.ChainHops, Path: []string{key}}
	}
	if _, err := r.adm.Accept(ctx, admission.Request{Origin: admission.OriginA2A, Input: in}); err != nil {
		if errors.Is(err, admission.ErrSendDenied) || errors.Is(err, agent.ErrQueueFull) {
			return "", err // the peer reads admission's refusal as it is
		}
		return "", fmt.Errorf("a2a: submit: %w", err)
	}
	select {
	case ev := <-ended:
		if ev.Run.Status != store.RunOK {
			return "", fmt.Errorf("a2a: run %s: %s %s", id, ev.Run.Status, ev.Run.Error)
		}
		if ev.Message == nil {
			return "", nil
		}
		return ev.Message.Text(), nil
	case <-ctx.Done():
		_, _ = r.runner.Abort(context.WithoutCancel(ctx), id)
		return "", ctx.Err()
	}
}

// newA2A builds the A2A channel server when channels.a2a is enabled and
// has peers; nil otherwise. raw is the backend under st's wrappers, which
// keeps the tasks (store.A2ATaskStore).
func newA2A(ctx context.Context, cfg *config.Config, st, raw store.Store, runner *agent.Runner, adm *admission.Admitter, version string) (*a2a.Server, error) {
	s := cfg.A2A()
	if !s.Enabled || len(s.Peers) == 0 {
		return nil, nil
	}
	agents := slices.Clone(s.ExposeAgents)
	if len(agents) == 0 {
		agents = cfg.AgentIDs()
	}
	def := sessionkey.NormalizeAgentID(cfg.DefaultAgentID())
	if len(agents) == 0 {
		agents = []string{def}
	}
	// The card advertises channels.a2a.advertisedUrl, else
	// gateway.publicOrigin, else the address the card was fetched on.
	c := a2a.Config{AdvertisedURL: cmp.Or(s.AdvertisedURL, cfg.GatewayPublicOrigin()), ReplyTimeout: s.ReplyTimeout, RateLimitPerMinute: s.RateLimitPerMinute,
		Agents: agents, Version: version}
	for _, p := range s.Peers {
		c.Peers = append(c.Peers, a2a.Peer{Name: p.Name, Token: p.Token})
	}
	ts, ok := raw.(store.A2ATaskStore)
	if !ok {
		return nil, errors.New("daemon: a2a channel: the store cannot keep A2A tasks")
	}
	srv, err := a2a.New(c, &a2aRunner{runner: runner, adm: adm, runs: st, agent: agents[0]}, storeTasks{ts})
	if err != nil {
		return nil, errors.Join(errors.New("daemon: a2a channel"), err)
	}
	if _, err := srv.Recover(ctx); err != nil {
		srv.Close()
		return nil, fmt.Errorf("daemon: a2a channel: %w", err)
	}
	return srv, nil
}

// storeTasks keeps the A2A channel's tasks in the store. The task id is
// also the id of the run that answers it.
type storeTasks struct{ st store.A2ATaskStore }

// Put implements a2a.Tasks.
func (s storeTasks) Put(ctx context.Context, peer string, t wire.Task) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("a2a task %s: %w", t.ID, err)
	}
	return s.st.PutA2ATask(ctx, &store.A2ATask{Peer: peer, ID: t.ID, ContextID: t.ContextID, State: t.Status.State,
		Final: wire.Terminal(t.Status.State), RunID: t.ID, Task: body})
}

// Get implements a2a.Tasks.
func (s storeTasks) Get(ctx context.Context, peer, id string) (*wire.Task, error) {
	row, err := s.st.GetA2ATask(ctx, peer, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeA2ATask(row)
}

// List implements a2a.Tasks.
func (s storeTasks) List(ctx context.Context, peer, contextID string, limit int) ([]wire.Task, error) {
	rows, err := s.st.ListA2ATasks(ctx, peer, contextID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Task, 0, len(rows))
	for _, row := range rows {
		t, err := decodeA2ATask(row)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// Open implements a2a.Tasks: one bounded page, oldest first.
func (s storeTasks) Open(ctx context.Context) ([]a2a.PeerTask, error) {
	rows, err := s.st.OpenA2ATasks(ctx, store.MaxA2ATaskList)
	if err != nil {
		return nil, err
	}
	out := make([]a2a.PeerTask, 0, len(rows))
	for _, row := range rows {
		t, err := decodeA2ATask(row)
		if err != nil {
			return nil, err
		}
		out = append(out, a2a.PeerTask{Peer: row.Peer, Task: *t})
	}
	return out, nil
}

func decodeA2ATask(row *store.A2ATask) (*wire.Task, error) {
	var t wire.Task
	if err := json.Unmarshal(row.Task, &t); err != nil {
		return nil, fmt.Errorf("a2a task %s/%s: stored JSON: %w", row.Peer, row.ID, err)
	}
	return &t, nil
}

// a2aRemote is sessions_send's way to remote A2A peers. A send that does
// not wait goes through the outbox (kind a2aSendKind), so it survives a
// restart and is retried on transport errors; see a2aout.go.
type a2aRemote struct {
	c   *outbound.Client
	st  a2aOutboxStore
	log *slog.Logger
	// poster posts late replies into sender sessions; sendRules is
	// session.sendPolicy (nil: allow), which may suppress them.
	poster    a2aPoster
	sendRules *policy.SendPolicyConfig
	// kick asks the outbox dispatcher for a pass; set once at wiring,
	// before any tool call.
	kick func()
}

// newA2ARemote returns the remote sender for the peers with an outbound
// url, or nil when the channel is off or none has one.
func newA2ARemote(cfg *config.Config, st a2aOutboxStore, poster a2aPoster, sendRules *policy.SendPolicyConfig, log *slog.Logger) *a2aRemote {
	s := cfg.A2A()
	if !s.Enabled {
		return nil
	}
	var peers []outbound.Peer
	for _, p := range s.Peers {
		if p.URL != "" {
			peers = append(peers, outbound.Peer{Name: p.Name, URL: p.URL, Token: p.OutboundToken})
		}
	}
	if len(peers) == 0 {
		return nil
	}
	return &a2aRemote{c: outbound.New(peers, nil), st: st, log: log.With("component", "a2a-outbound"),
		poster: poster, sendRules: sendRules, kick: func() {}}
}

// HasPeer implements sessions.Remote.
func (r *a2aRemote) HasPeer(peer string) bool { return r.c.Has(peer) }

// SendRemote implements sessions.Remote. The message's chain travels in
// its metadata. A task still working when the wait ends is followed by
// the outbox (see a2aout.go), so its late reply reaches the sender.
func (r *a2aRemote) SendRemote(ctx context.Context, m sessions.RemoteMessage) (sessions.RemoteResult, error) {
	if m.Wait <= 0 {
		return r.enqueue(ctx, m)
	}
	peer := m.Peer
	var meta map[string]any
	if m.Chain.ID != "" {
		meta = wire.ChainMetadata(m.Chain.ID, m.Chain.Hops)
	}
	msgID := uuid.NewString()
	t, err := r.c.Send(ctx, outbound.Request{Peer: peer, SourceKey: m.SourceKey, Text: m.Text, MessageID: msgID, Metadata: meta, Wait: m.Wait})
	if t == nil {
		return sessions.RemoteResult{}, err
	}
	res := remoteResult(peer, t)
	if err == nil && !res.Final && t.ID != "" {
		if perr := r.put(context.WithoutCancel(ctx), newSendItemID(), a2aSendItem{Peer: peer, SourceKey: m.SourceKey, Text: m.Text,
			MessageID: msgID, ChainID: m.Chain.ID, ChainHops: m.Chain.Hops, RunID: t.ID, TaskID: t.ID, State: t.Status.State}); perr != nil {
			r.log.Error("a2a: the timed-out task will not be followed", "peer", peer, "task", t.ID, "err", perr)
		}
	}
	return res, err
}

// remoteResult is sessions_send's view of peer's task t.
func remoteResult(peer string, t *wire.Task) sessions.RemoteResult {
	res := sessions.RemoteResult{TaskID: t.ID, Final: wire.Terminal(t.Status.State), OK: t.Status.State == wire.StateCompleted}
	if res.OK {
		var parts []string
		for _, a := range t.Artifacts {
			if s := wire.MessageText(a.Parts); s != "" {
				parts = append(parts, s)
			}
		}
		res.Reply = strings.Join(parts, "\n")
	} else if res.Final {
		res.Error = "A2A peer " + peer + ": task " + strings.ToLower(strings.TrimPrefix(t.Status.State, "TASK_STATE_"))
		if t.Status.Message != nil {
			if s := wire.MessageText(t.Status.Message.Parts); s != "" {
				res.Error += ": " + s
			}
		}
	}
	return res
}
