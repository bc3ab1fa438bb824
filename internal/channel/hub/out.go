package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// kindChannelReply is the outbox kind of a message going out to a chat
// channel: a run's reply, or an announce posted into a routed session.
const kindChannelReply = "channel_reply"

// Channel replies are retried with the outbox's backoff for a day at most
// (then dead, listed by announces.list, redeliverable); delivered ones are
// kept a day so that a repeated enqueue stays a no-op.
const (
	channelReplyExpiry    = 24 * time.Hour
	channelReplyRetention = 24 * time.Hour
)

// channelReply is a kindChannelReply item's payload: what to send where.
type channelReply struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId,omitempty"`
	To        string `json:"to"`
	Text      string `json:"text"`
}

// Kicker asks the outbox dispatcher for a pass over a session's items
// (outbox.Dispatcher).
type Kicker interface{ KickSession(kind, key string) }

// OnFinish runs as a run is recorded terminal (the runner's OnFinish): a
// reply that goes out to a chat channel becomes an outbox item stored in
// the same transaction as the run's end, so it is delivered — once, with
// retries — even when the gateway dies right after the run ended. The
// runs a turn carried (steered or collected messages) end with the same
// last message and name the same item, which is stored once.
func (h *Hub) OnFinish(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message) {
	if h == nil || res.Status != store.RunOK || last == nil || !h.replies(run) {
		return
	}
	text := last.Text()
	if silentReply(text) {
		return
	}
	r, ok := h.routeOf(ctx, run)
	if !ok {
		return
	}
	turn := run.RunID
	if last.Meta != nil {
		turn = cmp.Or(last.Meta.RunID, turn)
	}
	item, err := h.replyItem("channel-reply:"+turn, run.SessionKey, turn, r, text)
	if err != nil {
		h.log.Error("channel: reply not queued", "session", run.SessionKey, "runId", run.RunID, "err", err)
		return
	}
	res.Outbox = append(res.Outbox, *item)
}

// silentReply reports whether a reply sends nothing to a channel: empty,
// or the NO_REPLY token alone.
func silentReply(text string) bool {
	t := strings.TrimSpace(text)
	return t == "" || t == "NO_REPLY"
}

// routeOf is where a finished run's reply goes: back where its input came
// from (the stored input names the channel, chat and account), else the
// session's route (a sub-agent's announce turn in a routed session).
func (h *Hub) routeOf(ctx context.Context, run *store.Run) (channel.Route, bool) {
	var in struct{ Channel, To, AccountID string }
	if json.Unmarshal(run.Input, &in) == nil && h.conns[in.Channel] != nil && in.To != "" {
		return channel.Route{Channel: in.Channel, AccountID: in.AccountID, To: in.To}, true
	}
	return h.route(ctx, run.SessionKey)
}

// enqueuePost stores an announce posted into a routed session as an
// outbox item and asks for its delivery.
func (h *Hub) enqueuePost(ctx context.Context, key, postID, text string) {
	r, ok := h.route(ctx, key)
	if !ok {
		return
	}
	h.put(ctx, "channel-post:"+postID, key, postID, r, text)
}

// answer stores what admission answered a channel message (a command's
// reply, a refusal) as an outbox item for the sender and asks for its
// delivery.
func (h *Hub) answer(ctx context.Context, key, runID string, r channel.Route, text string) {
	h.put(ctx, "channel-answer:"+runID, key, runID, r, text)
}

// put stores text for r as outbox item id and asks for its delivery.
func (h *Hub) put(ctx context.Context, id, key, runID string, r channel.Route, text string) {
	item, err := h.replyItem(id, key, runID, r, text)
	if err == nil {
		err = h.store.PutOutbox(ctx, item)
	}
	if err != nil {
		h.log.Error("channel: message not queued", "session", key, "item", id, "err", err)
		return
	}
	h.kick(key)
}

func (h *Hub) replyItem(id, key, runID string, r channel.Route, text string) (*store.OutboxItem, error) {
	payload, err := json.Marshal(channelReply{Channel: r.Channel, AccountID: r.AccountID, To: r.To, Text: text})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &store.OutboxItem{ID: id, Kind: kindChannelReply, SessionKey: key, RunID: runID, Payload: payload,
		Status: store.OutboxPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}, nil
}

// kick asks the dispatcher to deliver key's channel items now.
func (h *Hub) kick(key string) {
	if k := h.kicker; k != nil {
		k.KickSession(kindChannelReply, key)
	}
}

// Handler delivers channel items: each in its own goroutine (a send may
// wait for a reconnect), claimed first when several nodes share the store.
// A failed send is retried with backoff; an item for a channel that is
// no longer configured is dead at once.
func (h *Hub) Handler() outbox.Handler {
	return outbox.Handler{Kind: kindChannelReply, Each: h.deliver, Expiry: channelReplyExpiry, Retention: channelReplyRetention}
}

func (h *Hub) deliver(ctx context.Context, item *store.OutboxItem) error {
	var p channelReply
	if err := json.Unmarshal(item.Payload, &p); err != nil {
		return outbox.Permanent(fmt.Errorf("channel reply %s: %w", item.ID, err))
	}
	c := h.conns[p.Channel]
	if c == nil {
		return outbox.Permanent(fmt.Errorf("channel reply %s: channel %q is not configured", item.ID, p.Channel))
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := c.Send(ctx, p.To, p.Text); err != nil {
		h.log.Warn("channel: reply not delivered; retrying", "channel", p.Channel, "to", p.To, "session", item.SessionKey, "err", err)
		return fmt.Errorf("%s send: %w", p.Channel, err)
	}
	return nil
}
