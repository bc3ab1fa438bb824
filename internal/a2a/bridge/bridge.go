// Package bridge joins the A2A channel server (internal/a2a) to the rest
// of the gateway: a peer's turn goes through the admission step into its
// session and the run's reply comes back as the task's answer (Turns), and
// the channel's tasks are kept in the store (Tasks).
//
// It imports the A2A server's contracts, admission and the runner's event
// types; the daemon wires it.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Runs is what the bridge reads of past runs: a run and the transcript
// entries it wrote.
type Runs interface {
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
}

// Runner is what the bridge needs of the agent runner: to abort a run and
// to follow its events (its per-run stream, from its start on).
type Runner interface {
	Abort(ctx context.Context, runID string) (bool, error)
	Watch(ctx context.Context, runID string, afterSeq int64) iter.Seq2[agent.Event, error]
}

// Admitter starts runs: the admission step (*admission.Admitter).
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// Turns runs an A2A peer's turn through admission and returns the final
// assistant text; it implements a2a.Runner.
type Turns struct {
	runner Runner
	adm    Admitter
	runs   Runs
	agent  string
}

// NewTurns returns the bridge for agent's turns.
func NewTurns(runner Runner, adm Admitter, runs Runs, agentID string) *Turns {
	return &Turns{runner: runner, adm: adm, runs: runs, agent: agentID}
}

// Outcome implements a2a.Runner: a run that ended ok answers with its last
// assistant text from the transcript; a run still queued after the
// restart is aborted (its task is reported failed, so the reply must not
// land later).
func (r *Turns) Outcome(ctx context.Context, runID string) (string, bool, error) {
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
func (r *Turns) Run(ctx context.Context, turn a2a.Turn, onText func(string)) (string, error) {
	id, key, text := turn.RunID, turn.SessionKey, turn.Text
	if id == "" {
		id = uuid.NewString()
	}
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
	// The run's events come from its stream, from its start on.
	for ev, err := range r.runner.Watch(ctx, id, 0) {
		switch {
		case err != nil && ctx.Err() != nil:
			_, _ = r.runner.Abort(context.WithoutCancel(ctx), id)
			return "", ctx.Err()
		case err != nil:
			return "", fmt.Errorf("a2a: run %s: %w", id, err)
		case ev.Stream == agent.StreamAssistant && onText != nil:
			onText(ev.Delta)
		case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil:
			if ev.Run.Status != store.RunOK {
				return "", fmt.Errorf("a2a: run %s: %s %s", id, ev.Run.Status, ev.Run.Error)
			}
			if ev.Message == nil {
				return "", nil
			}
			return ev.Message.Text(), nil
		}
	}
	return "", fmt.Errorf("a2a: run %s: its stream ended without its end", id)
}

// Tasks keeps the A2A channel's tasks in the store; it implements
// a2a.Tasks. The task id is also the id of the run that answers it.
type Tasks struct{ st store.A2ATaskStore }

// NewTasks returns the task keeper over st.
func NewTasks(st store.A2ATaskStore) Tasks { return Tasks{st: st} }

// Put implements a2a.Tasks.
func (s Tasks) Put(ctx context.Context, peer string, t wire.Task) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("a2a task %s: %w", t.ID, err)
	}
	return s.st.PutA2ATask(ctx, &store.A2ATask{Peer: peer, ID: t.ID, ContextID: t.ContextID, State: t.Status.State,
		Final: wire.Terminal(t.Status.State), RunID: t.ID, Task: body})
}

// Get implements a2a.Tasks.
func (s Tasks) Get(ctx context.Context, peer, id string) (*wire.Task, error) {
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
func (s Tasks) List(ctx context.Context, peer, contextID string, limit int) ([]wire.Task, error) {
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
func (s Tasks) Open(ctx context.Context) ([]a2a.PeerTask, error) {
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
