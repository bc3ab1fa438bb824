package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// NewServer builds the A2A channel server when channels.a2a is enabled
// and has peers, with its interrupted tasks recovered; nil otherwise. raw
// is the backend under st's wrappers, which keeps the tasks
// (store.A2ATaskStore).
func NewServer(ctx context.Context, set *settings.Settings, st, raw store.Store, runner Runner, adm Admitter, version string) (*a2a.Server, error) {
	s := set.A2A
	if !s.Enabled || len(s.Peers) == 0 {
		return nil, nil
	}
	agents := slices.Clone(s.ExposeAgents)
	if len(agents) == 0 {
		agents = set.AgentIDs()
	}
	def := set.DefaultAgent
	if len(agents) == 0 {
		agents = []string{def}
	}
	// The card advertises channels.a2a.advertisedUrl, else
	// gateway.publicOrigin, else the address the card was fetched on.
	c := a2a.Config{AdvertisedURL: cmp.Or(s.AdvertisedURL, set.PublicOrigin), ReplyTimeout: s.ReplyTimeout, RateLimitPerMinute: s.RateLimitPerMinute,
		Agents: agents, Version: version}
	for _, p := range s.Peers {
		c.Peers = append(c.Peers, a2a.Peer{Name: p.Name, Token: p.Token})
	}
	ts, ok := raw.(store.A2ATaskStore)
	if !ok {
		return nil, errors.New("a2a bridge: a2a channel: the store cannot keep A2A tasks")
	}
	srv, err := a2a.New(c, NewTurns(runner, adm, st, agents[0]), NewTasks(ts))
	if err != nil {
		return nil, errors.Join(errors.New("a2a bridge: a2a channel"), err)
	}
	if _, err := srv.Recover(ctx); err != nil {
		srv.Close()
		return nil, fmt.Errorf("a2a bridge: a2a channel: %w", err)
	}
	return srv, nil
}
