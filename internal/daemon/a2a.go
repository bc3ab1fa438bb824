package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// a2aRunner runs an A2A peer's turn on the agent runner and returns the
// final assistant text.
type a2aRunner struct {
	runner *agent.Runner
	agent  string
}

// Run submits text to key and waits for the run's end; when ctx ends first
// the run is aborted.
func (r *a2aRunner) Run(ctx context.Context, key, text string) (string, error) {
	id := uuid.NewString()
	ended := make(chan agent.Event, 1)
	unsub := r.runner.Subscribe(func(ev agent.Event) {
		if ev.RunID == id && ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil {
			select {
			case ended <- ev:
			default:
			}
		}
	})
	defer unsub()
	in := agent.Input{RunID: id, SessionKey: key, AgentID: r.agent, Message: text, Channel: "a2a"}
	if _, _, err := r.runner.Submit(ctx, in); err != nil {
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
// has peers; nil otherwise.
func newA2A(cfg *config.Config, runner *agent.Runner, version string) (*a2a.Server, error) {
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
	c := a2a.Config{AdvertisedURL: s.AdvertisedURL, ReplyTimeout: s.ReplyTimeout, RateLimitPerMinute: s.RateLimitPerMinute,
		Agents: agents, Version: version}
	for _, p := range s.Peers {
		c.Peers = append(c.Peers, a2a.Peer{Name: p.Name, Token: p.Token})
	}
	srv, err := a2a.New(c, &a2aRunner{runner: runner, agent: agents[0]}, a2a.NewMemTasks())
	if err != nil {
		return nil, errors.Join(errors.New("daemon: a2a channel"), err)
	}
	return srv, nil
}
