// Package remote is sessions_send's way to remote A2A peers
// (channels.a2a.peers with a url): a send that waits goes straight to the
// peer; one that does not, and one whose wait ended with the remote task
// still working, become outbox items (kind a2a_send) that the dispatcher
// sends, follows to their end and reports back into the sender's session.
package remote

import (
	"context"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// Sender is sessions_send's way to remote A2A peers (sessions.Remote). A
// send that does not wait goes through the outbox (kind a2aSendKind), so
// it survives a restart and is retried on transport errors; see outbox.go.
type Sender struct {
	c   *outbound.Client
	st  OutboxStore
	log *slog.Logger
	// poster posts late replies into sender sessions; sendRules is
	// session.sendPolicy (nil: allow), which may suppress them.
	poster    Poster
	sendRules *policy.SendPolicyConfig
	// kick asks the outbox dispatcher for a pass.
	kick func()
}

// New returns the remote sender for the peers with an outbound url, or
// nil when the channel is off or none has one. kick asks the outbox
// dispatcher for a pass (nil: none; register Handler with it).
func New(set *settings.Settings, st OutboxStore, poster Poster, sendRules *policy.SendPolicyConfig, kick func(), log *slog.Logger) *Sender {
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
	if kick == nil {
		kick = func() {}
	}
	return &Sender{c: outbound.New(peers, nil), st: st, log: log.With("component", "a2a-outbound"),
		poster: poster, sendRules: sendRules, kick: kick}
}

// HasPeer implements sessions.Remote.
func (r *Sender) HasPeer(peer string) bool { return r.c.Has(peer) }

// SendRemote implements sessions.Remote. The message's chain travels in
// its metadata. A task still working when the wait ends is followed by
// the outbox (see outbox.go), so its late reply reaches the sender.
func (r *Sender) SendRemote(ctx context.Context, m sessions.RemoteMessage) (sessions.RemoteResult, error) {
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
