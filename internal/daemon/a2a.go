package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/a2a/bridge"
	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// newA2A builds the A2A channel server when channels.a2a is enabled and
// has peers; nil otherwise. raw is the backend under st's wrappers, which
// keeps the tasks (store.A2ATaskStore).
func newA2A(ctx context.Context, set *settings.Settings, st, raw store.Store, runner *agent.Runner, adm *admission.Admitter, version string) (*a2a.Server, error) {
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
		return nil, errors.New("daemon: a2a channel: the store cannot keep A2A tasks")
	}
	srv, err := a2a.New(c, bridge.NewTurns(runner, adm, st, agents[0]), bridge.NewTasks(ts))
	if err != nil {
		return nil, errors.Join(errors.New("daemon: a2a channel"), err)
	}
	if _, err := srv.Recover(ctx); err != nil {
		srv.Close()
		return nil, fmt.Errorf("daemon: a2a channel: %w", err)
	}
	return srv, nil
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
func newA2ARemote(set *settings.Settings, st a2aOutboxStore, poster a2aPoster, sendRules *policy.SendPolicyConfig, log *slog.Logger) *a2aRemote {
	s := set.A2A
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
