package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// Durable fire-and-forget sends to remote A2A peers: sessions_send with
// timeoutSeconds 0 to "a2a:<peer>" stores an outbox item and returns
// accepted with the item's id; the outbox dispatcher sends it (retried
// with backoff on transport errors, dead on a refusal), then follows the
// remote task to its end and records the late reply in the item.
const (
	a2aSendKind = "a2a_send"
	// a2aFollowWait is how long one attempt follows a remote task; a task
	// still working then is followed again at the next attempt.
	a2aFollowWait = 5 * time.Minute
	// a2aSendExpiry makes an item dead when it has failed for that long.
	a2aSendExpiry = 24 * time.Hour
	// a2aSendRetention keeps delivered items (and their replies) that long.
	a2aSendRetention = 7 * 24 * time.Hour
)

// a2aOutboxStore is what remote sends need of the store.
type a2aOutboxStore interface {
	PutOutbox(ctx context.Context, item *store.OutboxItem) error
	UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error)
}

// a2aSendItem is an a2a_send item's payload.
type a2aSendItem struct {
	Peer      string `json:"peer"`
	SourceKey string `json:"sourceKey,omitempty"`
	Text      string `json:"text"`
	MessageID string `json:"messageId"`
	ChainID   string `json:"chainId,omitempty"`
	ChainHops int    `json:"chainHops,omitempty"`
	// Set as the send goes on: the remote task, its last state, and its
	// reply (or the reason it failed) once final.
	TaskID string `json:"taskId,omitempty"`
	State  string `json:"state,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Error  string `json:"error,omitempty"`
}

// enqueue stores m as an a2a_send item and returns it accepted.
func (r *a2aRemote) enqueue(ctx context.Context, m sessions.RemoteMessage) (sessions.RemoteResult, error) {
	id := "a2a-send:" + uuid.NewString()
	b, err := json.Marshal(a2aSendItem{Peer: m.Peer, SourceKey: m.SourceKey, Text: m.Text, MessageID: uuid.NewString(),
		ChainID: m.Chain.ID, ChainHops: m.Chain.Hops})
	if err != nil {
		return sessions.RemoteResult{}, err
	}
	if err := r.st.PutOutbox(ctx, &store.OutboxItem{ID: id, Kind: a2aSendKind, SessionKey: m.SourceKey, Payload: b,
		Status: store.OutboxPending}); err != nil {
		return sessions.RemoteResult{}, fmt.Errorf("a2a peer %q: queue the send: %w", m.Peer, err)
	}
	r.kick()
	return sessions.RemoteResult{TaskID: id}, nil
}

// handler is the outbox handler of a2a_send items.
func (r *a2aRemote) handler() outbox.Handler {
	return outbox.Handler{Kind: a2aSendKind, Each: r.deliver, Expiry: a2aSendExpiry, Retention: a2aSendRetention}
}

// deliver sends one item (once: the remote task id is saved) and follows
// its task to the end.
func (r *a2aRemote) deliver(ctx context.Context, item *store.OutboxItem) error {
	var p a2aSendItem
	if err := json.Unmarshal(item.Payload, &p); err != nil {
		return outbox.Permanent(fmt.Errorf("a2a_send %s: %w", item.ID, err))
	}
	t := &wire.Task{ID: p.TaskID, Status: wire.TaskStatus{State: p.State}}
	if p.TaskID == "" {
		var meta map[string]any
		if p.ChainID != "" {
			meta = wire.ChainMetadata(p.ChainID, p.ChainHops)
		}
		var err error
		t, err = r.c.Send(ctx, outbound.Request{Peer: p.Peer, SourceKey: p.SourceKey, Text: p.Text, MessageID: p.MessageID, Metadata: meta})
		if err != nil {
			return classify(err)
		}
		p.TaskID, p.State = cmp.Or(t.ID, item.ID), t.Status.State
		if err := r.save(ctx, item.ID, p); err != nil {
			return err
		}
	}
	if !wire.Terminal(t.Status.State) {
		var err error
		t, err = r.c.Wait(ctx, p.Peer, t, a2aFollowWait)
		if err != nil {
			return classify(err)
		}
		if !wire.Terminal(t.Status.State) {
			return fmt.Errorf("a2a peer %q: task %s still %s", p.Peer, p.TaskID, t.Status.State)
		}
	}
	res := remoteResult(p.Peer, t)
	p.State, p.Reply, p.Error = t.Status.State, res.Reply, res.Error
	if err := r.save(ctx, item.ID, p); err != nil {
		return err
	}
	r.log.Info("a2a late reply recorded", "item", item.ID, "peer", p.Peer, "task", p.TaskID, "state", p.State, "from", p.SourceKey)
	return nil
}

// save writes p back into item id.
func (r *a2aRemote) save(ctx context.Context, id string, p a2aSendItem) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = r.st.UpdateOutbox(context.WithoutCancel(ctx), id, func(it *store.OutboxItem) error {
		it.Payload = b
		return nil
	})
	return err
}

// classify makes a refusal permanent; transport errors are retried.
func classify(err error) error {
	if outbound.Transient(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return outbox.Permanent(err)
}
